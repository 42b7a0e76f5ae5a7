package store

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/mailagent/mailagent/internal/mail"
	bolt "go.etcd.io/bbolt"
)

// SeedForBench fills s with n message records in one mailbox (UIDs 1..n),
// 1000 per transaction, with realistic fields and the three indexes.
func SeedForBench(tb testing.TB, s *Store, n int) {
	tb.Helper()
	now := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)
	states := []State{StateDone, StateDone, StateDone, StateNeedsReview, StateFetched}
	for start := 1; start <= n; start += 1000 {
		err := s.updateTx(func(tx *bolt.Tx) error {
			for uid := start; uid < start+1000 && uid <= n; uid++ {
				r := benchRecord(uint32(uid), states[uid%len(states)], now)
				if err := putMessageTx(tx, r, now); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			tb.Fatalf("seed: %v", err)
		}
	}
}

func benchRecord(uid uint32, st State, now time.Time) *MessageRecord {
	return &MessageRecord{
		MessageKey: MessageKey{Account: "personal", Mailbox: "INBOX", UIDValidity: 1, UID: uid},
		MessageID:  fmt.Sprintf("CA+%08d.bench@mail.example.com", uid),
		ThreadID:   fmt.Sprintf("thread-%d", uid/4),
		From:       mail.Address{Name: "Sender Name", Email: fmt.Sprintf("sender%d@example.com", uid%500)},
		To:         []mail.Address{{Name: "Ada Lovelace", Email: "ada@example.com"}},
		Subject:    "Re: quarterly planning meeting and the follow-up items",
		Date:       now.Add(time.Duration(uid) * time.Minute),
		Excerpt:    "Hi Ada, thanks for the notes. Could we move Thursday's call to Friday at 10? Best, Bob",
		Route:      "external",
		Decision:   "queue",
		State:      st,
		TraceID:    fmt.Sprintf("trace-%d", uid),
	}
}

// BenchmarkPutMessage measures one PutMessage (one fsynced transaction).
func BenchmarkPutMessage(b *testing.B) {
	s, _ := openTest(b)
	now := time.Now()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if err := s.PutMessage(benchRecord(uint32(i+1), StateDone, now)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkListMessages measures listing one 10k-message mailbox; ns/op is
// per full listing, ns/msg per record.
func BenchmarkListMessages(b *testing.B) {
	s, _ := openTest(b)
	const n = 10000
	SeedForBench(b, s, n)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		count := 0
		err := s.ListMessages(MessageFilter{Account: "personal", Mailbox: "INBOX"}, func(*MessageRecord) error { count++; return nil })
		if err != nil || count != n {
			b.Fatalf("got %d, %v; want %d", count, err, n)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/msg")
}

// BenchmarkSeed100k builds a store with 100k message records; ns/op is
// per store.
func BenchmarkSeed100k(b *testing.B) {
	const n = 100000
	for b.Loop() {
		b.StopTimer()
		s, err := Open(filepath.Join(b.TempDir(), "state.db"), Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		SeedForBench(b, s, n)
		b.StopTimer()
		_ = s.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/msg")
}

// BenchmarkQueries100k measures the per-message queries on a 100k store.
func BenchmarkQueries100k(b *testing.B) {
	s, _ := openTest(b)
	SeedForBench(b, s, 100000)
	b.Run("CountByState", func(b *testing.B) {
		for b.Loop() {
			if _, err := s.CountByState(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("FindByMessageID", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			recs, err := s.FindByMessageID("personal", fmt.Sprintf("ca+%08d.BENCH@mail.example.com", i%100000+1))
			if err != nil || len(recs) != 1 {
				b.Fatalf("got %d, %v", len(recs), err)
			}
		}
	})
	b.Run("ThreadMessages", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			if _, err := s.ThreadMessages(fmt.Sprintf("thread-%d", i%25000+1), 10); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ListNeedsReview", func(b *testing.B) {
		for b.Loop() {
			n := 0
			if err := s.ListMessages(MessageFilter{State: StateNeedsReview}, func(*MessageRecord) error { n++; return nil }); err != nil || n != 20000 {
				b.Fatalf("got %d, %v", n, err)
			}
		}
	})
	b.Run("AdvanceCheckpoint", func(b *testing.B) {
		for b.Loop() {
			if err := s.SetCheckpoint("personal", "INBOX", Checkpoint{UIDValidity: 1}); err != nil {
				b.Fatal(err)
			}
			if _, err := s.AdvanceCheckpoint("personal", "INBOX", 1); err != nil {
				b.Fatal(err)
			}
		}
	})
}
