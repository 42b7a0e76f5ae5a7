package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mailagent/mailagent/store"
)

func TestParseRemote(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, raw, command string
		want               RemoteTarget
		args               []string
	}{
		{"host only", "ssh://mail.example.org", "", RemoteTarget{Host: "mail.example.org", Command: "mailagent"},
			[]string{"-T", "-o", "ClearAllForwardings=yes", "--", "mail.example.org", "mailagent", "serve", "--stdio"}},
		{"user and port", "ssh://ada@mail.example.org:2222", "", RemoteTarget{User: "ada", Host: "mail.example.org", Port: 2222, Command: "mailagent"},
			[]string{"-T", "-o", "ClearAllForwardings=yes", "-p", "2222", "-l", "ada", "--", "mail.example.org", "mailagent", "serve", "--stdio"}},
		{"ipv6", "ssh://[::1]:22/", "", RemoteTarget{Host: "::1", Port: 22, Command: "mailagent"},
			[]string{"-T", "-o", "ClearAllForwardings=yes", "-p", "22", "--", "::1", "mailagent", "serve", "--stdio"}},
		{"command in the URL", "ssh://ada@box?command=/opt/mailagent/bin/mailagent", "", RemoteTarget{User: "ada", Host: "box", Command: "/opt/mailagent/bin/mailagent"},
			[]string{"-T", "-o", "ClearAllForwardings=yes", "-l", "ada", "--", "box", "/opt/mailagent/bin/mailagent", "serve", "--stdio"}},
		{"--remote-command wins", "ssh://box?command=/a/mailagent", "~/bin/mailagent", RemoteTarget{Host: "box", Command: "~/bin/mailagent"},
			[]string{"-T", "-o", "ClearAllForwardings=yes", "--", "box", "~/bin/mailagent", "serve", "--stdio"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseRemote(tt.raw, tt.command)
			if err != nil {
				t.Fatalf("ParseRemote(%q): %v", tt.raw, err)
			}
			if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
			if args := got.SSHArgs(RemoteOptions{}); !slices.Equal(args, tt.args) {
				t.Errorf("ssh args: got %q, want %q", args, tt.args)
			}
		})
	}
	b := RemoteTarget{Host: "h"}.SSHArgs(RemoteOptions{Batch: true, Args: []string{"-F", "cfg"}})
	if want := []string{"-T", "-o", "ClearAllForwardings=yes", "-o", "BatchMode=yes", "-F", "cfg", "--", "h", "", "serve", "--stdio"}; !slices.Equal(b, want) {
		t.Errorf("batch args: got %q, want %q", b, want)
	}
}

// hostileRemotes are --remote URLs (and --remote-command values) that try
// to turn a part of the URL into an ssh option or a remote shell command.
// lands is the hostile text that reaches ssh's argument list when the
// validation is off ("" when net/url itself refuses the URL).
var hostileRemotes = []struct {
	name, raw, command, lands string
}{
	{"option injection in the host", "ssh://-oProxyCommand=touch%20pwned/", "", ""}, // url refuses %20 in a host
	{"option injection in the host, no space", "ssh://-oProxyCommand=id", "", "-oProxyCommand=id"},
	{"option injection in the user", "ssh://-oProxyCommand=id@host", "", "-oProxyCommand=id"},
	{"host is an option", "ssh://-F/etc/passwd", "", ""}, // url reads /etc/passwd as the path
	{"user is an option", "ssh://-lroot@host", "", "-lroot"},
	{"space in the host", "ssh://host name", "", ""},
	{"newline in the host", "ssh://host\nProxyCommand=id", "", ""},
	{"tab before the host", "ssh://\thost", "", ""},
	{"shell in the command", "ssh://host?command=mailagent%3Btouch%20/tmp/pwned", "", "mailagent;touch /tmp/pwned"},
	{"a raw semicolon in the query", "ssh://host?command=mailagent;touch%20/tmp/pwned", "", ""}, // net/url refuses it; it must not be dropped silently
	{"command substitution", "ssh://host?command=$(id)", "", "$(id)"},
	{"backticks in --remote-command", "ssh://host", "`id`", "`id`"},
	{"command is an option", "ssh://host?command=-oProxyCommand=id", "", "-oProxyCommand=id"},
	{"newline in the command", "ssh://host?command=mailagent%0Aid", "", "mailagent\nid"},
	{"space in --remote-command", "ssh://host", "mailagent --config /tmp/evil", "mailagent --config /tmp/evil"},
	{"user with a shell word", "ssh://a;id@host", "", "a;id"},
	{"password in the URL", "ssh://ada:secret@host", "", ""},
	{"another scheme", "http://host", "", ""},
	{"a path", "ssh://host/etc/passwd", "", ""},
	{"an unknown parameter", "ssh://host?proxycommand=id", "", ""},
	{"no host", "ssh://ada@", "", ""},
	{"port out of range", "ssh://host:99999", "", ""},
	{"non-ASCII host", "ssh://hоst.example", "", ""}, // Cyrillic о
}

// TestParseRemoteRefusesHostileURLs: every hostile --remote is refused
// with ErrBadRemote. The positive control switches the validation off:
// the hostile parts that net/url lets through then reach ssh's argument
// list, so the validation is what stops them.
func TestParseRemoteRefusesHostileURLs(t *testing.T) {
	tried, through := 0, 0
	for _, tt := range hostileRemotes {
		tried++
		got, err := ParseRemote(tt.raw, tt.command)
		if err == nil {
			through++
			t.Errorf("%s: %q accepted as %+v", tt.name, tt.raw, got)
			continue
		}
		if !errors.Is(err, ErrBadRemote) {
			t.Errorf("%s: error %v does not wrap ErrBadRemote", tt.name, err)
		}
	}
	t.Logf("hostile --remote: %d tried, %d through", tried, through)
	if through != 0 {
		t.Errorf("%d of %d hostile URLs got through", through, tried)
	}

	// Positive control.
	restore := SwitchOffRemoteValidationForTest()
	defer restore()
	landed, want := 0, 0
	for _, tt := range hostileRemotes {
		if tt.lands == "" {
			continue
		}
		want++
		got, err := ParseRemote(tt.raw, tt.command)
		if err != nil {
			t.Errorf("control %s: refused with the validation off: %v", tt.name, err)
			continue
		}
		if slices.Contains(got.SSHArgs(RemoteOptions{}), tt.lands) {
			landed++
		} else {
			t.Errorf("control %s: %q not in ssh's arguments %q", tt.name, tt.lands, got.SSHArgs(RemoteOptions{}))
		}
	}
	t.Logf("control, validation off: %d of %d hostile parts reach ssh's arguments", landed, want)
	if landed != want || want == 0 {
		t.Errorf("control: %d of %d landed, want all", landed, want)
	}
}

// fakeSSH writes a shell script standing in for ssh and returns its path.
func fakeSSH(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ssh")
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestCommandConnCopiesAndCloses(t *testing.T) {
	t.Parallel()
	last := &lastStderr{}
	c, err := startCommandConn("/bin/cat", nil, last)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	if err := c.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(c)
	if err != nil || string(got) != "hello" {
		t.Errorf("read back: got %q, %v, want hello", got, err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second close: %v", err)
	}

	// A child that never ends is killed and waited for by Close.
	c, err = startCommandConn("/bin/sleep", []string{"600"}, last)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := c.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	if c.cmd.ProcessState == nil {
		t.Error("Close returned before the child was waited for")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Close took %v", d)
	}
}

// TestDialRemoteSaysWhatSSHSaid: a refused connection's error carries
// ssh's stderr (here, a refused host key) and never an answer.
func TestDialRemoteSaysWhatSSHSaid(t *testing.T) {
	t.Parallel()
	ssh := fakeSSH(t, `echo "Host key verification failed." >&2; exit 255`)
	tgt, err := ParseRemote("ssh://ada@mail.example.org", "")
	if err != nil {
		t.Fatal(err)
	}
	_, err = DialRemote(context.Background(), tgt, RemoteOptions{SSH: ssh, Batch: true})
	if err == nil || !strings.Contains(err.Error(), "Host key verification failed.") || !strings.Contains(err.Error(), "ssh://ada@mail.example.org") {
		t.Errorf("DialRemote: got %v, want the target and ssh's words", err)
	}
}

// TestDialRemoteOverARelay: the remote transport end to end in process:
// the "ssh" runs this test binary as a relay to a real Serve (as `serve
// --stdio` does), so status, the queue and events go through a child
// process's stdin and stdout; ssh receives the arguments SSHArgs builds.
func TestDialRemoteOverARelay(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	seed(t, st)
	srv := startServer(t, &Local{DB: st})
	argsFile := filepath.Join(t.TempDir(), "args")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ssh := fakeSSH(t, fmt.Sprintf(`echo "$@" > %s
MAILAGENT_TEST_RELAY=%s exec %s -test.run='^TestRelayHelper$'`, argsFile, srv.path, exe))
	tgt, err := ParseRemote("ssh://ada@box:2200?command=/opt/bin/mailagent", "")
	if err != nil {
		t.Fatal(err)
	}
	c, err := DialRemote(context.Background(), tgt, RemoteOptions{SSH: ssh, Batch: true})
	if err != nil {
		t.Fatalf("DialRemote: %v", err)
	}
	defer func() { _ = c.Close() }()
	items, err := c.Queue(context.Background(), QueueFilter{})
	if err != nil || len(items) == 0 {
		t.Fatalf("queue over the relay: got %d items, %v", len(items), err)
	}
	local, err := (&Local{DB: st}).Queue(context.Background(), QueueFilter{})
	if err != nil || len(local) != len(items) {
		t.Errorf("queue: got %d items over the relay, %d locally (%v)", len(items), len(local), err)
	}
	b, _ := os.ReadFile(argsFile)
	if want := "-T -o ClearAllForwardings=yes -o BatchMode=yes -p 2200 -l ada -- box /opt/bin/mailagent serve --stdio"; strings.TrimSpace(string(b)) != want {
		t.Errorf("ssh args: got %q, want %q", strings.TrimSpace(string(b)), want)
	}
	if got := c.Path(); got != "ssh://ada@box:2200" {
		t.Errorf("Path: got %q", got)
	}
}

// TestRelayHelper is the relay TestDialRemoteOverARelay's fake ssh runs:
// stdin and stdout to the socket in MAILAGENT_TEST_RELAY. It does nothing
// in an ordinary run.
func TestRelayHelper(t *testing.T) {
	t.Parallel()
	path := os.Getenv("MAILAGENT_TEST_RELAY")
	if path == "" {
		t.Skip("the relay of TestDialRemoteOverARelay's fake ssh")
	}
	conn, err := net.Dial("unix", path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "relay:", err)
		os.Exit(1)
	}
	go func() { _, _ = io.Copy(conn, os.Stdin); _ = conn.(*net.UnixConn).CloseWrite() }()
	_, _ = io.Copy(os.Stdout, conn)
	os.Exit(0)
}

// cutWatcher is a watcher whose connection dies after an approval
// request arrived and before the answer: it counts the approvals it got
// and answers re-reads with status.
func cutWatcher(t *testing.T, status string, reread bool) (path string, approvals *atomic.Int32) {
	t.Helper()
	path = SocketPath(shortDir(t))
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	approvals = &atomic.Int32{}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/queue/{id}/approve", func(w http.ResponseWriter, r *http.Request) {
		approvals.Add(1)
		_, _ = io.Copy(io.Discard, r.Body)
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			_ = conn.Close() // the cut: no answer
		}
	})
	mux.HandleFunc("GET /v1/queue/{id}", func(w http.ResponseWriter, r *http.Request) {
		if !reread {
			conn, _, _ := http.NewResponseController(w).Hijack()
			_ = conn.Close()
			return
		}
		_ = json.NewEncoder(w).Encode(QueueDetail{Item: store.QueueItem{ID: r.PathValue("id"), Status: status},
			Outbox: &store.OutboxRecord{ID: "ob_1", Status: store.OutboxScheduled, SendAt: time.Date(2026, 1, 2, 9, 30, 0, 0, time.Local)}})
	})
	hs := &http.Server{Handler: mux}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { _ = hs.Close() })
	return path, approvals
}

// TestApprovalCutMidway: an approval whose connection breaks before the
// answer is not sent again; the error says so, with the item's state as
// re-read; and when the re-read fails too, that the state is unknown.
func TestApprovalCutMidway(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, status string
		reread       bool
		want         string
	}{
		{"approved, in its undo window", store.QueueApproved, true, "connection lost during approval; the item's state is approved: the watcher sends it at 09:30:00, once (undo: mailagent queue cancel ob_1)"},
		{"still pending", store.QueuePending, true, "connection lost during approval; the item's state is pending: the approval did not reach the watcher and nothing was sent"},
		{"sent", store.QueueSent, true, "connection lost during approval; the item's state is sent: the approval went through, once"},
		{"the re-read fails", "", false, "connection lost during approval; the item's state is unknown"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path, approvals := cutWatcher(t, tt.status, tt.reread)
			c := newClient(path)
			defer func() { _ = c.Close() }()
			q, err := c.Approve(context.Background(), "q1", "")
			var lost *LostError
			if q != nil || !errors.As(err, &lost) {
				t.Fatalf("Approve: got %v, %v (%T), want a *LostError", q, err, err)
			}
			if !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("got %q, want it to start %q", err.Error(), tt.want)
			}
			if n := approvals.Load(); n != 1 {
				t.Errorf("the watcher got %d approval requests, want exactly 1 (never retried)", n)
			}
			if tt.reread && (lost.Item == nil || lost.Item.Status != tt.status) {
				t.Errorf("re-read item: got %+v, want status %s", lost.Item, tt.status)
			}
		})
	}
}

// TestApprovalAnsweredIsNotLost: the watcher's own refusal, or nothing
// listening at all (nothing was sent), is not a lost connection.
func TestApprovalAnsweredIsNotLost(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	seed(t, st)
	srv := startServer(t, &Local{DB: st}) // no Actions: approve answers ErrNoActions
	c := newClient(srv.path)
	defer func() { _ = c.Close() }()
	_, err := c.Approve(context.Background(), "q1", "")
	var lost *LostError
	if errors.As(err, &lost) || !errors.Is(err, ErrNoActions) {
		t.Errorf("an answered refusal: got %v, want ErrNoActions and no LostError", err)
	}
	gone := newClient(filepath.Join(shortDir(t), "none.sock"))
	_, err = gone.Approve(context.Background(), "q1", "")
	if errors.As(err, &lost) || !errors.Is(err, ErrNoWatcher) {
		t.Errorf("nothing listening: got %v, want ErrNoWatcher and no LostError", err)
	}
}
