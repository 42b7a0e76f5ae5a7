package actions

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mailagent/mailagent/internal/app/api"
	"github.com/mailagent/mailagent/internal/app/apperr"
	"github.com/mailagent/mailagent/store"
)

// TestCountdownRoundsUp: an undo-window line never promises less time than
// is left, and under load 0.9s left of a 1s window still reads "1s".
func TestCountdownRoundsUp(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want time.Duration }{
		{900 * time.Millisecond, time.Second},
		{time.Second, time.Second},
		{1001 * time.Millisecond, 2 * time.Second},
		{4*time.Minute + 59200*time.Millisecond, 5 * time.Minute},
		{0, 0},
		{-time.Second, 0},
	} {
		if got := Countdown(c.in); got != c.want {
			t.Errorf("Countdown(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}

// TestWaitForStoreRefusesASecondWatcher: while a watcher holds the
// database and answers on its socket, watch is exit 4 with the hint at
// once; while a holder that is not the watcher answers, it waits, says
// once who holds it, and opens the database when it is free.
func TestWaitForStoreRefusesASecondWatcher(t *testing.T) {
	t.Parallel()
	dir, err := os.MkdirTemp("", "mhold") // short: a unix socket path has a length limit
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	db := filepath.Join(dir, "mailagent.db")
	open := func() (*store.Store, error) { return store.Open(db, store.Options{Timeout: 50 * time.Millisecond}) }
	held, err := open()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	for _, watcher := range []bool{true, false} {
		sctx, stop := context.WithCancel(ctx)
		served := make(chan error, 1)
		local := &api.Local{DB: held, StatusFunc: func(context.Context) api.Status {
			return api.Status{Watcher: watcher, PID: 4242, Started: time.Now()}
		}}
		go func() { served <- api.Serve(sctx, api.SocketPath(dir), local, nil) }()
		waitForSocket(t, ctx, dir)

		var said []string
		if watcher {
			st, err := WaitForStore(ctx, dir, open, func(s string) { said = append(said, s) })
			var ae *apperr.Error
			if st != nil || !errors.As(err, &ae) || ae.Code != apperr.CodeLocked || !errors.Is(err, store.ErrLocked) ||
				!strings.Contains(err.Error(), "pid 4242") || ae.Hint == "" {
				t.Fatalf("second watcher: got %v (%+v), want exit 4 naming pid 4242 with a hint", err, ae)
			}
			stop()
			t.Logf("the holder's server stopped: %v", <-served)
			continue
		}
		// Not a watcher: wait, and open once the holder lets go. The
		// waiter polls every LockPoll, so the holder lets go after
		// three polls; in a synctest bubble those waits pass on the
		// fake clock (the holder's server stays outside it: a goroutine
		// waiting on a socket would stop the clock).
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			release := time.AfterFunc(1500*time.Millisecond, func() {
				stop()
				t.Logf("the holder's server stopped: %v", <-served)
				_ = held.Close()
			})
			st, err := WaitForStore(ctx, dir, open, func(s string) { said = append(said, s) })
			release.Stop()
			if err != nil {
				t.Fatalf("holder that is not a watcher: %v, want the database once free", err)
			}
			_ = st.Close()
			if len(said) != 1 || !strings.Contains(said[0], "holds the state database; watching starts when it finishes") {
				t.Fatalf("said %q, want one line naming the holder", said)
			}
		})
	}
}

// waitForSocket waits until the API socket of dir answers.
func waitForSocket(t *testing.T, ctx context.Context, dir string) {
	t.Helper()
	for {
		if c, err := api.Dial(ctx, api.SocketPath(dir)); err == nil {
			_ = c.Close()
			return
		}
		if err := SleepCtx(ctx, 20*time.Millisecond); err != nil {
			t.Fatal("the socket never answered")
		}
	}
}

// TestDeferAndAnnounceAdaptOnlyLocalActions: review's and queue's
// adaptations change the local actions of a service they opened, and
// nothing else.
func TestDeferAndAnnounceAdaptOnlyLocalActions(t *testing.T) {
	t.Parallel()
	var w strings.Builder
	l := &api.Local{Actions: Local{NoWatcher: true, Undo: &w}}
	Defer(l)
	if a := l.Actions.(Local); !a.DeferSend || a.Undo != nil || !a.NoWatcher {
		t.Errorf("Defer: got %+v, want DeferSend, no notice, still no watcher", a)
	}
	l = &api.Local{Actions: Local{NoWatcher: true}}
	Announce(l, &w)
	if a := l.Actions.(Local); a.Undo != &w || a.DeferSend {
		t.Errorf("Announce: got %+v, want the notice and no deferral", a)
	}
	lazy := &Lazy{}
	l = &api.Local{Actions: lazy}
	Defer(l)
	Announce(l, &w)
	if l.Actions != api.Actions(lazy) {
		t.Error("actions that are not a Local were replaced")
	}
	Defer(nil) // a service without local actions: nothing to do, no panic
}
