package store

import (
	"path/filepath"
	"testing"
)

func TestPutOutcomeWritesAllThree(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rec := &MessageRecord{MessageKey: MessageKey{Account: "a", Mailbox: "INBOX", UIDValidity: 1, UID: 7},
		MessageID: "m@x", State: StateDone, TraceID: "tr_1"}
	tr := &Trace{TraceID: "tr_1", Message: rec.MessageKey, MessageID: "m@x"}
	if err := s.PutOutcome(rec, tr, "2026-11-21", 100, 20); err != nil {
		t.Fatal(err)
	}
	if got, err := s.GetMessage(rec.MessageKey); err != nil || got.State != StateDone {
		t.Errorf("record: got %+v, %v", got, err)
	}
	if got, err := s.TraceForMessageID("a", "M@X"); err != nil || got.TraceID != "tr_1" {
		t.Errorf("trace: got %+v, %v", got, err)
	}
	u, err := s.Usage("2026-11-21")
	if err != nil || u.TokensIn != 100 || u.TokensOut != 20 || u.Calls != 1 {
		t.Errorf("usage: got %+v, %v", u, err)
	}
	// No tokens, no usage entry; a bad day is refused before any write.
	if err := s.PutOutcome(rec, tr, "", 0, 0); err != nil {
		t.Errorf("outcome without usage: %v", err)
	}
	if err := s.PutOutcome(rec, tr, "not-a-day", 1, 1); err == nil {
		t.Error("bad day accepted")
	}
}
