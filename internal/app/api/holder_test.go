//go:build unix

package api

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mailagent/mailagent/store"
)

// TestHolderFile: a holder names itself while it holds, and removes only
// its own record.
func TestHolderFile(t *testing.T) {
	t.Parallel()
	dir := shortDir(t)
	if h := ReadHolder(dir); h != nil {
		t.Fatalf("no file: got %+v, want nil", h)
	}
	remove, err := WriteHolder(dir, "triage")
	if err != nil {
		t.Fatal(err)
	}
	h := ReadHolder(dir)
	if h == nil || h.PID != os.Getpid() || h.Command != "triage" {
		t.Fatalf("got %+v, want this process as triage", h)
	}
	if got, want := h.String(), "a triage (pid "; !strings.HasPrefix(got, want) {
		t.Errorf("String: got %q, want %q…", got, want)
	}
	if fi, err := os.Stat(HolderPath(dir)); err != nil || fi.Mode().Perm()&0o077 != 0 {
		t.Errorf("holder file mode: %v %v, want private", fi.Mode(), err)
	}
	// Another holder took over (this one's record is gone): remove
	// leaves the other's alone.
	remove2, err := WriteHolder(dir, "watch")
	if err != nil {
		t.Fatal(err)
	}
	remove()
	if h := ReadHolder(dir); h == nil || h.Command != "watch" {
		t.Fatalf("after the old holder's remove: got %+v, want the watch's record kept", h)
	}
	remove2()
	if _, err := os.Stat(HolderPath(dir)); !os.IsNotExist(err) {
		t.Errorf("after remove: %v, want no file", err)
	}
}

// holderAttacks runs the attacks on the holder file in a fresh state
// directory and returns how many it tried and, by name, why each that
// got through did.
func holderAttacks(t *testing.T) (tried int, through map[string]string) {
	t.Helper()
	dir := shortDir(t)
	path := HolderPath(dir)
	write := func(h any) {
		t.Helper()
		_ = os.Remove(path)
		data, _ := json.Marshal(h)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	through = map[string]string{}
	attack := func(name string, ok bool, detail string) {
		tried++
		if !ok {
			through[name] = detail
		}
	}

	write(Holder{PID: os.Getpid(), Command: "\x1b]0;owned\x07tri\x1b[2Jage\r\nroot# rm -rf ~"})
	h := ReadHolder(dir)
	attack("terminal escapes in the command", h != nil && !strings.ContainsAny(h.String(), "\x1b\x07\r\n"), fmt.Sprintf("%q", h))

	write(Holder{PID: os.Getpid(), Command: strings.Repeat("A", 10000)})
	h = ReadHolder(dir)
	attack("oversized command", h == nil || len(h.Command) <= 40, "command kept whole")

	write(Holder{PID: 1 << 30, Command: "watch"})
	attack("a dead (spoofed) pid", ReadHolder(dir) == nil, "named a process that does not exist")

	_ = os.Remove(path)
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	h, blocked := readHolderBesideAWriter(dir)
	attack("a FIFO as holder file", h == nil && !blocked, fmt.Sprintf("read a FIFO (blocked until a writer came: %v)", blocked))

	_ = os.Remove(path)
	target := filepath.Join(dir, "elsewhere")
	if err := os.WriteFile(target, []byte(`{"pid":1,"command":"watch"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
	attack("a symlink as holder file", ReadHolder(dir) == nil, "followed a symlink")
	// Writing over a planted symlink replaces the link, never its target.
	remove, err := WriteHolder(dir, "triage")
	if err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(target)
	attack("a symlink planted to redirect the write", string(data) == `{"pid":1,"command":"watch"}`, string(data))
	remove()
	return tried, through
}

// readHolderBesideAWriter calls ReadHolder on a FIFO at dir's holder
// path; a reader that opens it is given a writer (this process's record),
// so that it returns rather than blocking forever. blocked reports that
// ReadHolder was still in the FIFO's open when the writer came (or never
// returned).
func readHolderBesideAWriter(dir string) (h *Holder, blocked bool) {
	done := make(chan *Holder, 1)
	go func() { done <- ReadHolder(dir) }()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case h := <-done:
			return h, false
		default:
		}
		// Opening for writing without blocking succeeds only once a
		// reader has the FIFO open (or is waiting in its open).
		f, err := os.OpenFile(HolderPath(dir), os.O_WRONLY|syscall.O_NONBLOCK, 0)
		if err != nil {
			time.Sleep(time.Millisecond)
			continue
		}
		_, _ = fmt.Fprintf(f, `{"pid":%d,"command":"watch"}`, os.Getpid())
		_ = f.Close()
		select {
		case h := <-done:
			return h, true
		case <-time.After(5 * time.Second):
			return nil, true
		}
	}
	return nil, true
}

// TestHolderFileHostile: the holder file is read and shown on a
// terminal; whatever is in it, reading it never blocks, never shows
// control characters, and never names a dead process; writing it never
// follows a planted symlink.
func TestHolderFileHostile(t *testing.T) {
	t.Parallel()
	tried, through := holderAttacks(t)
	for name, detail := range through {
		t.Errorf("attack %q got through: %s", name, detail)
	}
	t.Logf("holder file attacks: %d tried, %d got through", tried, len(through))
	if tried == 0 || len(through) != 0 {
		t.Fatalf("%d of %d attacks got through", len(through), tried)
	}
}

// TestHolderFileHostileLandsWithoutChecks is the positive control of
// TestHolderFileHostile: with the holder file's checks off
// (holderChecksOff: no regular-file, size or liveness check, the command
// kept as written, the write in place), every attack gets through the
// test's own check (holderAttacks): the FIFO is opened and read (given a
// writer, not left blocked), the symlinks are followed, the escapes and
// the long command are shown, the dead pid is named. Not parallel: the
// switch is global.
func TestHolderFileHostileLandsWithoutChecks(t *testing.T) {
	holderChecksOff.Store(true)
	defer holderChecksOff.Store(false)
	tried, through := holderAttacks(t)
	for name, detail := range through {
		t.Logf("landed: %s: %.80s", name, detail)
	}
	t.Logf("without the checks: %d of %d landed", len(through), tried)
	if tried == 0 || len(through) != tried {
		t.Errorf("positive control: got %d of %d landed, want all", len(through), tried)
	}
}

// TestServeHeld: a holder that is not the watcher serves the socket and
// names itself while it holds the database; stop removes both.
func TestServeHeld(t *testing.T) {
	t.Parallel()
	dir := shortDir(t)
	st, err := store.Open(filepath.Join(dir, "mailagent.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = st.Close() }()
	ctx := context.Background()
	stop := ServeHeld(ctx, dir, &Local{DB: st, StatusFunc: func(context.Context) Status { return Status{PID: os.Getpid()} }}, "triage", nil)
	var c *Client
	deadline := time.Now().Add(10 * time.Second)
	for {
		if c, err = Dial(ctx, SocketPath(dir)); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the held socket never answered: %v", err)
		}
		time.Sleep(20 * time.Millisecond) // polling for the server to come up
	}
	s, err := c.Status(ctx)
	if err != nil || s.Watcher || s.PID != os.Getpid() {
		t.Fatalf("status through the held socket: %+v %v, want pid %d, not a watcher", s, err, os.Getpid())
	}
	_ = c.Close()
	if h := ReadHolder(dir); h == nil || h.Command != "triage" {
		t.Fatalf("holder while serving: %+v", h)
	}
	stop()
	stop() // idempotent
	if _, err := os.Stat(SocketPath(dir)); !os.IsNotExist(err) {
		t.Errorf("socket after stop: %v, want removed", err)
	}
	if h := ReadHolder(dir); h != nil {
		t.Errorf("holder after stop: %+v, want none", h)
	}
}
