//go:build linux

package store

import (
	"fmt"
	"os"
	"syscall"

	bolt "go.etcd.io/bbolt"
)

// ReleaseMemory drops this process's mappings of the database pages that
// start-up scans touched. The pages stay in the page cache and are mapped
// again on the next access, so nothing is lost; only the resident set of a
// long-running watcher shrinks. bbolt maps the file read-only and writes
// with pwrite, so MADV_DONTNEED cannot discard data.
func (s *Store) ReleaseMemory() error {
	fi, err := os.Stat(s.path)
	if err != nil {
		return fmt.Errorf("release memory: %w", err)
	}
	// Inside a read transaction bbolt cannot remap, so the address stays
	// valid for the call.
	return s.view(func(*bolt.Tx) error {
		info := s.db.Info()
		if info.Data == 0 || fi.Size() == 0 {
			return nil
		}
		if _, _, errno := syscall.Syscall(syscall.SYS_MADVISE, info.Data, uintptr(fi.Size()), syscall.MADV_DONTNEED); errno != 0 {
			return fmt.Errorf("release memory: madvise: %w", errno)
		}
		return nil
	})
}
