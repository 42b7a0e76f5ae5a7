package agente2e

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2"

	"github.com/mailagent/mailagent/internal/rig/e2e"
	"github.com/mailagent/mailagent/store"
)

// TestNoSecondReplyAfterStateLoss: mailagent answers two authenticated
// questions automatically through real Postfix, and Dovecot shows each
// original flagged \Answered to another IMAP client. The state directory
// is then deleted (a lost disk), with the watcher's claim id beside the
// database, and the watcher started again: the same mail is in its
// first-start lookback, yet nothing is sent a second time, because the
// mailbox records what was answered. The mail also carries the watcher's
// own done keyword (claims are on by default on Dovecot): the watcher
// knows its own id again (derived from the host and the directory) and
// looks at the mail itself rather than calling it handled elsewhere.
func TestNoSecondReplyAfterStateLoss(t *testing.T) {
	parallel(t)
	_, a := e2e.RequireSenderAuth(t)
	e := newEnv(t, options{Mode: "auto", Model: autoModel})
	e.setAuthservID(a.AuthservID)
	e.seedSent(bobAddr)
	w := e.startWatch()

	start := time.Now()
	var ids []string
	for _, n := range []string{"one", "two"} {
		m := message{From: bobAddr, To: adaAddr, Subject: "Thursday meeting [auto] answered " + n + " " + e.tag, ID: e.id("answered-" + n),
			Body: "Hi Ada,\ncould we meet on Thursday at 3pm instead?\nBob"}
		e.deliverSigned(m, e2e.LocalDomain)
		ids = append(ids, m.ID)
	}
	for _, id := range ids {
		e.waitFind(e2e.Bob, "INBOX", "In-Reply-To", id, 1, waitLong)
	}
	w.waitTerminal(ids, waitShort)
	w.stop()

	// Another IMAP client sees the originals answered.
	for _, id := range ids {
		got := e.find(e2e.Owner, e.box("INBOX"), "Message-ID", id)
		if len(got) != 1 {
			t.Fatalf("INBOX: %d messages with Message-ID %s, want 1", len(got), id)
		}
		if !slices.Contains(got[0].Flags, imap.FlagAnswered) {
			t.Errorf(`%s: flags %v, want \Answered after the reply`, id, got[0].Flags)
		}
	}

	// The state is lost: the whole directory.
	holder, err := os.ReadFile(filepath.Join(e.stateDir, "claim-holder"))
	if err != nil {
		t.Fatalf("the watcher's claim id: %v (claims should be on by default on Dovecot)", err)
	}
	if err := os.RemoveAll(e.stateDir); err != nil {
		t.Fatal(err)
	}
	// A new state directory takes initial_lookback of history: make it
	// cover this test's mail (its own folder holds no other), as a real
	// first start would (24 h).
	e.setLookback(time.Since(start) + time.Minute)
	w2 := e.startWatch()
	w2.waitTerminal(ids, waitLong)
	recs, err := w2.records()
	if err != nil {
		t.Fatalf("records: %v", err)
	}
	w2.stop()
	e.mustRun("watch", "--once")
	e.barrier(e2e.Bob)
	if again, err := os.ReadFile(filepath.Join(e.stateDir, "claim-holder")); err != nil || string(again) != string(holder) {
		t.Errorf("the claim id after the loss: %q (%v), want %q again", again, err, holder)
	}

	for _, id := range ids {
		if got := e.find(e2e.Bob, "INBOX", "In-Reply-To", id); len(got) != 1 {
			t.Errorf("bob's INBOX: %d replies to %s, want exactly 1", len(got), id)
		}
		rs := recs[id]
		if len(rs) != 1 || !strings.Contains(strings.Join(rs[0].Reasons, ";"), "already answered") {
			t.Errorf("record of %s after the loss: %+v, want one, decided \"already answered\"", id, rs)
		}
	}
	st := e.openStore()
	_ = st.ListQueue("", func(q *store.QueueItem) error {
		if slices.Contains(ids, q.MessageID) {
			t.Errorf("queue item %s (%s) for mail already answered", q.ID, q.Status)
		}
		return nil
	})
}
