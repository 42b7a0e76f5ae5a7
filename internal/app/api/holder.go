package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode"
)

// HolderFile is the name of the small file, beside the database, in which
// a process that holds the database for long (watch, triage, a CLI
// approval waiting out its undo window) says who it is, so that a process
// that finds the database locked can say what it waits for.
const HolderFile = "mailagent.holder"

// Holder is who holds the database, as written in HolderFile.
type Holder struct {
	PID     int       `json:"pid"`
	Command string    `json:"command"` // "watch", "triage", "queue approve", …
	Started time.Time `json:"started"`
}

// String reads "a triage (pid 123)".
func (h *Holder) String() string {
	return fmt.Sprintf("%s %s (pid %d)", article(h.Command), h.Command, h.PID)
}

func article(s string) string {
	if s != "" && (s[0] == 'a' || s[0] == 'e' || s[0] == 'i' || s[0] == 'o' || s[0] == 'u') {
		return "an"
	}
	return "a"
}

// HolderPath is the holder file of stateDir.
func HolderPath(stateDir string) string { return filepath.Join(stateDir, HolderFile) }

// WriteHolder records this process as the holder of the database in
// stateDir, with the given command name. Call it only while holding the
// database; the returned func removes the file (only when it is still
// this process's) and must be called before the database is closed.
func WriteHolder(stateDir, command string) (remove func(), err error) {
	h := Holder{PID: os.Getpid(), Command: command, Started: time.Now().UTC()}
	data, _ := json.Marshal(h) // plain fields: cannot fail
	path := HolderPath(stateDir)
	remove = func() {
		if cur, err := readHolder(path); err == nil && cur.PID == h.PID && cur.Started.Equal(h.Started) {
			_ = os.Remove(path)
		}
	}
	if holderChecksOff.Load() {
		// In place, following whatever is at path.
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return func() {}, fmt.Errorf("write %s: %w", path, err)
		}
		return remove, nil
	}
	tmp, err := os.CreateTemp(stateDir, ".holder-*")
	if err != nil {
		return func() {}, fmt.Errorf("write %s: %w", path, err)
	}
	_, werr := tmp.Write(data)
	if err := errors.Join(werr, tmp.Close()); err != nil {
		_ = os.Remove(tmp.Name())
		return func() {}, fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		_ = os.Remove(tmp.Name())
		return func() {}, fmt.Errorf("write %s: %w", path, err)
	}
	return remove, nil
}

// ReadHolder returns the holder recorded in stateDir when its process is
// alive, and nil otherwise (no file, a damaged one, or a process that
// died without removing it). The lock is the truth: the file only names
// who most likely holds it.
func ReadHolder(stateDir string) *Holder {
	h, err := readHolder(HolderPath(stateDir))
	if err != nil || (!holderChecksOff.Load() && (h.PID <= 0 || !alive(h.PID))) {
		return nil
	}
	return h
}

// HolderName names, for a message, the process pid whose socket answered
// while it is not a watcher: "a triage (pid N)" when the holder file in
// stateDir names that process, else "another mailagent process (pid N)".
func HolderName(stateDir string, pid int) string {
	if stateDir != "" {
		if h := ReadHolder(stateDir); h != nil && h.PID == pid {
			return h.String()
		}
	}
	return fmt.Sprintf("another mailagent process (pid %d)", pid)
}

// maxHolderFile caps what is read of the holder file: it is a few dozen
// bytes when mailagent wrote it.
const maxHolderFile = 4 << 10

// readHolder reads the holder file. Anything but a small regular file
// (a FIFO that would block, a symlink, a huge file) is refused, and the
// command is cut to a short line of printable characters: the file only
// ever names a process in a message.
func readHolder(path string) (*Holder, error) {
	off := holderChecksOff.Load()
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if !off && (!fi.Mode().IsRegular() || fi.Size() > maxHolderFile) {
		return nil, fmt.Errorf("%s: not a small regular file", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	var r io.Reader = io.LimitReader(f, maxHolderFile)
	if off {
		r = f
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	var h Holder
	if err := json.Unmarshal(data, &h); err != nil {
		return nil, err
	}
	if !off {
		h.Command = cleanCommand(h.Command)
	}
	return &h, nil
}

// holderChecksOff takes the holder file as it comes: readHolder follows
// a symlink, opens a FIFO, reads a file of any size and keeps the command
// as written; ReadHolder names a process without asking whether it is
// alive; WriteHolder writes in place, following a symlink planted at the
// path. It exists only for the positive control of TestHolderFileHostile
// (package api); nothing in the product sets it. Never from a parallel
// test.
var holderChecksOff atomic.Bool

// cleanCommand keeps letters, digits, spaces and a little punctuation, at
// most 40 characters; an empty result reads "mailagent command".
func cleanCommand(s string) string {
	var b strings.Builder
	for _, r := range s {
		if b.Len() >= 40 {
			break
		}
		if unicode.IsLetter(r) || unicode.IsDigit(r) || r == ' ' || r == '-' || r == '_' || r == '.' {
			b.WriteRune(r)
		}
	}
	if out := strings.TrimSpace(b.String()); out != "" {
		return out
	}
	return "mailagent command"
}

// alive reports whether a process with that id exists.
func alive(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	err = p.Signal(syscall.Signal(0))
	return err == nil || errors.Is(err, syscall.EPERM)
}

// ServeHeld serves svc on the socket of stateDir for as long as this
// process holds the database (until stop is called or ctx ends), and
// records this process in HolderFile as command. It is for a process
// that holds the database for longer than a moment without being the
// watcher (triage, a CLI approval in its undo window): the other
// commands then work through it, as they do through a watcher. A socket
// that cannot be served is logged, not fatal: the holder's own work goes
// on. stop stops serving, waits for requests in flight, and removes the
// holder file; call it before closing the database.
func ServeHeld(ctx context.Context, stateDir string, svc Service, command string, log *slog.Logger) (stop func()) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	removeHolder, err := WriteHolder(stateDir, command)
	if err != nil {
		log.Warn("api: record the holder of the database", "err", err)
	}
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := Serve(sctx, SocketPath(stateDir), svc, log); err != nil && !errors.Is(err, fs.ErrClosed) {
			log.Warn("api: serve while holding the database", "command", command, "err", err)
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			<-done
			removeHolder()
		})
	}
}
