package store

import (
	"bytes"
	"encoding/json"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/mailagent/mailagent/internal/mail"
)

// metaKeysMail marks a file whose Message-ID indexes and contact keys are
// built from mail.IDKey and mail.AddrKey, the one id key and the one
// address key. Files written before used the store's own normalisations,
// which differed on rare spellings (whitespace inside a Message-ID, a
// lone angle bracket or spaces inside brackets around an address).
var metaKeysMail = []byte("keys_mail_idkey_addrkey")

// rekeyOnce brings an older file's keys to mail.IDKey and mail.AddrKey,
// once, in the caller's transaction: the two Message-ID indexes (messages
// and traces) are rebuilt from the records, and each contact stored under
// another key moves to its key now. A contact whose new key is already
// taken stays where it is (ListContacts still shows it; nothing is lost or
// merged by guesswork).
func rekeyOnce(tx *bolt.Tx) error {
	meta := tx.Bucket(bMeta)
	if meta == nil || meta.Get(metaKeysMail) != nil {
		return nil
	}
	if err := rebuildIDIndexes(tx); err != nil {
		return fmt.Errorf("rekey the message-id indexes: %w", err)
	}
	if err := rekeyContacts(tx); err != nil {
		return fmt.Errorf("rekey the contacts: %w", err)
	}
	return meta.Put(metaKeysMail, []byte{1})
}

func rebuildIDIndexes(tx *bolt.Tx) error {
	for _, name := range [][]byte{bIdxMsgID, bIdxTraceMID} {
		if err := tx.DeleteBucket(name); err != nil {
			return err
		}
		if _, err := tx.CreateBucket(name); err != nil {
			return err
		}
	}
	idx := tx.Bucket(bIdxMsgID)
	err := tx.Bucket(bMessages).ForEach(func(k, v []byte) error {
		var r MessageRecord
		if json.Unmarshal(v, &r) != nil || r.MessageID == "" || !bytes.Equal(msgKey(r.MessageKey), k) {
			return nil // doctor reports it
		}
		return idx.Put(msgIDIndexKey(r.Account, r.MessageID, k), bytes.Clone(k))
	})
	if err != nil {
		return err
	}
	tidx := tx.Bucket(bIdxTraceMID)
	return tx.Bucket(bTraces).ForEach(func(k, v []byte) error {
		var t Trace
		if json.Unmarshal(v, &t) != nil || t.MessageID == "" {
			return nil
		}
		return tidx.Put(traceIndexKey(&t), bytes.Clone(k))
	})
}

func rekeyContacts(tx *bolt.Tx) error {
	root := tx.Bucket(bContacts)
	if root == nil {
		return nil
	}
	var accounts [][]byte
	if err := root.ForEach(func(k, v []byte) error {
		if v == nil {
			accounts = append(accounts, bytes.Clone(k))
		}
		return nil
	}); err != nil {
		return err
	}
	for _, acct := range accounts {
		b := root.Bucket(acct)
		type move struct {
			old, new []byte
			c        Contact
		}
		var moves []move
		err := b.ForEach(func(k, v []byte) error {
			var c Contact
			if json.Unmarshal(v, &c) != nil || mail.AddrKey(c.Email) == "" {
				return nil
			}
			if nk := []byte(emailKey(c.Email)); !bytes.Equal(nk, k) || c.Email != mail.AddrKey(c.Email) {
				moves = append(moves, move{bytes.Clone(k), nk, c})
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, m := range moves {
			if !bytes.Equal(m.old, m.new) && b.Get(m.new) != nil {
				continue // taken: keep both, as they were
			}
			if err := b.Delete(m.old); err != nil {
				return err
			}
			m.c.Email = mail.AddrKey(m.c.Email)
			if err := putJSON(b, m.new, &m.c); err != nil {
				return err
			}
		}
	}
	return nil
}
