//go:build unix

package e2e

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The stack is shared by every test binary that `go test ./...` runs in
// parallel, and RestartDovecot cuts all their IMAP connections. An advisory
// lock on DIR/stack.lock keeps restarts from pulling the server out from
// under other packages: each test process holds a shared lock from its first
// Require until it exits, and RestartDovecot takes the lock exclusively, so
// it waits until no other test binary is using the stack.
//
// A process that wants the exclusive lock gives up its shared one while it
// waits (flock converts non-atomically), so two restarting processes cannot
// deadlock: each waits only for processes that are not waiting.

var (
	lockOnce sync.Once
	lockFile *os.File // nil when the lock file could not be opened
)

// holdSharedLock takes the process-wide shared lock once. It is best effort:
// when the state directory is not writable (a non-root developer), tests run
// without the coordination.
func holdSharedLock(t testing.TB, dir string) {
	t.Helper()
	lockOnce.Do(func() {
		f, err := os.OpenFile(filepath.Join(dir, "stack.lock"), os.O_RDWR|os.O_CREATE, 0o666)
		if err != nil {
			t.Logf("e2e: no stack lock (restarts are not coordinated): %v", err)
			return
		}
		if err := flockWait(f, syscall.LOCK_SH, 10*time.Minute); err != nil {
			_ = f.Close()
			t.Logf("e2e: no stack lock (restarts are not coordinated): %v", err)
			return
		}
		lockFile = f
	})
}

// withExclusiveLock runs fn while no other test process holds the stack
// lock, then returns to the shared lock.
func withExclusiveLock(t testing.TB, dir string, fn func()) {
	t.Helper()
	holdSharedLock(t, dir)
	if lockFile == nil {
		fn()
		return
	}
	if err := flockWait(lockFile, syscall.LOCK_EX, 15*time.Minute); err != nil {
		t.Fatalf("e2e: other test binaries still use the stack: %v", err)
	}
	defer func() {
		if err := syscall.Flock(int(lockFile.Fd()), syscall.LOCK_SH); err != nil {
			t.Errorf("e2e: back to shared stack lock: %v", err)
		}
	}()
	fn()
}

// flockWait polls a non-blocking flock until it succeeds or timeout passes.
// Polling rather than blocking keeps the wait bounded.
func flockWait(f *os.File, how int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		if err == nil {
			return nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return fmt.Errorf("flock %s: %w", f.Name(), err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("flock %s: still held by another process after %v", f.Name(), timeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
