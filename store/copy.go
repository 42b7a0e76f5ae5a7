package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
)

// snapshotPrefix names the private copies OpenSnapshot makes; they live
// beside the database (the state directory is 0700, the files 0600).
const snapshotPrefix = ".snapshot-"

// staleSnapshotAge is how old a copy must be before another process may
// take it for a leftover of a crash (and then only when nobody holds its
// lock).
const staleSnapshotAge = time.Minute

// OpenSnapshot is for a long read-only run (triage --dry-run, replay): it
// copies the database at path in one short read transaction (the shared
// lock is held only for the copy, so a watcher can start the moment it
// ends), and opens the copy read-only. The copy is a private file beside
// the database (mode 0600); Close on the returned store removes it. It
// sees the database as it was at the copy: later writes by others are not
// in it.
//
// Leftover copies of processes that died are removed on the way. When the
// lock cannot be had within opts.Timeout the error is a *LockedError.
func OpenSnapshot(path string, opts Options) (*SnapshotStore, error) {
	src, err := Open(path, Options{ReadOnly: true, Timeout: opts.Timeout})
	if err != nil {
		return nil, err
	}
	dir := filepath.Dir(path)
	removeStaleSnapshots(dir)
	f, err := os.CreateTemp(dir, snapshotPrefix+"*.db") // 0600
	if err != nil {
		_ = src.Close()
		return nil, fmt.Errorf("snapshot state database: %w", err)
	}
	tmp := f.Name()
	cleanup := func() { _ = os.Remove(tmp) }
	err = guard(path, func() error {
		return src.db.View(func(tx *bolt.Tx) error {
			_, err := tx.WriteTo(f)
			return err
		})
	})
	err = errors.Join(err, f.Close(), src.Close())
	if err != nil {
		cleanup()
		return nil, fmt.Errorf("snapshot state database %s: %w", path, err)
	}
	opts.ReadOnly, opts.copied = true, true
	st, err := Open(tmp, opts)
	if err != nil {
		cleanup()
		return nil, fmt.Errorf("open snapshot of %s: %w", path, err)
	}
	return &SnapshotStore{Store: st, file: tmp}, nil
}

// SnapshotStore is a Store over a private copy (OpenSnapshot).
type SnapshotStore struct {
	*Store
	file string
}

// Close closes the copy and removes it.
func (s *SnapshotStore) Close() error {
	err := s.Store.Close()
	if rerr := os.Remove(s.file); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
		err = errors.Join(err, fmt.Errorf("remove snapshot: %w", rerr))
	}
	return err
}

// File is the copy's path.
func (s *SnapshotStore) File() string { return s.file }

// removeStaleSnapshots removes copies left in dir by processes that died:
// older than staleSnapshotAge, and not locked (a live reader's bbolt
// holds a shared lock on its copy). Errors are ignored: a leftover costs
// only disk space, and the next run tries again.
func removeStaleSnapshots(dir string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		name := e.Name()
		if !strings.HasPrefix(name, snapshotPrefix) || !strings.HasSuffix(name, ".db") || !e.Type().IsRegular() {
			continue
		}
		fi, err := e.Info()
		if err != nil || time.Since(fi.ModTime()) < staleSnapshotAge {
			continue
		}
		p := filepath.Join(dir, name)
		f, err := os.Open(p)
		if err != nil {
			continue
		}
		if lockExclusive(f, 0) == nil {
			_ = os.Remove(p)
		}
		_ = f.Close()
	}
}
