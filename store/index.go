package store

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/mailagent/mailagent/internal/retry"
)

// The queue and the outbox are indexed by status and due time, so that
// the once-a-second work of a watcher (scheduled sends, send retries,
// snoozes) reads only what is due instead of every record ever written:
//
//	idx_queue   status \0 be64(due) \0 id → id   due: SnoozeUntil when snoozed, else UpdatedAt
//	idx_outbox  status \0 be64(due) \0 id → id   due: SendAt when scheduled,
//	                                              SendRetryAt when pending,
//	                                              else UpdatedAt
//	outbox_raw  id → the raw message of the outbox record (kept apart so
//	                that listing records never decodes message bodies)
//
// Every write of a queue item or an outbox record goes through putQueueTx
// or putOutboxTx, which keep the index in the same transaction.

// RetryBackoff is the wait before a pending send (or job) that failed
// temporarily attempts times is due again: 1 minute, doubling, at most an
// hour (retry.After, the one backoff schedule). It is the agent's send
// retry schedule, kept here so that the index knows when a pending record
// is due.
func RetryBackoff(attempts int) time.Duration {
	return retry.After(time.Minute, time.Hour, attempts)
}

// Send retry spacing (SendRetryAt): the first retry after sendRetryFirst,
// then after as long as the send has been failing, at most
// sendRetryLongest.
const (
	sendRetryFirst   = 10 * time.Second
	sendRetryLongest = time.Hour
)

// SendRetryAt is when a pending send is due: a send that failed
// temporarily is tried again after as long as it has been failing (at
// least sendRetryFirst, at most sendRetryLongest), so a server that was
// down for a minute gets the backlog about a minute after it is back,
// however many attempts restarts and crashes counted meanwhile. A record
// without FailingSince (never failed, or written before it existed)
// keeps RetryBackoff(Attempts).
func SendRetryAt(r *OutboxRecord) time.Time {
	if r.FailingSince.IsZero() {
		return r.UpdatedAt.Add(RetryBackoff(r.Attempts))
	}
	failing := r.UpdatedAt.Sub(r.FailingSince)
	return r.UpdatedAt.Add(min(max(failing, sendRetryFirst), sendRetryLongest))
}

func outboxDue(r *OutboxRecord) time.Time {
	switch r.Status {
	case OutboxScheduled:
		return r.SendAt
	case OutboxPending:
		return SendRetryAt(r)
	}
	return r.UpdatedAt
}

func queueDue(q *QueueItem) time.Time {
	if q.Status == QueueSnoozed {
		return q.SnoozeUntil
	}
	return q.UpdatedAt
}

// timeKey is t as a big-endian number of nanoseconds since 1970, clamped
// to the range a uint64 can order (the zero time sorts first).
func timeKey(t time.Time) uint64 {
	switch {
	case t.IsZero() || t.Unix() < 0:
		return 0
	case t.Unix() >= math.MaxInt64/int64(time.Second):
		return math.MaxUint64
	}
	return uint64(t.UnixNano())
}

func statusPrefix(status string) []byte { return append([]byte(status), 0) }

func dueKey(status string, due time.Time, id string) []byte {
	k := statusPrefix(status)
	k = binary.BigEndian.AppendUint64(k, timeKey(due))
	k = append(k, 0)
	return append(k, id...)
}

// dueOf reads the time back from an index key of prefix p.
func dueOf(k, p []byte) time.Time {
	if len(k) < len(p)+8 {
		return time.Time{}
	}
	n := binary.BigEndian.Uint64(k[len(p):])
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, int64(min(n, math.MaxInt64))).UTC()
}

func getQueueTx(tx *bolt.Tx, id string) (*QueueItem, error) {
	var q QueueItem
	if err := getJSON(tx.Bucket(bQueue), []byte(id), &q); err != nil {
		return nil, err
	}
	return &q, nil
}

// putQueueTx writes q and moves its index entry from old's (nil: none).
func putQueueTx(tx *bolt.Tx, q, old *QueueItem) error {
	if q.MessageDate.IsZero() && old != nil {
		q.MessageDate = old.MessageDate
	}
	if q.MessageDate.IsZero() && q.Message.Account != "" {
		var rec MessageRecord
		if err := getJSON(tx.Bucket(bMessages), msgKey(q.Message), &rec); err == nil {
			q.MessageDate = rec.Date
		}
	}
	if err := reindex(tx, bIdxQueue, q, old, func(q *QueueItem) (string, time.Time, string) { return q.Status, queueDue(q), q.ID }); err != nil {
		return err
	}
	if err := indexCreatedTx(tx, q, old); err != nil {
		return err
	}
	return putJSON(tx.Bucket(bQueue), []byte(q.ID), q)
}

// reindex moves a record's entry in a status and due-time index (the
// bucket index; none in a read-only store of an old layout) from old's
// key (old nil: a new record) to rec's. key gives a record's status, due
// time and id.
func reindex[T any](tx *bolt.Tx, index []byte, rec, old *T, key func(*T) (string, time.Time, string)) error {
	idx := tx.Bucket(index)
	if idx == nil {
		return nil
	}
	if old != nil {
		if err := idx.Delete(dueKey(key(old))); err != nil {
			return err
		}
	}
	status, due, id := key(rec)
	return idx.Put(dueKey(status, due, id), []byte(id))
}

func getOutboxTx(tx *bolt.Tx, id string, withRaw bool) (*OutboxRecord, error) {
	b := tx.Bucket(bOutbox)
	if b == nil {
		return nil, ErrNotFound
	}
	v := b.Get([]byte(id))
	if v == nil {
		return nil, ErrNotFound
	}
	return decodeOutbox(tx, []byte(id), v, withRaw)
}

// decodeOutbox decodes a stored record; withRaw fills Raw from the raw
// bucket (a record written before it existed carries Raw inline).
func decodeOutbox(tx *bolt.Tx, k, v []byte, withRaw bool) (*OutboxRecord, error) {
	var r OutboxRecord
	if err := json.Unmarshal(v, &r); err != nil {
		return nil, fmt.Errorf("decode %q: %w", k, err)
	}
	if withRaw && r.Raw == nil {
		if rb := tx.Bucket(bOutboxRaw); rb != nil {
			if raw := rb.Get(k); raw != nil {
				r.Raw = bytes.Clone(raw)
			}
		}
	}
	if !withRaw {
		r.Raw = nil
	}
	return &r, nil
}

// putOutboxTx writes r (its Raw in the raw bucket; a nil Raw deletes it)
// and moves its index entry from old's (nil: none).
func putOutboxTx(tx *bolt.Tx, r, old *OutboxRecord) error {
	if err := reindex(tx, bIdxOutbox, r, old, func(r *OutboxRecord) (string, time.Time, string) { return r.Status, outboxDue(r), r.ID }); err != nil {
		return err
	}
	rb := tx.Bucket(bOutboxRaw)
	if rb == nil { // cannot happen in a writable store; keep the old layout
		return putJSON(tx.Bucket(bOutbox), []byte(r.ID), r)
	}
	if r.Raw != nil {
		if err := rb.Put([]byte(r.ID), r.Raw); err != nil {
			return err
		}
	} else if err := rb.Delete([]byte(r.ID)); err != nil {
		return err
	}
	head := *r
	head.Raw = nil
	return putJSON(tx.Bucket(bOutbox), []byte(r.ID), &head)
}

// idsInStatus returns the ids an index holds under status, sorted.
func (s *Store) idsInStatus(index []byte, status string) ([]string, error) {
	ids, err := s.indexIDs(index, status, nil)
	slices.Sort(ids)
	return ids, err
}

// indexIDs returns the ids a status and due-time index holds under
// status, in due order; with end, only those whose key up to end's length
// is not after end.
func (s *Store) indexIDs(index []byte, status string, end []byte) ([]string, error) {
	var ids []string
	p := statusPrefix(status)
	err := s.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(index)
		if b == nil {
			return nil
		}
		c := b.Cursor()
		for k, v := c.Seek(p); k != nil && bytes.HasPrefix(k, p); k, v = c.Next() {
			if end != nil && bytes.Compare(k[:min(len(k), len(end))], end) > 0 {
				break
			}
			ids = append(ids, string(v))
		}
		return nil
	})
	return ids, err
}

// loadByID loads the records of ids, batchSize per read transaction, and
// calls fn for each outside the transactions. A record deleted meanwhile
// is skipped.
func loadByID[T any](s *Store, ids []string, get func(*bolt.Tx, string) (T, error), fn func(T) error) error {
	for len(ids) > 0 {
		n := min(len(ids), batchSize)
		var items []T
		err := s.view(func(tx *bolt.Tx) error {
			for _, id := range ids[:n] {
				it, err := get(tx, id)
				if err == nil {
					items = append(items, it)
				} else if !isNotFound(err) {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		if err := each(items, fn); err != nil {
			return err
		}
		ids = ids[n:]
	}
	return nil
}

// each calls fn for each item, stopping at its first error.
func each[T any](items []T, fn func(T) error) error {
	for _, it := range items {
		if err := fn(it); err != nil {
			return err
		}
	}
	return nil
}

func isNotFound(err error) bool { return errors.Is(err, ErrNotFound) }

// dueIDs returns the ids of index entries under status whose due time is
// not after before, in due order.
func (s *Store) dueIDs(index []byte, status string, before time.Time) ([]string, error) {
	end := binary.BigEndian.AppendUint64(statusPrefix(status), timeKey(before))
	return s.indexIDs(index, status, end)
}

// DueOutbox calls fn for each outbox record in status whose due time is
// not after before, earliest first: a scheduled record is due at SendAt, a
// pending one at UpdatedAt + RetryBackoff(Attempts). Only those records
// are read, through the index, and WITHOUT their Raw message (GetOutbox
// or TransitionOutbox return it). fn runs outside any transaction.
func (s *Store) DueOutbox(status string, before time.Time, fn func(*OutboxRecord) error) error {
	if !s.indexed {
		return s.ListOutbox(status, func(r *OutboxRecord) error {
			if outboxDue(r).After(before) {
				return nil
			}
			r.Raw = nil
			return fn(r)
		})
	}
	ids, err := s.dueIDs(bIdxOutbox, status, before)
	if err != nil {
		return fmt.Errorf("due outbox: %w", err)
	}
	return loadByID(s, ids, func(tx *bolt.Tx, id string) (*OutboxRecord, error) { return getOutboxTx(tx, id, false) }, fn)
}

// DueQueue calls fn for each queue item in status whose due time
// (SnoozeUntil for a snoozed item, else UpdatedAt) is not after before,
// earliest first. Only those items are read.
func (s *Store) DueQueue(status string, before time.Time, fn func(*QueueItem) error) error {
	if !s.indexed {
		return s.ListQueue(status, func(q *QueueItem) error {
			if queueDue(q).After(before) {
				return nil
			}
			return fn(q)
		})
	}
	ids, err := s.dueIDs(bIdxQueue, status, before)
	if err != nil {
		return fmt.Errorf("due queue: %w", err)
	}
	return loadByID(s, ids, getQueueTx, fn)
}

// NextDue returns the earliest time at which a scheduled send, a send
// retry or a snoozed item falls due; ok is false when nothing waits. A
// watcher can sleep until then (or until something changes) instead of
// polling. It reads three index entries.
func (s *Store) NextDue() (next time.Time, ok bool, err error) {
	if !s.indexed {
		return s.nextDueScan()
	}
	err = s.view(func(tx *bolt.Tx) error {
		for _, e := range []struct {
			index  []byte
			status string
		}{{bIdxOutbox, OutboxScheduled}, {bIdxOutbox, OutboxPending}, {bIdxQueue, QueueSnoozed}} {
			b := tx.Bucket(e.index)
			if b == nil {
				continue
			}
			p := statusPrefix(e.status)
			if k, _ := b.Cursor().Seek(p); k != nil && bytes.HasPrefix(k, p) {
				if t := dueOf(k, p); !ok || t.Before(next) {
					next, ok = t, true
				}
			}
		}
		return nil
	})
	if err != nil {
		return time.Time{}, false, fmt.Errorf("next due: %w", err)
	}
	return next, ok, nil
}

func (s *Store) nextDueScan() (next time.Time, ok bool, err error) {
	take := func(t time.Time) {
		if !ok || t.Before(next) {
			next, ok = t, true
		}
	}
	for _, st := range []string{OutboxScheduled, OutboxPending} {
		if err := s.ListOutbox(st, func(r *OutboxRecord) error { take(outboxDue(r)); return nil }); err != nil {
			return time.Time{}, false, err
		}
	}
	err = s.ListQueue(QueueSnoozed, func(q *QueueItem) error { take(queueDue(q)); return nil })
	return next, ok, err
}
