package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mailagent/mailagent/internal/app/daemon"
	"github.com/mailagent/mailagent/store"
)

// openStore opens the harness's state database (no watcher may run).
func (h *harness) openStore(t *testing.T) *store.Store {
	t.Helper()
	st, err := store.Open(h.dir+"/state/mailagent.db", store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func (h *harness) queue(t *testing.T) []*store.QueueItem {
	t.Helper()
	st := h.openStore(t)
	defer func() { _ = st.Close() }()
	var items []*store.QueueItem
	_ = st.ListQueue("", func(q *store.QueueItem) error { items = append(items, q); return nil })
	return items
}

func TestOwnerReplyResolvesQueueItem(t *testing.T) {
	t.Parallel()
	h := newHarness(t, compromisedModel, "")
	h.deliver(rawMail("Carol <carol@example.org>", "Lunch", "Lunch next week?"))
	if _, stderr, code := h.run("watch", "--once"); code != 0 {
		t.Fatalf("watch: %d %s", code, stderr)
	}
	items := h.queue(t)
	if len(items) != 1 || items[0].Status != store.QueuePending {
		t.Fatalf("queue: got %+v, want one pending draft", items)
	}
	// The owner answers from their own mail client: the reply lands in Sent.
	h.appendTo("Sent", "From: Ada Lovelace <ada@example.com>\nTo: carol@example.org\nSubject: Re: Lunch\n"+
		"Date: Mon, 02 Nov 2026 11:00:00 +0000\nMessage-ID: <own-reply@example.com>\nIn-Reply-To: <lunch@test.example>\n"+
		"References: <lunch@test.example>\n\nSure, Tuesday?\n")
	if _, stderr, code := h.run("watch", "--once"); code != 0 {
		t.Fatalf("watch: %d %s", code, stderr)
	}
	items = h.queue(t)
	if items[0].Status != store.QueueResolved {
		t.Errorf("status: got %s, want resolved", items[0].Status)
	}
	drafts, _ := h.imap.Messages(context.Background(), ownerAddr, "Drafts")
	if len(drafts) != 0 {
		t.Errorf("the IMAP draft was not removed: %d left", len(drafts))
	}
	if n := len(h.smtp.Messages()); n != 0 {
		t.Errorf("sent %d messages, want 0", n)
	}
	// Carol is now a known contact: the owner wrote to her.
	st := h.openStore(t)
	defer func() { _ = st.Close() }()
	if cp, ok, err := st.Checkpoint("personal", daemon.SentCheckpoint); err != nil || !ok || cp.LastUID != 1 {
		t.Errorf("Sent checkpoint: got %+v ok=%v err=%v, want last uid 1", cp, ok, err)
	}
	c, err := st.GetContact("personal", "carol@example.org")
	if err != nil || !c.Known {
		t.Errorf("carol known: got %+v, %v", c, err)
	}
}

func TestSendDelayAndCancel(t *testing.T) {
	t.Parallel()
	h := newHarness(t, compromisedModel, autoPolicy+"send_delay = \"1h\"\n")
	h.appendTo("Sent", "From: Ada <ada@example.com>\nTo: bob@example.org\nSubject: hi\nDate: Mon, 02 Nov 2026 09:00:00 +0000\nMessage-ID: <s1@example.com>\n\nhi\n")
	h.deliver(rawMail("Bob <bob@example.org>", "Call on Thursday", "Can we move our call to Thursday 3pm?"))
	h.deliver(rawMail("Bob <bob@example.org>", "Call on Friday", "Or Friday 3pm?"))
	if _, stderr, code := h.run("watch", "--once"); code != 0 {
		t.Fatalf("watch: %d %s", code, stderr)
	}
	if n := len(h.smtp.Messages()); n != 0 {
		t.Fatalf("sent %d before the delay ran out", n)
	}
	st := h.openStore(t)
	var scheduled []*store.OutboxRecord
	_ = st.ListOutbox(store.OutboxScheduled, func(r *store.OutboxRecord) error { scheduled = append(scheduled, r); return nil })
	_ = st.Close()
	if len(scheduled) != 2 {
		t.Fatalf("scheduled: got %d, want 2", len(scheduled))
	}
	for _, r := range scheduled {
		if d := time.Until(r.SendAt); d < 50*time.Minute || d > time.Hour {
			t.Errorf("send_at in %s, want about 1h", d)
		}
	}
	// Cancel one: it goes back to the queue as a draft.
	if _, stderr, code := h.run("queue", "cancel", scheduled[0].ID); code != 0 {
		t.Fatalf("cancel: %d %s", code, stderr)
	}
	if _, stderr, code := h.run("queue", "cancel", scheduled[0].ID); code != ExitUsage || !strings.Contains(stderr, "cancelled") {
		t.Errorf("second cancel: got %d %q, want a usage error saying it is cancelled", code, stderr)
	}
	items := h.queue(t)
	if len(items) != 1 || items[0].Status != store.QueuePending || items[0].Draft == "" {
		t.Fatalf("queue after cancel: %+v", items)
	}
	// When the delay is over the other one goes out, once.
	st = h.openStore(t)
	_, err := st.TransitionOutbox(scheduled[1].ID, []string{store.OutboxScheduled}, store.OutboxScheduled, func(r *store.OutboxRecord) error {
		r.SendAt = time.Now().Add(-time.Second)
		return nil
	})
	_ = st.Close()
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, stderr, code := h.run("watch", "--once"); code != 0 {
			t.Fatalf("watch: %d %s", code, stderr)
		}
	}
	if n := len(h.smtp.Messages()); n != 1 {
		t.Errorf("sent %d, want 1 (the uncancelled one, once)", n)
	}
}
