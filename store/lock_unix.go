//go:build unix

package store

import (
	"errors"
	"os"
	"syscall"
	"time"
)

// lockExclusive takes bbolt's own lock (flock, exclusive) on f, so that
// Repair never moves a file a running watcher holds, waiting up to
// timeout (0: one try). A lock can outlive its holder's Close for a
// moment: a process forked by any thread of the holder keeps the open
// file, and so the lock, until it execs.
func lockExclusive(f *os.File, timeout time.Duration) error {
	return flockWait(f, syscall.LOCK_EX, timeout)
}

// lockShared takes a shared flock on f (what a bbolt reader takes),
// waiting up to timeout: while it is held no bbolt writer can change the
// file. The lock goes with f's Close.
func lockShared(f *os.File, timeout time.Duration) error {
	return flockWait(f, syscall.LOCK_SH, timeout)
}

// flockWait takes the flock how on f, trying every 50 ms (as bbolt does)
// until timeout; ErrLocked when another holder kept it.
func flockWait(f *os.File, how int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return err
		}
		if !time.Now().Before(deadline) {
			return ErrLocked
		}
		time.Sleep(min(50*time.Millisecond, time.Until(deadline)))
	}
}
