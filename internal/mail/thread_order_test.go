package mail

import (
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/mailagent/mailagent/internal/rig/testsize"
)

// TestThreaderPartitionAnyOrderConcurrent feeds the SpamAssassin ham in
// many random orders (12; testsize: 2 under -race), each through
// concurrent workers, and requires the same partition and the same thread
// id for every message as one sequential pass: the partition is a
// function of the set alone.
func TestThreaderPartitionAnyOrderConcurrent(t *testing.T) {
	t.Parallel()
	inputs := hamInputs(t)
	ref := NewThreader()
	for _, x := range inputs {
		ref.Add(x)
	}
	want := partition(ref)
	orders, workers := testsize.N(12, 2), 6
	differ := 0
	for seed := range uint64(orders) {
		rng := rand.New(rand.NewPCG(seed, 26))
		order := rng.Perm(len(inputs))
		th := NewThreader()
		next := make(chan int)
		var wg sync.WaitGroup
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range next {
					th.Add(inputs[i])
				}
			}()
		}
		for _, i := range order {
			next <- i
		}
		close(next)
		wg.Wait()
		if got := partition(th); got != want {
			differ++
			t.Errorf("order %d: partition differs from the sequential pass", seed)
			continue
		}
		for _, x := range inputs {
			if got, exp := th.ThreadID(x.MessageID), ref.ThreadID(x.MessageID); got != exp {
				t.Fatalf("order %d: ThreadID(%q) got %q, want %q", seed, x.MessageID, got, exp)
			}
		}
	}
	t.Logf("%d messages, %d random orders through %d workers: %d partitions differ", len(inputs), orders, workers, differ)
}

// TestThreaderLink: Link adds a message's links without the message, so
// a message whose id is only known from its body can be prethreaded; the
// later Add of that message reports no merge and the partition is the
// one Add alone gives.
func TestThreaderLink(t *testing.T) {
	t.Parallel()
	bridge := ThreadInput{Subject: "Re: both", References: []string{"a@x", "c@x"}}
	full := ThreadInput{MessageID: "synth-1@mailagent.invalid", Subject: "Re: both", References: []string{"a@x", "c@x"}}
	base := []ThreadInput{in("a@x", "one"), in("b@x", "Re: one", "a@x"), in("c@x", "two"), in("d@x", "Re: two", "c@x")}

	alone := NewThreader()
	for _, x := range append(slices.Clone(base), full) {
		alone.Add(x)
	}

	th := NewThreader()
	for _, x := range base {
		th.Add(x)
	}
	var wantMerged []string
	for _, id := range []string{"a@x", "d@x"} {
		wantMerged = append(wantMerged, th.ThreadID(id))
	}
	tid, merged := th.Link(bridge)
	if tid != th.ThreadID("a@x") || tid != th.ThreadID("d@x") {
		t.Errorf("Link: got thread %q, want the joined thread of a@x and d@x (%q, %q)", tid, th.ThreadID("a@x"), th.ThreadID("d@x"))
	}
	wantMerged = slices.DeleteFunc(wantMerged, func(id string) bool { return id == tid })
	if !slices.Equal(merged, wantMerged) || len(merged) != 1 {
		t.Errorf("Link: got merged %q, want %q (the one thread id it replaced)", merged, wantMerged)
	}
	if got := th.Len(); got != 4 {
		t.Errorf("Len after Link: got %d, want 4 (Link adds no message)", got)
	}
	if _, total := th.Members("a@x", 0); total != 4 {
		t.Errorf("Members after Link: got %d messages, want 4", total)
	}
	tid2, merged2 := th.Add(full)
	if tid2 != tid || len(merged2) != 0 {
		t.Errorf("Add after Link: got thread %q merged %q, want %q and no merge", tid2, merged2, tid)
	}
	if got, want := partition(th), partition(alone); got != want {
		t.Errorf("partition: got %q, want %q (as with Add alone)", got, want)
	}
	if got, want := th.ThreadID("a@x"), alone.ThreadID("a@x"); got != want {
		t.Errorf("thread id: got %q, want %q (as with Add alone)", got, want)
	}
	if tid, merged := th.Link(ThreadInput{Subject: "no links"}); tid != "" || merged != nil {
		t.Errorf("Link with no parent ids: got %q %q, want nothing", tid, merged)
	}
}
