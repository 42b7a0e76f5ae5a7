package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// lockedBuffer is a bytes.Buffer safe to read while watch writes it.
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

// closedPort returns a loopback port nothing listens on.
func closedPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return port
}

// startWatch runs watch in process against h with the given terminal
// answer, and returns its stderr and a stop function that waits for it.
func startWatch(t *testing.T, h *harness, tty bool) (*lockedBuffer, func() error) {
	t.Helper()
	stderr := &lockedBuffer{}
	f := newFactory(strings.NewReader(""), &bytes.Buffer{}, stderr)
	f.ConfigPath = h.cfgPath
	t.Cleanup(f.Close)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	f.IOStreams.SetStderrTTY(tty)
	go func() { done <- watchRun(ctx, f, &WatchOptions{}) }()
	var once sync.Once
	var err error
	stop := func() error {
		once.Do(func() { cancel(); err = <-done })
		return err
	}
	t.Cleanup(func() { _ = stop() })
	return stderr, stop
}

// withIMAPPort rewrites the harness config to point IMAP at port.
func withIMAPPort(t *testing.T, h *harness, port int) {
	t.Helper()
	raw, err := os.ReadFile(h.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	old := "port = " + strconv.Itoa(h.imap.Port)
	if !bytes.Contains(raw, []byte(old)) {
		t.Fatalf("config has no %q", old)
	}
	raw = bytes.Replace(raw, []byte(old), []byte("port = "+strconv.Itoa(port)), 1)
	if err := os.WriteFile(h.cfgPath, raw, 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestWatchSaysWhatItDoesOnATerminal(t *testing.T) {
	t.Parallel()
	h := newHarness(t, compromisedModel, "")
	stderr, stop := startWatch(t, h, true)
	eventually(t, "watch says it is idle", func() bool { return strings.Contains(stderr.String(), "personal: idle") })
	if err := stop(); err != nil {
		t.Fatalf("watch: %v", err)
	}
	out := stderr.String()
	want := "personal: watching INBOX of " + ownerAddr + " on 127.0.0.1:" + strconv.Itoa(h.imap.Port)
	if !strings.Contains(out, want) {
		t.Errorf("stderr lacks %q:\n%s", want, out)
	}
	if strings.Count(out, "personal: idle") != 1 {
		t.Errorf("idle should be said once while nothing changes:\n%s", out)
	}
	if !strings.HasSuffix(out, "stopped\n") {
		t.Errorf("stderr should end with stopped:\n%s", out)
	}
}

func TestWatchWrongPortSaysWhy(t *testing.T) {
	t.Parallel()
	h := newHarness(t, compromisedModel, "")
	port := closedPort(t)
	withIMAPPort(t, h, port)
	stderr, stop := startWatch(t, h, true)
	want := "personal: connection refused (127.0.0.1:" + strconv.Itoa(port) + "), retrying in "
	eventually(t, "watch says why it reconnects", func() bool { return strings.Contains(stderr.String(), want) })
	if err := stop(); err != nil {
		t.Fatalf("watch: %v", err)
	}
	if strings.Contains(stderr.String(), "personal: idle") {
		t.Errorf("nothing listens, yet watch claims idle:\n%s", stderr)
	}
}

func TestWatchQuietUnderServiceManager(t *testing.T) {
	for _, tc := range []struct {
		name     string
		tty      bool
		env, val string
	}{
		{"not a terminal", false, "", ""},
		{"systemd", true, "INVOCATION_ID", "0123456789abcdef"},
		{"launchd", true, "LAUNCHD", "1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("INVOCATION_ID", "")
			t.Setenv("LAUNCHD", "")
			if tc.env != "" {
				t.Setenv(tc.env, tc.val)
			}
			h := newHarness(t, compromisedModel, "")
			withIMAPPort(t, h, closedPort(t))
			stderr, stop := startWatch(t, h, tc.tty)
			// The first reconnect happens at once; watch must have tried
			// (and failed) by the time its log says so.
			logPath := h.dir + "/state/mailagent.log"
			eventually(t, "a reconnect is logged", func() bool {
				raw, _ := os.ReadFile(logPath)
				return bytes.Contains(raw, []byte("reconnecting"))
			})
			time.Sleep(50 * time.Millisecond) // a line printed with the log entry would be there by now
			if err := stop(); err != nil {
				t.Fatalf("watch: %v", err)
			}
			if s := stderr.String(); s != "" {
				t.Errorf("stderr should be empty under a service manager, got:\n%s", s)
			}
		})
	}
}
