package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/mailagent/mailagent/internal/llm/geminitest"
	"github.com/mailagent/mailagent/store"
)

// TestTriageStoreSkipsPerCommitSync: triage (re-runnable) opens the state
// database without an fsync per commit, closing it syncs and reports no
// error, and the results are there for the next (durable) open, as watch
// opens it. A dry run stays read-only.
func TestTriageStoreSkipsPerCommitSync(t *testing.T) {
	t.Parallel()
	h := newHarness(t, classifyReply, "")
	h.deliver(rawMail("Bob <bob@example.org>", "Quick question", "What time is the meeting?"))
	h.deliver(rawMail("News <news@lists.example.org>", "Weekly digest", "Top stories", "List-Id: <digest.lists.example.org>"))

	f := newFactory(strings.NewReader(""), io.Discard, io.Discard)
	f.ConfigPath = h.cfgPath
	defer f.Close()
	ps, closeStore, err := openPipelineStore(context.Background(), f, false)
	if err != nil {
		t.Fatal(err)
	}
	st, ok := ps.(*store.Store)
	if !ok {
		t.Fatalf("triage store: got %T, want *store.Store (no watcher runs)", ps)
	}
	if st.Durable() {
		t.Error("triage store: Durable() = true, want false (no fsync per commit)")
	}
	if err := closeStore(); err != nil {
		t.Fatalf("closing the triage store (final sync): %v", err)
	}

	if _, stderr, code := h.run("triage"); code != ExitOK {
		t.Fatalf("triage: exit %d\n%s", code, stderr)
	}
	w, err := f.OpenStore(false) // what watch opens
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = w.Close() }()
	if !w.Durable() {
		t.Error("watch's store: Durable() = false, want true")
	}
	n := 0
	if err := w.ListMessages(store.MessageFilter{}, func(r *store.MessageRecord) error {
		if r.State != store.StateDone {
			t.Errorf("%s: state %s, want done", r.Subject, r.State)
		}
		n++
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Fatalf("records after triage: got %d, want 2", n)
	}
}

// TestTriageInterruptClosesAndSyncsTheStore: an interrupted triage (the
// context is cancelled by the model's first call, as Ctrl-C would) still
// closes its store, so the file is unlocked, whole, and holds what was
// finished; running triage again completes the rest.
func TestTriageInterruptClosesAndSyncsTheStore(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var once sync.Once
	h := newHarness(t, func(req *geminitest.Request) geminitest.Reply {
		once.Do(cancel)
		return classifyReply(req)
	}, "")
	const n = 12
	for i := range n {
		h.deliver(rawMail(fmt.Sprintf("Bob <bob%d@example.org>", i), fmt.Sprintf("Question %d", i), "What time is the meeting?"))
	}
	f := newFactory(strings.NewReader(""), io.Discard, io.Discard)
	f.ConfigPath = h.cfgPath
	defer f.Close()
	err := triageRun(ctx, f, &TriageOptions{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted triage: got %v, want context.Canceled", err)
	}
	st, err := f.OpenStore(false)
	if err != nil {
		t.Fatalf("the store after an interrupted triage: %v (not closed?)", err)
	}
	if err := st.Check(); err != nil {
		t.Fatalf("the store after an interrupted triage is damaged: %v", err)
	}
	done := 0
	if err := st.ListMessages(store.MessageFilter{}, func(*store.MessageRecord) error { done++; return nil }); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if done >= n {
		t.Fatalf("records after the interrupt: got %d, want fewer than %d (the interrupt came too late to test anything)", done, n)
	}
	stdout, stderr, code := h.run("triage", "--json")
	if code != ExitOK {
		t.Fatalf("triage again: exit %d\n%s", code, stderr)
	}
	if got := len(decodeLines(t, stdout)); got != n {
		t.Fatalf("second triage: got %d messages, want %d", got, n)
	}
}
