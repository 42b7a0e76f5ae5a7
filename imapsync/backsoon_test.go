package imapsync

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mailagent/mailagent/internal/retry"
)

// TestDefaultReconnectWaitsStayShort: with the default bounds, the first
// wait after a lost connection is a fraction of a second and no wait of
// a long outage (30 attempts) is longer than DefaultMaxBackoff plus its
// jitter, so mail is handled within seconds of the server's return. The
// old bounds (1s to 5 minutes) reach 95 s after seven failures: the
// control.
func TestDefaultReconnectWaitsStayShort(t *testing.T) {
	longest := func(lo, hi time.Duration) (first, top time.Duration) {
		bo := retry.Jittered(lo, hi)
		for i := range 30 {
			w := bo.NextBackOff()
			if i == 0 {
				first = w
			}
			top = max(top, w)
		}
		return first, top
	}
	first, top := longest(DefaultMinBackoff, DefaultMaxBackoff)
	if first > DefaultMinBackoff*3/2 || top > DefaultMaxBackoff*3/2 || top > 5*time.Second {
		t.Errorf("default waits: first %v, longest %v; want at most %v and %v (and under 5s)", first, top, DefaultMinBackoff*3/2, DefaultMaxBackoff*3/2)
	}
	if _, old := longest(time.Second, 5*time.Minute); old < 60*time.Second {
		t.Errorf("control: the old bounds' longest wait %v, want over a minute", old)
	}
}

// TestWatcherBackAfterOutage: a server that refuses connections for four
// attempts and then comes back is reached on the next attempt, with the
// default (zero) backoff bounds: every wait reported through OnRetry is
// within the default bounds, and the mail waiting on the server is
// handled.
func TestWatcherBackAfterOutage(t *testing.T) {
	ts := startServer(t, serverConfig{})
	uid := ts.add(t, "INBOX", textMessage("waiting", "<back@x>", "x"), time.Time{})
	var down atomic.Bool
	down.Store(true)
	var refused atomic.Int32
	up := dialer(ts, nil, nil)
	var mu sync.Mutex
	var waits []time.Duration
	w := &Watcher{
		Dial: func(ctx context.Context) (*Client, error) {
			if down.Load() {
				if refused.Add(1) >= 4 {
					down.Store(false) // back for the next attempt
				}
				return nil, errors.New("connect: connection refused")
			}
			return up(ctx)
		},
		Mailbox: "INBOX",
		OnRetry: func(_ error, wait time.Duration) {
			mu.Lock()
			waits = append(waits, wait)
			mu.Unlock()
		},
	}
	rec := newRecorder()
	stop := runWatcher(t, w, rec.sync)
	rec.waitFor(t, uid)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(waits) != 4 {
		t.Errorf("%d waits %v, want 4: the attempt after the server came back must connect", len(waits), waits)
	}
	for i, wt := range waits {
		if wt > DefaultMaxBackoff*3/2 || (i == 0 && wt > DefaultMinBackoff*3/2) {
			t.Errorf("wait %d is %v: over the default bounds", i+1, wt)
		}
	}
}
