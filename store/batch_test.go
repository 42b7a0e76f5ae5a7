package store

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
)

func batchOutcome(uid uint32, thread string) (*MessageRecord, *Trace) {
	rec := &MessageRecord{MessageKey: MessageKey{Account: "a", Mailbox: "INBOX", UIDValidity: 1, UID: uid},
		MessageID: fmt.Sprintf("m%d@x", uid), ThreadID: thread, State: StateDone, TraceID: fmt.Sprintf("tr_%d", uid)}
	return rec, &Trace{TraceID: rec.TraceID, Message: rec.MessageKey, MessageID: rec.MessageID}
}

// TestBatchHoldsThenCommits: held outcomes are not in the database yet,
// but every read through the Batch sees them; the size-th outcome and
// Flush commit them, with their traces and usage.
func TestBatchHoldsThenCommits(t *testing.T) {
	s, _ := openTest(t)
	b := NewBatch(s, 3)
	r1, t1 := batchOutcome(1, "th1")
	r2, t2 := batchOutcome(2, "th2")
	for _, o := range []struct {
		r *MessageRecord
		t *Trace
	}{{r1, t1}, {r2, t2}} {
		if err := b.PutOutcome(o.r, o.t, "2026-11-21", 10, 2); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.GetMessage(r1.MessageKey); !errors.Is(err, ErrNotFound) {
		t.Fatalf("held record already in the database: %v", err)
	}
	if got, err := b.GetMessage(r1.MessageKey); err != nil || got.MessageID != "m1@x" {
		t.Fatalf("GetMessage of a held record: %+v, %v", got, err)
	}
	// A thread read sees a held record of the thread (it commits first).
	msgs, err := b.ThreadMessages("th2", 0)
	if err != nil || len(msgs) != 1 || msgs[0].UID != 2 {
		t.Fatalf("ThreadMessages(th2) = %v, %v; want uid 2", msgs, err)
	}
	if _, err := s.GetMessage(r1.MessageKey); err != nil {
		t.Fatalf("after a thread read, held records are committed: %v", err)
	}
	// The size-th outcome commits without a Flush.
	for uid := uint32(3); uid <= 5; uid++ {
		r, tr := batchOutcome(uid, "th3")
		if err := b.PutOutcome(r, tr, "2026-11-21", 10, 2); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.GetMessage(MessageKey{Account: "a", Mailbox: "INBOX", UIDValidity: 1, UID: 5}); err != nil {
		t.Fatalf("the size-th outcome did not commit: %v", err)
	}
	r6, t6 := batchOutcome(6, "th3")
	if err := b.PutOutcome(r6, t6, "", 0, 0); err != nil {
		t.Fatal(err)
	}
	if err := b.Flush(); err != nil {
		t.Fatal(err)
	}
	if got, err := s.TraceForMessageID("a", "m6@x"); err != nil || got.TraceID != "tr_6" {
		t.Errorf("trace after Flush: %+v, %v", got, err)
	}
	if u, err := s.Usage("2026-11-21"); err != nil || u.TokensIn != 50 || u.TokensOut != 10 || u.Calls != 5 {
		t.Errorf("usage: %+v, %v; want 50 in, 10 out, 5 calls", u, err)
	}
	if c, err := s.CountByState(); err != nil || c[StateDone] != 6 {
		t.Errorf("state counts %v, %v; want 6 done", c, err)
	}
}

// TestBatchRelabelMovesHeldRecords: a thread merge reaches records that
// were still held.
func TestBatchRelabelMovesHeldRecords(t *testing.T) {
	s, _ := openTest(t)
	b := NewBatch(s, 100)
	r, tr := batchOutcome(1, "old")
	if err := b.PutOutcome(r, tr, "", 0, 0); err != nil {
		t.Fatal(err)
	}
	if err := b.RelabelThread("old", "new"); err != nil {
		t.Fatal(err)
	}
	msgs, err := b.ThreadMessages("new", 0)
	if err != nil || len(msgs) != 1 {
		t.Fatalf("ThreadMessages(new) = %v, %v; want the held record, relabelled", msgs, err)
	}
}

// TestBatchCopiesTheRecord: the caller may change its record after
// PutOutcome; what is committed is what was put.
func TestBatchCopiesTheRecord(t *testing.T) {
	s, _ := openTest(t)
	b := NewBatch(s, 100)
	r, tr := batchOutcome(1, "th")
	if err := b.PutOutcome(r, tr, "", 0, 0); err != nil {
		t.Fatal(err)
	}
	r.Subject = "changed later"
	if err := b.Flush(); err != nil {
		t.Fatal(err)
	}
	if got, err := s.GetMessage(r.MessageKey); err != nil || got.Subject != "" {
		t.Errorf("committed %+v, %v; want the record as put", got, err)
	}
}

// TestBatchFailedCommitIsSticky: a commit that fails is reported by the
// call that made it and by every later write, and the held records stay
// readable; nothing is dropped silently.
func TestBatchFailedCommitIsSticky(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	b := NewBatch(s, 100)
	r, tr := batchOutcome(1, "th")
	if err := b.PutOutcome(r, tr, "", 0, 0); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Flush(); err == nil {
		t.Fatal("Flush on a closed database: nil error")
	}
	r2, tr2 := batchOutcome(2, "th")
	if err := b.PutOutcome(r2, tr2, "", 0, 0); err == nil {
		t.Error("PutOutcome after a failed commit: nil error")
	}
	if err := b.Flush(); err == nil {
		t.Error("second Flush after a failed commit: nil error")
	}
	if got, err := b.GetMessage(r.MessageKey); err != nil || got.UID != 1 {
		t.Errorf("held record after a failed commit: %+v, %v", got, err)
	}
}

// TestBatchConcurrentWriters: workers putting at once lose nothing.
func TestBatchConcurrentWriters(t *testing.T) {
	s, _ := openTest(t)
	b := NewBatch(s, 7)
	var wg sync.WaitGroup
	errs := make(chan error, 200)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				r, tr := batchOutcome(uint32(w*50+i+1), fmt.Sprintf("th%d", i%5))
				if err := b.PutOutcome(r, tr, "", 0, 0); err != nil {
					errs <- err
				}
				if _, err := b.ThreadMessages(r.ThreadID, 3); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if err := b.Flush(); err != nil {
		t.Fatal(err)
	}
	if c, err := s.CountByState(); err != nil || c[StateDone] != 200 {
		t.Errorf("state counts %v, %v; want 200 done", c, err)
	}
}
