package store

import (
	"fmt"
	"slices"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// TestThreadNewestIsTheTailOfTheThread: ThreadMessages with a limit (the
// newest records, only they decoded) gives the last limit records of the
// whole thread as ThreadMessages without one orders it, for every limit:
// a thread whose records have dates, none (CreatedAt stands for it), the
// same date (ordered by key), in several mailboxes and accounts, and a
// thread of one. The records outside the limit are not decoded: an old
// record damaged so that it no longer decodes, its dates still readable,
// does not stop the newest from being read (without a limit it is an
// error, as before); one whose dates cannot be read is an error either
// way.
func TestThreadNewestIsTheTailOfTheThread(t *testing.T) {
	t.Parallel()
	s, clk := openTest(t)
	base := time.Date(2025, 6, 1, 9, 0, 0, 0, time.UTC)
	err := s.updateTx(func(tx *bolt.Tx) error { // PutMessage's write, one transaction
		for i := range 40 {
			r := msg([]string{"p", "w"}[i%2], []string{"INBOX", "Sent", "Lists/x"}[i%3], 1, uint32(100-i), StateDone)
			r.ThreadID = "long"
			switch i % 4 {
			case 0:
				r.Date = base.Add(time.Duration(i*37%40) * time.Hour)
			case 1:
				r.Date = base.Add(5 * time.Hour) // ties, ordered by key
			case 2: // no Date: CreatedAt, when it was stored, stands for it
				clk.Advance(time.Duration(i) * time.Minute)
			case 3:
				r.Date = base.Add(-time.Duration(i) * time.Hour).In(time.FixedZone("x", 3600))
			}
			if err := putMessageTx(tx, r, clk.Now()); err != nil {
				return err
			}
		}
		one := msg("p", "INBOX", 2, 1, StateDone)
		one.ThreadID, one.Date = "one", base
		return putMessageTx(tx, one, clk.Now())
	})
	if err != nil {
		t.Fatal(err)
	}

	keys := func(recs []*MessageRecord) []string {
		out := make([]string, len(recs))
		for i, r := range recs {
			out[i] = fmt.Sprint(r.MessageKey, r.Date.UnixNano(), r.CreatedAt.UnixNano())
		}
		return out
	}
	for _, th := range []string{"long", "one", "none"} {
		all, err := s.ThreadMessages(th, 0)
		if err != nil {
			t.Fatal(err)
		}
		for limit := 1; limit <= len(all)+1; limit++ {
			got, err := s.ThreadMessages(th, limit)
			if err != nil {
				t.Fatal(err)
			}
			if want := all[max(len(all)-limit, 0):]; !slices.Equal(keys(got), keys(want)) {
				t.Fatalf("%s, limit %d: %v; want %v", th, limit, keys(got), keys(want))
			}
		}
	}

	// The oldest record damaged: it no longer decodes (a uid that is not
	// a number), its dates still read.
	all, _ := s.ThreadMessages("long", 0)
	oldest := msgKey(all[0].MessageKey)
	damage := func(v string) {
		t.Helper()
		if err := s.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bMessages).Put(oldest, []byte(v)) }); err != nil {
			t.Fatal(err)
		}
	}
	damage(`{"uid":"x","date":"2000-01-01T00:00:00Z","created_at":"2000-01-01T00:00:00Z"}`)
	if got, err := s.ThreadMessages("long", 3); err != nil || !slices.Equal(keys(got), keys(all[len(all)-3:])) {
		t.Fatalf("with the oldest record damaged, limit 3: %v, %v", keys(got), err)
	}
	if _, err := s.ThreadMessages("long", 0); err == nil {
		t.Fatal("the whole thread with a record that does not decode: no error")
	}
	damage(`{"date": garbage`) // not JSON: its date cannot be read
	if _, err := s.ThreadMessages("long", 3); err == nil {
		t.Fatal("limit 3, a record whose date cannot be read: no error")
	}
}
