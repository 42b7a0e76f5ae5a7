package mail

import (
	"errors"
	"fmt"
	"testing"
)

// Defect 7: the threader of a long-running watcher grew without bound.
// Rebuild replaces its contents by a window, keeps thread ids of threads
// whose root is still referenced, and loses nothing added meanwhile.
func TestThreaderRebuildBoundsAndKeepsIDs(t *testing.T) {
	t.Parallel()
	var all []ThreadInput
	// 100 threads of 10 messages; each reply references its root and parent.
	for th := range 100 {
		root := fmt.Sprintf("r%d@x", th)
		all = append(all, ThreadInput{MessageID: root, Subject: fmt.Sprintf("topic %d", th)})
		prev := root
		for i := 1; i < 10; i++ {
			id := fmt.Sprintf("r%d.%d@x", th, i)
			all = append(all, ThreadInput{MessageID: id, References: []string{root, prev}, Subject: fmt.Sprintf("Re: topic %d", th)})
			prev = id
		}
	}
	tr := NewThreader()
	for _, in := range all {
		tr.Add(in)
	}
	if got := tr.Len(); got != len(all) {
		t.Fatalf("Len: got %d, want %d", got, len(all))
	}
	before := map[string]string{}
	for _, in := range all {
		before[in.MessageID] = tr.ThreadID(in.MessageID)
	}

	const keep = 250 // the newest messages: the window
	late := ThreadInput{MessageID: "late@x", References: []string{"r99@x"}, Subject: "Re: topic 99"}
	err := tr.Rebuild(func(add func(ThreadInput)) error {
		tr.Add(late) // a message arriving while the window loads
		for _, in := range all[len(all)-keep:] {
			add(in)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Rebuild: %v", err)
	}
	if got := tr.Len(); got != keep+1 {
		t.Errorf("Len after Rebuild: got %d, want %d (the window plus the late message)", got, keep+1)
	}
	for _, in := range all[:len(all)-keep-10] {
		if got := tr.ThreadID(in.MessageID); got != "" {
			t.Fatalf("%s outside the window is still held (thread %s)", in.MessageID, got)
		}
	}
	for _, in := range all[len(all)-keep:] {
		if got := tr.ThreadID(in.MessageID); got != before[in.MessageID] {
			t.Errorf("%s: thread %s after Rebuild, %s before", in.MessageID, got, before[in.MessageID])
		}
	}
	if got, want := tr.ThreadID("late@x"), before["r99@x"]; got != want {
		t.Errorf("the message added during Rebuild: thread %q, want %q", got, want)
	}
	// A reply to an evicted thread still joins it through its root id.
	id, _ := tr.Add(ThreadInput{MessageID: "new@x", References: []string{"r3@x"}, Subject: "Re: topic 3"})
	if id != before["r3@x"] {
		t.Errorf("reply to an evicted thread: %s, want %s", id, before["r3@x"])
	}
}

func TestThreaderRebuildFailureKeepsContents(t *testing.T) {
	t.Parallel()
	tr := NewThreader()
	tr.Add(ThreadInput{MessageID: "a@x", Subject: "a"})
	boom := errors.New("store closed")
	if err := tr.Rebuild(func(add func(ThreadInput)) error {
		add(ThreadInput{MessageID: "b@x"})
		return boom
	}); !errors.Is(err, boom) {
		t.Fatalf("Rebuild: got %v, want %v", err, boom)
	}
	if tr.ThreadID("a@x") == "" || tr.ThreadID("b@x") != "" || tr.Len() != 1 {
		t.Errorf("a failed Rebuild changed the contents")
	}
	// Concurrent rebuilds are refused, not interleaved.
	err := tr.Rebuild(func(func(ThreadInput)) error {
		if err := tr.Rebuild(func(func(ThreadInput)) error { return nil }); !errors.Is(err, ErrRebuilding) {
			t.Errorf("nested Rebuild: got %v, want ErrRebuilding", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
