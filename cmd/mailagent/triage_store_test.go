package main

import (
	"io"
	"strings"
	"testing"

	"github.com/mailagent/mailagent/store"
)

// TestTriageStoreSkipsPerCommitSync: triage (re-runnable) opens the state
// database without an fsync per commit, closing it syncs and reports no
// error, and the results are there for the next (durable) open, as watch
// opens it. A dry run stays read-only.
func TestTriageStoreSkipsPerCommitSync(t *testing.T) {
	h := newHarness(t, classifyReply, "")
	h.deliver(rawMail("Bob <bob@example.org>", "Quick question", "What time is the meeting?"))
	h.deliver(rawMail("News <news@lists.example.org>", "Weekly digest", "Top stories", "List-Id: <digest.lists.example.org>"))

	f := newFactory(strings.NewReader(""), io.Discard, io.Discard)
	f.ConfigPath = h.cfgPath
	defer f.Close()
	ps, closeStore, err := openPipelineStore(f, false)
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
	defer w.Close()
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
