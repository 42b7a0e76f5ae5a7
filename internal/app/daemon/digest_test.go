package daemon

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

type fakeDigest struct {
	calls atomic.Int64
	err   error
}

func (f *fakeDigest) RunDue(context.Context) (bool, error) {
	f.calls.Add(1)
	return f.err == nil, f.err
}

// TestDigestLoopAsksAtStart: the watcher asks whether a digest is due as
// soon as it starts (then every minute), and a failing digest neither
// stops it nor panics.
func TestDigestLoopAsksAtStart(t *testing.T) {
	for _, fail := range []error{nil, errors.New("smtp down")} {
		f := &fakeDigest{err: fail}
		d := &Daemon{Digest: f}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- d.digestLoop(ctx) }()
		deadline := time.Now().Add(5 * time.Second)
		for f.calls.Load() == 0 && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		cancel()
		if err := <-done; err != nil {
			t.Errorf("digestLoop (fail=%v): %v", fail, err)
		}
		if f.calls.Load() != 1 {
			t.Errorf("fail=%v: %d calls, want 1 at start", fail, f.calls.Load())
		}
	}
	(&Daemon{}).runDigest(context.Background()) // no digest configured: nothing to do
}
