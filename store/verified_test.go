package store

import (
	"bytes"
	"errors"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// TestOpenSkipsTheWalkOfAVerifiedFile: Open walks the page tree once and
// records the file as sound (VerifiedSuffix); a second open of the same,
// unwritten file skips the walk. Shown by damage the stamp cannot see (a
// leaf page's header garbled, the size and modification time put back):
// the file opens, a read meeting the page is an error, never a panic. The
// control: with the stamp gone, or after a plain write that moves the
// modification time, the walk runs and Open refuses the file.
func TestOpenSkipsTheWalkOfAVerifiedFile(t *testing.T) {
	t.Parallel()
	path, _ := corpusDB(t)
	s, err := Open(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	_ = s.Close()
	stamp := path + VerifiedSuffix
	if _, err := os.Stat(stamp); err != nil {
		t.Fatalf("no stamp after a sound open: %v", err)
	}

	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// The leaf of the middle keys: Open itself may read the first or the
	// last leaf (a page picked at random was, now and then, one it read,
	// and the open failed before any read the test makes).
	leaves := leafPages(data)
	ids := slices.Collect(maps.Keys(leaves))
	if len(ids) == 0 {
		t.Fatal("no leaf page of the messages bucket")
	}
	slices.SortFunc(ids, func(a, b int) int { return strings.Compare(leaves[a][0], leaves[b][0]) })
	leaf := ids[len(ids)/2]
	garbled := append([]byte(nil), data...)
	copy(garbled[leaf*pageSize:], []byte{0xde, 0xad, 0xbe, 0xef, 0xde, 0xad, 0xbe, 0xef}) // its page id
	write := func(b []byte, keepTime bool) {
		t.Helper()
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		if keepTime {
			if err := os.Chtimes(path, time.Now(), fi.ModTime()); err != nil {
				t.Fatal(err)
			}
		}
	}

	// Size and time as the stamp has them: the walk is skipped.
	write(garbled, true)
	noPanic(t, "open and reads of a garbled file the stamp vouches for", func() {
		s, err := Open(path, Options{ReadOnly: true})
		if err != nil {
			t.Fatalf("open of the stamped file: got %v, want the walk skipped", err)
		}
		failed := 0
		for _, err := range typicalReads(s) {
			if err != nil {
				failed++
			}
		}
		_ = s.Close()
		if failed == 0 {
			t.Errorf("reads of a garbled leaf page: none failed, want the damage met as an error")
		}
	})

	// Control 1: the stamp gone, the walk finds the page.
	if err := os.Remove(stamp); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(path, Options{ReadOnly: true}); !errors.Is(err, ErrCorrupt) {
		t.Errorf("open without the stamp: got %v, want ErrCorrupt from the walk", err)
	}

	// Control 2: a sound open stamps the file again; a plain write (the
	// modification time moves) makes the next open walk.
	write(data, false)
	if s, err := Open(path, Options{ReadOnly: true}); err != nil {
		t.Fatalf("open of the sound file: %v", err)
	} else {
		_ = s.Close()
	}
	write(garbled, false)
	if _, err := Open(path, Options{ReadOnly: true}); !errors.Is(err, ErrCorrupt) {
		t.Errorf("open after a write: got %v, want ErrCorrupt from the walk", err)
	}
	if _, err := os.Stat(stamp); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the stamp of a file the walk refused: got %v, want it removed", err)
	}
}

// TestOpenWritesNothingToAnInitialisedFile: a read-write open of a file
// init has nothing to do for commits nothing (before, every open
// committed an empty transaction: two fsyncs, and a changed file whose
// tree the next read command walked again). The control: a file missing
// one of init's markers gets the write, and then no more.
func TestOpenWritesNothingToAnInitialisedFile(t *testing.T) {
	t.Parallel()
	path, _ := corpusDB(t)
	openClose := func() {
		t.Helper()
		s, err := Open(path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	openClose() // the copy's first open: whatever init does, it does now
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	openClose()
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Errorf("a read-write open of an initialised file changed it (meta txid %d → %d)", metaTxid(before[:pageSize]), metaTxid(after[:pageSize]))
	}

	// Control: remove one of init's markers; the next open writes it back.
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bMeta).Delete(metaQueueCreated) }); err != nil {
		t.Fatal(err)
	}
	_ = s.Close()
	openClose()
	s, err = Open(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	if err := s.db.View(func(tx *bolt.Tx) error {
		if tx.Bucket(bMeta).Get(metaQueueCreated) == nil {
			t.Errorf("control: init did not write the marker back")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}
