package store

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/mailagent/mailagent/internal/mail"
)

// msgKey is account \0 mailbox \0 be32(uidvalidity) \0 be32(uid), so that a
// range scan lists one mailbox in UID order.
func msgKey(k MessageKey) []byte {
	return join([]byte(k.Account), []byte(k.Mailbox), be32(k.UIDValidity), be32(k.UID))
}

// mailboxPrefix is the key prefix of one mailbox at one UIDVALIDITY.
func mailboxPrefix(account, mailbox string, uidvalidity uint32) []byte {
	return append(join([]byte(account), []byte(mailbox), be32(uidvalidity)), 0)
}

func (k MessageKey) check() error {
	if err := checkName("account", k.Account); err != nil {
		return err
	}
	return checkName("mailbox", k.Mailbox)
}

// String renders the key for logs and errors: account/mailbox/uidvalidity/uid.
func (k MessageKey) String() string {
	return fmt.Sprintf("%s/%s/%d/%d", k.Account, k.Mailbox, k.UIDValidity, k.UID)
}

func msgIDIndexKey(account, messageID string, key []byte) []byte {
	return join([]byte(idKey(messageID)), []byte(account), key)
}

func addMessageIndexes(tx *bolt.Tx, key []byte, r *MessageRecord) error {
	if r.MessageID != "" {
		if err := tx.Bucket(bIdxMsgID).Put(msgIDIndexKey(r.Account, r.MessageID, key), key); err != nil {
			return err
		}
	}
	if r.ThreadID != "" {
		if err := tx.Bucket(bIdxThread).Put(join([]byte(threadKey(r.ThreadID)), key), key); err != nil {
			return err
		}
	}
	if b := tx.Bucket(bIdxMsgCreated); b != nil {
		if err := b.Put(msgCreatedKey(key, r), msgIdxVal(r)); err != nil {
			return err
		}
	}
	return tx.Bucket(bIdxState).Put(join([]byte(r.State), key), key)
}

func removeMessageIndexes(tx *bolt.Tx, key []byte, r *MessageRecord) error {
	if r.MessageID != "" {
		if err := tx.Bucket(bIdxMsgID).Delete(msgIDIndexKey(r.Account, r.MessageID, key)); err != nil {
			return err
		}
	}
	if r.ThreadID != "" {
		if err := tx.Bucket(bIdxThread).Delete(join([]byte(threadKey(r.ThreadID)), key)); err != nil {
			return err
		}
	}
	if b := tx.Bucket(bIdxMsgCreated); b != nil {
		if err := b.Delete(msgCreatedKey(key, r)); err != nil {
			return err
		}
	}
	return tx.Bucket(bIdxState).Delete(join([]byte(r.State), key))
}

// PutMessage writes rec under its MessageKey and keeps the message-id,
// thread and state indexes in step. It sets rec.UpdatedAt, and
// rec.CreatedAt on the first put (a later put keeps the stored CreatedAt).
func (s *Store) PutMessage(rec *MessageRecord) error {
	if rec == nil {
		return errors.New("put message: nil record")
	}
	if err := rec.check(); err != nil {
		return fmt.Errorf("put message: %w", err)
	}
	// Concurrent pipeline workers share one commit (and its fsync) instead
	// of queueing for one each (see groupCommit). putMessageTx may run
	// twice, which it allows: it only overwrites.
	err := s.update(func(tx *bolt.Tx) error {
		return putMessageTx(tx, rec, s.now().UTC())
	})
	if err != nil {
		return fmt.Errorf("put message %s: %w", rec.MessageKey, err)
	}
	return nil
}

// PutOutcome records a message's final record, its trace and (when
// tokensIn+tokensOut > 0) the day's token usage in one transaction: one
// commit per processed message instead of three.
func (s *Store) PutOutcome(rec *MessageRecord, t *Trace, day string, tokensIn, tokensOut int64) error {
	withUsage := tokensIn+tokensOut > 0
	if err := checkOutcome(rec, t, day, withUsage); err != nil {
		return err
	}
	tc := *t
	if err := presnap(&tc); err != nil {
		return err
	}
	t = &tc
	err := s.update(func(tx *bolt.Tx) error {
		if err := putMessageTx(tx, rec, s.now().UTC()); err != nil {
			return err
		}
		if err := putTraceTx(tx, t); err != nil {
			return err
		}
		if withUsage {
			return addUsageTx(tx, day, tokensIn, tokensOut, t)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("put outcome %s: %w", rec.MessageKey, err)
	}
	return nil
}

func putMessageTx(tx *bolt.Tx, rec *MessageRecord, now time.Time) error {
	var old MessageRecord
	switch err := getJSON(tx.Bucket(bMessages), msgKey(rec.MessageKey), &old); {
	case err == nil:
		return replaceMessageTx(tx, rec, &old, now)
	case errors.Is(err, ErrNotFound):
		return replaceMessageTx(tx, rec, nil, now)
	default:
		return err
	}
}

// replaceMessageTx is putMessageTx once the record stored under rec's key
// has been read: old, or nil when there is none.
func replaceMessageTx(tx *bolt.Tx, rec, old *MessageRecord, now time.Time) error {
	if why := unsafeKeyReason(rec.MessageID); why != "" && !slices.Contains(rec.Problems, why) {
		rec.Problems = append(rec.Problems, why)
	}
	mb := tx.Bucket(bMessages)
	key := msgKey(rec.MessageKey)
	if old != nil {
		if err := removeMessageIndexes(tx, key, old); err != nil {
			return err
		}
		if err := addStateCount(tx, old.State, -1); err != nil {
			return err
		}
		rec.CreatedAt = old.CreatedAt
	} else {
		if rec.CreatedAt.IsZero() {
			rec.CreatedAt = now
		}
		if err := putThreadInputTx(tx, key, rec); err != nil {
			return err
		}
	}
	rec.UpdatedAt = now
	if err := putJSON(mb, key, rec); err != nil {
		return err
	}
	if err := addStateCount(tx, rec.State, 1); err != nil {
		return err
	}
	return addMessageIndexes(tx, key, rec)
}

// GetMessage returns the record under k, or an error wrapping ErrNotFound.
func (s *Store) GetMessage(k MessageKey) (*MessageRecord, error) {
	var rec MessageRecord
	err := s.view(func(tx *bolt.Tx) error {
		return getJSON(tx.Bucket(bMessages), msgKey(k), &rec)
	})
	if err != nil {
		return nil, fmt.Errorf("get message %s: %w", k, err)
	}
	return &rec, nil
}

// FindByMessageID returns every record of the account whose Message-ID
// matches id, compared case-insensitively and without angle brackets (the
// same message may sit in several mailboxes). account "" searches every
// account. No match is an empty slice, not an error.
func (s *Store) FindByMessageID(account, messageID string) ([]*MessageRecord, error) {
	if mail.IDKey(messageID) == "" {
		return nil, nil
	}
	prefix := append([]byte(idKey(messageID)), 0)
	if account != "" {
		prefix = append(append(prefix, account...), 0)
	}
	var out []*MessageRecord
	err := scan(s, bIdxMsgID, prefix, loadIndexed, func(r *MessageRecord) error {
		out = append(out, r)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("find message-id %q: %w", messageID, err)
	}
	return out, nil
}

// loadIndexed loads the message record an index entry points to.
func loadIndexed(tx *bolt.Tx, _, v []byte) (*MessageRecord, bool, error) {
	var r MessageRecord
	err := getJSON(tx.Bucket(bMessages), v, &r)
	if errors.Is(err, ErrNotFound) {
		return nil, false, nil // a dangling entry cannot happen in one tx, but never fail a read on it
	}
	return &r, err == nil, err
}

// MessageFilter selects messages for ListMessages. Zero fields match
// everything.
type MessageFilter struct {
	Account  string
	Mailbox  string // only with Account for an efficient range scan
	State    State
	ThreadID string
	// Limit stops after this many matches; 0 means no limit.
	Limit int
	// Since keeps messages whose Date (or CreatedAt when Date is zero) is
	// not before it.
	Since time.Time
}

func (f MessageFilter) match(r *MessageRecord) bool {
	if f.Account != "" && r.Account != f.Account {
		return false
	}
	if f.Mailbox != "" && r.Mailbox != f.Mailbox {
		return false
	}
	if f.State != "" && r.State != f.State {
		return false
	}
	if f.ThreadID != "" && r.ThreadID != f.ThreadID {
		return false
	}
	if !f.Since.IsZero() {
		d := r.Date
		if d.IsZero() {
			d = r.CreatedAt
		}
		if d.Before(f.Since) {
			return false
		}
	}
	return true
}

var errStop = errors.New("stop")

// ListMessages calls fn for each message matching f. Messages of one
// mailbox come in UID order. The walk reads in batches of short read
// transactions and calls fn outside them, so fn may call other Store
// methods; it is not one snapshot. An error from fn stops the walk and is
// returned.
func (s *Store) ListMessages(f MessageFilter, fn func(*MessageRecord) error) error {
	var (
		bucket []byte
		prefix []byte
		load   = loadIndexed
	)
	switch {
	case f.ThreadID != "":
		bucket, prefix = bIdxThread, append([]byte(threadKey(f.ThreadID)), 0)
	case f.State != "":
		bucket, prefix = bIdxState, append([]byte(f.State), 0)
	default:
		bucket = bMessages
		if f.Account != "" {
			prefix = append([]byte(f.Account), 0)
			if f.Mailbox != "" {
				prefix = append(append(prefix, f.Mailbox...), 0)
			}
		}
		load = func(_ *bolt.Tx, _, v []byte) (*MessageRecord, bool, error) {
			var r MessageRecord
			if err := json.Unmarshal(v, &r); err != nil {
				return nil, false, err
			}
			return &r, true, nil
		}
	}
	n := 0
	m := f
	if bucket != nil && bytes.Equal(bucket, bIdxThread) {
		// The index already selects the thread; the stored id may differ
		// from the key's text (JSON cannot keep invalid UTF-8).
		m.ThreadID = ""
	}
	err := scan(s, bucket, prefix, func(tx *bolt.Tx, k, v []byte) (*MessageRecord, bool, error) {
		r, ok, err := load(tx, k, v)
		if err != nil || !ok {
			return nil, false, err
		}
		return r, m.match(r), nil
	}, func(r *MessageRecord) error {
		if f.Limit > 0 && n >= f.Limit {
			return errStop
		}
		n++
		return fn(r)
	})
	if errors.Is(err, errStop) {
		return nil
	}
	return err
}

// ThreadMessages returns the messages of a thread ordered by Date (oldest
// first, newest last); with limit > 0, only the newest limit of them, and
// only those are decoded (threadNewest).
func (s *Store) ThreadMessages(threadID string, limit int) ([]*MessageRecord, error) {
	if limit > 0 {
		out, err := s.threadNewest(threadID, limit)
		if err != nil {
			return nil, fmt.Errorf("thread %q: %w", threadID, err)
		}
		return out, nil
	}
	var out []*MessageRecord
	err := s.ListMessages(MessageFilter{ThreadID: threadID}, func(r *MessageRecord) error {
		out = append(out, r)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("thread %q: %w", threadID, err)
	}
	slices.SortStableFunc(out, func(a, b *MessageRecord) int {
		if c := sortTime(a).Compare(sortTime(b)); c != 0 {
			return c
		}
		return bytes.Compare(msgKey(a.MessageKey), msgKey(b.MessageKey))
	})
	if limit > 0 && len(out) > limit {
		out = out[len(out)-limit:]
	}
	return out, nil
}

// threadNewest is ThreadMessages with a limit, in one read transaction:
// each record of the thread is placed by its sort time (Date, or CreatedAt
// when it has none), skimmed from its JSON (sortTimeOf), and its key, and
// only the newest limit are decoded. A long thread (a list's, years of
// one correspondence) costs a skim per message, not a decode (the
// pipeline asks for the newest 50 of each message's thread). A record
// whose dates cannot be read is an error, as before; one outside the
// newest limit that is damaged otherwise is not decoded, so no longer one.
func (s *Store) threadNewest(threadID string, limit int) ([]*MessageRecord, error) {
	type entry struct {
		key []byte
		at  time.Time
	}
	var out []*MessageRecord
	err := s.view(func(tx *bolt.Tx) error {
		out = out[:0]
		mb := tx.Bucket(bMessages)
		prefix := append([]byte(threadKey(threadID)), 0)
		var ents []entry
		c := tx.Bucket(bIdxThread).Cursor()
		for k, key := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, key = c.Next() {
			raw := mb.Get(key)
			if raw == nil {
				continue // a dangling entry cannot happen in one tx; skipped, as loadIndexed does
			}
			at, err := sortTimeOf(raw)
			if err != nil {
				return fmt.Errorf("decode %q: %w", key, err)
			}
			ents = append(ents, entry{key: key, at: at})
		}
		slices.SortFunc(ents, func(a, b entry) int {
			if c := a.at.Compare(b.at); c != 0 {
				return c
			}
			return bytes.Compare(a.key, b.key)
		})
		for _, e := range ents[max(len(ents)-limit, 0):] {
			var r MessageRecord
			if err := getJSON(mb, e.key, &r); err != nil {
				return err
			}
			out = append(out, &r)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	// In ThreadMessages' order, by the records' own keys (their stored
	// keys, in a sound file).
	slices.SortStableFunc(out, func(a, b *MessageRecord) int {
		if c := sortTime(a).Compare(sortTime(b)); c != 0 {
			return c
		}
		return bytes.Compare(msgKey(a.MessageKey), msgKey(b.MessageKey))
	})
	return out, nil
}

func sortTime(r *MessageRecord) time.Time {
	if r.Date.IsZero() {
		return r.CreatedAt
	}
	return r.Date
}

// RelabelThread moves every message (and queue item) of thread from into
// thread to, in one transaction: the thread merge when a late message
// links two threads.
func (s *Store) RelabelThread(from, to string) error {
	if from == "" || to == "" {
		return errors.New("relabel thread: empty thread id")
	}
	if from == to {
		return nil
	}
	err := s.updateTx(func(tx *bolt.Tx) error {
		now := s.now().UTC()
		if err := relabelMessagesTx(tx, from, to, now); err != nil {
			return err
		}
		return relabelQueueTx(tx, from, to, now)
	})
	if err != nil {
		return fmt.Errorf("relabel thread %q as %q: %w", from, to, err)
	}
	return nil
}

// relabelMessagesTx moves every message of thread from into thread to.
func relabelMessagesTx(tx *bolt.Tx, from, to string, now time.Time) error {
	var keys [][]byte
	prefix := append([]byte(threadKey(from)), 0)
	c := tx.Bucket(bIdxThread).Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		keys = append(keys, append([]byte(nil), v...))
	}
	for _, key := range keys {
		var r MessageRecord
		if err := getJSON(tx.Bucket(bMessages), key, &r); err != nil {
			if errors.Is(err, ErrNotFound) {
				continue
			}
			return err
		}
		old := r
		r.ThreadID = to
		var err error
		if bytes.Equal(msgKey(r.MessageKey), key) {
			err = replaceMessageTx(tx, &r, &old, now) // the record under its key: just read
		} else {
			err = putMessageTx(tx, &r, now)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// relabelQueueTx moves every queue item of thread from into thread to.
func relabelQueueTx(tx *bolt.Tx, from, to string, now time.Time) error {
	items, err := threadQueueTx(tx, from)
	if err != nil {
		return err
	}
	for _, old := range items {
		q := *old
		q.ThreadID = to
		q.UpdatedAt = now
		if err := putQueueTx(tx, &q, old); err != nil {
			return err
		}
	}
	return nil
}

// threadQueueTx returns the queue items of thread.
func threadQueueTx(tx *bolt.Tx, thread string) ([]*QueueItem, error) {
	var items []*QueueItem
	err := tx.Bucket(bQueue).ForEach(func(k, v []byte) error {
		var q QueueItem
		if err := json.Unmarshal(v, &q); err != nil {
			return fmt.Errorf("decode queue item %q: %w", k, err)
		}
		if q.ThreadID == thread {
			items = append(items, &q)
		}
		return nil
	})
	return items, err
}

// CountByState counts messages per state, from the state index without
// decoding records.
func (s *Store) CountByState() (map[State]int, error) {
	counts := map[State]int{}
	err := s.view(func(tx *bolt.Tx) error {
		// Counters kept by putMessageTx: reading them touches one page,
		// where scanning the state index would touch (and map into
		// memory) a page per few hundred messages.
		b := tx.Bucket(bStateCount)
		if b == nil { // a read-only open of a database older than the counters
			return tx.Bucket(bIdxState).ForEach(func(k, _ []byte) error {
				if i := bytes.IndexByte(k, 0); i >= 0 {
					counts[State(k[:i])]++
				}
				return nil
			})
		}
		return b.ForEach(func(k, v []byte) error {
			if n := int(binary.BigEndian.Uint64(v)); n > 0 {
				counts[State(k)] = n
			}
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("count by state: %w", err)
	}
	return counts, nil
}

func addStateCount(tx *bolt.Tx, st State, delta int64) error {
	b := tx.Bucket(bStateCount)
	var n int64
	if v := b.Get([]byte(st)); len(v) == 8 {
		n = int64(binary.BigEndian.Uint64(v))
	}
	n = max(n+delta, 0)
	v := make([]byte, 8)
	binary.BigEndian.PutUint64(v, uint64(n))
	return b.Put([]byte(st), v)
}

// rebuildStateCounts fills the counters from the state index, for a
// database written before they existed.
func rebuildStateCounts(tx *bolt.Tx) error {
	sc := tx.Bucket(bStateCount)
	if k, _ := sc.Cursor().First(); k != nil {
		return nil
	}
	counts := map[string]int64{}
	err := tx.Bucket(bIdxState).ForEach(func(k, _ []byte) error {
		if i := bytes.IndexByte(k, 0); i >= 0 {
			counts[string(k[:i])]++
		}
		return nil
	})
	if err != nil {
		return err
	}
	for st, n := range counts {
		if err := addStateCount(tx, State(st), n); err != nil {
			return err
		}
	}
	return nil
}

func (r *MessageRecord) check() error {
	if err := r.MessageKey.check(); err != nil {
		return err
	}
	// The Message-ID and thread id come from the mail: keys made from them
	// go through keyPart, so they never stop a message from being stored.
	return checkNoNUL("state", string(r.State))
}

func checkNoNUL(what, v string) error {
	if bytes.IndexByte([]byte(v), 0) >= 0 {
		return fmt.Errorf("%s %q contains a NUL byte", what, v)
	}
	return nil
}

// threadInput is the compact copy of a message's threading headers, kept in
// creation order so that a watcher can rebuild its threader from recent
// mail without reading (and mapping into memory) every full record.
type threadInput struct {
	ID   string    `json:"i"`
	IRT  []string  `json:"p,omitempty"`
	Refs []string  `json:"r,omitempty"`
	Subj string    `json:"s,omitempty"`
	Date time.Time `json:"d,omitzero"`
}

func putThreadInputTx(tx *bolt.Tx, key []byte, r *MessageRecord) error {
	if r.MessageID == "" {
		return nil
	}
	k := make([]byte, 8, 8+len(key))
	binary.BigEndian.PutUint64(k, uint64(r.CreatedAt.UnixNano()))
	k = append(k, key...)
	return putJSON(tx.Bucket(bThreadIn), k, threadInput{ID: r.MessageID, IRT: r.InReplyTo, Refs: r.References, Subj: r.Subject, Date: r.Date})
}

// ThreadInputs calls fn with the threading headers of the messages first
// stored at or after since, and (when limit > 0) only the newest limit of
// those, oldest first. It reads a compact index, not the message records.
func (s *Store) ThreadInputs(since time.Time, limit int, fn func(mail.ThreadInput) error) error {
	start := make([]byte, 8)
	if !since.IsZero() && since.UnixNano() > 0 {
		binary.BigEndian.PutUint64(start, uint64(since.UnixNano()))
	}
	if limit > 0 {
		// Walk back from the newest entry: only the pages of the entries
		// wanted are read.
		err := s.view(func(tx *bolt.Tx) error {
			c := tx.Bucket(bThreadIn).Cursor()
			k, _ := c.Last()
			for i := 1; k != nil && i < limit; i++ {
				k, _ = c.Prev()
			}
			if k != nil && bytes.Compare(k, start) > 0 {
				start = append([]byte(nil), k...)
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("thread inputs: %w", err)
		}
	}
	const batch = 1024
	for {
		var got []mail.ThreadInput
		var next []byte
		err := s.view(func(tx *bolt.Tx) error {
			c := tx.Bucket(bThreadIn).Cursor()
			for k, v := c.Seek(start); k != nil; k, v = c.Next() {
				if len(got) == batch {
					next = append([]byte(nil), k...)
					return nil
				}
				var ti threadInput
				if err := json.Unmarshal(v, &ti); err != nil {
					return err
				}
				got = append(got, mail.ThreadInput{MessageID: ti.ID, InReplyTo: ti.IRT, References: ti.Refs, Subject: ti.Subj, Date: ti.Date})
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("thread inputs: %w", err)
		}
		for _, in := range got {
			if err := fn(in); err != nil {
				return err
			}
		}
		if next == nil {
			return nil
		}
		start = next
	}
}
