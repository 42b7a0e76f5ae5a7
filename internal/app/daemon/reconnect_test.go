package daemon_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mailagent/mailagent/imapsync"
	"github.com/mailagent/mailagent/internal/app/api/apitest"
)

// lockedBuffer is a log sink the watcher goroutines may write to.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestReconnectShowsNextTryAndSaysBack: while the IMAP server refuses
// connections, the account's status is reconnecting with the time of the
// next try; once the server is back, the next try connects, the status
// clears it and the log says the connection is back.
func TestReconnectShowsNextTryAndSaysBack(t *testing.T) {
	t.Parallel()
	w := apitest.NewWorld(t)
	d := w.Daemon
	var logs lockedBuffer
	d.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	var down atomic.Bool
	down.Store(true)
	for i := range d.Accounts {
		dial := d.Accounts[i].Dial
		d.Accounts[i].Dial = func(ctx context.Context) (*imapsync.Client, error) {
			if down.Load() {
				return nil, errors.New("dial tcp 127.0.0.1:143: connect: connection refused")
			}
			return dial(ctx)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx, false) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	waitUntil := func(what string, ok func() bool) {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for !ok() {
			if time.Now().After(deadline) {
				t.Fatalf("never: %s; status %+v\n%s", what, d.Statuses(), logs.String())
			}
			time.Sleep(20 * time.Millisecond) // polling the watcher's state, nothing asserted on time
		}
	}
	waitUntil("reconnecting with a next try", func() bool {
		for _, s := range d.Statuses() {
			if s.State == "reconnecting" && !s.RetryAt.IsZero() && time.Until(s.RetryAt) <= 5*time.Second {
				return true
			}
		}
		return false
	})
	down.Store(false)
	waitUntil("the connection is back in the log", func() bool { return strings.Contains(logs.String(), "imap connection back") })
	waitUntil("the next try cleared", func() bool {
		for _, s := range d.Statuses() {
			if !s.RetryAt.IsZero() || s.State == "reconnecting" {
				return false
			}
		}
		return true
	})
}
