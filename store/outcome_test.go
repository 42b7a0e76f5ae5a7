package store

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/mailagent/mailagent/internal/mail"
)

func TestPutOutcomeWritesAllThree(t *testing.T) {
	t.Parallel()
	s, err := Open(filepath.Join(t.TempDir(), "db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
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

func TestThreadInputsSince(t *testing.T) {
	t.Parallel()
	// NoSync: the commits' fsync is not under test.
	s, err := Open(filepath.Join(t.TempDir(), "db"), Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	rec := func(i int) *MessageRecord {
		return &MessageRecord{MessageKey: MessageKey{Account: "a", Mailbox: "INBOX", UIDValidity: 1, UID: uint32(i + 1)},
			MessageID: fmt.Sprintf("m%d@x", i), References: []string{"root@x"}, Subject: "s", State: StateDone,
			CreatedAt: base.Add(time.Duration(i) * time.Hour)}
	}
	// More than one read batch (1024), written in one commit as
	// PutMessage writes each.
	if err := s.updateTx(func(tx *bolt.Tx) error {
		for i := range 1100 {
			if err := putMessageTx(tx, rec(i), s.now().UTC()); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for i := range 10 { // a second put (a state change) adds no second entry
		if err := s.PutMessage(rec(i)); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	err = s.ThreadInputs(base.Add(5*time.Hour), 0, func(in mail.ThreadInput) error {
		got = append(got, in.MessageID)
		if len(in.References) != 1 || in.Subject != "s" {
			t.Fatalf("input %+v lost its headers", in)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1095 || got[0] != "m5@x" || got[1094] != "m1099@x" {
		t.Errorf("got %d inputs from %q to %q, want 1095 from m5@x to m1099@x", len(got), got[0], got[len(got)-1])
	}
}

func TestCountByStateFollowsTransitions(t *testing.T) {
	t.Parallel()
	s, err := Open(filepath.Join(t.TempDir(), "db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	for i := range 5 {
		rec := &MessageRecord{MessageKey: MessageKey{Account: "a", Mailbox: "INBOX", UIDValidity: 1, UID: uint32(i + 1)}, MessageID: fmt.Sprintf("m%d@x", i), State: StateParsed}
		if err := s.PutMessage(rec); err != nil {
			t.Fatal(err)
		}
		rec.State = StateDone
		if i == 4 {
			rec.State = StateNeedsReview
		}
		if err := s.PutMessage(rec); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.CountByState()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[StateDone] != 4 || got[StateNeedsReview] != 1 {
		t.Errorf("got %v, want done 4, needs_review 1", got)
	}
}

func TestThreadInputsLimit(t *testing.T) {
	t.Parallel()
	s, err := Open(filepath.Join(t.TempDir(), "db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 50 {
		rec := &MessageRecord{MessageKey: MessageKey{Account: "a", Mailbox: "INBOX", UIDValidity: 1, UID: uint32(i + 1)},
			MessageID: fmt.Sprintf("m%d@x", i), State: StateDone, CreatedAt: base.Add(time.Duration(i) * time.Hour)}
		if err := s.PutMessage(rec); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name        string
		since       time.Time
		limit       int
		first, last string
		n           int
	}{
		{"limit only", time.Time{}, 10, "m40@x", "m49@x", 10},
		{"since tighter than limit", base.Add(45 * time.Hour), 10, "m45@x", "m49@x", 5},
		{"limit above count", time.Time{}, 500, "m0@x", "m49@x", 50},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			if err := s.ThreadInputs(tt.since, tt.limit, func(in mail.ThreadInput) error { got = append(got, in.MessageID); return nil }); err != nil {
				t.Fatal(err)
			}
			if len(got) != tt.n || got[0] != tt.first || got[len(got)-1] != tt.last {
				t.Errorf("got %d from %s to %s, want %d from %s to %s", len(got), got[0], got[len(got)-1], tt.n, tt.first, tt.last)
			}
		})
	}
}

// TestUsageLatency: each model step of an outcome's trace adds its latency
// to the day (steps without a model do not); the mean, the p95 bucket and
// the sum over days follow.
func TestUsageLatency(t *testing.T) {
	t.Parallel()
	s, err := Open(filepath.Join(t.TempDir(), "db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	put := func(uid uint32, day string, latencies ...int64) {
		t.Helper()
		rec := &MessageRecord{MessageKey: MessageKey{Account: "a", Mailbox: "INBOX", UIDValidity: 1, UID: uid},
			MessageID: fmt.Sprintf("m%d@x", uid), State: StateDone, TraceID: fmt.Sprintf("tr_%d", uid)}
		tr := &Trace{TraceID: rec.TraceID, Message: rec.MessageKey, MessageID: rec.MessageID,
			Steps: []Step{{Name: "parse", LatencyMS: 9999}}}
		for _, ms := range latencies {
			tr.Steps = append(tr.Steps, Step{Name: "classify", Model: "m", LatencyMS: ms})
		}
		if err := s.PutOutcome(rec, tr, day, 10, 1); err != nil {
			t.Fatal(err)
		}
	}
	// 19 fast calls (≤ 250ms) and one slow (3s): the p95 is the fast bucket.
	for i := range 19 {
		put(uint32(i+1), "2026-11-21", 100)
	}
	put(20, "2026-11-21", 3000)
	u, err := s.Usage("2026-11-21")
	if err != nil || u.ModelCalls != 20 || u.LatencyMS != 19*100+3000 {
		t.Fatalf("usage: %+v %v", u, err)
	}
	if m := u.LatencyMean(); m != 245*time.Millisecond {
		t.Errorf("mean %v, want 245ms", m)
	}
	if p, ok := u.LatencyP95(); !ok || p != 250*time.Millisecond {
		t.Errorf("p95 %v %v, want ≤ 250ms", p, ok)
	}
	// Two more slow calls in one message: now the 95th percentile is slow.
	put(21, "2026-11-21", 4000, 70000)
	u, _ = s.Usage("2026-11-21")
	if p, ok := u.LatencyP95(); !ok || p != 5*time.Second {
		t.Errorf("p95 %v %v, want ≤ 5s (%+v)", p, ok, u)
	}
	put(22, "2026-11-22", 700)
	v, _ := s.Usage("2026-11-22")
	sum := u
	sum.Add(v)
	if sum.ModelCalls != 23 || sum.LatencyMS != u.LatencyMS+700 || sum.LatencyBuckets[2] != 1 || sum.Calls != u.Calls+1 {
		t.Errorf("sum over days: %+v", sum)
	}
	if _, ok := (UsageDay{}).LatencyP95(); ok {
		t.Error("a day without calls has a p95")
	}
}
