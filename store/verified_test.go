package store

import (
	"errors"
	"os"
	"testing"
	"time"
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
	var leaf int
	for id := range leafPages(data) {
		leaf = id
		break
	}
	if leaf == 0 {
		t.Fatal("no leaf page of the messages bucket")
	}
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
