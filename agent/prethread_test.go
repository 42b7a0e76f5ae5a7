package agent

import (
	"testing"

	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/store"
)

// TestPrethread: a batch prethreaded moves a stored record whose thread
// it merges to the new id (not in a dry run, which writes nothing), and
// an input without a Message-ID adds its links but no message.
func TestPrethread(t *testing.T) {
	t.Parallel()
	for _, dry := range []bool{false, true} {
		p, st, _ := newTestPipeline(t, &recordingModel{}, "review")
		p.DryRun = dry
		a := mail.ThreadInput{MessageID: "a@x", Subject: "plan"}
		oldID, _ := p.Threader.Add(a)
		key := store.MessageKey{Account: "a", Mailbox: "INBOX", UIDValidity: 1, UID: 1}
		if err := st.PutMessage(&store.MessageRecord{MessageKey: key, MessageID: "a@x", ThreadID: oldID, State: store.StateDone}); err != nil {
			t.Fatal(err)
		}
		batch := []mail.ThreadInput{
			{MessageID: "b@x", Subject: "Re: plan", References: []string{"root@x", "a@x"}}, // a@x gains a parent: new thread id
			{Subject: "Re: plan and c", References: []string{"a@x", "c@x"}},                // no Message-ID: links only
			{MessageID: "c@x", Subject: "other"},
		}
		if err := p.Prethread(batch); err != nil {
			t.Fatalf("dry %v: Prethread: %v", dry, err)
		}
		newID := p.Threader.ThreadID("a@x")
		if newID == oldID {
			t.Fatalf("dry %v: thread id of a@x did not change (%s); the test needs a merge", dry, newID)
		}
		if got := p.Threader.ThreadID("c@x"); got != newID {
			t.Errorf("dry %v: c@x in thread %s, want %s (joined by the id-less message's References)", dry, got, newID)
		}
		if got := p.Threader.Len(); got != 3 {
			t.Errorf("dry %v: threader holds %d messages, want 3 (the id-less one adds links only)", dry, got)
		}
		rec, err := st.GetMessage(key)
		if err != nil {
			t.Fatal(err)
		}
		want := newID
		if dry {
			want = oldID
		}
		if rec.ThreadID != want {
			t.Errorf("dry %v: stored record in thread %s, want %s", dry, rec.ThreadID, want)
		}
		// The thread step finds the batch already threaded: no merge.
		if id, merged := p.Threader.Add(batch[0]); id != newID || len(merged) != 0 {
			t.Errorf("dry %v: Add after Prethread: got %s merged %v, want %s and none", dry, id, merged, newID)
		}
	}
}
