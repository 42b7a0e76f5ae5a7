//go:build unix

package store

import (
	"errors"
	"os"
	"syscall"
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
