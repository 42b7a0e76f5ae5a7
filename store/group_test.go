package store

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	bolt "go.etcd.io/bbolt"
)

func TestGroupCommitIsolatesAFailingWrite(t *testing.T) {
	t.Parallel()
	s, err := Open(filepath.Join(t.TempDir(), "db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	bad := errors.New("bad write")
	var wg sync.WaitGroup
	errs := make([]error, 50)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = s.update(func(tx *bolt.Tx) error {
				if i == 7 {
					return bad
				}
				return tx.Bucket(bMeta).Put([]byte(fmt.Sprintf("k%02d", i)), []byte("v"))
			})
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if i == 7 && !errors.Is(err, bad) {
			t.Errorf("write 7: got %v, want the bad-write error", err)
		}
		if i != 7 && err != nil {
			t.Errorf("write %d: got %v, want nil", i, err)
		}
	}
	n := 0
	_ = s.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bMeta).ForEach(func(k, _ []byte) error {
			if len(k) == 3 && k[0] == 'k' {
				n++
			}
			return nil
		})
	})
	if n != 49 {
		t.Errorf("stored %d keys, want 49", n)
	}
}

// TestGroupCommitRecoversAPanic: a write that panics on the committer's
// goroutine gets the panic as its error; the process lives and the other
// writes of the same batch are committed (the panicking one is not re-run
// with them).
func TestGroupCommitRecoversAPanic(t *testing.T) {
	t.Parallel()
	s, err := Open(filepath.Join(t.TempDir(), "db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	var wg sync.WaitGroup
	errs := make([]error, 40)
	var mu sync.Mutex
	calls := map[int]int{}
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = s.update(func(tx *bolt.Tx) error {
				mu.Lock()
				calls[i]++
				mu.Unlock()
				if i%10 == 3 {
					var m map[string]int
					//lint:ignore SA5000 the runtime panic inside the transaction is what this test is about
					m["boom"] = i // panics: assignment to a nil map
				}
				return tx.Bucket(bMeta).Put([]byte(fmt.Sprintf("p%02d", i)), []byte("v"))
			})
		}()
	}
	wg.Wait()
	var pe *PanicError
	for i, err := range errs {
		switch {
		case i%10 == 3 && !errors.As(err, &pe):
			t.Errorf("write %d: got %v, want a *PanicError", i, err)
		case i%10 != 3 && err != nil:
			t.Errorf("write %d: got %v, want nil", i, err)
		}
		// A write runs again once for each failing write before it in its batch.
		if calls[i] > 1+4 || (i%10 == 3 && calls[i] != 1) {
			t.Errorf("write %d ran %d times", i, calls[i])
		}
	}
	n := 0
	_ = s.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bMeta).ForEach(func(k, _ []byte) error {
			if len(k) == 3 && k[0] == 'p' {
				n++
			}
			return nil
		})
	})
	if n != 36 {
		t.Errorf("stored %d keys, want 36", n)
	}
	// The committer still works.
	if err := s.update(func(tx *bolt.Tx) error { return tx.Bucket(bMeta).Put([]byte("after"), []byte("v")) }); err != nil {
		t.Fatal(err)
	}
}
