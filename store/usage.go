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
	err := s.updateTx(func(tx *bolt.Tx) error { return addUsageTx(tx, day, tokensIn, tokensOut) })
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

func addUsageTx(tx *bolt.Tx, day string, tokensIn, tokensOut int64) error {
	b := tx.Bucket(bUsage)
	u := UsageDay{Day: day}
	if err := getJSON(b, []byte(day), &u); err != nil && !errors.Is(err, ErrNotFound) {
		return err
	}
	u.Calls++
	u.TokensIn += tokensIn
	u.TokensOut += tokensOut
	return putJSON(b, []byte(day), u)
}
