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
	s, err := Open(filepath.Join(t.TempDir(), "db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
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
