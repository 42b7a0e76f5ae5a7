package store

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/mailagent/mailagent/internal/rig/testsize"
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
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
	s, _ := openTest(t)
	b := NewBatch(s, 7)
	eachWorker(t, 4, func(w int, report func(error)) {
		for i := range 50 {
			r, tr := batchOutcome(uint32(w*50+i+1), fmt.Sprintf("th%d", i%5))
			if err := b.PutOutcome(r, tr, "", 0, 0); err != nil {
				report(err)
			}
			if _, err := b.ThreadMessages(r.ThreadID, 3); err != nil {
				report(err)
			}
		}
	})
	if err := b.Flush(); err != nil {
		t.Fatal(err)
	}
	if c, err := s.CountByState(); err != nil || c[StateDone] != 200 {
		t.Errorf("state counts %v, %v; want 200 done", c, err)
	}
}

// eachWorker runs fn for workers 0 to n-1 at once, as the triage pool
// does, and fails t with every error they report.
func eachWorker(t *testing.T, n int, fn func(w int, report func(error))) {
	t.Helper()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	for w := range n {
		wg.Go(func() {
			fn(w, func(err error) {
				mu.Lock()
				defer mu.Unlock()
				errs = append(errs, err)
			})
		})
	}
	wg.Wait()
	for _, err := range errs {
		t.Error(err)
	}
}

// TestBatchMatchesStore: a Batch gives the same answers, and leaves the
// same database, as the Store it wraps would have written at once, for
// random interleavings of outcomes, thread merges (chains, merges back,
// merges of threads with held and committing records), reads and
// commits. 16 seeds × 300 steps (4 seeds under -race: the seeds are
// generated volume, each an independent random run of 300 steps).
func TestBatchMatchesStore(t *testing.T) {
	t.Parallel()
	for seed := range testsize.N(16, 4) {
		direct, under := openNoSync(t), openNoSync(t)
		rnd := rand.New(rand.NewPCG(uint64(seed), 7))
		b := NewBatch(under, 1+rnd.IntN(12))
		thread := func() string { return fmt.Sprint("t", rnd.IntN(6)) }
		for step := range 300 {
			where := fmt.Sprintf("seed %d step %d", seed, step)
			switch op := rnd.IntN(10); {
			case op < 4:
				r, tr := batchOutcome(uint32(1+rnd.IntN(25)), thread())
				r.Subject = fmt.Sprint("s", step)
				if err := direct.PutOutcome(r, tr, "", 0, 0); err != nil {
					t.Fatal(where, err)
				}
				if err := b.PutOutcome(r, tr, "", 0, 0); err != nil {
					t.Fatal(where, err)
				}
			case op < 6:
				from, to := thread(), thread()
				if err := direct.RelabelThread(from, to); err != nil {
					t.Fatal(where, err)
				}
				if err := b.RelabelThread(from, to); err != nil {
					t.Fatal(where, err)
				}
			case op < 8:
				k := MessageKey{Account: "a", Mailbox: "INBOX", UIDValidity: 1, UID: uint32(1 + rnd.IntN(25))}
				want, werr := direct.GetMessage(k)
				got, gerr := b.GetMessage(k)
				if errors.Is(werr, ErrNotFound) != errors.Is(gerr, ErrNotFound) {
					t.Fatalf("%s: GetMessage(%d): batch %v, store %v", where, k.UID, gerr, werr)
				}
				if werr == nil && (got.ThreadID != want.ThreadID || got.Subject != want.Subject) {
					t.Fatalf("%s: GetMessage(%d): batch %s/%s, store %s/%s", where, k.UID, got.ThreadID, got.Subject, want.ThreadID, want.Subject)
				}
			case op < 9:
				th := thread()
				want, err := direct.ThreadMessages(th, 0)
				if err != nil {
					t.Fatal(where, err)
				}
				got, err := b.ThreadMessages(th, 0)
				if err != nil {
					t.Fatal(where, err)
				}
				if g, w := uidSubjects(got), uidSubjects(want); g != w {
					t.Fatalf("%s: ThreadMessages(%s): batch %s, store %s", where, th, g, w)
				}
			default:
				if err := b.Flush(); err != nil {
					t.Fatal(where, err)
				}
			}
		}
		if err := b.Flush(); err != nil {
			t.Fatal(err)
		}
		for i := range 6 {
			th := fmt.Sprint("t", i)
			want, _ := direct.ThreadMessages(th, 0)
			got, _ := under.ThreadMessages(th, 0)
			if g, w := uidSubjects(got), uidSubjects(want); g != w {
				t.Fatalf("seed %d: committed thread %s: %s, want %s", seed, th, g, w)
			}
		}
		if b.relabels != 0 || len(b.threads) != 0 || len(b.byKey) != 0 {
			t.Fatalf("seed %d: after Flush the batch still holds %d merges, threads %v, %d records", seed, b.relabels, b.threads, len(b.byKey))
		}
	}
}

// openNoSync opens a database that does not fsync: the equivalence test
// makes thousands of commits, and what it compares is their content.
func openNoSync(t *testing.T) *Store {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "state.db"), Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func uidSubjects(rs []*MessageRecord) string {
	var parts []string
	for _, r := range rs {
		parts = append(parts, fmt.Sprintf("%d:%s:%s", r.UID, r.ThreadID, r.Subject))
	}
	slices.Sort(parts)
	return strings.Join(parts, " ")
}

// TestBatchRelabelWithQueueItemsIsImmediate: a merge of a thread that has
// queue items is not held: the items move at once, as with the Store.
func TestBatchRelabelWithQueueItemsIsImmediate(t *testing.T) {
	t.Parallel()
	s, _ := openTest(t)
	b := NewBatch(s, 100)
	r, tr := batchOutcome(1, "old")
	if err := b.PutOutcome(r, tr, "", 0, 0); err != nil {
		t.Fatal(err)
	}
	if err := s.PutQueueItem(&QueueItem{ID: "q1", Kind: KindDraft, Status: QueuePending, ThreadID: "old"}); err != nil {
		t.Fatal(err)
	}
	if err := b.RelabelThread("old", "new"); err != nil {
		t.Fatal(err)
	}
	if q, err := s.GetQueueItem("q1"); err != nil || q.ThreadID != "new" {
		t.Fatalf("queue item after the merge: %+v, %v; want thread new", q, err)
	}
	if got, err := s.GetMessage(r.MessageKey); err != nil || got.ThreadID != "new" {
		t.Fatalf("record after the merge: %+v, %v; want it committed in thread new", got, err)
	}
}

// TestBatchRelabelsConcurrently: merges, outcomes and reads from several
// goroutines (the triage pool) end with every record in the thread the
// last merge put it in.
func TestBatchRelabelsConcurrently(t *testing.T) {
	t.Parallel()
	s, _ := openTest(t)
	b := NewBatch(s, 5)
	eachWorker(t, 4, func(w int, report func(error)) {
		for i := range 40 {
			uid := uint32(w*40 + i + 1)
			r, tr := batchOutcome(uid, fmt.Sprintf("w%d-%d", w, i))
			if err := b.PutOutcome(r, tr, "", 0, 0); err != nil {
				report(err)
			}
			// Each worker merges its threads into one.
			if err := b.RelabelThread(r.ThreadID, fmt.Sprint("w", w)); err != nil {
				report(err)
			}
			if got, err := b.GetMessage(r.MessageKey); err != nil || got.ThreadID != fmt.Sprint("w", w) {
				report(fmt.Errorf("uid %d after its merge: %+v, %v", uid, got, err))
			}
		}
	})
	if err := b.Flush(); err != nil {
		t.Fatal(err)
	}
	for w := range 4 {
		if msgs, err := s.ThreadMessages(fmt.Sprint("w", w), 0); err != nil || len(msgs) != 40 {
			t.Errorf("thread w%d: %d messages, %v; want 40", w, len(msgs), err)
		}
	}
}
