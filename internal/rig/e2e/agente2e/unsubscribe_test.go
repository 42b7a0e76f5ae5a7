package agente2e

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/emersion/go-imap/v2"

	"github.com/mailagent/mailagent/internal/rig/e2e"
	"github.com/mailagent/mailagent/store"
)

// unsubscribeJSON is the part of `unsubscribe --json` the test reads.
type unsubscribeJSON struct {
	Method, Target, Result string
}

var outboxIDRE = regexp.MustCompile(`ob_unsubscribe_[0-9a-f]+`)

// TestUnsubscribeThroughOutbox: with a watcher running, `unsubscribe` of a
// list mail (DKIM-signed by partner.test, through Postfix and its
// milters) hands the mail to the watcher's outbox: it waits out
// policy.approval_delay (5s), then goes through Postfix to the list's
// address carrying Auto-Submitted: auto-generated, one outbox record of
// kind unsubscribe. A second unsubscribe is cancelled in its window with
// `queue cancel` and never arrives. A List-Unsubscribe to root@localhost
// is refused with nothing queued. A restart, whose Sent scan reads the
// unsubscribe mail in Sent, does not make the list address a contact.
func TestUnsubscribeThroughOutbox(t *testing.T) {
	parallel(t)
	e := newEnv(t, options{})
	w := e.startWatch()
	leave := "leave-" + e.tag + "@example.test" // unknown: Postfix delivers it to the sink
	leave2 := "leave2-" + e.tag + "@example.test"
	lists := []struct{ id, unsub string }{
		{e.id("news-one"), "<mailto:" + leave + "?subject=unsubscribe%20" + e.tag + ">"},
		{e.id("news-two"), "<mailto:" + leave2 + ">"},
		{e.id("news-local"), "<mailto:root@localhost>"},
	}
	var ids []string
	for _, l := range lists {
		raw := message{From: "News <news@partner.test>", To: e2e.Owner, Subject: "Weekly news " + e.tag, ID: l.id,
			Body: "This week's stories."}.raw()
		raw = []byte(strings.Replace(string(raw), "MIME-Version:", "List-Id: <news.partner.test>\r\nList-Unsubscribe: "+l.unsub+"\r\nMIME-Version:", 1))
		e.deliverRaw("news@partner.test", l.id, e.signed("news@partner.test", raw))
		ids = append(ids, l.id)
	}
	w.waitTerminal(ids, waitLong)

	// 1. Handed to the watcher's outbox, sent when its window ends.
	out, stderr, code := e.run("unsubscribe", lists[0].id, "--yes", "--json")
	var u unsubscribeJSON
	if code != 0 || json.Unmarshal([]byte(out), &u) != nil || u.Method != "mailto" || u.Target != leave || !strings.HasPrefix(u.Result, "scheduled") {
		t.Fatalf("unsubscribe: exit %d, %q, %q; want a mailto scheduled in the watcher's outbox", code, out, stderr)
	}
	got := e.waitFind(e2e.Sink, "INBOX", "To", leave, 1, waitLong)
	if v := got[0].M.HeaderValue("Auto-Submitted"); v != "auto-generated" {
		t.Errorf("Auto-Submitted: %q, want auto-generated", v)
	}
	if s := got[0].M.Subject; s != "unsubscribe "+e.tag {
		t.Errorf("subject %q, want the mailto's", s)
	}

	// 2. Cancelled in its undo window: never sent.
	out, stderr, code = e.run("unsubscribe", lists[1].id, "--yes", "--json")
	obID := outboxIDRE.FindString(out)
	if code != 0 || obID == "" {
		t.Fatalf("second unsubscribe: exit %d, %q, %q", code, out, stderr)
	}
	if _, stderr, code := e.run("queue", "cancel", obID); code != 0 {
		t.Fatalf("queue cancel %s: exit %d: %s", obID, code, stderr)
	}

	// 3. A local address: refused, nothing queued.
	if _, stderr, code := e.run("unsubscribe", lists[2].id, "--yes"); code == 0 || !strings.Contains(stderr, "not a public mail address") {
		t.Errorf("unsubscribe to root@localhost: exit %d, %q; want refused by the address rule", code, stderr)
	}

	// Asking again for the first list sends nothing more.
	if _, stderr, code := e.run("unsubscribe", lists[0].id, "--yes"); code != 0 {
		t.Fatalf("second unsubscribe of the same list: exit %d: %s", code, stderr)
	}
	e.barrier(e2e.Sink)
	if n := len(e.find(e2e.Sink, "INBOX", "To", leave)); n != 1 {
		t.Errorf("%s received %d unsubscribe mails, want exactly 1", leave, n)
	}
	if n := len(e.find(e2e.Sink, "INBOX", "To", leave2)); n != 0 {
		t.Errorf("the cancelled unsubscribe reached %s (%d)", leave2, n)
	}
	e.waitFind(e2e.Owner, e.box("Sent"), "To", leave, 1, waitShort)
	// The unsubscribe answers nothing: the list's mail is not flagged \Answered.
	for _, f := range e.find(e2e.Owner, e.box("INBOX"), "Message-ID", lists[0].id) {
		if slices.Contains(f.Flags, imap.FlagAnswered) {
			t.Errorf("the newsletter was flagged \\Answered by its unsubscribe mail")
		}
	}

	// A restart scans Sent, where the unsubscribe mail is now.
	w.stop()
	w = e.startWatch()
	w.stop()
	st := e.openStore()
	var recs []*store.OutboxRecord
	if err := st.ListOutbox("", func(r *store.OutboxRecord) error {
		if r.Kind == store.OutboxKindUnsubscribe {
			recs = append(recs, r)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	status := map[string]string{}
	for _, r := range recs {
		status[r.To[0]] = r.Status
	}
	if len(recs) != 2 || status[leave] != store.OutboxAppended || status[leave2] != store.OutboxCancelled {
		t.Errorf("outbox unsubscribe records: %v, want %s appended and %s cancelled", status, leave, leave2)
	}
	for _, addr := range []string{leave, leave2, "root@localhost"} {
		if c, err := st.GetContact(account, addr); err == nil && (c.Known || c.Outbound > 0 || c.OwnerReplies > 0) {
			t.Errorf("%s became a contact after the Sent scan: %+v", addr, c)
		}
	}
}
