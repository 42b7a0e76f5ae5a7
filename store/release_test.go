package store

import (
	"path/filepath"
	"testing"
)

func TestReleaseMemoryKeepsData(t *testing.T) {
	t.Parallel()
	s, err := Open(filepath.Join(t.TempDir(), "db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	rec := &MessageRecord{MessageKey: MessageKey{Account: "a", Mailbox: "INBOX", UIDValidity: 1, UID: 1}, MessageID: "m@x", State: StateDone}
	if err := s.PutMessage(rec); err != nil {
		t.Fatal(err)
	}
	if err := s.ReleaseMemory(); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetMessage(rec.MessageKey)
	if err != nil || got.MessageID != "m@x" {
		t.Errorf("after release: got %+v, %v", got, err)
	}
	if err := s.PutMessage(rec); err != nil {
		t.Errorf("write after release: %v", err)
	}
}
