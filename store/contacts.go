package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/mailagent/mailagent/internal/mail"
	bolt "go.etcd.io/bbolt"
)

// contactBucket returns the account's nested contacts bucket, creating it
// when create is set; nil when it does not exist.
func contactBucket(tx *bolt.Tx, account string, create bool) (*bolt.Bucket, error) {
	root := tx.Bucket(bContacts)
	if root == nil {
		return nil, nil
	}
	if create {
		return root.CreateBucketIfNotExists([]byte(account))
	}
	return root.Bucket([]byte(account)), nil
}

func checkContact(account, email string) error {
	if err := checkName("account", account); err != nil {
		return err
	}
	if mail.AddrKey(email) == "" {
		return errors.New("contact email is empty")
	}
	return nil
}

// GetContact returns what is remembered about email (compared
// case-insensitively) on account, or an error wrapping ErrNotFound.
func (s *Store) GetContact(account, email string) (*Contact, error) {
	var c Contact
	err := s.view(func(tx *bolt.Tx) error {
		b, _ := contactBucket(tx, account, false)
		return getJSON(b, []byte(emailKey(email)), &c)
	})
	if err != nil {
		return nil, fmt.Errorf("get contact %s/%s: %w", account, mail.AddrKey(email), err)
	}
	return &c, nil
}

// UpdateContact loads the contact (a new one with FirstSeen now when
// missing), lets fn change it and writes it back, in one transaction. fn
// runs inside the transaction and must not call the Store; its error
// aborts. Email stays the lowercased key, and History is cut to the newest
// HistoryCap entries.
func (s *Store) UpdateContact(account, email string, fn func(*Contact) error) (*Contact, error) {
	key := emailKey(email)
	if err := checkContact(account, email); err != nil {
		return nil, fmt.Errorf("update contact: %w", err)
	}
	var c Contact
	err := s.updateTx(func(tx *bolt.Tx) error {
		b, err := contactBucket(tx, account, true)
		if err != nil {
			return err
		}
		return updateContactTx(b, key, mail.AddrKey(email), s.now().UTC(), &c, fn)
	})
	if err != nil {
		return nil, fmt.Errorf("update contact %s/%s: %w", account, key, err)
	}
	return &c, nil
}

func updateContactTx(b *bolt.Bucket, key, email string, now time.Time, c *Contact, fn func(*Contact) error) error {
	*c = Contact{}
	switch err := getJSON(b, []byte(key), c); {
	case errors.Is(err, ErrNotFound):
		*c = Contact{FirstSeen: now}
	case err != nil:
		return err
	}
	if fn != nil {
		if err := fn(c); err != nil {
			return err
		}
	}
	c.Email = email
	if n := len(c.History); n > HistoryCap {
		c.History = append([]HistoryEntry(nil), c.History[n-HistoryCap:]...)
	}
	return putJSON(b, []byte(key), c)
}

// ListContacts calls fn for each contact of account, in email order. The
// contacts are read in one transaction and fn runs after it, so fn may use
// the store; its error stops the walk.
func (s *Store) ListContacts(account string, fn func(*Contact) error) error {
	var all []*Contact
	err := s.view(func(tx *bolt.Tx) error {
		b, _ := contactBucket(tx, account, false)
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, v []byte) error {
			var c Contact
			if err := json.Unmarshal(v, &c); err != nil {
				return fmt.Errorf("decode contact %q: %w", k, err)
			}
			all = append(all, &c)
			return nil
		})
	})
	if err != nil {
		return fmt.Errorf("list contacts %s: %w", account, err)
	}
	for _, c := range all {
		if err := fn(c); err != nil {
			return err
		}
	}
	return nil
}

// ContactName is a contact's address and name, what a completion shows.
type ContactName struct {
	Email string `json:"email"`
	Name  string `json:"name,omitempty"`
}

// ContactNames lists at most limit contacts of account whose address
// starts with prefix (compared as mail.AddrKey folds it), in email order.
// It seeks to the prefix and decodes only the address and name, so its
// cost follows limit, not the number of contacts: shell completion calls
// it on every Tab. A contact stored under a hashed key (an address unfit
// for a key as it is) matches only the empty prefix.
func (s *Store) ContactNames(account, prefix string, limit int) ([]ContactName, error) {
	out := []ContactName{}
	if limit <= 0 {
		return out, nil
	}
	seek := []byte(mail.AddrKey(prefix))
	err := s.view(func(tx *bolt.Tx) error {
		b, _ := contactBucket(tx, account, false)
		if b == nil {
			return nil
		}
		c := b.Cursor()
		for k, v := c.Seek(seek); k != nil && bytes.HasPrefix(k, seek) && len(out) < limit; k, v = c.Next() {
			var n ContactName
			if err := json.Unmarshal(v, &n); err != nil {
				return fmt.Errorf("decode contact %q: %w", k, err)
			}
			out = append(out, n)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("contact names %s: %w", account, err)
	}
	return out, nil
}

// ForgetContact deletes everything remembered about a contact, in one
// transaction: its entry (history, summary, notes, counts), the memory
// records about exactly that address, and the examples of replies to it.
// Nothing of the account's to forget is an error wrapping ErrNotFound.
func (s *Store) ForgetContact(account, email string) error {
	key, who := emailKey(email), mail.AddrKey(email)
	err := s.updateTx(func(tx *bolt.Tx) error {
		found := false
		if b, _ := contactBucket(tx, account, false); b != nil && b.Get([]byte(key)) != nil {
			if err := b.Delete([]byte(key)); err != nil {
				return err
			}
			found = true
		}
		// What was learned about the contact goes with it: its memory
		// records (not the @domain ones, which are about everyone there)
		// and the examples of replies to it.
		if forgetLearnedOff.Load() {
			if !found {
				return ErrNotFound
			}
			return nil
		}
		n, err := deleteAbout(tx.Bucket(bMemory), func(v []byte) bool {
			var r MemoryRecord
			return json.Unmarshal(v, &r) == nil && r.Account == account && r.Contact == who
		})
		if err != nil {
			return err
		}
		m, err := deleteAbout(tx.Bucket(bExamples), func(v []byte) bool {
			var e Example
			return json.Unmarshal(v, &e) == nil && e.Account == account && e.Contact == who
		})
		if err != nil {
			return err
		}
		if !found && n+m == 0 {
			return ErrNotFound
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("forget contact %s/%s: %w", account, key, err)
	}
	return nil
}

// forgetLearnedOff makes ForgetContact delete the contact's entry alone,
// leaving its memory records and examples. It exists only for the
// positive control of TestForgetContactTakesWhatWasLearned (never in
// parallel, restored before it returns); nothing in the product sets it.
var forgetLearnedOff atomic.Bool

// deleteAbout deletes the entries of b whose value match says are about
// the one being forgotten, and returns how many it deleted.
func deleteAbout(b *bolt.Bucket, match func(v []byte) bool) (int, error) {
	if b == nil {
		return 0, nil
	}
	var keys [][]byte
	if err := b.ForEach(func(k, v []byte) error {
		if match(v) {
			keys = append(keys, bytes.Clone(k))
		}
		return nil
	}); err != nil {
		return 0, err
	}
	for _, k := range keys {
		if err := b.Delete(k); err != nil {
			return 0, err
		}
	}
	return len(keys), nil
}

// MarkKnown marks each address as known (the owner has written to it),
// creating contacts as needed, in one transaction.
func (s *Store) MarkKnown(account string, emails []string) error {
	if err := s.UpdateContacts(account, emails, func(_ string, c *Contact) error {
		c.Known = true
		return nil
	}); err != nil {
		return fmt.Errorf("mark known: %w", err)
	}
	return nil
}

// UpdateContacts is UpdateContact for many addresses in one transaction
// (in the order given; an address twice is updated twice): fn gets each
// address as passed and its contact. fn must not call the Store; its
// error aborts the whole transaction, and then no contact changes.
func (s *Store) UpdateContacts(account string, emails []string, fn func(email string, c *Contact) error) error {
	for _, e := range emails {
		if err := checkContact(account, e); err != nil {
			return fmt.Errorf("update contacts: %w", err)
		}
	}
	err := s.updateTx(func(tx *bolt.Tx) error {
		b, err := contactBucket(tx, account, true)
		if err != nil {
			return err
		}
		now := s.now().UTC()
		for _, e := range emails {
			var c Contact
			if err := updateContactTx(b, emailKey(e), mail.AddrKey(e), now, &c, func(c *Contact) error { return fn(e, c) }); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("update contacts %s: %w", account, err)
	}
	return nil
}
