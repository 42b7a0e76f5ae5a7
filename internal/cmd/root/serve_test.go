package root

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mailagent/mailagent/internal/app/api"
	"github.com/mailagent/mailagent/internal/cmd/serve"
	"github.com/mailagent/mailagent/internal/cmdutil"
	"github.com/mailagent/mailagent/internal/iostreams"
	"github.com/mailagent/mailagent/store"
)

func TestNewCmdServeFlags(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		args  []string
		stdio bool
	}{
		{"stdio", []string{"--stdio"}, true},
		{"no flag", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ios, _, _, _ := iostreams.Test()
			var got *serve.ServeOptions
			cmd := serve.NewCmdServe(cmdutil.New(ios), func(_ context.Context, o *serve.ServeOptions) error { got = o; return nil })
			cmd.SetArgs(tt.args)
			if err := cmd.Execute(); err != nil {
				t.Fatal(err)
			}
			if got == nil || got.Stdio != tt.stdio {
				t.Errorf("got %+v, want Stdio %v", got, tt.stdio)
			}
		})
	}
}

// serveShortDir is a state directory whose socket path fits in a sockaddr.
func serveShortDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "mas")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

func TestServeNeedsStdio(t *testing.T) {
	t.Parallel()
	ios, _, _, _ := iostreams.Test()
	err := serve.Run(context.Background(), &serve.ServeOptions{IO: ios, StateDir: func() (string, error) { return serveShortDir(t), nil }})
	var ue *cmdutil.UserError
	if !errors.As(err, &ue) || ue.Code != cmdutil.ExitUsage {
		t.Errorf("got %v, want a usage error", err)
	}
}

// TestServeWithoutWatcher: exit 3, saying no watcher runs, and nothing on
// stdout (the client reads stdout as HTTP).
func TestServeWithoutWatcher(t *testing.T) {
	t.Parallel()
	ios, _, out, _ := iostreams.Test()
	err := serve.Run(context.Background(), &serve.ServeOptions{IO: ios, Stdio: true, StateDir: func() (string, error) { return serveShortDir(t), nil }})
	var ue *cmdutil.UserError
	if !errors.As(err, &ue) || ue.Code != cmdutil.ExitUnreachable || !errors.Is(err, api.ErrNoWatcher) {
		t.Fatalf("got %v, want exit 3 wrapping ErrNoWatcher", err)
	}
	if !strings.Contains(err.Error(), "no watcher runs on this host") {
		t.Errorf("message: %q", err)
	}
	if out.Len() != 0 {
		t.Errorf("stdout: %q, want nothing", out.String())
	}
}

// serveStartWatcher serves a Local over an empty store on the socket of
// a new state directory, as the watcher does.
func serveStartWatcher(t *testing.T) string {
	t.Helper()
	dir := serveShortDir(t)
	st, err := store.Open(filepath.Join(dir, "state.db"), store.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- api.Serve(ctx, api.SocketPath(dir), &api.Local{DB: st}, nil) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Logf("api.Serve: %v", err)
		}
		_ = st.Close()
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := api.Dial(context.Background(), api.SocketPath(dir))
		if err == nil {
			_ = c.Close()
			return dir
		}
		if time.Now().After(deadline) {
			t.Fatalf("the watcher never answered: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestServeRelays: HTTP written on stdin reaches the watcher and its
// answer comes out on stdout, twice on one connection; the relay ends
// cleanly when stdin closes (the ssh client went away).
func TestServeRelays(t *testing.T) {
	t.Parallel()
	dir := serveStartWatcher(t)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ios := iostreams.New(inR, outW, io.Discard)
	done := make(chan error, 1)
	go func() {
		done <- serve.Run(context.Background(), &serve.ServeOptions{IO: ios, Stdio: true, StateDir: func() (string, error) { return dir, nil }})
		_ = outW.Close()
	}()
	br := bufio.NewReader(outR)
	for i := 0; i < 2; i++ {
		if _, err := io.WriteString(inW, "GET /v1/status HTTP/1.1\r\nHost: mailagent\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("answer %d: %v", i, err)
		}
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"watcher"`) {
			t.Errorf("answer %d: %s %s", i, resp.Status, body)
		}
	}
	_ = inW.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run after stdin closed: %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not end after stdin closed")
	}
}

// TestServeEndsWhenTheWatcherCloses: the watcher closing the connection
// ends the relay at once, even with stdin still open.
func TestServeEndsWhenTheWatcherCloses(t *testing.T) {
	t.Parallel()
	dir := serveStartWatcher(t)
	inR, inW := io.Pipe()
	defer func() { _ = inW.Close() }()
	ios := iostreams.New(inR, io.Discard, io.Discard)
	done := make(chan error, 1)
	go func() {
		done <- serve.Run(context.Background(), &serve.ServeOptions{IO: ios, Stdio: true, StateDir: func() (string, error) { return dir, nil }})
	}()
	if _, err := io.WriteString(inW, "GET /v1/status HTTP/1.1\r\nHost: mailagent\r\nConnection: close\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run: %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not end after the watcher closed the connection")
	}
}
