package store

import (
	"encoding/binary"
	"fmt"

	"github.com/mailagent/mailagent/internal/mail"
	bolt "go.etcd.io/bbolt"
)

// Auto-send counters live in the autosend bucket:
//   day \0 account \0 contact  → be64 sends to that recipient address that day
//   day                        → be64 auto-sends that day, all accounts
// The global cap is global, like the policy key max_auto_per_day.

func capKeys(account, contact, day string) (perContact, global []byte) {
	return join([]byte(day), []byte(account), []byte(emailKey(contact))), []byte(day)
}

func getCount(b *bolt.Bucket, k []byte) int {
	v := b.Get(k)
	if len(v) != 8 {
		return 0
	}
	return int(binary.BigEndian.Uint64(v))
}

func putCount(b *bolt.Bucket, k []byte, n int) error {
	var v [8]byte
	binary.BigEndian.PutUint64(v[:], uint64(n))
	return b.Put(k, v[:])
}

// IncrAutoSend reserves one auto-send to contact on day. contact is the
// address the reply goes to (the final recipient, never the From of the
// message answered, which its sender wrote). In one
// transaction it checks that the contact's count is below perContactMax and
// the day's count (all accounts) below globalMax, and increments both only
// when both allow. ok reports whether the send may go ahead. A max of 0 or
// less allows nothing. The counts are persisted, so restarts do not reset
// them.
func (s *Store) IncrAutoSend(account, contact, day string, perContactMax, globalMax int) (ok bool, err error) {
	if err := checkContact(account, contact); err != nil {
		return false, fmt.Errorf("auto-send cap: %w", err)
	}
	if err := checkDay(day); err != nil {
		return false, fmt.Errorf("auto-send cap: %w", err)
	}
	pk, gk := capKeys(account, contact, day)
	err = s.updateTx(func(tx *bolt.Tx) error {
		b := tx.Bucket(bAutoSend)
		pc, g := getCount(b, pk), getCount(b, gk)
		if pc >= perContactMax || g >= globalMax {
			return nil
		}
		if err := putCount(b, pk, pc+1); err != nil {
			return err
		}
		if err := putCount(b, gk, g+1); err != nil {
			return err
		}
		ok = true
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("auto-send cap %s/%s %s: %w", account, mail.AddrKey(contact), day, err)
	}
	return ok, nil
}

// RefundAutoSend gives back one auto-send to contact on day that
// IncrAutoSend reserved for a reply that was never sent (cancelled
// before SMTP: answered meanwhile, or the owner stopped it). Both counts
// go down by one in one transaction, and only when the contact has a
// reservation that day (never below zero, never another's). The caller
// refunds at most once per reservation (after the record's one
// transition to cancelled).
func (s *Store) RefundAutoSend(account, contact, day string) error {
	if err := checkContact(account, contact); err != nil {
		return fmt.Errorf("auto-send refund: %w", err)
	}
	if err := checkDay(day); err != nil {
		return fmt.Errorf("auto-send refund: %w", err)
	}
	pk, gk := capKeys(account, contact, day)
	err := s.updateTx(func(tx *bolt.Tx) error {
		b := tx.Bucket(bAutoSend)
		pc, g := getCount(b, pk), getCount(b, gk)
		if pc == 0 {
			return nil // nothing reserved for this contact that day
		}
		if err := putCount(b, pk, pc-1); err != nil {
			return err
		}
		return putCount(b, gk, max(g-1, 0))
	})
	if err != nil {
		return fmt.Errorf("auto-send refund %s/%s %s: %w", account, mail.AddrKey(contact), day, err)
	}
	return nil
}

// AutoSendCounts returns the auto-sends to contact on day and the day's
// total across accounts.
func (s *Store) AutoSendCounts(account, contact, day string) (perContact, global int, err error) {
	pk, gk := capKeys(account, contact, day)
	err = s.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(bAutoSend)
		if b == nil {
			return nil
		}
		perContact, global = getCount(b, pk), getCount(b, gk)
		return nil
	})
	if err != nil {
		return 0, 0, fmt.Errorf("auto-send counts: %w", err)
	}
	return perContact, global, nil
}
