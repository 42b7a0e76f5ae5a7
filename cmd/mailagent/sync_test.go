package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mailagent/mailagent/store"
)

func (h *harness) appendAt(t *testing.T, mailbox, raw string, date time.Time) {
	t.Helper()
	raw = strings.ReplaceAll(raw, "\n", "\r\n")
	if _, err := h.imap.Append(context.Background(), ownerAddr, mailbox, []byte(raw), nil, date); err != nil {
		t.Fatal(err)
	}
}

func (h *harness) states(t *testing.T) map[string]store.State {
	t.Helper()
	st := h.openStore(t)
	defer func() { _ = st.Close() }()
	out := map[string]store.State{}
	_ = st.ListMessages(store.MessageFilter{}, func(r *store.MessageRecord) error {
		out[r.Subject] = r.State
		return nil
	})
	return out
}

func TestFirstStartTakesOnlyTheLookback(t *testing.T) {
	t.Parallel()
	h := newHarness(t, compromisedModel, "[sync]\ninitial_lookback = \"48h\"\n")
	h.appendAt(t, "INBOX", rawMail("Bob <bob@example.org>", "Ancient", "from last year"), time.Now().AddDate(-1, 0, 0))
	h.appendAt(t, "INBOX", rawMail("Bob <bob@example.org>", "Last week", "old"), time.Now().AddDate(0, 0, -7))
	h.appendAt(t, "INBOX", rawMail("Bob <bob@example.org>", "Yesterday", "recent"), time.Now().Add(-20*time.Hour))
	if _, stderr, code := h.run("watch", "--once"); code != 0 {
		t.Fatalf("watch: %d %s", code, stderr)
	}
	got := h.states(t)
	if len(got) != 1 || got["Yesterday"] != store.StateDone {
		t.Fatalf("first start processed %v, want only Yesterday", got)
	}
	// Later mail is taken; the old mail stays untouched.
	h.deliver(rawMail("Bob <bob@example.org>", "Today", "new"))
	if _, stderr, code := h.run("watch", "--once"); code != 0 {
		t.Fatalf("watch: %d %s", code, stderr)
	}
	got = h.states(t)
	if len(got) != 2 || got["Today"] != store.StateDone {
		t.Errorf("second run: got %v, want Yesterday and Today", got)
	}
}

func TestUIDValidityChangeRescansWithoutRepeats(t *testing.T) {
	t.Parallel()
	h := newHarness(t, compromisedModel, "")
	one := rawMail("Carol <carol@example.org>", "One", "first")
	two := rawMail("Carol <carol@example.org>", "Two", "second")
	h.deliver(one)
	h.deliver(two)
	if _, stderr, code := h.run("watch", "--once"); code != 0 {
		t.Fatalf("watch: %d %s", code, stderr)
	}
	calls := len(h.gemini.Requests())
	if n := len(h.queue(t)); n != 2 {
		t.Fatalf("queue: got %d, want 2", n)
	}
	// The server loses its UIDs (a restore): same messages, new UIDVALIDITY,
	// plus one that is really new.
	ctx := context.Background()
	if err := h.imap.Recreate(ctx, ownerAddr, "INBOX"); err != nil {
		t.Skipf("the in-memory server cannot recreate INBOX: %v", err)
	}
	h.deliver(one)
	h.deliver(two)
	h.deliver(rawMail("Carol <carol@example.org>", "Three", "third"))
	if _, stderr, code := h.run("watch", "--once"); code != 0 {
		t.Fatalf("watch: %d %s", code, stderr)
	}
	// Only "Three" cost model calls (classify + draft) and made a new item.
	if got := len(h.gemini.Requests()) - calls; got != 2 {
		t.Errorf("model calls after the rescan: got %d, want 2 (only the new message)", got)
	}
	if n := len(h.queue(t)); n != 3 {
		t.Errorf("queue: got %d items, want 3", n)
	}
}

func TestWatchActsOnMailTriagedBefore(t *testing.T) {
	t.Parallel()
	h := newHarness(t, compromisedModel, "")
	h.deliver(rawMail("Carol <carol@example.org>", "Lunch", "Lunch next week?"))
	if _, stderr, code := h.run("triage"); code != 0 {
		t.Fatalf("triage: %d %s", code, stderr)
	}
	if n := len(h.queue(t)); n != 0 {
		t.Fatalf("triage queued %d items; it must not act", n)
	}
	if _, stderr, code := h.run("watch", "--once"); code != 0 {
		t.Fatalf("watch: %d %s", code, stderr)
	}
	items := h.queue(t)
	if len(items) != 1 || items[0].Subject != "Lunch" || items[0].Draft == "" {
		t.Fatalf("after watch: got %+v, want Carol's draft queued", items)
	}
	// And only once.
	if _, stderr, code := h.run("watch", "--once"); code != 0 {
		t.Fatalf("watch: %d %s", code, stderr)
	}
	if n := len(h.queue(t)); n != 1 {
		t.Errorf("queue after a second watch: %d items, want 1", n)
	}
}
