package agente2e

import (
	"regexp"
	"strings"
	"testing"

	"github.com/emersion/go-imap/v2"

	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/internal/rig/e2e"
	"github.com/mailagent/mailagent/store"
)

// queuedDraftE2E delivers a question from carol and runs `watch --once`:
// it returns the pending item and its copy in ada's Drafts, after checking
// the copy carries the item's one Message-ID and no X-Mailagent-Trace.
func queuedDraftE2E(t *testing.T, e *env, name string) (message, store.QueueItem, found) {
	t.Helper()
	m := message{From: carolAddr, To: adaAddr, Subject: "Dinner " + name + " " + e.tag, ID: e.id(name),
		Body: "Hi Ada,\nare you free for dinner on Friday?\nCarol"}
	e.deliver(m)
	e.mustRun("watch", "--once")
	item := e.item(m.ID)
	if item.Status != store.QueuePending || item.DraftMessageID == "" || item.IMAPDraftUID == 0 {
		t.Fatalf("queue item: status %s, draft id %q, draft uid %d", item.Status, item.DraftMessageID, item.IMAPDraftUID)
	}
	drafts := e.find(e2e.Owner, e.box("Drafts"), "In-Reply-To", m.ID)
	if len(drafts) != 1 {
		t.Fatalf("Drafts: got %d drafts for %s, want 1", len(drafts), m.ID)
	}
	d := drafts[0]
	if mail.IDKey(d.M.MessageID) != mail.IDKey(item.DraftMessageID) || d.M.HeaderValue("X-Mailagent-Trace") != "" {
		t.Errorf("Drafts copy: Message-ID %q (item %q), X-Mailagent-Trace %q; want the item's id and no trace",
			d.M.MessageID, item.DraftMessageID, d.M.HeaderValue("X-Mailagent-Trace"))
	}
	return m, item, d
}

// item reads the queue item answering messageID from a stopped watcher's
// store.
func (e *env) item(messageID string) store.QueueItem {
	e.t.Helper()
	st := e.openStore()
	defer func() { _ = st.Close() }()
	var got *store.QueueItem
	_ = st.ListQueue("", func(q *store.QueueItem) error {
		if q.MessageID == messageID {
			got = q
		}
		return nil
	})
	if got == nil {
		e.t.Fatalf("no queue item for %s", messageID)
	}
	return *got
}

// clientSend does what the owner's mail client does with a draft: submit it
// through Postfix to its recipients, file it in Sent, and remove it from
// Drafts. edit, when set, changes the message first (clients may rewrite
// headers or give it a new Message-ID).
func (e *env) clientSend(d found, rcpts []string, edit func([]byte) []byte) {
	e.t.Helper()
	raw := d.Raw
	if edit != nil {
		raw = edit(raw)
	}
	e.s.Deliver(e.t, e2e.Owner, rcpts, raw)
	e.s.Append(e.t, e2e.Owner, e.box("Sent"), raw, imap.FlagSeen)
	c := e.s.IMAP(e.t, e2e.Owner)
	if _, err := c.Select(e.box("Drafts"), nil).Wait(); err != nil {
		e.t.Fatal(err)
	}
	uids := imap.UIDSetNum(d.UID)
	if err := c.Store(uids, &imap.StoreFlags{Op: imap.StoreFlagsAdd, Flags: []imap.Flag{imap.FlagDeleted}, Silent: true}, nil).Close(); err != nil {
		e.t.Fatal(err)
	}
	if err := c.UIDExpunge(uids).Close(); err != nil {
		e.t.Fatal(err)
	}
}

var e2eMessageIDLine = regexp.MustCompile(`(?mi)^Message-Id: <[^>]*>\r$`)

// TestDraftSentFromOwnerClientNeverSentTwice: against Dovecot and Postfix,
// the owner sends mailagent's draft from their own client (submitted
// through Postfix, filed in Sent, removed from Drafts). Approving it
// afterwards sends nothing, whether the scan of Sent has run or not and
// whether the client kept the draft's Message-ID or not; carol receives
// exactly one reply. And when the owner approves first, a stale copy that
// their client files in Sent makes mailagent send nothing more.
func TestDraftSentFromOwnerClientNeverSentTwice(t *testing.T) {
	parallel(t)
	e := newEnv(t, options{})
	e.mustRun("watch", "--once") // first start: the checkpoint is set

	// 1. Sent from the client as saved, approved before any scan of Sent.
	m1, item1, d1 := queuedDraftE2E(t, e, "client-as-saved")
	e.clientSend(d1, []string{e2e.Carol}, nil)
	// The approval sent nothing and says so: exit 7 (README's exit codes).
	_, stderr, code := e.run("queue", "approve", "--yes", item1.ID)
	if code != 7 || !strings.Contains(stderr, "nothing was sent") {
		t.Fatalf("approve: exit %d, want 7 saying nothing was sent\n%s", code, stderr)
	}
	if got := e.item(m1.ID); got.Status != store.QueueResolved {
		t.Errorf("%s after approval: got %s %v, want resolved", m1.ID, got.Status, got.Reasons)
	}

	// 2. The client gave the message a new Message-ID; the scan of Sent
	// runs first, then the owner tries to approve.
	m2, item2, d2 := queuedDraftE2E(t, e, "client-new-id")
	e.clientSend(d2, []string{e2e.Carol}, func(raw []byte) []byte {
		return e2eMessageIDLine.ReplaceAll(raw, []byte("Message-ID: <"+e.id("client-regenerated")+">\r"))
	})
	e.mustRun("watch", "--once")
	if got := e.item(m2.ID); got.Status != store.QueueResolved {
		t.Errorf("%s after the scan of Sent: got %s, want resolved", m2.ID, got.Status)
	}
	if _, stderr, code := e.run("queue", "approve", "--yes", item2.ID); code == 0 || !strings.Contains(stderr, "resolved") {
		t.Errorf("approving a resolved item: exit %d %q, want a refusal", code, stderr)
	}

	// 3. Approved first; then the client, which still had the draft open,
	// files its stale copy in Sent (its own SMTP send is the owner's).
	m3, item3, d3 := queuedDraftE2E(t, e, "approved-first")
	if _, stderr, code := e.run("queue", "approve", "--yes", item3.ID); code != 0 {
		t.Fatalf("approve: exit %d\n%s", code, stderr)
	}
	e.s.Append(t, e2e.Owner, e.box("Sent"), d3.Raw, imap.FlagSeen)
	e.mustRun("watch", "--once")
	if got := e.item(m3.ID); got.Status != store.QueueSent || got.Error != "" {
		t.Errorf("%s: got %s %q, want sent", m3.ID, got.Status, got.Error)
	}

	e.barrier(e2e.Carol, e2e.Sink)
	for _, m := range []message{m1, m2, m3} {
		if got := e.find(e2e.Carol, "INBOX", "In-Reply-To", m.ID); len(got) != 1 {
			t.Errorf("carol received %d replies to %s, want exactly 1", len(got), m.ID)
		}
		if got := e.find(e2e.Owner, e.box("Drafts"), "In-Reply-To", m.ID); len(got) != 0 {
			t.Errorf("Drafts still holds %d drafts for %s", len(got), m.ID)
		}
	}
	st := e.openStore()
	defer func() { _ = st.Close() }()
	var approvals int
	_ = st.ListOutbox("", func(r *store.OutboxRecord) error {
		if r.InReplyTo == m1.ID || r.InReplyTo == m2.ID {
			t.Errorf("outbox record %s (%s) for a draft the owner sent themselves", r.ID, r.Status)
		}
		if r.InReplyTo == m3.ID {
			approvals++
			if mail.IDKey(r.MessageID) != mail.IDKey(item3.DraftMessageID) {
				t.Errorf("approved reply Message-ID %q, want the draft's %q", r.MessageID, item3.DraftMessageID)
			}
		}
		return nil
	})
	if approvals != 1 {
		t.Errorf("outbox records for the approved item: %d, want 1", approvals)
	}
	if c, err := st.GetContact(account, e2e.Carol); err != nil || !c.Known {
		t.Errorf("carol after the owner's replies: %+v, %v; want known", c, err)
	}
}
