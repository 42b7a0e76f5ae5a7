package agent

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/mailagent/mailagent/store"
)

// TestTriageThroughBatchSeesHeldThread: triage writes through a
// store.Batch (outcomes held for a large commit); the next message of a
// thread is still classified with the earlier one as context, though
// that one was not committed yet; and a thread merge of a held record
// (a late reply that links two threads) is not lost.
func TestTriageThroughBatchSeesHeldThread(t *testing.T) {
	model := &recordingModel{class: okClass()}
	p, st, _ := newTestPipeline(t, model, "review")
	p.Actor = nil // as triage runs it: no actions, no journal
	b := store.NewBatch(st, 1000)
	p.Store = b
	ctx := context.Background()

	first := input("Bob <bob@example.org>", "Lunch plans", "ORIGINAL-LUNCH-MARKER: Thursday at noon?")
	out1, err := p.Triage(ctx, first, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.GetMessage(first.Key); err == nil {
		t.Fatal("the first outcome was committed at once: the test shows nothing about held records")
	}
	reply := input("Bob <bob@example.org>", "Re: Lunch plans", "Or Friday?",
		fmt.Sprintf("In-Reply-To: <m%d@example.org>", first.Key.UID))
	out2, err := p.Triage(ctx, reply, false)
	if err != nil {
		t.Fatal(err)
	}
	if out2.Record.ThreadID != out1.Record.ThreadID {
		t.Fatalf("reply in thread %q, original in %q", out2.Record.ThreadID, out1.Record.ThreadID)
	}
	calls := model.calls("intents")
	if len(calls) != 2 {
		t.Fatalf("classify calls: %d, want 2", len(calls))
	}
	if !strings.Contains(calls[1].Prompt, "ORIGINAL-LUNCH-MARKER") {
		t.Error("the reply's prompt lacks the held original as thread context")
	}

	// A message that References both a held record's thread and another
	// thread merges them: the held record moves too.
	other := input("Bob <bob@example.org>", "Budget", "numbers")
	if _, err := p.Triage(ctx, other, false); err != nil {
		t.Fatal(err)
	}
	link := input("Bob <bob@example.org>", "Re: Budget", "both",
		fmt.Sprintf("References: <m%d@example.org> <m%d@example.org>", first.Key.UID, other.Key.UID))
	out4, err := p.Triage(ctx, link, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Flush(); err != nil {
		t.Fatal(err)
	}
	for _, k := range []store.MessageKey{first.Key, reply.Key, other.Key, link.Key} {
		r, err := st.GetMessage(k)
		if err != nil {
			t.Fatalf("uid %d after Flush: %v", k.UID, err)
		}
		if r.State != store.StateDone {
			t.Errorf("uid %d: state %s, want done", k.UID, r.State)
		}
		if r.ThreadID != out4.Record.ThreadID {
			t.Errorf("uid %d: thread %q, want the merged %q", k.UID, r.ThreadID, out4.Record.ThreadID)
		}
	}
}
