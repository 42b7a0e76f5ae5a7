package main

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mailagent/mailagent/internal/app/api"
	"github.com/mailagent/mailagent/internal/app/review"
	"github.com/mailagent/mailagent/store"
	"github.com/mailagent/mailagent/tui"
)

// runWatch runs `watch` in process until stop is called, and waits for
// its socket to answer.
func (h *harness) runWatch(t *testing.T) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var out, errb bytes.Buffer
	f := newFactory(strings.NewReader(""), &out, &errb)
	f.ConfigPath = h.cfgPath
	done := make(chan error, 1)
	go func() { done <- watchRun(ctx, f, &WatchOptions{}) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("watch returned %v, want nil after cancel", err)
			}
		case <-time.After(20 * time.Second):
			t.Error("watch did not stop after cancel")
		}
		f.Close()
	}
	t.Cleanup(stop)
	cfg, err := f.Config()
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := api.Dial(ctx, api.SocketPath(cfg.StateDir))
		if err == nil {
			_ = c.Close()
			return stop
		}
		select {
		case err := <-done:
			t.Fatalf("watch exited early: %v\n%s", err, errb.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("socket never answered: %v", err)
		}
		time.Sleep(20 * time.Millisecond) // polling for a server to come up, not asserting on time
	}
}

// nextTUIEvent waits for an event satisfying ok, at most limit.
func nextTUIEvent(t *testing.T, ch <-chan tui.Event, what string, limit time.Duration, ok func(tui.Event) bool) tui.Event {
	t.Helper()
	timeout := time.After(limit)
	for {
		select {
		case ev, open := <-ch:
			if !open {
				t.Fatalf("event stream closed while waiting for %s", what)
			}
			if ok(ev) {
				return ev
			}
		case <-timeout:
			t.Fatalf("no %s within %s", what, limit)
		}
	}
}

// TestReviewFollowsWatcher: the review backend notices within 2 s that
// the watcher stopped, keeps working on the store (actions included)
// without holding it, so that watch can start again, and notices that
// it is back.
func TestReviewFollowsWatcher(t *testing.T) {
	t.Parallel()
	h := newHarness(t, compromisedModel, "")
	stop := h.runWatch(t)

	f, cfg := h.factory(t)
	b := &review.Backend{Open: f.Service, Sock: api.SocketPath(cfg.StateDir), Now: time.Now, Log: slog.New(slog.DiscardHandler)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	evs, err := b.Events(ctx)
	if err != nil {
		t.Fatal(err)
	}
	nextTUIEvent(t, evs, "the first connection (reload)", 5*time.Second, func(e tui.Event) bool { return e.Kind == tui.EventReload })

	h.deliver(rawMail("Carol <carol@example.org>", "Lunch", "Lunch next week?"))
	added := nextTUIEvent(t, evs, "the new draft", 20*time.Second, func(e tui.Event) bool { return e.Kind == tui.EventItemAdded && e.Item != nil })
	id := added.Item.ID
	if st, err := b.Status(ctx); err != nil || !st.WatcherConnected {
		t.Fatalf("status with a watcher: got %+v, %v, want connected", st, err)
	}

	// The watcher stops: the backend says so within 2 s.
	stop()
	start := time.Now()
	// (Status events of earlier changes may come first.)
	nextTUIEvent(t, evs, "watcher gone", 2*time.Second, func(e tui.Event) bool {
		return e.Kind == tui.EventStatus && !e.Status.WatcherConnected
	})
	t.Logf("watcher gone reported after %s", time.Since(start))

	// Reads and actions work on the store.
	items, err := b.List(ctx)
	if err != nil {
		t.Fatalf("List without a watcher: %v", err)
	}
	if !hasItem(items, id, store.QueuePending) {
		t.Fatalf("List without a watcher: %s not pending in %+v", id, items)
	}
	if err := b.Reject(ctx, id, "not now"); err != nil {
		t.Fatalf("Reject without a watcher: %v", err)
	}
	items, err = b.List(ctx)
	if err != nil || !hasItem(items, id, store.QueueRejected) {
		t.Fatalf("after Reject: %v, %+v, want %s rejected", err, items, id)
	}
	if st, err := b.Status(ctx); err != nil || st.WatcherConnected {
		t.Fatalf("status without a watcher: got %+v, %v, want not connected", st, err)
	}

	// review holds nothing: watch starts again, and the backend follows.
	h.runWatch(t)
	start = time.Now()
	nextTUIEvent(t, evs, "watcher back (reload)", 2*time.Second, func(e tui.Event) bool { return e.Kind == tui.EventReload })
	t.Logf("watcher back reported after %s", time.Since(start))
	if st, err := b.Status(ctx); err != nil || !st.WatcherConnected {
		t.Fatalf("status with the watcher back: got %+v, %v, want connected", st, err)
	}
}

func hasItem(items []tui.Item, id, status string) bool {
	for _, it := range items {
		if it.ID == id && it.Status == status {
			return true
		}
	}
	return false
}

// TestReviewWithoutWatcherConcurrent: without a watcher every operation
// opens the store; the TUI's concurrent reads (load, status timer, event
// translation) must not trip over each other's file lock.
func TestReviewWithoutWatcherConcurrent(t *testing.T) {
	t.Parallel()
	h := newHarness(t, compromisedModel, "")
	var out, errb bytes.Buffer
	f := newFactory(strings.NewReader(""), &out, &errb)
	f.ConfigPath = h.cfgPath
	defer f.Close()
	b := &review.Backend{Open: f.Service, Now: time.Now, Log: slog.New(slog.DiscardHandler)}
	ctx := context.Background()
	errs := make(chan error, 60)
	var wg sync.WaitGroup
	for i := range 60 {
		wg.Go(func() {
			var err error
			if i%2 == 0 {
				_, err = b.List(ctx)
			} else {
				var st tui.Status
				st, err = b.Status(ctx)
				if err == nil && st.WatcherConnected {
					err = errors.New("connected without a watcher")
				}
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("concurrent read without a watcher: %v", err)
		}
	}
}
