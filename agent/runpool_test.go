package agent

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
)

// TestRunPoolRunsEveryItemWithinTheBound: every item fetched is worked on
// once, by at most concurrency workers at a time.
func TestRunPoolRunsEveryItemWithinTheBound(t *testing.T) {
	t.Parallel()
	const n, conc = 500, 3
	var mu sync.Mutex
	seen := map[int]int{}
	var running, peak atomic.Int32
	err := RunPool(context.Background(), conc, func(ctx context.Context, send func(int) error) error {
		for i := range n {
			if err := send(i); err != nil {
				return err
			}
		}
		return nil
	}, func(ctx context.Context, i int) error {
		r := running.Add(1)
		defer running.Add(-1)
		for {
			p := peak.Load()
			if r <= p || peak.CompareAndSwap(p, r) {
				break
			}
		}
		mu.Lock()
		seen[i]++
		mu.Unlock()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != n {
		t.Errorf("worked on %d items, want %d", len(seen), n)
	}
	for i, c := range seen {
		if c != 1 {
			t.Errorf("item %d worked on %d times", i, c)
		}
	}
	if p := peak.Load(); p > conc {
		t.Errorf("%d workers at once, want at most %d", p, conc)
	}
}

// TestRunPoolStopsOnTheFirstError: a worker's error stops the fetch (its
// send fails) and is the result; so is a fetch error.
func TestRunPoolStopsOnTheFirstError(t *testing.T) {
	t.Parallel()
	bad := errors.New("bad item")
	err := RunPool(context.Background(), 2, func(ctx context.Context, send func(int) error) error {
		for i := 0; ; i++ {
			if err := send(i); err != nil {
				return err
			}
		}
	}, func(ctx context.Context, i int) error {
		if i == 10 {
			return bad
		}
		return nil
	})
	if !errors.Is(err, bad) {
		t.Fatalf("got %v, want the worker's error", err)
	}
	// The fetch above never ends by itself: returning at all shows the
	// failure stopped it.
	fetchErr := errors.New("fetch failed")
	var worked atomic.Int32
	err = RunPool(context.Background(), 0, func(ctx context.Context, send func(int) error) error {
		if err := send(1); err != nil {
			return err
		}
		return fetchErr
	}, func(ctx context.Context, i int) error {
		worked.Add(1)
		return nil
	})
	if !errors.Is(err, fetchErr) {
		t.Errorf("got %v, want the fetch error", err)
	}
	if worked.Load() > 1 {
		t.Errorf("worked on %d items, want at most the one sent", worked.Load())
	}
}

// TestRunPoolEndsWithItsContext: a cancelled context ends a fetch that
// blocks in send.
func TestRunPoolEndsWithItsContext(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	err := RunPool(ctx, 1, func(ctx context.Context, send func(int) error) error {
		for i := 0; ; i++ {
			if err := send(i); err != nil {
				return err
			}
		}
	}, func(ctx context.Context, i int) error {
		if i == 5 {
			cancel()
			<-ctx.Done()
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("got %v, want context.Canceled", err)
	}
}
