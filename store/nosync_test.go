package store

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"
)

// TestNoSyncStore: a NoSync store (triage's) skips the per-commit fsync,
// Close flushes it, and every concurrent write is there when the file is
// opened again the ordinary (durable) way, as watch opens it.
func TestNoSyncStore(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "state.db")
	s, err := Open(path, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	if s.Durable() {
		t.Fatal("NoSync store: Durable() = true, want false")
	}
	const writers, each = 8, 50
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				if err := s.PutMessage(msg("acct", "INBOX", 1, uint32(w*each+i+1), StateDone)); err != nil {
					errs <- fmt.Errorf("writer %d: %w", w, err)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if err := s.Sync(); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	s2, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s2.Close() }()
	if !s2.Durable() {
		t.Fatal("default Open: Durable() = false, want true (watch's durability)")
	}
	n := 0
	if err := s2.ListMessages(MessageFilter{}, func(*MessageRecord) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	if n != writers*each {
		t.Fatalf("records after reopen: got %d, want %d", n, writers*each)
	}
	if _, err := s2.GetMessage(MessageKey{Account: "acct", Mailbox: "INBOX", UIDValidity: 1, UID: writers * each}); err != nil {
		t.Fatalf("last record: %v", err)
	}
}

// TestSyncErrorIsReported: a sync that cannot happen is an error, not
// silence (triage reports it as results maybe not saved).
func TestSyncErrorIsReported(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "state.db")
	s, err := Open(path, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	mustPut(t, s, msg("acct", "INBOX", 1, 1, StateDone))
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := s.Sync(); err == nil {
		t.Fatal("Sync after Close: got nil error, want one")
	}
}

func TestReadOnlyAndDefaultDurability(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "state.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !s.Durable() {
		t.Error("default Open: Durable() = false, want true")
	}
	_ = s.Close()
	ro, err := Open(path, Options{ReadOnly: true, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := ro.Sync(); err != nil {
		t.Errorf("Sync of a read-only store: %v, want nil", err)
	}
	if err := ro.Close(); err != nil {
		t.Errorf("Close of a read-only NoSync store: %v", err)
	}
}
