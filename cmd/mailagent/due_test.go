package main

import (
	"testing"
	"time"

	"github.com/mailagent/mailagent/store"
)

// A running watcher's timer sleeps until the next due time: an auto-reply
// held by policy.send_delay (2 s) goes out within 1 s of its SendAt,
// through the real pipeline (IMAP in, the scheduled outbox record and its
// event, SMTP out), not at the timer's 60 s cap.
func TestRunningWatcherSendsDelayedReplyOnTime(t *testing.T) {
	t.Parallel() // waits out real undo windows; shares nothing
	h := newHarness(t, compromisedModel, autoPolicy+"send_delay = \"2s\"\n")
	h.appendTo("Sent", "From: Ada <ada@example.com>\nTo: bob@example.org\nSubject: hi\nDate: Mon, 02 Nov 2026 09:00:00 +0000\nMessage-ID: <s1@example.com>\n\nhi\n")
	// The Sent scan that makes Bob known runs before new mail is handled.
	if _, stderr, code := h.run("watch", "--once"); code != 0 {
		t.Fatalf("watch --once: %d %s", code, stderr)
	}
	d := h.runDaemon(t, nil)
	h.deliver(rawMail("Bob <bob@example.org>", "Call on Thursday", "Can we move our call to Thursday 3pm?"))
	var sched *store.OutboxRecord
	eventually(t, "the reply scheduled", func() bool {
		_ = d.Store.ListOutbox(store.OutboxScheduled, func(r *store.OutboxRecord) error { sched = r; return nil })
		return sched != nil
	})
	if n := len(h.smtp.Messages()); n != 0 {
		t.Fatalf("sent %d before the delay ran out", n)
	}
	eventually(t, "the delayed reply sent", func() bool { return len(h.smtp.Messages()) == 1 })
	late := time.Since(sched.SendAt)
	if late < 0 || late > time.Second {
		t.Errorf("sent %v after its SendAt, want within 1s", late)
	}
}
