//go:build unix

package store

import (
	"errors"
	"os"
	"syscall"
	"time"
)

// lockExclusive takes bbolt's own lock (flock, exclusive, non-blocking) on
// f, so that Repair never moves a file a running watcher holds.
func lockExclusive(f *os.File) error {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return ErrLocked
	}
	return err
}

// lockShared takes a shared flock on f (what a bbolt reader takes),
// waiting up to timeout: while it is held no bbolt writer can change the
// file. The lock goes with f's Close.
func lockShared(f *os.File, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return err
		}
		if time.Now().After(deadline) {
			return ErrLocked
		}
		time.Sleep(50 * time.Millisecond)
	}
}
