package store

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestOpenSnapshotHoldsNoLock: a snapshot has what the database had when
// it was taken, is a private 0600 file beside it, leaves the database
// free for a writer at once (the old read-only open kept a shared lock
// for the whole run), does not see later writes, and is removed on Close.
func TestOpenSnapshotHoldsNoLock(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "mailagent.db")
	w, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	SeedForBench(t, w, 50)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	snap, err := OpenSnapshot(path, Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(snap.File())
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm != 0o600 {
		t.Errorf("snapshot mode: got %04o, want 0600", perm)
	}
	if filepath.Dir(snap.File()) != dir {
		t.Errorf("snapshot in %s, want beside the database in %s", filepath.Dir(snap.File()), dir)
	}

	// A writer (watch) opens the database while the snapshot is open.
	w, err = Open(path, Options{Timeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatalf("writer while a snapshot is open: %v, want the database free", err)
	}
	if err := w.PutMessage(benchRecord(51, StateDone, time.Now())); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	n := 0
	if err := snap.ListMessages(MessageFilter{}, func(*MessageRecord) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	if n != 50 {
		t.Errorf("records in the snapshot: got %d, want the 50 it was taken with", n)
	}
	if err := snap.PutMessage(benchRecord(52, StateDone, time.Now())); err == nil {
		t.Error("a write to the snapshot succeeded; want it read-only")
	}
	if err := snap.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(snap.File()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("snapshot file after Close: %v, want it removed", err)
	}
}

// TestOpenSnapshotLockedAndStale: a database held by a writer is a
// *LockedError (no copy left behind); leftovers of dead processes (old,
// unlocked) are removed, a copy in use (locked) is kept.
func TestOpenSnapshotLockedAndStale(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "mailagent.db")
	w, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := OpenSnapshot(path, Options{Timeout: 100 * time.Millisecond}); !errors.Is(err, ErrLocked) {
		t.Fatalf("snapshot of a held database: got %v, want ErrLocked", err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	inUse, err := OpenSnapshot(path, Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = inUse.Close() }()
	stale := filepath.Join(dir, snapshotPrefix+"dead.db")
	if err := os.WriteFile(stale, []byte("left by a crash"), 0o600); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-2 * staleSnapshotAge)
	for _, p := range []string{stale, inUse.File()} {
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	young := filepath.Join(dir, snapshotPrefix+"young.db")
	if err := os.WriteFile(young, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	other, err := OpenSnapshot(path, Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stale copy: %v, want removed", err)
	}
	for _, p := range []string{inUse.File(), young} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s: %v, want kept (in use, or too young to judge)", filepath.Base(p), err)
		}
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), snapshotPrefix) && e.Name() != filepath.Base(inUse.File()) && e.Name() != filepath.Base(young) {
			t.Errorf("left behind: %s", e.Name())
		}
	}
}

// BenchmarkOpenSnapshot measures what a long read-only run pays to stop
// holding the database: one consistent copy (tx.WriteTo) plus opening it,
// against opening the database itself read-only (the old way, which kept
// the shared lock for the whole run), and against a plain file copy under
// the shared lock (what a copy costs at best). n=100000 is the 100k-record
// database of BENCHMARKS.md section 6. The copy's time is how long the
// shared lock is held.
func BenchmarkOpenSnapshot(b *testing.B) {
	path := filepath.Join(b.TempDir(), "mailagent.db")
	s, err := Open(path, Options{})
	if err != nil {
		b.Fatal(err)
	}
	SeedForBench(b, s, 100000)
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	fi, _ := os.Stat(path)
	b.Logf("database: %d records, %.1f MB", 100000, float64(fi.Size())/1e6)

	b.Run("snapshot", func(b *testing.B) {
		for b.Loop() {
			st, err := OpenSnapshot(path, Options{Timeout: time.Second})
			if err != nil {
				b.Fatal(err)
			}
			if err := st.Close(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("readonly-open", func(b *testing.B) {
		for b.Loop() {
			st, err := Open(path, Options{ReadOnly: true, Timeout: time.Second})
			if err != nil {
				b.Fatal(err)
			}
			if err := st.Close(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("file-copy", func(b *testing.B) {
		for b.Loop() {
			src, err := os.Open(path)
			if err != nil {
				b.Fatal(err)
			}
			if err := lockShared(src, time.Second); err != nil {
				b.Fatal(err)
			}
			dst, err := os.CreateTemp(filepath.Dir(path), "copy-*")
			if err != nil {
				b.Fatal(err)
			}
			if _, err := io.Copy(dst, src); err != nil {
				b.Fatal(err)
			}
			_ = dst.Close()
			_ = src.Close()
			_ = os.Remove(dst.Name())
		}
	})
}
