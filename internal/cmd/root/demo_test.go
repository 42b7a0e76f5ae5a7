package root

import (
	"bytes"
	"context"
	"io"
	"log"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mailagent/mailagent/internal/cmd/demo"
	"github.com/mailagent/mailagent/internal/cmdutil"
	"github.com/mailagent/mailagent/internal/iostreams"
)

// TestDemoServerLogsGoToLogFile: the in-process IMAP server's own error
// lines (a client that hangs up mid-command, as the watcher's connection
// does when the TUI quits) go to the demo's log file, never to the
// standard log package, which writes to the terminal.
func TestDemoServerLogsGoToLogFile(t *testing.T) {
	d := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(d, "config"))
	t.Setenv("XDG_STATE_HOME", filepath.Join(d, "state"))
	t.Setenv("MAILAGENT_CONFIG", "")
	t.Setenv("GEMINI_API_KEY", "")
	var lib bytes.Buffer
	log.SetOutput(&lib)
	t.Cleanup(func() { log.SetOutput(os.Stderr) })
	f := cmdutil.New(iostreams.New(strings.NewReader(""), io.Discard, io.Discard))
	defer f.Close()
	env, err := demo.StartWorld(context.Background(), f)
	if env != nil {
		defer env.Close(false)
	}
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(env.IMAPPort)))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	// A command cut off by the end of the stream: the server logs
	// "failed to read command: unexpected EOF".
	_, _ = conn.Write([]byte("a1 NOOP"))
	_ = conn.(*net.TCPConn).CloseWrite()
	logPath := filepath.Join(env.StateDir, "mailagent.log")
	deadline := time.Now().Add(5 * time.Second)
	var logged []byte
	for time.Now().Before(deadline) {
		if logged, _ = os.ReadFile(logPath); bytes.Contains(logged, []byte("demo server")) {
			break
		}
		time.Sleep(20 * time.Millisecond) // polling the log file for the server's line
	}
	if !bytes.Contains(logged, []byte("demo server")) {
		t.Errorf("the server's error line is not in the log file %s: %q (standard log got %q)", logPath, logged, lib.String())
	}
	if lib.Len() != 0 {
		t.Errorf("the IMAP server wrote to the standard log (the terminal): %q", lib.String())
	}
}

// TestNewCmdDemoFlags: the flags land in the Options runF gets.
func TestNewCmdDemoFlags(t *testing.T) {
	t.Parallel()
	ios, _, _, _ := iostreams.Test()
	f := cmdutil.New(ios)
	var got *demo.DemoOptions
	cmd := demo.NewCmdDemo(f, func(_ context.Context, o *demo.DemoOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"--no-tui", "--json", "--keep"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	want := demo.DemoOptions{IO: ios, Factory: f, NoTUI: true, JSON: true, Keep: true}
	if got == nil || *got != want {
		t.Fatalf("runF got %+v, want %+v", got, want)
	}
}
