package store

import (
	"errors"
	"fmt"

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
	if best == nil || normID(messageID) == "" {
		return nil, fmt.Errorf("trace for message-id %q: %w", messageID, ErrNotFound)
	}
	return best, nil
}

// ResolveTrace finds a trace from what a user typed: a trace id, or else a
// Message-ID (what `mailagent explain` accepts).
func (s *Store) ResolveTrace(account, ref string) (*Trace, error) {
	if t, err := s.GetTrace(ref); err == nil {
		if account == "" || t.Message.Account == account {
			return t, nil
		}
	} else if !errors.Is(err, ErrNotFound) {
		return nil, err
	}
	return s.TraceForMessageID(account, ref)
}

func putTraceTx(tx *bolt.Tx, t *Trace) error {
	b, idx := tx.Bucket(bTraces), tx.Bucket(bIdxTraceMID)
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
	if err := putJSON(b, []byte(t.TraceID), t); err != nil {
		return err
	}
	if t.MessageID != "" {
		return idx.Put(traceIndexKey(t), []byte(t.TraceID))
	}
	return nil
}
