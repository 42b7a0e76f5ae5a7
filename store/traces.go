package store

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/mailagent/mailagent/internal/mail"
	bolt "go.etcd.io/bbolt"
)

func traceIndexKey(t *Trace) []byte {
	return join([]byte(idKey(t.MessageID)), []byte(t.Message.Account), []byte(t.TraceID))
}

// PutTrace writes a trace under its TraceID (replacing an earlier version)
// and indexes it by its message's Message-ID.
func (s *Store) PutTrace(t *Trace) error {
	if t == nil {
		return errors.New("put trace: nil trace")
	}
	if err := checkName("trace id", t.TraceID); err != nil {
		return fmt.Errorf("put trace: %w", err)
	}
	err := s.update(func(tx *bolt.Tx) error { return putTraceTx(tx, t) })
	if err != nil {
		return fmt.Errorf("put trace %s: %w", t.TraceID, err)
	}
	return nil
}

// GetTrace returns the trace with that id, or an error wrapping ErrNotFound.
func (s *Store) GetTrace(id string) (*Trace, error) {
	var t Trace
	err := s.view(func(tx *bolt.Tx) error {
		return getJSON(tx.Bucket(bTraces), []byte(id), &t)
	})
	if err != nil {
		return nil, fmt.Errorf("get trace %s: %w", id, err)
	}
	return &t, nil
}

// TraceForMessageID returns the newest trace (by Started) of the message
// with that Message-ID (case-insensitive, brackets optional); account ""
// searches every account. No trace is an error wrapping ErrNotFound.
func (s *Store) TraceForMessageID(account, messageID string) (*Trace, error) {
	prefix := append([]byte(idKey(messageID)), 0)
	if account != "" {
		prefix = append(append(prefix, account...), 0)
	}
	var best *Trace
	err := scan(s, bIdxTraceMID, prefix, func(tx *bolt.Tx, _, v []byte) (*Trace, bool, error) {
		var t Trace
		err := getJSON(tx.Bucket(bTraces), v, &t)
		if errors.Is(err, ErrNotFound) {
			return nil, false, nil
		}
		return &t, err == nil, err
	}, func(t *Trace) error {
		if best == nil || t.Started.After(best.Started) {
			best = t
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("trace for message-id %q: %w", messageID, err)
	}
	if best == nil || mail.IDKey(messageID) == "" {
		return nil, fmt.Errorf("trace for message-id %q: %w", messageID, ErrNotFound)
	}
	return best, nil
}

// ResolveTrace finds a trace from what a user typed: any id the product
// prints. In order: a trace id; a queue item id (q_…) or an outbox id
// (ob_…), which lead to the message they answer; else a Message-ID (of
// the message, brackets optional). account "" searches every account.
func (s *Store) ResolveTrace(account, ref string) (*Trace, error) {
	if t, err := s.GetTrace(ref); err == nil {
		if account == "" || t.Message.Account == account {
			return t, nil
		}
	} else if !errors.Is(err, ErrNotFound) {
		return nil, err
	}
	if key, msgID, ok, err := s.messageOf(ref); err != nil {
		return nil, err
	} else if ok && (account == "" || key.Account == account) {
		if rec, err := s.GetMessage(key); err == nil && rec.TraceID != "" {
			if t, err := s.GetTrace(rec.TraceID); err == nil {
				return t, nil
			} else if !errors.Is(err, ErrNotFound) {
				return nil, err
			}
		} else if err != nil && !errors.Is(err, ErrNotFound) {
			return nil, err
		}
		if msgID != "" {
			return s.TraceForMessageID(key.Account, msgID)
		}
	}
	return s.TraceForMessageID(account, ref)
}

// messageOf returns the message a queue item or outbox id refers to (ok
// false when ref is neither, or names nothing).
func (s *Store) messageOf(ref string) (key MessageKey, messageID string, ok bool, err error) {
	switch {
	case strings.HasPrefix(ref, "q_"):
		q, err := s.GetQueueItem(ref)
		if errors.Is(err, ErrNotFound) {
			return key, "", false, nil
		}
		if err != nil {
			return key, "", false, err
		}
		return q.Message, q.MessageID, true, nil
	case strings.HasPrefix(ref, "ob_"):
		ob, err := s.GetOutbox(ref)
		if errors.Is(err, ErrNotFound) {
			return key, "", false, nil
		}
		if err != nil {
			return key, "", false, err
		}
		return ob.Message, ob.InReplyTo, true, nil
	}
	return key, "", false, nil
}

func putTraceTx(tx *bolt.Tx, t *Trace) error {
	b, idx := tx.Bucket(bTraces), tx.Bucket(bIdxTraceMID)
	b.FillPercent = appendFill
	var old Trace
	switch err := getJSON(b, []byte(t.TraceID), &old); {
	case err == nil:
		if old.MessageID != "" {
			if err := idx.Delete(traceIndexKey(&old)); err != nil {
				return err
			}
		}
	case !errors.Is(err, ErrNotFound):
		return err
	}
	if err := putSnapshotsTx(tx, t); err != nil {
		return err
	}
	if err := putJSON(b, []byte(t.TraceID), withoutSnapshots(t)); err != nil {
		return err
	}
	if t.MessageID != "" {
		return idx.Put(traceIndexKey(t), []byte(t.TraceID))
	}
	return nil
}

// withoutSnapshots returns t, or a copy of it whose steps carry no
// snapshot (those are stored apart, by putSnapshotsTx).
func withoutSnapshots(t *Trace) *Trace {
	if !slices.ContainsFunc(t.Steps, func(s Step) bool { return s.Snapshot != nil }) {
		return t
	}
	c := *t
	c.Steps = slices.Clone(t.Steps)
	for i := range c.Steps {
		c.Steps[i].Snapshot = nil
	}
	return &c
}
