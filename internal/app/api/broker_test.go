package api

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// collect reads n sequenced events.
func collect(t *testing.T, ch <-chan Sequenced, n int) []Sequenced {
	t.Helper()
	var out []Sequenced
	for range n {
		s, ok := recv(t, ch)
		if !ok {
			t.Fatalf("channel closed after %d events, want %d", len(out), n)
		}
		out = append(out, s)
	}
	return out
}

func noMore(t *testing.T, ch <-chan Sequenced) {
	t.Helper()
	select {
	case s, ok := <-ch:
		t.Fatalf("got %+v, %v, want nothing more", s, ok)
	default:
	}
}

func TestBrokerSequence(t *testing.T) {
	t.Parallel()
	b := &Broker{Epoch: "e1"}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if got := b.Position(); got != "e1-0" {
		t.Errorf("position before any event: got %q, want e1-0", got)
	}
	ch, pos := b.SubscribeFrom(ctx, "")
	if pos != "e1-0" {
		t.Errorf("subscribe position: got %q, want e1-0", pos)
	}
	for i := range 5 {
		b.Publish(ev(i))
	}
	for i, s := range collect(t, ch, 5) {
		if s.Epoch != "e1" || s.Seq != uint64(i+1) || s.Event != ev(i) {
			t.Errorf("event %d: got %+v, want e1 seq %d %+v", i, s, i+1, ev(i))
		}
		if want := fmt.Sprintf("e1-%d", i+1); s.ID() != want {
			t.Errorf("id: got %q, want %q", s.ID(), want)
		}
	}
	if got := b.Position(); got != "e1-5" {
		t.Errorf("position: got %q, want e1-5", got)
	}
	// A random epoch when none is set, different per broker.
	b1, b2 := &Broker{}, &Broker{}
	if p1, p2 := b1.Position(), b2.Position(); p1 == p2 || len(p1) < 10 {
		t.Errorf("random epochs: got %q and %q, want two different ids", p1, p2)
	}
}

func TestBrokerResume(t *testing.T) {
	t.Parallel()
	b := &Broker{Epoch: "e1", Ring: 8, Buffer: 16}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for i := range 20 {
		b.Publish(ev(i)) // seq 1..20; the ring holds 13..20
	}
	tests := []struct {
		name      string
		last      string
		wantFirst uint64 // first replayed seq; 0: none
		reset     bool
	}{
		{"up to date", "e1-20", 0, false},
		{"one missed", "e1-19", 20, false},
		{"oldest in the ring", "e1-12", 13, false},
		{"older than the ring", "e1-11", 0, true},
		{"another epoch", "e0-20", 0, true},
		{"from the future", "e1-21", 0, true},
		{"malformed", "nonsense", 0, true},
		{"bad seq", "e1-x", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ch, _ := b.SubscribeFrom(ctx, tt.last)
			switch {
			case tt.reset:
				s := collect(t, ch, 1)[0]
				if s.Event.Kind != EventReset || s.ID() != "e1-20" {
					t.Errorf("got %+v, want a reset at e1-20", s)
				}
			case tt.wantFirst > 0:
				got := collect(t, ch, int(20-tt.wantFirst+1))
				for i, s := range got {
					if want := tt.wantFirst + uint64(i); s.Seq != want || s.Event != ev(int(want)-1) {
						t.Errorf("replay %d: got %+v, want seq %d", i, s, want)
					}
				}
			}
			noMore(t, ch)
			// Live events follow the replay.
			b.Publish(ev(99))
			if s := collect(t, ch, 1)[0]; s.Event != ev(99) {
				t.Errorf("live after replay: got %+v, want %+v", s, ev(99))
			}
		})
		// Each subtest published one more event: keep the table's
		// positions true by starting again.
		b = &Broker{Epoch: "e1", Ring: 8, Buffer: 16}
		for i := range 20 {
			b.Publish(ev(i))
		}
	}
}

// TestBrokerResumeBeyondBuffer: more missed events than a subscriber's
// buffer is a reset, even when the ring still has them.
func TestBrokerResumeBeyondBuffer(t *testing.T) {
	t.Parallel()
	b := &Broker{Epoch: "e1", Ring: 100, Buffer: 4}
	for i := range 10 {
		b.Publish(ev(i))
	}
	ch, _ := b.SubscribeFrom(context.Background(), "e1-5")
	if s := collect(t, ch, 1)[0]; s.Event.Kind != EventReset || s.Seq != 10 {
		t.Errorf("got %+v, want a reset at 10", s)
	}
	ch, _ = b.SubscribeFrom(context.Background(), "e1-6")
	if got := collect(t, ch, 4); got[0].Seq != 7 || got[3].Seq != 10 {
		t.Errorf("got %+v, want 7..10", got)
	}
	b.Close()
}

// TestBrokerSlowClientGap: a subscriber that falls behind gets a reset at
// the position of the event that overflowed, then the later events; the
// publisher never waits for it.
func TestBrokerSlowClientGap(t *testing.T) {
	t.Parallel()
	b := &Broker{Epoch: "e1", Buffer: 3}
	slow, _ := b.SubscribeFrom(context.Background(), "")
	fast, _ := b.SubscribeFrom(context.Background(), "")
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 5 {
			b.Publish(ev(i))
			<-fast // the fast one keeps up
		}
	}()
	select {
	case <-done:
	case <-time.After(waitLimit):
		t.Fatal("Publish blocked on a slow subscriber")
	}
	// 1,2,3 filled the buffer; 4 overflowed (reset at 4); then 5.
	got := collect(t, slow, 2)
	if got[0].Event.Kind != EventReset || got[0].Seq != 4 {
		t.Errorf("first: got %+v, want a reset at seq 4", got[0])
	}
	if got[1].Seq != 5 || got[1].Event != ev(4) {
		t.Errorf("second: got %+v, want seq 5", got[1])
	}
	noMore(t, slow)
	// A client resuming after the reset's id misses nothing.
	again, _ := b.SubscribeFrom(context.Background(), got[0].ID())
	if s := collect(t, again, 1)[0]; s.Seq != 5 {
		t.Errorf("resume after reset: got %+v, want seq 5", s)
	}
	b.Close()
}

// TestBrokerEpochChange: a subscriber of a restarted watcher (a new
// Broker with another epoch) that resumes with the old id is reset.
func TestBrokerEpochChange(t *testing.T) {
	t.Parallel()
	old := &Broker{}
	old.Publish(ev(1))
	last := old.Position()
	old.Close()
	restarted := &Broker{}
	ch, pos := restarted.SubscribeFrom(context.Background(), last)
	s := collect(t, ch, 1)[0]
	if s.Event.Kind != EventReset || s.ID() != pos || s.Epoch == "" || pos == last {
		t.Errorf("got %+v (position %s, old %s), want a reset at the new position", s, pos, last)
	}
	// Publish after Close is a no-op and does not move the position.
	old.Publish(ev(2))
	if old.Position() != last {
		t.Errorf("position after Close: got %s, want %s", old.Position(), last)
	}
	restarted.Close()
	drainClosed(t, ch)
}
