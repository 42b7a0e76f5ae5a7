package main

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/mailagent/mailagent/internal/app/api"
	"github.com/mailagent/mailagent/internal/app/digest"
	"github.com/mailagent/mailagent/internal/app/digestmail"
	"github.com/mailagent/mailagent/store"
)

// TestDigestTokensThroughSocketMatchStore: `mailagent digest` beside a
// running watcher reads through its socket (digestmail.ServiceSource); its token
// figures cover every day of the period, the same as read from the store
// directly, not only today's.
func TestDigestTokensThroughSocketMatchStore(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 9, 10, 0, 0, 0, time.UTC)
	st, err := store.Open(filepath.Join(t.TempDir(), "state.db"), store.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	for i := range 9 {
		if err := st.AddUsage(store.Day(now.AddDate(0, 0, -i)), int64(1000+i), int64(10+i)); err != nil {
			t.Fatal(err)
		}
	}
	dir, err := os.MkdirTemp("", "mad")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- api.Serve(ctx, api.SocketPath(dir), &api.Local{DB: st, Now: func() time.Time { return now }}, nil)
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	var c *api.Client
	for deadline := time.Now().Add(10 * time.Second); c == nil; {
		if c, err = api.Dial(context.Background(), api.SocketPath(dir)); err != nil {
			if time.Now().After(deadline) {
				t.Fatal(err)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	t.Cleanup(func() { _ = c.Close() })
	for _, since := range []time.Time{now.Add(-24 * time.Hour), now.AddDate(0, 0, -7), now.AddDate(0, 0, -30)} {
		direct, err := digest.Build(st, since, now, "gemini-2.5-flash")
		if err != nil {
			t.Fatal(err)
		}
		viaSocket, err := digest.Build(digestmail.ServiceSource{Ctx: context.Background(), Svc: c}, since, now, "gemini-2.5-flash")
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(direct.Usage, viaSocket.Usage) || direct.USD != viaSocket.USD {
			t.Errorf("since %s: through the socket %+v ($%v); from the store %+v ($%v)", since, viaSocket.Usage, viaSocket.USD, direct.Usage, direct.USD)
		}
		var want int64
		for i := range 9 {
			if store.Day(now.AddDate(0, 0, -i)) >= store.Day(since) {
				want += int64(1000 + i)
			}
		}
		if viaSocket.Usage.TokensIn != want {
			t.Errorf("since %s: %d tokens in through the socket; want %d (every day of the period)", since, viaSocket.Usage.TokensIn, want)
		}
	}
}
