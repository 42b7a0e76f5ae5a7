package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/mailagent/mailagent/internal/mail"
)

// PutQueueItem writes q under q.ID (set it with NewID), setting UpdatedAt
// and, on the first write, CreatedAt. It does not check the status; use
// TransitionQueueItem to move an existing item.
func (s *Store) PutQueueItem(q *QueueItem) error {
	if q == nil {
		return errors.New("put queue item: nil item")
	}
	if err := checkName("queue item id", q.ID); err != nil {
		return fmt.Errorf("put queue item: %w", err)
	}
	err := s.updateTx(func(tx *bolt.Tx) error {
		old, err := getQueueTx(tx, q.ID)
		if err != nil && !errors.Is(err, ErrNotFound) {
			return err
		}
		now := s.now().UTC()
		if old != nil {
			q.CreatedAt = old.CreatedAt
		} else if q.CreatedAt.IsZero() {
			q.CreatedAt = now
		}
		q.UpdatedAt = now
		return putQueueTx(tx, q, old)
	})
	if err != nil {
		return fmt.Errorf("put queue item %s: %w", q.ID, err)
	}
	return nil
}

// GetQueueItem returns the item, or an error wrapping ErrNotFound.
func (s *Store) GetQueueItem(id string) (*QueueItem, error) {
	var q *QueueItem
	err := s.view(func(tx *bolt.Tx) (err error) {
		q, err = getQueueTx(tx, id)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("get queue item %s: %w", id, err)
	}
	return q, nil
}

// ListQueue calls fn for each queue item whose Status is status ("" for
// all), in id order. With a status, only the items in it are read (through
// the status index). fn runs outside any transaction and may use the
// store; its error stops the walk.
func (s *Store) ListQueue(status string, fn func(*QueueItem) error) error {
	if status != "" && s.indexed {
		ids, err := s.idsInStatus(bIdxQueue, status)
		if err != nil {
			return fmt.Errorf("list queue: %w", err)
		}
		return loadByID(s, ids, func(tx *bolt.Tx, id string) (*QueueItem, error) { return getQueueTx(tx, id) }, fn)
	}
	return scan(s, bQueue, nil, func(_ *bolt.Tx, _, v []byte) (*QueueItem, bool, error) {
		var q QueueItem
		if err := json.Unmarshal(v, &q); err != nil {
			return nil, false, err
		}
		return &q, status == "" || q.Status == status, nil
	}, fn)
}

// TransitionQueueItem moves item id from one of the statuses in from to
// status to, atomically: the check and the write are one transaction, so
// two processes approving the same item cannot both win. mutate (may be
// nil) runs inside the transaction on the item, still showing its old
// status, before Status is set to to; its error aborts the transaction. It
// must not call the Store. When the current status is not in from, the
// error wraps ErrConflict; a missing item wraps ErrNotFound.
func (s *Store) TransitionQueueItem(id string, from []string, to string, mutate func(*QueueItem) error) (*QueueItem, error) {
	var q *QueueItem
	err := s.updateTx(func(tx *bolt.Tx) (err error) {
		q, err = transitionQueueTx(tx, id, from, to, mutate, s.now)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("queue item %s → %s: %w", id, to, err)
	}
	return q, nil
}

func transitionQueueTx(tx *bolt.Tx, id string, from []string, to string, mutate func(*QueueItem) error, now func() time.Time) (*QueueItem, error) {
	old, err := getQueueTx(tx, id)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(from, old.Status) {
		return nil, fmt.Errorf("status is %s, not %s: %w", old.Status, strings.Join(from, " or "), ErrConflict)
	}
	q := *old
	if mutate != nil {
		if err := mutate(&q); err != nil {
			return nil, err
		}
	}
	q.ID = id
	q.Status = to
	q.UpdatedAt = now().UTC()
	return &q, putQueueTx(tx, &q, old)
}

// PutOutbox writes an outbox record under r.ID, setting UpdatedAt and, on
// the first write, CreatedAt.
func (s *Store) PutOutbox(r *OutboxRecord) error {
	if r == nil {
		return errors.New("put outbox: nil record")
	}
	if err := checkName("outbox id", r.ID); err != nil {
		return fmt.Errorf("put outbox: %w", err)
	}
	err := s.updateTx(func(tx *bolt.Tx) error {
		old, err := getOutboxTx(tx, r.ID, false)
		if err != nil && !errors.Is(err, ErrNotFound) {
			return err
		}
		now := s.now().UTC()
		if old != nil {
			r.CreatedAt = old.CreatedAt
		} else if r.CreatedAt.IsZero() {
			r.CreatedAt = now
		}
		r.UpdatedAt = now
		return putOutboxTx(tx, r, old)
	})
	if err != nil {
		return fmt.Errorf("put outbox %s: %w", r.ID, err)
	}
	return nil
}

// GetOutbox returns the record with its Raw message, or an error wrapping
// ErrNotFound.
func (s *Store) GetOutbox(id string) (*OutboxRecord, error) {
	var r *OutboxRecord
	err := s.view(func(tx *bolt.Tx) (err error) {
		r, err = getOutboxTx(tx, id, true)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("get outbox %s: %w", id, err)
	}
	return r, nil
}

// ListOutbox calls fn for each outbox record whose Status is status (""
// for all), in id order, with its Raw message. With a status, only the
// records in it are read (through the status index). fn runs outside any
// transaction.
func (s *Store) ListOutbox(status string, fn func(*OutboxRecord) error) error {
	if status != "" && s.indexed {
		ids, err := s.idsInStatus(bIdxOutbox, status)
		if err != nil {
			return fmt.Errorf("list outbox: %w", err)
		}
		return loadByID(s, ids, func(tx *bolt.Tx, id string) (*OutboxRecord, error) { return getOutboxTx(tx, id, true) }, fn)
	}
	return scan(s, bOutbox, nil, func(tx *bolt.Tx, k, v []byte) (*OutboxRecord, bool, error) {
		r, err := decodeOutbox(tx, k, v, true)
		if err != nil {
			return nil, false, err
		}
		return r, status == "" || r.Status == status, nil
	}, fn)
}

// TransitionOutbox is TransitionQueueItem for outbox records. The record
// given to mutate, and returned, has its Raw message.
func (s *Store) TransitionOutbox(id string, from []string, to string, mutate func(*OutboxRecord) error) (*OutboxRecord, error) {
	var r *OutboxRecord
	err := s.updateTx(func(tx *bolt.Tx) error {
		old, err := getOutboxTx(tx, id, true)
		if err != nil {
			return err
		}
		if !slices.Contains(from, old.Status) {
			return fmt.Errorf("status is %s, not %s: %w", old.Status, strings.Join(from, " or "), ErrConflict)
		}
		n := *old
		if mutate != nil {
			if err := mutate(&n); err != nil {
				return err
			}
		}
		n.ID = id
		n.Status = to
		n.UpdatedAt = s.now().UTC()
		r = &n
		return putOutboxTx(tx, r, old)
	})
	if err != nil {
		return nil, fmt.Errorf("outbox %s → %s: %w", id, to, err)
	}
	return r, nil
}

// ApproveQueueItem approves a queue item and writes its outbox record in
// ONE transaction: afterwards either the item is approved and ob is
// stored, or neither changed. It is TransitionQueueItem(id, from,
// QueueApproved, mutate) plus the write of ob:
//   - no record with ob.ID yet: ob is written as given (CreatedAt and
//     UpdatedAt set);
//   - a record with ob.ID in status failed (an earlier approval whose send
//     failed): it is replaced by ob, keeping its CreatedAt and Attempts;
//     when its Body equals ob.Body its Raw and MessageID are kept too, so
//     that the Sent folder check still recognises an earlier attempt;
//   - a record with ob.ID in any other status: the error wraps ErrConflict
//     (that approval is already on its way) and nothing is written.
//
// ob == nil only approves. mutate runs inside the transaction and must not
// call the Store. It returns the approved item and the stored record.
func (s *Store) ApproveQueueItem(id string, from []string, mutate func(*QueueItem) error, ob *OutboxRecord) (*QueueItem, *OutboxRecord, error) {
	if ob != nil {
		if err := checkName("outbox id", ob.ID); err != nil {
			return nil, nil, fmt.Errorf("approve %s: %w", id, err)
		}
	}
	var q *QueueItem
	var stored *OutboxRecord
	err := s.updateTx(func(tx *bolt.Tx) (err error) {
		if q, err = transitionQueueTx(tx, id, from, QueueApproved, mutate, s.now); err != nil {
			return err
		}
		if ob == nil {
			return nil
		}
		old, err := getOutboxTx(tx, ob.ID, true)
		if err != nil && !errors.Is(err, ErrNotFound) {
			return err
		}
		n := *ob
		now := s.now().UTC()
		switch {
		case old == nil:
			if n.CreatedAt.IsZero() {
				n.CreatedAt = now
			}
		case old.Status == OutboxCancelled:
			// Approved again after an undo (CancelApproval): nothing was
			// sent, so this is a fresh send of the current text.
			n.CreatedAt = old.CreatedAt
		case old.Status == OutboxFailed:
			n.CreatedAt, n.Attempts = old.CreatedAt, old.Attempts
			if old.Body == n.Body && len(old.Raw) > 0 {
				n.Raw, n.MessageID = old.Raw, old.MessageID
			}
		default:
			return fmt.Errorf("outbox %s is %s: %w", ob.ID, old.Status, ErrConflict)
		}
		n.UpdatedAt = now
		stored = &n
		return putOutboxTx(tx, stored, old)
	})
	if err != nil {
		return nil, nil, fmt.Errorf("approve %s: %w", id, err)
	}
	return q, stored, nil
}

// CancelApproval undoes an approval still waiting out its delay: the
// outbox record outboxID goes scheduled → cancelled and its queue item
// approved → pending, in one transaction, so an undo either stops the send
// and hands the item back whole (an invitation unanswered again), or (too late: the record is no longer
// scheduled) changes nothing and wraps ErrConflict.
func (s *Store) CancelApproval(outboxID string) (*QueueItem, error) {
	var q *QueueItem
	err := s.updateTx(func(tx *bolt.Tx) error {
		old, err := getOutboxTx(tx, outboxID, true)
		if err != nil {
			return err
		}
		if old.Status != OutboxScheduled || old.QueueID == "" {
			return fmt.Errorf("outbox %s is %s, not a scheduled approval: %w", outboxID, old.Status, ErrConflict)
		}
		// Back as before the approval: an RSVP's answer was not sent.
		unanswer := func(q *QueueItem) error {
			if q.Invitation != nil {
				q.Invitation.RSVP = ""
			}
			return nil
		}
		if q, err = transitionQueueTx(tx, old.QueueID, []string{QueueApproved}, QueuePending, unanswer, s.now); err != nil {
			return err
		}
		n := *old
		n.Status, n.UpdatedAt = OutboxCancelled, s.now().UTC()
		return putOutboxTx(tx, &n, old)
	})
	if err != nil {
		return nil, fmt.Errorf("cancel approval %s: %w", outboxID, err)
	}
	return q, nil
}

// StrandedApprovals returns the queue items that are approved but have no
// outbox record under outboxID(item.ID): an approval cut off between its
// two writes by a version of mailagent that did not use ApproveQueueItem.
// Nothing was sent for them. Only approved items are read.
func (s *Store) StrandedApprovals(outboxID func(queueID string) string) ([]*QueueItem, error) {
	var approved []*QueueItem
	if err := s.ListQueue(QueueApproved, func(q *QueueItem) error {
		approved = append(approved, q)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("stranded approvals: %w", err)
	}
	var out []*QueueItem
	err := s.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(bOutbox)
		for _, q := range approved {
			if b == nil || b.Get([]byte(outboxID(q.ID))) == nil {
				out = append(out, q)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("stranded approvals: %w", err)
	}
	return out, nil
}

// OutboxRef is the part of an outbox record that identifies a sent
// message (no raw message, no body).
type OutboxRef struct {
	ID        string `json:"id"`
	Account   string `json:"account"`
	MessageID string `json:"message_id"`
	QueueID   string `json:"queue_id,omitempty"`
	Status    string `json:"status"`
	Auto      bool   `json:"auto"`
}

// OutboxByMessageID finds the outbox records of account whose MessageID is
// one of ids (compared with mail.IDKey). The result is keyed by
// mail.IDKey(id); ids without a record are absent. One read transaction;
// records are decoded without their raw message.
func (s *Store) OutboxByMessageID(account string, ids []string) (map[string]OutboxRef, error) {
	want := make(map[string]bool, len(ids))
	for _, id := range ids {
		if k := mail.IDKey(id); k != "" {
			want[k] = true
		}
	}
	out := map[string]OutboxRef{}
	if len(want) == 0 {
		return out, nil
	}
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bOutbox).ForEach(func(_, v []byte) error {
			var r OutboxRef
			if err := json.Unmarshal(v, &r); err != nil {
				return err
			}
			if k := mail.IDKey(r.MessageID); r.Account == account && want[k] {
				out[k] = r
			}
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("outbox by message id: %w", err)
	}
	return out, nil
}
