package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/mailagent/mailagent/internal/app/actions"
	"github.com/mailagent/mailagent/internal/app/api"
	"github.com/mailagent/mailagent/internal/app/review"
)

// TestReviewNamesTheHolder: while a triage holds the database and serves
// its socket, review's status says so ("served by a triage (pid N)")
// instead of claiming a watcher, or an offline store it does not open.
func TestReviewNamesTheHolder(t *testing.T) {
	t.Parallel()
	h := newHarness(t, compromisedModel, "")
	f, cfg := h.factory(t)
	st, err := f.OpenStore(false)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = st.Close() }()
	ctx := context.Background()
	stop := api.ServeHeld(ctx, cfg.StateDir, &api.Local{DB: st, StatusFunc: actions.HeldStatus()}, "triage", nil)
	defer stop()

	b := &review.Backend{Open: f.Service, Sock: api.SocketPath(cfg.StateDir), Now: time.Now, Log: slog.New(slog.DiscardHandler)}
	want := fmt.Sprintf("a triage (pid %d)", os.Getpid())
	deadline := time.Now().Add(10 * time.Second)
	for {
		s, err := b.Status(ctx)
		if err == nil && s.Holder == want && !s.WatcherConnected {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("status while a triage holds the database: %+v, %v; want holder %q", s, err, want)
		}
		time.Sleep(20 * time.Millisecond) // the held socket comes up
	}
	stop()
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err := b.Status(ctx); err != nil || s.Holder != "" {
		t.Fatalf("status after the triage: %+v, %v; want no holder", s, err)
	}
}
