package store

import (
	"bytes"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// DefaultRetention is how long finished queue items and outbox records
// are kept when Options.Retention is 0.
const DefaultRetention = 90 * 24 * time.Hour

// RawRetention is how long the raw message of a finished send (appended to
// Sent, or cancelled) is kept: the copy in the Sent folder is the record;
// the outbox keeps its headers, Subject and Body for `explain` and digests.
const RawRetention = 7 * 24 * time.Hour

// PruneInterval is how often PruneIfDue runs Prune.
const PruneInterval = 24 * time.Hour

// pruneBatch bounds the writes of one Prune transaction.
const pruneBatch = 1000

// PruneOptions says what Prune removes.
type PruneOptions struct {
	// Now is the reference time (zero: the store's clock).
	Now time.Time
	// Retention: finished outbox records (appended, cancelled) and closed
	// queue items (sent, rejected, resolved) last changed longer ago are
	// deleted. 0 or less deletes nothing.
	Retention time.Duration
	// RawAfter: the raw message of a finished send last changed longer ago
	// is dropped (the record stays, with RawPruned set). 0 or less drops
	// nothing.
	RawAfter time.Duration
	// SnapshotRetention: the step snapshots of traces started longer ago
	// are deleted (the traces stay). 0 or less deletes none.
	SnapshotRetention time.Duration
}

// PruneReport counts what Prune removed.
type PruneReport struct {
	RawDropped    int
	OutboxDeleted int
	QueueDeleted  int
	// FollowupsDeleted counts closed followups (done, gave up) dropped.
	FollowupsDeleted int
	// SnapshotsDeleted counts traces whose step snapshots were dropped.
	SnapshotsDeleted int
}

// Prune removes what a long-running mailbox no longer needs, so that the
// database and the watcher's work stay bounded by retention, not history.
// It reads only old entries of the status indexes, in transactions of at
// most pruneBatch writes. Records that may still need a person (pending,
// snoozed, failed, …) are never touched. Message records, traces and
// contacts are kept.
func (s *Store) Prune(o PruneOptions) (PruneReport, error) {
	var rep PruneReport
	if !s.indexed {
		return rep, nil // a read-only store of an older layout
	}
	now := o.Now
	if now.IsZero() {
		now = s.now()
	}
	if o.Retention > 0 {
		cutoff := now.Add(-o.Retention)
		for _, st := range []string{OutboxAppended, OutboxCancelled} {
			n, err := s.pruneWhere(bIdxOutbox, st, cutoff, func(tx *bolt.Tx, id string) (bool, error) {
				r, err := getOutboxTx(tx, id, false)
				if err != nil {
					return false, nil
				}
				if err := tx.Bucket(bIdxOutbox).Delete(dueKey(r.Status, outboxDue(r), id)); err != nil {
					return false, err
				}
				if err := tx.Bucket(bOutboxRaw).Delete([]byte(id)); err != nil {
					return false, err
				}
				return true, tx.Bucket(bOutbox).Delete([]byte(id))
			})
			rep.OutboxDeleted += n
			if err != nil {
				return rep, fmt.Errorf("prune outbox: %w", err)
			}
		}
		for _, st := range []string{QueueSent, QueueRejected, QueueResolved} {
			n, err := s.pruneWhere(bIdxQueue, st, cutoff, func(tx *bolt.Tx, id string) (bool, error) {
				q, err := getQueueTx(tx, id)
				if err != nil {
					return false, nil
				}
				if err := tx.Bucket(bIdxQueue).Delete(dueKey(q.Status, queueDue(q), id)); err != nil {
					return false, err
				}
				if err := indexCreatedTx(tx, nil, q); err != nil {
					return false, err
				}
				return true, tx.Bucket(bQueue).Delete([]byte(id))
			})
			rep.QueueDeleted += n
			if err != nil {
				return rep, fmt.Errorf("prune queue: %w", err)
			}
		}
	}
	if o.Retention > 0 {
		n, err := s.pruneFollowups(now.Add(-o.Retention))
		rep.FollowupsDeleted += n
		if err != nil {
			return rep, fmt.Errorf("prune followups: %w", err)
		}
	}
	if o.SnapshotRetention > 0 {
		n, err := s.pruneSnapshots(now.Add(-o.SnapshotRetention))
		rep.SnapshotsDeleted += n
		if err != nil {
			return rep, fmt.Errorf("prune snapshots: %w", err)
		}
	}
	if o.RawAfter > 0 {
		for _, st := range []string{OutboxAppended, OutboxCancelled} {
			n, err := s.pruneWhere(bIdxOutbox, st, now.Add(-o.RawAfter), func(tx *bolt.Tx, id string) (bool, error) {
				r, err := getOutboxTx(tx, id, false)
				if err != nil || r.RawPruned {
					return false, nil
				}
				rb := tx.Bucket(bOutboxRaw)
				if rb.Get([]byte(id)) == nil {
					return false, nil
				}
				r.RawPruned = true
				// Index key (status, UpdatedAt) unchanged: write the head only.
				if err := rb.Delete([]byte(id)); err != nil {
					return false, err
				}
				return true, putJSON(tx.Bucket(bOutbox), []byte(id), r)
			})
			rep.RawDropped += n
			if err != nil {
				return rep, fmt.Errorf("prune raw messages: %w", err)
			}
		}
	}
	return rep, nil
}

// pruneWhere calls act, in write transactions of at most pruneBatch
// entries, for each id the index holds under status with a due time before
// cutoff; act reports whether it changed something. An entry act leaves in
// place is not offered again.
func (s *Store) pruneWhere(index []byte, status string, cutoff time.Time, act func(*bolt.Tx, string) (bool, error)) (int, error) {
	total := 0
	p := statusPrefix(status)
	end := append(append([]byte(nil), p...), beU64(timeKey(cutoff))...)
	var after []byte
	for {
		done := true
		err := s.updateTx(func(tx *bolt.Tx) error {
			c := tx.Bucket(index).Cursor()
			var ids []string
			var last []byte
			k, v := c.Seek(p)
			if after != nil {
				k, v = c.Seek(after)
				if bytes.Equal(k, after) {
					k, v = c.Next()
				}
			}
			for ; k != nil && bytes.HasPrefix(k, p); k, v = c.Next() {
				if bytes.Compare(k[:min(len(k), len(end))], end) >= 0 {
					break
				}
				if len(ids) == pruneBatch {
					done = false
					break
				}
				ids = append(ids, string(v))
				last = bytes.Clone(k)
			}
			after = last
			for _, id := range ids {
				changed, err := act(tx, id)
				if err != nil {
					return err
				}
				if changed {
					total++
				}
			}
			return nil
		})
		if err != nil || done {
			return total, err
		}
	}
}

func beU64(v uint64) []byte {
	var b [8]byte
	for i := 7; i >= 0; i-- {
		b[i] = byte(v)
		v >>= 8
	}
	return b[:]
}

// PruneIfDue runs Prune with the store's retention (Options.Retention),
// its snapshot retention (Options.SnapshotRetention) and RawRetention when the last such run is at least PruneInterval old (the
// time is kept in the file, so restarts do not prune more often). A
// watcher calls it from its once-a-second work: on most calls it reads one
// key. A read-only store does nothing.
func (s *Store) PruneIfDue(now time.Time) (PruneReport, bool, error) {
	if s.opts.ReadOnly {
		return PruneReport{}, false, nil
	}
	var last time.Time
	if err := s.view(func(tx *bolt.Tx) error {
		if m := tx.Bucket(bMeta); m != nil {
			last, _ = time.Parse(time.RFC3339Nano, string(m.Get(metaPrunedAt)))
		}
		return nil
	}); err != nil {
		return PruneReport{}, false, err
	}
	if !last.IsZero() && now.Sub(last) < PruneInterval && !now.Before(last) {
		return PruneReport{}, false, nil
	}
	retention := s.opts.Retention
	if retention == 0 {
		retention = DefaultRetention
	}
	rawAfter := RawRetention
	if retention > 0 {
		rawAfter = min(rawAfter, retention)
	}
	snapAfter := s.opts.SnapshotRetention
	if snapAfter == 0 {
		snapAfter = DefaultSnapshotRetention
	}
	rep, err := s.Prune(PruneOptions{Now: now, Retention: retention, RawAfter: rawAfter, SnapshotRetention: snapAfter})
	if err != nil {
		return rep, true, err
	}
	err = s.updateTx(func(tx *bolt.Tx) error {
		return tx.Bucket(bMeta).Put(metaPrunedAt, []byte(now.UTC().Format(time.RFC3339Nano)))
	})
	return rep, true, err
}
