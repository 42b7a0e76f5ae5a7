package store

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

func checkpointKey(account, mailbox string) []byte {
	return join([]byte(account), []byte(mailbox))
}

// Checkpoint returns the sync position of a mailbox; ok is false when none
// has been written.
func (s *Store) Checkpoint(account, mailbox string) (cp Checkpoint, ok bool, err error) {
	err = s.view(func(tx *bolt.Tx) error {
		return getJSON(tx.Bucket(bCheckpoints), checkpointKey(account, mailbox), &cp)
	})
	if errors.Is(err, ErrNotFound) {
		return Checkpoint{}, false, nil
	}
	if err != nil {
		return Checkpoint{}, false, fmt.Errorf("checkpoint %s/%s: %w", account, mailbox, err)
	}
	return cp, true, nil
}

// SetCheckpoint writes the sync position of a mailbox (UpdatedAt is set).
func (s *Store) SetCheckpoint(account, mailbox string, cp Checkpoint) error {
	if err := (MessageKey{Account: account, Mailbox: mailbox}).check(); err != nil {
		return fmt.Errorf("set checkpoint: %w", err)
	}
	err := s.updateTx(func(tx *bolt.Tx) error {
		cp.UpdatedAt = s.now().UTC()
		return putJSON(tx.Bucket(bCheckpoints), checkpointKey(account, mailbox), cp)
	})
	if err != nil {
		return fmt.Errorf("set checkpoint %s/%s: %w", account, mailbox, err)
	}
	return nil
}

// AdvanceCheckpoint moves the mailbox's LastUID forward over the
// contiguous run of terminal messages and returns the new checkpoint, in
// one transaction.
//
// Semantics: starting at LastUID+1 it walks the message records of
// (account, mailbox, uidvalidity) in UID order and stops at the first
// record that is not terminal (State.Terminal). Only records that exist
// count: UIDs are sparse, so a UID with no record does not block. The
// caller must therefore write the `fetched` record of every message before
// processing any of them (and before advancing); otherwise a gap could be
// skipped past a message that was never stored.
//
// When the stored checkpoint has another UIDVALIDITY (or there is none),
// the old position is void: the walk starts from UID 0 under the new
// UIDVALIDITY.
func (s *Store) AdvanceCheckpoint(account, mailbox string, uidvalidity uint32) (Checkpoint, error) {
	if err := (MessageKey{Account: account, Mailbox: mailbox}).check(); err != nil {
		return Checkpoint{}, fmt.Errorf("advance checkpoint: %w", err)
	}
	var cp Checkpoint
	err := s.updateTx(func(tx *bolt.Tx) error {
		cb := tx.Bucket(bCheckpoints)
		key := checkpointKey(account, mailbox)
		err := getJSON(cb, key, &cp)
		if err != nil && !errors.Is(err, ErrNotFound) {
			return err
		}
		if err != nil || cp.UIDValidity != uidvalidity {
			cp = Checkpoint{UIDValidity: uidvalidity}
		}
		prefix := mailboxPrefix(account, mailbox, uidvalidity)
		start := append(append([]byte(nil), prefix...), be32(cp.LastUID+1)...)
		if cp.LastUID == ^uint32(0) {
			return putJSON(cb, key, cp) // nothing after the largest UID
		}
		c := tx.Bucket(bMessages).Cursor()
		for k, v := c.Seek(start); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			var st struct {
				State State `json:"state"`
			}
			if err := json.Unmarshal(v, &st); err != nil {
				return fmt.Errorf("decode %q: %w", k, err)
			}
			if !st.State.Terminal() {
				break
			}
			cp.LastUID = binary.BigEndian.Uint32(k[len(prefix):])
		}
		cp.UpdatedAt = s.now().UTC()
		return putJSON(cb, key, cp)
	})
	if err != nil {
		return Checkpoint{}, fmt.Errorf("advance checkpoint %s/%s: %w", account, mailbox, err)
	}
	return cp, nil
}
