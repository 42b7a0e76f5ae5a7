package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// DayFormat is the layout of the day keys of the usage ledger and the
// auto-send caps (UTC dates sort correctly as strings).
const DayFormat = "2006-01-02"

// Day formats t as a ledger day in UTC.
func Day(t time.Time) string { return t.UTC().Format(DayFormat) }

func checkDay(day string) error {
	if _, err := time.Parse(DayFormat, day); err != nil {
		return fmt.Errorf("day %q is not YYYY-MM-DD", day)
	}
	return nil
}

// AddUsage adds one model call's tokens to the day's ledger.
func (s *Store) AddUsage(day string, tokensIn, tokensOut int64) error {
	if err := checkDay(day); err != nil {
		return fmt.Errorf("add usage: %w", err)
	}
	err := s.updateTx(func(tx *bolt.Tx) error { return addUsageTx(tx, day, tokensIn, tokensOut, nil) })
	if err != nil {
		return fmt.Errorf("add usage %s: %w", day, err)
	}
	return nil
}

// Usage returns the ledger of one day; a day without calls is the zero
// UsageDay for that day, not an error.
func (s *Store) Usage(day string) (UsageDay, error) {
	u := UsageDay{Day: day}
	err := s.view(func(tx *bolt.Tx) error {
		return getJSON(tx.Bucket(bUsage), []byte(day), &u)
	})
	if err != nil && !errors.Is(err, ErrNotFound) {
		return UsageDay{}, fmt.Errorf("usage %s: %w", day, err)
	}
	return u, nil
}

// UsageRange returns the ledger days from..to inclusive (either may be ""
// for an open end), oldest first.
func (s *Store) UsageRange(from, to string) ([]UsageDay, error) {
	var out []UsageDay
	err := s.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(bUsage)
		if b == nil {
			return nil
		}
		c := b.Cursor()
		for k, v := c.Seek([]byte(from)); k != nil; k, v = c.Next() {
			if to != "" && string(k) > to {
				break
			}
			var u UsageDay
			if err := json.Unmarshal(v, &u); err != nil {
				return fmt.Errorf("decode %q: %w", k, err)
			}
			out = append(out, u)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("usage %s..%s: %w", from, to, err)
	}
	return out, nil
}

func addUsageTx(tx *bolt.Tx, day string, tokensIn, tokensOut int64, t *Trace) error {
	b := tx.Bucket(bUsage)
	u := UsageDay{Day: day}
	if err := getJSON(b, []byte(day), &u); err != nil && !errors.Is(err, ErrNotFound) {
		return err
	}
	u.Calls++
	u.TokensIn += tokensIn
	u.TokensOut += tokensOut
	if t != nil {
		for _, st := range t.Steps {
			if st.Model != "" {
				u.addLatency(st.LatencyMS)
			}
		}
	}
	return putJSON(b, []byte(day), u)
}

// LatencyBounds are the upper bounds, in milliseconds, of the latency
// buckets of a UsageDay: from a fast local model to a slow cloud call.
var LatencyBounds = []int64{250, 500, 1000, 2000, 5000, 10000, 30000, 60000}

func (u *UsageDay) addLatency(ms int64) {
	if ms < 0 {
		ms = 0
	}
	if len(u.LatencyBuckets) != len(LatencyBounds)+1 {
		u.LatencyBuckets = make([]int64, len(LatencyBounds)+1)
	}
	i := 0
	for i < len(LatencyBounds) && ms > LatencyBounds[i] {
		i++
	}
	u.LatencyBuckets[i]++
	u.ModelCalls++
	u.LatencyMS += ms
}

// Add adds o's calls, tokens and latencies to u (its Day is kept).
func (u *UsageDay) Add(o UsageDay) {
	u.Calls += o.Calls
	u.TokensIn += o.TokensIn
	u.TokensOut += o.TokensOut
	u.ModelCalls += o.ModelCalls
	u.LatencyMS += o.LatencyMS
	if len(o.LatencyBuckets) == len(LatencyBounds)+1 {
		if len(u.LatencyBuckets) != len(LatencyBounds)+1 {
			u.LatencyBuckets = make([]int64, len(LatencyBounds)+1)
		}
		for i, n := range o.LatencyBuckets {
			u.LatencyBuckets[i] += n
		}
	}
}

// LatencyMean is the mean latency of the day's recorded model calls (0
// without any).
func (u UsageDay) LatencyMean() time.Duration {
	if u.ModelCalls == 0 {
		return 0
	}
	return time.Duration(u.LatencyMS/u.ModelCalls) * time.Millisecond
}

// LatencyP95 is the upper bound of the bucket that holds the 95th
// percentile of the day's model calls, and false when it is past the last
// bound (or there are no calls).
func (u UsageDay) LatencyP95() (time.Duration, bool) {
	if u.ModelCalls == 0 || len(u.LatencyBuckets) != len(LatencyBounds)+1 {
		return 0, false
	}
	need := (u.ModelCalls*95 + 99) / 100
	var seen int64
	for i, n := range u.LatencyBuckets[:len(LatencyBounds)] {
		if seen += n; seen >= need {
			return time.Duration(LatencyBounds[i]) * time.Millisecond, true
		}
	}
	return 0, false
}
