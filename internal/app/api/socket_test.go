package api

import (
	"context"
	"errors"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/store"
)

func TestSocketMode(t *testing.T) {
	t.Parallel()
	srv := startServer(t, &Local{DB: openStore(t)})
	fi, err := os.Lstat(srv.path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Type() != fs.ModeSocket {
		t.Errorf("type: got %v, want a socket", fi.Mode().Type())
	}
	if got := fi.Mode().Perm(); got != 0o600 {
		t.Errorf("mode: got %04o, want 0600", got)
	}
	dir, _ := os.Stat(filepath.Dir(srv.path))
	if got := dir.Mode().Perm(); got&0o077 != 0 {
		t.Errorf("state dir mode: got %04o, want no group or world bits", got)
	}
}

func TestServeTightensReadableDir(t *testing.T) {
	t.Parallel()
	dir := shortDir(t)
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ln, err := listen(context.Background(), SocketPath(dir), discard())
	if err != nil {
		t.Fatal(err)
	}
	_ = ln.Close()
	fi, _ := os.Stat(dir)
	if got := fi.Mode().Perm(); got != 0o700 {
		t.Errorf("dir mode: got %04o, want 0700", got)
	}
}

func TestServeRefuses(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	tests := []struct {
		name    string
		prepare func(t *testing.T, dir, path string)
		want    string
	}{
		{"world-writable dir", func(t *testing.T, dir, _ string) {
			if err := os.Chmod(dir, 0o777); err != nil {
				t.Fatal(err)
			}
		}, "writable by others"},
		{"group-writable dir", func(t *testing.T, dir, _ string) {
			if err := os.Chmod(dir, 0o770); err != nil {
				t.Fatal(err)
			}
		}, "writable by others"},
		{"regular file in the way", func(t *testing.T, _, path string) {
			if err := os.WriteFile(path, []byte("keep me"), 0o600); err != nil {
				t.Fatal(err)
			}
		}, "not a socket"},
		{"missing dir", func(t *testing.T, dir, _ string) {
			if err := os.Remove(dir); err != nil {
				t.Fatal(err)
			}
		}, "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := shortDir(t)
			path := SocketPath(dir)
			tt.prepare(t, dir, path)
			ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
			defer cancel()
			err := Serve(ctx, path, &Local{DB: st}, nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want an error containing %q", err, tt.want)
			}
		})
	}
	t.Run("the file in the way is kept", func(t *testing.T) {
		dir := shortDir(t)
		path := SocketPath(dir)
		if err := os.WriteFile(path, []byte("keep me"), 0o600); err != nil {
			t.Fatal(err)
		}
		_ = Serve(context.Background(), path, &Local{DB: st}, nil)
		if data, err := os.ReadFile(path); err != nil || string(data) != "keep me" {
			t.Errorf("got %q, %v, want the file untouched", data, err)
		}
	})
}

func TestSecondServeFails(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	l := newLocal(st, nil)
	l.StatusFunc = func(context.Context) Status { return Status{Watcher: true, PID: 777} }
	srv := startServer(t, l)
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	err := Serve(ctx, srv.path, &Local{DB: st}, nil)
	if !errors.Is(err, ErrWatcherRunning) {
		t.Fatalf("got %v, want ErrWatcherRunning", err)
	}
	if !strings.Contains(err.Error(), "pid 777") {
		t.Errorf("got %q, want it to name the running watcher's pid 777", err)
	}
	// The first watcher still answers, on the same socket file.
	c := dial(t, srv.path)
	if s, err := c.Status(ctx); err != nil || s.PID != 777 {
		t.Errorf("first watcher: got %+v, %v, want pid 777", s, err)
	}
}

// staleSocket leaves a socket file with nothing listening on it, as a
// crashed watcher does.
func staleSocket(t *testing.T, path string) {
	t.Helper()
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	_ = ln.Close()
	if _, err := os.Lstat(path); err != nil {
		t.Fatalf("stale socket: %v", err)
	}
}

func TestStaleSocket(t *testing.T) {
	t.Parallel()
	path := SocketPath(shortDir(t))
	staleSocket(t, path)
	if _, err := Dial(context.Background(), path); !errors.Is(err, ErrNoWatcher) {
		t.Errorf("Dial on a stale socket: got %v, want ErrNoWatcher", err)
	}

	st := openStore(t)
	seed(t, st)
	ctx, cancel := context.WithCancel(context.Background())
	ln, err := listen(ctx, path, discard())
	if err != nil {
		cancel()
		t.Fatalf("listen over a stale socket: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- serveOn(ctx, ln, path, newLocal(st, nil), discard()) }()
	c := dial(t, path)
	if s, err := c.Status(ctx); err != nil || s.Counts[store.StateDone] != 2 {
		t.Errorf("status through the new socket: got %+v, %v", s, err)
	}
	cancel()
	if err, _ := recv(t, done); err != nil {
		t.Errorf("Serve: got %v, want nil", err)
	}
	if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("socket after Serve returned: got %v, want it removed", err)
	}
}

func TestServeReturnsAndRemovesSocket(t *testing.T) {
	t.Parallel()
	path := SocketPath(shortDir(t))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, path, &Local{DB: openStore(t)}, nil) }()
	// Wait for the socket to answer (Serve has no ready signal).
	deadline := time.Now().Add(waitLimit)
	for {
		c, err := Dial(context.Background(), path)
		if err == nil {
			_ = c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the socket never answered: %v", err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if err, _ := recv(t, done); err != nil {
		t.Errorf("Serve: got %v, want nil", err)
	}
	if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("socket: got %v, want it removed", err)
	}
	if _, err := Dial(context.Background(), path); !errors.Is(err, ErrNoWatcher) {
		t.Errorf("Dial after shutdown: got %v, want ErrNoWatcher", err)
	}
}

func TestDialNoWatcher(t *testing.T) {
	t.Parallel()
	_, err := Dial(context.Background(), SocketPath(shortDir(t)))
	if !errors.Is(err, ErrNoWatcher) {
		t.Errorf("no socket file: got %v, want ErrNoWatcher", err)
	}
}

// TestClientWatcherGone: a call after the watcher stopped fails with
// ErrNoWatcher, not a bare transport error.
func TestClientWatcherGone(t *testing.T) {
	t.Parallel()
	srv := startServer(t, &Local{DB: openStore(t)})
	c := dial(t, srv.path)
	_ = srv.stop(t)
	_, err := c.Status(context.Background())
	if !errors.Is(err, ErrNoWatcher) {
		t.Errorf("got %v, want ErrNoWatcher", err)
	}
}

func TestOpen(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("watcher running: client", func(t *testing.T) {
		st := openStore(t)
		srv := startServer(t, &Local{DB: st})
		opened := false
		svc, closeFn, err := Open(ctx, filepath.Dir(srv.path), func() (*store.Store, error) {
			opened = true
			return nil, errors.New("must not open the store")
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = closeFn() }()
		if _, ok := svc.(*Client); !ok {
			t.Errorf("got %T, want *Client", svc)
		}
		if opened {
			t.Error("the store was opened although a watcher answers")
		}
	})
	t.Run("no watcher: local with actions", func(t *testing.T) {
		dir := shortDir(t)
		dbPath := filepath.Join(dir, "state.db")
		var act Actions
		svc, closeFn, err := Open(ctx, dir, func() (*store.Store, error) {
			return store.Open(dbPath, store.Options{Timeout: 100 * time.Millisecond})
		}, func(st *store.Store) Actions {
			act = pipelineActions{Pipeline: &agent.Pipeline{Store: st, Actor: &agent.Actor{Store: st}}}
			return act
		})
		if err != nil {
			t.Fatal(err)
		}
		l, ok := svc.(*Local)
		if !ok {
			t.Fatalf("got %T, want *Local", svc)
		}
		if l.Actions != act || act == nil {
			t.Errorf("actions: got %v, want the ones built from the store", l.Actions)
		}
		if err := closeFn(); err != nil {
			t.Fatal(err)
		}
		// Closed: the lock is free again.
		st, err := store.Open(dbPath, store.Options{Timeout: 100 * time.Millisecond})
		if err != nil {
			t.Fatalf("reopen after close: %v", err)
		}
		_ = st.Close()
	})
	t.Run("stale socket: local", func(t *testing.T) {
		dir := shortDir(t)
		staleSocket(t, SocketPath(dir))
		svc, closeFn, err := Open(ctx, dir, func() (*store.Store, error) {
			return store.Open(filepath.Join(dir, "state.db"), store.Options{Timeout: 100 * time.Millisecond})
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = closeFn() }()
		if _, ok := svc.(*Local); !ok {
			t.Errorf("got %T, want *Local", svc)
		}
		_, err = svc.Approve(ctx, "q1", "")
		wantErr(t, "approve without actions", err, ErrNoActions)
	})
	t.Run("locked and no socket", func(t *testing.T) {
		// Open tries again for openGrace (and the store for its lock
		// timeout) on timers and sleeps: in a synctest bubble they pass
		// on the fake clock, the file lock and the socket being asked
		// as often as in real time.
		synctest.Test(t, func(t *testing.T) {
			dir := shortDir(t)
			dbPath := filepath.Join(dir, "state.db")
			holder, err := store.Open(dbPath, store.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = holder.Close() }()
			_, _, err = Open(ctx, dir, func() (*store.Store, error) {
				return store.Open(dbPath, store.Options{Timeout: 50 * time.Millisecond})
			}, nil)
			if !errors.Is(err, store.ErrLocked) {
				t.Fatalf("got %v, want an error wrapping store.ErrLocked", err)
			}
			if !strings.Contains(err.Error(), "another mailagent process holds the database") {
				t.Errorf("got %q, want the hint %q", err, "another mailagent process holds the database")
			}
		})
	})
	t.Run("other open error passes through", func(t *testing.T) {
		boom := errors.New("boom")
		_, _, err := Open(ctx, shortDir(t), func() (*store.Store, error) { return nil, boom }, nil)
		if !errors.Is(err, boom) {
			t.Errorf("got %v, want %v", err, boom)
		}
	})
}

func TestSocketPath(t *testing.T) {
	t.Parallel()
	if got, want := SocketPath("/var/lib/ma"), "/var/lib/ma/mailagent.sock"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// blockingActions blocks Approve until released and reports whether its
// context had ended by then. Its other methods are the embedded nil
// interface's: this test calls none of them.
type blockingActions struct {
	Actions
	started chan struct{}
	release chan struct{}
	ctxErr  chan error
}

func (b *blockingActions) Approve(ctx context.Context, id, final string) (*store.QueueItem, error) {
	close(b.started)
	select {
	case <-b.release:
	case <-ctx.Done():
	}
	b.ctxErr <- ctx.Err()
	return &store.QueueItem{ID: id, Status: store.QueueApproved}, nil
}

func TestActionContext(t *testing.T) {
	t.Parallel()
	t.Run("client going away does not cut the send short", func(t *testing.T) {
		serveCtx, stopServe := context.WithCancel(context.Background())
		defer stopServe()
		h := &handler{ctx: serveCtx, log: discard()}
		reqCtx, cancelReq := context.WithCancel(context.Background())
		r := httptest.NewRequestWithContext(reqCtx, http.MethodPost, "/v1/queue/q1/approve", nil)
		ctx, done := h.actionContext(r)
		defer done()
		cancelReq()
		if err := ctx.Err(); err != nil {
			t.Errorf("after the client went away: got %v, want nil", err)
		}
		stopServe()
		recv(t, ctx.Done())
		if err := ctx.Err(); !errors.Is(err, context.Canceled) {
			t.Errorf("after shutdown: got %v, want context.Canceled", err)
		}
	})
	t.Run("watcher shutdown ends an action in flight", func(t *testing.T) {
		b := &blockingActions{started: make(chan struct{}), release: make(chan struct{}), ctxErr: make(chan error, 1)}
		srv := startServer(t, &Local{DB: openStore(t), Actions: b})
		c := dial(t, srv.path)
		go func() { _, _ = c.Approve(context.Background(), "q1", "") }()
		recv(t, b.started)
		srv.cancel()
		if got, _ := recv(t, b.ctxErr); !errors.Is(got, context.Canceled) {
			t.Errorf("Approve's context error: got %v, want context.Canceled", got)
		}
		if err := srv.stop(t); err != nil {
			t.Errorf("Serve: got %v, want nil", err)
		}
	})
}
