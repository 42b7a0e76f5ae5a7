package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mailagent/mailagent/internal/mail"
	bolt "go.etcd.io/bbolt"
)

// Kinds of memory record.
const (
	// MemoryFact is something true about a contact or the owner.
	MemoryFact = "fact"
	// MemoryPreference is how the owner likes something done (often
	// learned from an edit).
	MemoryPreference = "preference"
	// MemoryRule is a standing instruction ("never auto-reply to …").
	MemoryRule = "rule"
	// MemoryStyle is a global rule of the owner's writing style.
	MemoryStyle = "style"
	// MemoryTemporary is a fact that stops applying at Expires.
	MemoryTemporary = "temporary"
)

// MemoryExample is the kind under which an Example is shown to the owner
// beside the records (see Example.AsMemory): listed, shown, edited and
// forgotten one by one, never added by hand.
const MemoryExample = "example"

// MemoryKinds lists the kinds in display order.
var MemoryKinds = []string{MemoryFact, MemoryPreference, MemoryRule, MemoryStyle, MemoryTemporary}

// MaxMemoryText bounds the text of one record, in characters.
const MaxMemoryText = 400

// Sources of memory records, as the prefix of MemoryRecord.Source.
const (
	SourceManual    = "manual"     // `mailagent memory add`
	SourceEdit      = "edit:"      // + queue item id: the owner edited a draft
	SourceReject    = "reject:"    // + queue item id: the owner rejected a draft
	SourceMail      = "mail:"      // + Message-ID: the owner's mail (instruction, Cc, reply)
	SourceDistilled = "distilled:" // + count of edits: style distilled from edits
)

// MemoryRecord is one typed, inspectable thing the agent remembers.
type MemoryRecord struct {
	// ID is "mem_" followed by a NewID: creation order is key order.
	ID      string `json:"id"`
	Account string `json:"account"`
	Kind    string `json:"kind"`
	// Contact is the lowercased address the record is about, "@domain"
	// for everyone at a domain, or "" for a global record (style, and
	// the owner's own rules and absences).
	Contact string `json:"contact,omitempty"`
	// Intent is the classified intent the record was learned on, if any.
	Intent string `json:"intent,omitempty"`
	Text   string `json:"text"`
	// Source says where the record came from (see the Source constants).
	Source  string    `json:"source"`
	Created time.Time `json:"created"`
	// Expires ends a temporary record (zero: never).
	Expires time.Time `json:"expires,omitzero"`
}

// Active reports whether the record applies at now (not expired).
func (r *MemoryRecord) Active(now time.Time) bool {
	return r.Expires.IsZero() || now.Before(r.Expires)
}

// AppliesTo reports whether the record may be shown when drafting for
// contact: its own records, its domain's, and global ones.
func (r *MemoryRecord) AppliesTo(contact string) bool {
	contact = mail.AddrKey(contact)
	switch {
	case r.Contact == "":
		return true
	case strings.HasPrefix(r.Contact, "@"):
		return contact != "" && strings.HasSuffix(contact, r.Contact)
	default:
		return mail.AddrKey(r.Contact) == contact
	}
}

// ErrBadMemory is wrapped by the errors for a record that cannot be
// stored (unknown kind, empty or long text, …).
var ErrBadMemory = errors.New("invalid memory record")

// CheckMemory validates r, normalising its contact and text in place.
func CheckMemory(r *MemoryRecord) error {
	if err := checkName("account", r.Account); err != nil {
		return fmt.Errorf("%w: %w", ErrBadMemory, err)
	}
	if !slices.Contains(MemoryKinds, r.Kind) {
		return fmt.Errorf("%w: kind %q is not one of %s", ErrBadMemory, r.Kind, strings.Join(MemoryKinds, ", "))
	}
	r.Text = strings.Join(strings.Fields(r.Text), " ")
	r.Contact = mail.AddrKey(r.Contact)
	switch n := utf8.RuneCountInString(r.Text); {
	case n == 0:
		return fmt.Errorf("%w: empty text", ErrBadMemory)
	case n > MaxMemoryText:
		return fmt.Errorf("%w: text has %d characters, at most %d", ErrBadMemory, n, MaxMemoryText)
	}
	if r.Contact != "" && !strings.Contains(r.Contact, "@") {
		return fmt.Errorf("%w: contact %q is neither an address nor @domain", ErrBadMemory, r.Contact)
	}
	if r.Kind == MemoryStyle && r.Contact != "" {
		return fmt.Errorf("%w: style records are global (no contact)", ErrBadMemory)
	}
	if r.Kind == MemoryTemporary && r.Expires.IsZero() {
		return fmt.Errorf("%w: a temporary record needs an expiry", ErrBadMemory)
	}
	if r.Source == "" {
		return fmt.Errorf("%w: no source", ErrBadMemory)
	}
	return nil
}

// AddMemory validates and stores r, giving it an ID and Created time when
// it has none. Adding a record whose Source and Text equal an existing
// one of the account is a no-op that returns the existing record (a
// resumed message or a repeated approval learns once).
func (s *Store) AddMemory(r *MemoryRecord) (*MemoryRecord, error) {
	if err := CheckMemory(r); err != nil {
		return nil, err
	}
	out := *r
	if out.ID == "" {
		out.ID = "mem_" + NewID()
	}
	if out.Created.IsZero() {
		out.Created = s.now().UTC()
	}
	err := s.updateTx(func(tx *bolt.Tx) error {
		b := tx.Bucket(bMemory)
		c := b.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			var old MemoryRecord
			if json.Unmarshal(v, &old) == nil && old.Account == out.Account && old.Source == out.Source && old.Text == out.Text && old.Contact == out.Contact {
				out = old
				return nil
			}
		}
		return putJSON(b, []byte(out.ID), &out)
	})
	if err != nil {
		return nil, fmt.Errorf("add memory: %w", err)
	}
	return &out, nil
}

// GetMemory returns one record, or an error wrapping ErrNotFound.
func (s *Store) GetMemory(id string) (*MemoryRecord, error) {
	var r MemoryRecord
	err := s.view(func(tx *bolt.Tx) error { return getJSON(tx.Bucket(bMemory), []byte(id), &r) })
	if err != nil {
		return nil, fmt.Errorf("memory %q: %w", id, err)
	}
	return &r, nil
}

// MemoryFilter selects records; zero fields match everything.
type MemoryFilter struct {
	Account string
	// Contact matches records about exactly this contact (or "@domain").
	Contact string
	Kind    string
	// Source matches records whose Source equals it.
	Source string
}

func (f MemoryFilter) match(r *MemoryRecord) bool {
	return (f.Account == "" || r.Account == f.Account) &&
		(f.Contact == "" || mail.SameAddr(r.Contact, f.Contact)) &&
		(f.Kind == "" || r.Kind == f.Kind) &&
		(f.Source == "" || r.Source == f.Source)
}

// ListMemory returns the records matching f, oldest first.
func (s *Store) ListMemory(f MemoryFilter) ([]MemoryRecord, error) {
	out := []MemoryRecord{}
	err := s.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(bMemory)
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, v []byte) error {
			var r MemoryRecord
			if err := json.Unmarshal(v, &r); err != nil {
				return fmt.Errorf("decode memory %q: %w", k, err)
			}
			if f.match(&r) {
				out = append(out, r)
			}
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("list memory: %w", err)
	}
	return out, nil
}

// UpdateMemory lets fn change a record (its ID, Account and Source are
// kept) and stores it after validation, in one transaction.
func (s *Store) UpdateMemory(id string, fn func(*MemoryRecord) error) (*MemoryRecord, error) {
	var r MemoryRecord
	err := s.updateTx(func(tx *bolt.Tx) error {
		b := tx.Bucket(bMemory)
		if err := getJSON(b, []byte(id), &r); err != nil {
			return err
		}
		keep := r
		if err := fn(&r); err != nil {
			return err
		}
		r.ID, r.Account, r.Source, r.Created = keep.ID, keep.Account, keep.Source, keep.Created
		if err := CheckMemory(&r); err != nil {
			return err
		}
		return putJSON(b, []byte(id), &r)
	})
	if err != nil {
		return nil, fmt.Errorf("update memory %q: %w", id, err)
	}
	return &r, nil
}

// ForgetMemory deletes one record; an unknown id is an error wrapping
// ErrNotFound.
func (s *Store) ForgetMemory(id string) error {
	err := s.updateTx(func(tx *bolt.Tx) error {
		b := tx.Bucket(bMemory)
		if b == nil || b.Get([]byte(id)) == nil {
			return ErrNotFound
		}
		return b.Delete([]byte(id))
	})
	if err != nil {
		return fmt.Errorf("forget memory %q: %w", id, err)
	}
	return nil
}

// Kinds of Example.
const (
	ExampleOwnerReply = "owner_reply" // the owner's own reply, read from Sent
	ExampleApproved   = "approved"    // a draft the owner approved (with their edits)
)

// MaxExampleText bounds the text of an example, in characters.
const MaxExampleText = 1200

// ExamplesPerContact is how many examples of each kind are kept per
// contact; older ones are dropped when a new one is added.
const ExamplesPerContact = 5

// Example is a reply the owner wrote or approved, kept as a few-shot
// example for later drafts.
type Example struct {
	ID      string    `json:"id"` // "ex_" + NewID
	Account string    `json:"account"`
	Kind    string    `json:"kind"`
	Contact string    `json:"contact"` // lowercased: who the reply went to
	Intents []string  `json:"intents,omitempty"`
	Subject string    `json:"subject,omitempty"`
	Text    string    `json:"text"`
	Source  string    `json:"source"` // Message-ID or queue item id
	Created time.Time `json:"created"`
}

// AddExample stores e (its text cut to MaxExampleText at a word
// boundary), dropping the oldest examples of the same account, contact and
// kind beyond ExamplesPerContact. An example with the same Source is not
// stored twice.
func (s *Store) AddExample(e *Example) error {
	out, err := s.prepareExample(e)
	if err != nil {
		return fmt.Errorf("add example: %w", err)
	}
	if err := s.updateTx(func(tx *bolt.Tx) error { return addExampleTx(tx.Bucket(bExamples), out) }); err != nil {
		return fmt.Errorf("add example: %w", err)
	}
	return nil
}

// AddExamples stores each example as AddExample does (the same cut, the
// same duplicate check and per-contact cap, applied in order), in one
// transaction: a Sent folder's worth of the owner's replies costs one
// commit instead of one each. An example AddExample would refuse (no
// account, text or contact) is left out and named in the returned error;
// the others are stored. A failed commit stores none.
func (s *Store) AddExamples(es []*Example) error {
	var outs []Example
	var bad []error
	for i, e := range es {
		out, err := s.prepareExample(e)
		if err != nil {
			bad = append(bad, fmt.Errorf("example %d: %w", i, err))
			continue
		}
		outs = append(outs, out)
	}
	if len(outs) > 0 {
		err := s.updateTx(func(tx *bolt.Tx) error { return addExamplesTx(tx.Bucket(bExamples), outs) })
		if err != nil {
			return fmt.Errorf("add examples: %w", err)
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("add examples: %w", errors.Join(bad...))
	}
	return nil
}

// prepareExample is e as it is stored: contact keyed, text trimmed and
// cut, ID and Created filled in.
func (s *Store) prepareExample(e *Example) (Example, error) {
	if err := checkName("account", e.Account); err != nil {
		return Example{}, err
	}
	out := *e
	out.Contact = mail.AddrKey(out.Contact)
	out.Text = strings.TrimSpace(out.Text)
	if r := []rune(out.Text); len(r) > MaxExampleText {
		cut := string(r[:MaxExampleText])
		if i := strings.LastIndexAny(cut, " \n"); i > MaxExampleText/2 {
			cut = cut[:i]
		}
		out.Text = cut
	}
	if out.Text == "" || out.Contact == "" {
		return Example{}, errors.New("empty text or contact")
	}
	if out.ID == "" {
		out.ID = "ex_" + NewID()
	}
	if out.Created.IsZero() {
		out.Created = s.now().UTC()
	}
	return out, nil
}

// addExamplesTx is addExampleTx for each of outs in turn, with the bucket
// read once: the duplicate and per-contact checks use an index of it kept
// up to date as outs are written, so a batch costs one pass over the
// examples instead of one per example.
func addExamplesTx(b *bolt.Bucket, outs []Example) error {
	type group struct{ account, contact, kind string }
	type source struct{ account, source, kind string }
	sources := map[source]int{}  // examples holding each Source
	srcOf := map[string]source{} // key → its Source, to forget it when deleted
	same := map[group][][]byte{} // keys in key order, as a cursor gives them
	c := b.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		var old Example
		if json.Unmarshal(v, &old) != nil {
			continue
		}
		if old.Source != "" {
			sources[source{old.Account, old.Source, old.Kind}]++
			srcOf[string(k)] = source{old.Account, old.Source, old.Kind}
		}
		g := group{old.Account, old.Contact, old.Kind}
		same[g] = append(same[g], bytes.Clone(k))
	}
	for _, out := range outs {
		if out.Source != "" && sources[source{out.Account, out.Source, out.Kind}] > 0 {
			continue
		}
		g := group{out.Account, out.Contact, out.Kind}
		keys := same[g]
		for len(keys) >= ExamplesPerContact {
			if err := b.Delete(keys[0]); err != nil {
				return err
			}
			if src, ok := srcOf[string(keys[0])]; ok {
				sources[src]--
				delete(srcOf, string(keys[0]))
			}
			keys = keys[1:]
		}
		if err := putJSON(b, []byte(out.ID), &out); err != nil {
			return err
		}
		id := []byte(out.ID)
		if i, found := slices.BinarySearchFunc(keys, id, bytes.Compare); !found {
			keys = slices.Insert(keys, i, id)
		}
		same[g] = keys
		if out.Source != "" {
			sources[source{out.Account, out.Source, out.Kind}]++
			srcOf[out.ID] = source{out.Account, out.Source, out.Kind}
		}
	}
	return nil
}

// addExampleTx writes out unless an example of the same kind has its
// Source, dropping the contact's oldest of that kind beyond
// ExamplesPerContact.
func addExampleTx(b *bolt.Bucket, out Example) error {
	var same [][]byte
	c := b.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		var old Example
		if json.Unmarshal(v, &old) != nil || old.Account != out.Account {
			continue
		}
		if out.Source != "" && old.Source == out.Source && old.Kind == out.Kind {
			return nil
		}
		if old.Contact == out.Contact && old.Kind == out.Kind {
			same = append(same, bytes.Clone(k))
		}
	}
	for len(same) >= ExamplesPerContact {
		if err := b.Delete(same[0]); err != nil {
			return err
		}
		same = same[1:]
	}
	return putJSON(b, []byte(out.ID), &out)
}

// ListExamples returns the account's examples, oldest first.
func (s *Store) ListExamples(account string) ([]Example, error) {
	out := []Example{}
	err := s.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(bExamples)
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, v []byte) error {
			var e Example
			if err := json.Unmarshal(v, &e); err != nil {
				return fmt.Errorf("decode example %q: %w", k, err)
			}
			if e.Account == account {
				out = append(out, e)
			}
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("list examples: %w", err)
	}
	return out, nil
}

// Learned names one memory record written from an owner's action.
type Learned struct {
	ID   string `json:"id"`
	Text string `json:"text"`
}

// Sources of examples shown as memory (Example.AsMemory).
const (
	SourceSent     = "sent:"     // + Message-ID: the owner's reply, read from Sent
	SourceApproved = "approved:" // + queue item id: a draft the owner approved
)

// AsMemory shows the example as a memory record of kind MemoryExample, so
// the owner lists, reads, edits and forgets it with the records.
func (e *Example) AsMemory() MemoryRecord {
	src := SourceApproved + e.Source
	if e.Kind == ExampleOwnerReply {
		src = SourceSent + e.Source
	}
	r := MemoryRecord{ID: e.ID, Account: e.Account, Kind: MemoryExample, Contact: e.Contact,
		Text: e.Text, Source: src, Created: e.Created}
	if len(e.Intents) > 0 {
		r.Intent = e.Intents[0]
	}
	return r
}

// IsExampleID reports whether id names an example rather than a record.
func IsExampleID(id string) bool { return strings.HasPrefix(id, "ex_") }

// GetExample returns one example, or an error wrapping ErrNotFound.
func (s *Store) GetExample(id string) (*Example, error) {
	var e Example
	err := s.view(func(tx *bolt.Tx) error { return getJSON(tx.Bucket(bExamples), []byte(id), &e) })
	if err != nil {
		return nil, fmt.Errorf("example %q: %w", id, err)
	}
	return &e, nil
}

// EditExample replaces an example's text (cut to MaxExampleText); empty
// text is an error wrapping ErrBadMemory.
func (s *Store) EditExample(id, text string) (*Example, error) {
	text = strings.TrimSpace(text)
	if text == "" {
		return nil, fmt.Errorf("edit example %q: %w: empty text", id, ErrBadMemory)
	}
	if n := utf8.RuneCountInString(text); n > MaxExampleText {
		return nil, fmt.Errorf("edit example %q: %w: text has %d characters, at most %d", id, ErrBadMemory, n, MaxExampleText)
	}
	var e Example
	err := s.updateTx(func(tx *bolt.Tx) error {
		b := tx.Bucket(bExamples)
		if err := getJSON(b, []byte(id), &e); err != nil {
			return err
		}
		e.Text = text
		return putJSON(b, []byte(id), &e)
	})
	if err != nil {
		return nil, fmt.Errorf("edit example %q: %w", id, err)
	}
	return &e, nil
}

// ForgetExample deletes one example; an unknown id is an error wrapping
// ErrNotFound.
func (s *Store) ForgetExample(id string) error {
	err := s.updateTx(func(tx *bolt.Tx) error {
		b := tx.Bucket(bExamples)
		if b == nil || b.Get([]byte(id)) == nil {
			return ErrNotFound
		}
		return b.Delete([]byte(id))
	})
	if err != nil {
		return fmt.Errorf("forget example %q: %w", id, err)
	}
	return nil
}
