//go:build !linux

package store

// ReleaseMemory is a no-op where madvise is not wired up.
func (s *Store) ReleaseMemory() error { return nil }
