package main

// "No second reply": what was answered is read from the mailbox (replies in
// Sent, \Answered, Message-IDs), so losing the state database, replacing
// it, or a UIDVALIDITY change (or both, after a crash) never answers the
// same mail twice.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"

	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/internal/smtpsend/smtptest"
	"github.com/mailagent/mailagent/store"
)

const answeredPolicy = `[policy]
mode = "auto"
max_auto_per_contact_per_day = 10
max_auto_per_day = 100
[sync]
initial_lookback = "168h"
`

// fiveCorrespondents seeds five known contacts (the owner wrote to each)
// and delivers one authenticated question from each; it returns the raw
// questions.
func fiveCorrespondents(t *testing.T, h *harness) []string {
	t.Helper()
	var qs []string
	for i := range 5 {
		addr := fmt.Sprintf("p%d@partner%d.example", i, i)
		h.appendTo("Sent", fmt.Sprintf("From: Ada Lovelace <ada@example.com>\nTo: <%s>\nSubject: hello %d\nDate: Mon, 02 Nov 2026 09:00:00 +0000\nMessage-ID: <seed%d@example.com>\n\nHi\n", addr, i, i))
		q := rawMail(fmt.Sprintf("P%d <%s>", i, addr), fmt.Sprintf("Meeting %d", i), "Can we meet on Thursday?")
		qs = append(qs, q)
		h.deliver(q)
	}
	return qs
}

func (h *harness) dbPath() string { return filepath.Join(h.dir, "state", "mailagent.db") }

// answeredFlags returns, by Message-ID key, whether each INBOX message
// carries \Answered.
func (h *harness) answeredFlags(t *testing.T) map[string]bool {
	t.Helper()
	msgs, err := h.imap.Messages(context.Background(), ownerAddr, "INBOX")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, m := range msgs {
		out[mail.IDKey(mail.Parse(m.Raw).MessageID)] = slices.Contains(m.Flags, imap.FlagAnswered)
	}
	return out
}

func TestNoSecondReplyAfterStateLoss(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name        string
		loseState   bool // delete the database file
		replaceDB   bool // a fresh, empty database in its place
		uidValidity bool // the server recreates INBOX: same mail, new UIDs
	}{
		{name: "database deleted", loseState: true},
		{name: "database replaced by an empty one", replaceDB: true},
		{name: "UIDVALIDITY changed", uidValidity: true},
		{name: "database deleted and UIDVALIDITY changed", loseState: true, uidValidity: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, compromisedModel, answeredPolicy)
			qs := fiveCorrespondents(t, h)
			h.watchOnce(t)
			if n := len(h.smtp.Messages()); n != 5 {
				t.Fatalf("first run: %d replies, want 5", n)
			}
			// Every original is flagged \Answered, for any mail client to see.
			for id, answered := range h.answeredFlags(t) {
				if !answered {
					t.Errorf(`%s: no \Answered after the reply`, id)
				}
			}

			if tc.loseState {
				if err := os.Remove(h.dbPath()); err != nil {
					t.Fatal(err)
				}
			}
			if tc.replaceDB {
				if err := os.Remove(h.dbPath()); err != nil {
					t.Fatal(err)
				}
				st, err := store.Open(h.dbPath(), store.Options{})
				if err != nil {
					t.Fatal(err)
				}
				_ = st.Close()
			}
			if tc.uidValidity {
				if err := h.imap.Recreate(context.Background(), ownerAddr, "INBOX"); err != nil {
					t.Fatal(err)
				}
				// A restore brings the mail back without its flags.
				for _, q := range qs {
					h.deliver(q)
				}
			}
			h.watchOnce(t)
			h.watchOnce(t)
			if n := len(h.smtp.Messages()); n != 5 {
				t.Fatalf("after the loss: %d replies in all, want still 5", n)
			}
			for _, q := range h.queue(t) {
				if q.Status == store.QueuePending || q.Status == store.QueueFailed {
					t.Errorf("queue item %q (%s) for mail already answered: %v %s", q.Subject, q.Status, q.Reasons, q.Error)
				}
			}
			if !tc.loseState && !tc.replaceDB {
				return // the records were kept: recognised by Message-ID (daemon.duplicate)
			}
			// The reason is on the record.
			st := h.openStore(t)
			defer func() { _ = st.Close() }()
			answered := 0
			_ = st.ListMessages(store.MessageFilter{}, func(r *store.MessageRecord) error {
				if strings.Contains(strings.Join(r.Reasons, ";"), "already answered") {
					answered++
				}
				return nil
			})
			if answered != 5 {
				t.Errorf(`records marked "already answered": got %d, want 5`, answered)
			}
		})
	}
}

// A draft the owner answered from their own client (the reply in Sent is
// days old; the original is flagged \Answered) is neither queued again
// after the state is lost, nor sent when an item for it is approved.
func TestNoSecondReplyOwnerAnsweredFromClient(t *testing.T) {
	t.Parallel()
	h := newHarness(t, compromisedModel, "[sync]\ninitial_lookback = \"168h\"\n")
	q := rawMail("Carol <carol@example.org>", "Lunch", "Lunch next week?")
	h.appendAt(t, "INBOX", q, time.Now().Add(-5*24*time.Hour))
	h.watchOnce(t)
	item := h.item(t, "Lunch")
	if item.Status != store.QueuePending {
		t.Fatalf("item: %s, want pending", item.Status)
	}
	// The owner replied four days ago from their phone.
	h.appendAt(t, "Sent", "From: Ada Lovelace <ada@example.com>\nTo: Carol <carol@example.org>\nSubject: Re: Lunch\nDate: Mon, 02 Nov 2026 11:00:00 +0000\nMessage-ID: <phone-reply@example.com>\nIn-Reply-To: <lunch@test.example>\nReferences: <lunch@test.example>\n\nYes, Tuesday.\n", time.Now().Add(-4*24*time.Hour))
	if err := os.Remove(h.dbPath()); err != nil {
		t.Fatal(err)
	}
	h.watchOnce(t)
	for _, it := range h.queue(t) {
		if it.Status == store.QueuePending {
			// Were it there, approving it must still send nothing.
			h.run("queue", "approve", "--yes", it.ID)
		}
	}
	if n := len(h.smtp.Messages()); n != 0 {
		t.Fatalf("sink: %d messages, want 0 (the owner had answered)", n)
	}
	for _, it := range h.queue(t) {
		t.Errorf("queue item %q (%s) for a message the owner answered", it.Subject, it.Status)
	}
}

// Approving a draft whose original the owner answered from a client that
// files no copy in this account's Sent (only \Answered is set) sends
// nothing and resolves the item with the reason.
func TestApproveSendsNothingWhenOriginalIsAnswered(t *testing.T) {
	t.Parallel()
	h := newHarness(t, compromisedModel, "")
	h.deliver(rawMail("Carol <carol@example.org>", "Lunch", "Lunch next week?"))
	h.watchOnce(t)
	item := h.item(t, "Lunch")
	h.flagInbox(t, "lunch@test.example", imap.FlagAnswered)
	_, stderr, code := h.run("queue", "approve", "--yes", item.ID)
	if n := len(h.smtp.Messages()); n != 0 {
		t.Fatalf("sink: %d messages, want 0 (exit %d: %s)", n, code, stderr)
	}
	// Never a silent success: the exit code and the message say so.
	if code != ExitNotSent || !strings.Contains(stderr, "nothing was sent") || !strings.Contains(stderr, `\Answered`) {
		t.Errorf("approve: exit %d, stderr %q; want %d saying nothing was sent and why", code, stderr, ExitNotSent)
	}
	got := h.item(t, "Lunch")
	if got.Status != store.QueueResolved || !strings.Contains(strings.Join(got.Reasons, ";"), `\Answered`) {
		t.Errorf("item: %s %v, want resolved as already answered", got.Status, got.Reasons)
	}
}

// flagInbox sets flag on the INBOX message with Message-ID id, as another
// mail client would.
func (h *harness) flagInbox(t *testing.T, id string, flag imap.Flag) {
	t.Helper()
	c, err := dialOwner(h)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	if _, err := c.Select("INBOX", nil).Wait(); err != nil {
		t.Fatal(err)
	}
	data, err := c.UIDSearch(&imap.SearchCriteria{Header: []imap.SearchCriteriaHeaderField{{Key: "Message-ID", Value: id}}}, nil).Wait()
	if err != nil || len(data.AllUIDs()) == 0 {
		t.Fatalf("find %s: %v", id, err)
	}
	var set imap.UIDSet
	set.AddNum(data.AllUIDs()...)
	if err := c.Store(set, &imap.StoreFlags{Op: imap.StoreFlagsAdd, Flags: []imap.Flag{flag}}, nil).Close(); err != nil {
		t.Fatal(err)
	}
}

// A crash between the SMTP server accepting a reply and mailagent
// recording it (the process is stopped while DATA waits for its answer;
// the server then delivers), followed by a UIDVALIDITY change: exactly one
// reply.
func TestCrashAfterSMTPAcceptAndUIDValidityChange(t *testing.T) {
	t.Parallel()
	h := newHarness(t, compromisedModel, answeredPolicy)
	h.appendTo("Sent", "From: Ada Lovelace <ada@example.com>\nTo: Bob <bob@example.org>\nSubject: hello\nDate: Mon, 02 Nov 2026 09:00:00 +0000\nMessage-ID: <earlier@example.com>\n\nHi Bob\n")
	q := rawMail("Bob <bob@example.org>", "Call on Thursday", "Can we move our call to Thursday 3pm?")
	h.deliver(q)

	reached, release := h.smtp.Hold(smtptest.StageData)
	stop := h.startDaemon(t)
	select {
	case <-reached:
	case <-time.After(30 * time.Second):
		t.Fatal("the reply never reached DATA")
	}
	stop() // killed mid-transaction
	release()
	if err := h.smtp.WaitFor(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	// The Sent copy was never filed and the original never flagged: the
	// mailbox does not know. The server then loses its UIDs.
	if got := h.answeredFlags(t)[mail.IDKey("call-on-thursday@test.example")]; got {
		t.Fatal(`\Answered set although the send was never confirmed`)
	}
	if err := h.imap.Recreate(context.Background(), ownerAddr, "INBOX"); err != nil {
		t.Fatal(err)
	}
	h.deliver(q)
	h.watchOnce(t)
	h.watchOnce(t)
	if n := len(h.smtp.Messages()); n != 1 {
		t.Fatalf("sink: %d replies, want exactly 1", n)
	}
	// The interrupted send is the owner's to decide (Recover); the same
	// mail under its new UID is not drafted again.
	var open []string
	for _, it := range h.queue(t) {
		if it.Status == store.QueuePending || it.Status == store.QueueFailed {
			open = append(open, it.ID)
		}
	}
	if len(open) != 1 {
		t.Errorf("open queue items: %v, want the one interrupted send", open)
	}
}

// startDaemon runs the watch daemon, as watchRun builds it, until the
// returned stop is called (which waits for it to end).
func (h *harness) startDaemon(t *testing.T) (stop func()) {
	t.Helper()
	f, cfg := h.factory(t)
	_, accts, err := configAccounts(f, "")
	if err != nil {
		t.Fatal(err)
	}
	st, err := f.OpenStore(false)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	parts, err := buildAgent(ctx, f, cfg, st, false)
	if err != nil {
		t.Fatal(err)
	}
	d := newDaemon(f, cfg, st, parts, accts)
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx, false) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			if err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("daemon: %v", err)
			}
		case <-time.After(20 * time.Second):
			t.Error("daemon did not stop")
		}
		parts.Mailer.Close()
		_ = st.Close()
		f.Close()
	}
	t.Cleanup(stop)
	return stop
}

func dialOwner(h *harness) (*imapclient.Client, error) {
	c, err := imapclient.DialInsecure(h.imap.Addr(), nil)
	if err != nil {
		return nil, err
	}
	if err := c.Login(ownerAddr, ownerPass).Wait(); err != nil {
		_ = c.Close()
		return nil, err
	}
	return c, nil
}

// Hostile Message-IDs (quotes, backslashes, an IMAP literal marker,
// parentheses, a search-key look-alike) go to the IMAP server only as
// search strings: each mail is answered once and flagged, and after the
// state is lost none is answered again. Then the server restores INBOX
// (a new UIDVALIDITY, the mail back without its flags) and the state is
// lost again: the reply in Sent, found by a search for the hostile id,
// is all that says the mail was answered, and none whose id the reply
// names is answered again.
//
// The replies name only the ids compose can write inside <…>
// (compose.cleanID refuses '"' and '\'): the others are a known gap,
// logged (after a restore and a state loss their sender gets a second
// reply).
//
// The positive control (state: the evidence absent), in the same world:
// with the replies gone from Sent and \Answered cleared, after the state
// is lost each mail is answered again, every one. So the zero above is
// the mailbox's evidence, found by the hostile ids, and the test sees a
// second reply.
func TestNoSecondReplyHostileMessageIDs(t *testing.T) {
	t.Parallel()
	h := newHarness(t, compromisedModel, answeredPolicy)
	ids := []string{
		`a"b\c@x.example`,
		`{5}\r\nX@x.example`,
		`x) OR (ALL@x.example`,
		`ALL@x.example`,
	}
	addrs := make([]string, len(ids))
	var raws []string
	for i, id := range ids {
		addr := fmt.Sprintf("h%d@hostile%d.example", i, i)
		addrs[i] = addr
		h.appendTo("Sent", fmt.Sprintf("From: Ada Lovelace <ada@example.com>\nTo: <%s>\nSubject: hi %d\nDate: Mon, 02 Nov 2026 09:00:00 +0000\nMessage-ID: <hseed%d@example.com>\n\nHi\n", addr, i, i))
		raw := rawMail(fmt.Sprintf("H%d <%s>", i, addr), fmt.Sprintf("Question %d", i), "Can we meet on Thursday?")
		raw = strings.Replace(raw, fmt.Sprintf("<question-%d@test.example>", i), "<"+id+">", 1)
		raws = append(raws, raw)
	}
	// A decoy from a stranger (queued, never answered) whose Message-ID
	// contains another's: IMAP SEARCH matches substrings, which must not
	// count.
	raws = append(raws, strings.Replace(rawMail("Decoy <decoy@decoy.example>", "Decoy", "hello"), "<decoy@test.example>", "<zzALL@x.example>", 1))
	for _, raw := range raws {
		h.deliver(raw)
	}
	h.watchOnce(t)
	if n := len(h.smtp.Messages()); n != len(ids) {
		t.Fatalf("first run: %d replies, want %d", n, len(ids))
	}
	flags := h.answeredFlags(t)
	for _, id := range ids {
		if !flags[mail.IDKey(id)] {
			t.Errorf(`%q: no \Answered`, id)
		}
	}
	if flags[mail.IDKey("zzALL@x.example")] {
		t.Error(`the decoy, never answered, is flagged \Answered`)
	}

	// replies counts the replies each hostile id's sender got so far;
	// answeredAgain, the ids (by index) whose sender got one since before.
	replies := func() []int {
		out := make([]int, len(addrs))
		for _, m := range h.smtp.Messages() {
			for i, a := range addrs {
				if slices.Contains(m.To, a) {
					out[i]++
				}
			}
		}
		return out
	}
	answeredAgain := func(before []int) (again []int) {
		for i, n := range replies() {
			if n > before[i] {
				again = append(again, i)
			}
		}
		return again
	}
	loseState := func() {
		t.Helper()
		if err := os.Remove(h.dbPath()); err != nil {
			t.Fatal(err)
		}
		h.watchOnce(t)
	}
	tried, through := 0, 0

	// The state is lost: \Answered and the replies in Sent remain.
	before := replies()
	tried += len(ids)
	loseState()
	if n := len(h.smtp.Messages()); n != len(ids) {
		t.Errorf("after the loss: %d replies, want still %d", n, len(ids))
	}
	through += len(answeredAgain(before))

	// The ids mailagent's replies name (In-Reply-To), read from Sent.
	named := map[int]bool{}
	sent, err := h.imap.Messages(context.Background(), ownerAddr, "Sent")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range sent {
		for _, irt := range mail.Parse(m.Raw).InReplyTo {
			for i, id := range ids {
				if mail.IDKey(irt) == mail.IDKey(id) {
					named[i] = true
				}
			}
		}
	}
	for i, id := range ids {
		if writable := !strings.ContainsAny(id, "\"\\"); named[i] != writable {
			t.Errorf("%q: named by the reply's In-Reply-To %v, want %v (compose.cleanID refuses '\"' and '\\')", id, named[i], writable)
		}
	}

	// The server restores INBOX, the mail back without its flags, and
	// the state is lost again: the reply in Sent is the only evidence.
	if err := h.imap.Recreate(context.Background(), ownerAddr, "INBOX"); err != nil {
		t.Fatal(err)
	}
	for _, raw := range raws {
		h.deliver(raw)
	}
	before = replies()
	tried += len(named)
	loseState()
	for _, i := range answeredAgain(before) {
		if named[i] {
			through++
			t.Errorf("%q: answered again after a restore and a state loss, although the reply in Sent names it", ids[i])
		} else {
			t.Logf("known gap: %q, which no reply can name, is answered again after a restore and a state loss", ids[i])
		}
	}
	t.Logf("hostile Message-IDs after a state loss: %d tried, %d answered again", tried, through)
	if through != 0 {
		t.Errorf("hostile Message-IDs answered again: got %d, want 0", through)
	}

	t.Run("control: no evidence", func(t *testing.T) {
		h.expungeIf(t, "Sent", func(m *mail.Message) bool { return m.HeaderValue("X-Mailagent-Trace") != "" })
		h.setFlag(t, "INBOX", imap.FlagAnswered, false)
		before := replies()
		loseState()
		landed := len(answeredAgain(before))
		t.Logf("hostile Message-IDs with no reply in Sent and no \\Answered, after a state loss: %d tried, %d answered again", len(ids), landed)
		if landed != len(ids) {
			t.Errorf("positive control: got %d of %d answered again, want all", landed, len(ids))
		}
	})
}

// setFlag adds (on) or removes flag on every message of mailbox, as
// another mail client would.
func (h *harness) setFlag(t *testing.T, mailbox string, flag imap.Flag, on bool) {
	t.Helper()
	op := imap.StoreFlagsDel
	if on {
		op = imap.StoreFlagsAdd
	}
	c := h.ownerSelect(t, mailbox)
	if err := c.Store(imap.SeqSet{imap.SeqRange{Start: 1, Stop: 0}}, &imap.StoreFlags{Op: op, Flags: []imap.Flag{flag}}, nil).Close(); err != nil {
		t.Fatal(err)
	}
}

// ownerSelect is a session of the owner with mailbox selected, closed
// when the test ends.
func (h *harness) ownerSelect(t *testing.T, mailbox string) *imapclient.Client {
	t.Helper()
	c, err := dialOwner(h)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if _, err := c.Select(mailbox, nil).Wait(); err != nil {
		t.Fatal(err)
	}
	return c
}

// expungeIf removes the messages of mailbox for which drop is true, as
// another mail client would.
func (h *harness) expungeIf(t *testing.T, mailbox string, drop func(*mail.Message) bool) {
	t.Helper()
	msgs, err := h.imap.Messages(context.Background(), ownerAddr, mailbox)
	if err != nil {
		t.Fatal(err)
	}
	var set imap.UIDSet
	for _, m := range msgs {
		if drop(mail.Parse(m.Raw)) {
			set.AddNum(m.UID)
		}
	}
	if len(set) == 0 {
		t.Fatalf("nothing to remove from %s", mailbox)
	}
	c := h.ownerSelect(t, mailbox)
	if err := c.Store(set, &imap.StoreFlags{Op: imap.StoreFlagsAdd, Flags: []imap.Flag{imap.FlagDeleted}}, nil).Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.UIDExpunge(set).Close(); err != nil {
		t.Fatal(err)
	}
}
