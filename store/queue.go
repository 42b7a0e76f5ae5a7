package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

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
	err := s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bQueue)
		now := s.now().UTC()
		var old QueueItem
		switch err := getJSON(b, []byte(q.ID), &old); {
		case err == nil:
			q.CreatedAt = old.CreatedAt
		case errors.Is(err, ErrNotFound):
			if q.CreatedAt.IsZero() {
				q.CreatedAt = now
			}
		default:
			return err
		}
		q.UpdatedAt = now
		return putJSON(b, []byte(q.ID), q)
	})
	if err != nil {
		return fmt.Errorf("put queue item %s: %w", q.ID, err)
	}
	return nil
}

// GetQueueItem returns the item, or an error wrapping ErrNotFound.
func (s *Store) GetQueueItem(id string) (*QueueItem, error) {
	var q QueueItem
	err := s.db.View(func(tx *bolt.Tx) error {
		return getJSON(tx.Bucket(bQueue), []byte(id), &q)
	})
	if err != nil {
		return nil, fmt.Errorf("get queue item %s: %w", id, err)
	}
	return &q, nil
}

// ListQueue calls fn for each queue item whose Status is status ("" for
// all), oldest first (ids from NewID sort by creation). fn runs outside
// any transaction and may use the store; its error stops the walk.
func (s *Store) ListQueue(status string, fn func(*QueueItem) error) error {
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
	var q QueueItem
	err := s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bQueue)
		if err := getJSON(b, []byte(id), &q); err != nil {
			return err
		}
		if !slices.Contains(from, q.Status) {
			return fmt.Errorf("status is %s, not %s: %w", q.Status, strings.Join(from, " or "), ErrConflict)
		}
		if mutate != nil {
			if err := mutate(&q); err != nil {
				return err
			}
		}
		q.ID = id
		q.Status = to
		q.UpdatedAt = s.now().UTC()
		return putJSON(b, []byte(id), &q)
	})
	if err != nil {
		return nil, fmt.Errorf("queue item %s → %s: %w", id, to, err)
	}
	return &q, nil
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
	err := s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bOutbox)
		now := s.now().UTC()
		var old OutboxRecord
		switch err := getJSON(b, []byte(r.ID), &old); {
		case err == nil:
			r.CreatedAt = old.CreatedAt
		case errors.Is(err, ErrNotFound):
			if r.CreatedAt.IsZero() {
				r.CreatedAt = now
			}
		default:
			return err
		}
		r.UpdatedAt = now
		return putJSON(b, []byte(r.ID), r)
	})
	if err != nil {
		return fmt.Errorf("put outbox %s: %w", r.ID, err)
	}
	return nil
}

// GetOutbox returns the record, or an error wrapping ErrNotFound.
func (s *Store) GetOutbox(id string) (*OutboxRecord, error) {
	var r OutboxRecord
	err := s.db.View(func(tx *bolt.Tx) error {
		return getJSON(tx.Bucket(bOutbox), []byte(id), &r)
	})
	if err != nil {
		return nil, fmt.Errorf("get outbox %s: %w", id, err)
	}
	return &r, nil
}

// ListOutbox calls fn for each outbox record whose Status is status (""
// for all), oldest first. fn runs outside any transaction.
func (s *Store) ListOutbox(status string, fn func(*OutboxRecord) error) error {
	return scan(s, bOutbox, nil, func(_ *bolt.Tx, _, v []byte) (*OutboxRecord, bool, error) {
		var r OutboxRecord
		if err := json.Unmarshal(v, &r); err != nil {
			return nil, false, err
		}
		return &r, status == "" || r.Status == status, nil
	}, fn)
}

// TransitionOutbox is TransitionQueueItem for outbox records.
func (s *Store) TransitionOutbox(id string, from []string, to string, mutate func(*OutboxRecord) error) (*OutboxRecord, error) {
	var r OutboxRecord
	err := s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bOutbox)
		if err := getJSON(b, []byte(id), &r); err != nil {
			return err
		}
		if !slices.Contains(from, r.Status) {
			return fmt.Errorf("status is %s, not %s: %w", r.Status, strings.Join(from, " or "), ErrConflict)
		}
		if mutate != nil {
			if err := mutate(&r); err != nil {
				return err
			}
		}
		r.ID = id
		r.Status = to
		r.UpdatedAt = s.now().UTC()
		return putJSON(b, []byte(id), &r)
	})
	if err != nil {
		return nil, fmt.Errorf("outbox %s → %s: %w", id, to, err)
	}
	return &r, nil
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
