package store

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mailagent/mailagent/internal/mail"
	bolt "go.etcd.io/bbolt"
)

// Messages are also indexed by the time they were first stored (their
// arrival in mailagent), so that a search reads one page, newest first,
// and a cursor stays valid while messages come and go (CreatedAt never
// changes once stored):
//
//	idx_msg_created  be64(CreatedAt) \0 msgkey → what a search filters on
//
// The value (msgIdxVal) carries the state, decision, triage flag, Date,
// UpdatedAt, intents and the lowercased subject and addresses, so that a
// page passes over messages that do not match without decoding them; text
// longer than maxIdxText is left out and flagged, and such a message is
// decoded when a text filter asks. addMessageIndexes and
// removeMessageIndexes keep it with the other message indexes, in the
// transaction of every write; Open fills it once for a file written
// before it existed (meta key idx_msg_created_built).
var (
	bIdxMsgCreated = []byte("idx_msg_created")
	metaMsgCreated = []byte("idx_msg_created_built")
)

func init() { allBuckets = append(allBuckets, bIdxMsgCreated) }

// Bounds of one MessagePage call.
const (
	// DefaultMessagePageLimit is the page size when the query gives none.
	DefaultMessagePageLimit = 50
	// MaxMessagePageLimit is the largest page.
	MaxMessagePageLimit = 1000
	// DefaultMessagePageBytes bounds the stored size of one page's records.
	DefaultMessagePageBytes = 1 << 20
	// DefaultMessagePageScan bounds the index entries one page examines.
	DefaultMessagePageScan = 50000
	// maxIdxText bounds the subject, addresses and intents an index entry
	// carries; longer text is left out (flagLongText).
	maxIdxText = 1024
)

const (
	msgIdxVersion = 1
	flagTriage    = 1 << 0 // TriageOnly
	flagLongText  = 1 << 1 // the text fields are left out: decode the record
)

// MessageCursor is a position in the newest-first order of messages by
// the time they were stored (CreatedAt), then by key, both descending. The
// zero cursor is the start. A cursor with Key names the message a page
// ended with; one without Key stands before every message stored at
// CreatedAt (a page cut by its scan budget where the last message looked
// at is one the query excludes by account: its key is never handed out).
// It is a key, not an offset: messages added or removed meanwhile never
// shift what follows it.
type MessageCursor struct {
	CreatedAt time.Time   `json:"created_at"`
	Key       *MessageKey `json:"key,omitempty"`
}

// IsZero reports whether c is the start.
func (c MessageCursor) IsZero() bool { return c.Key == nil && c.CreatedAt.IsZero() }

// MessageCursorOf is the cursor just after r.
func MessageCursorOf(r *MessageRecord) MessageCursor {
	k := r.MessageKey
	return MessageCursor{CreatedAt: r.CreatedAt, Key: &k}
}

func (c MessageCursor) indexKey() []byte {
	k := binary.BigEndian.AppendUint64(nil, timeKey(c.CreatedAt))
	k = append(k, 0)
	if c.Key != nil {
		k = append(k, msgKey(*c.Key)...)
	}
	return k
}

// MessagePageQuery selects one page of messages. Zero filter fields match
// everything; every field given narrows.
type MessagePageQuery struct {
	Account string `json:"account,omitempty"`
	// Accounts, when not empty, are the only accounts matched: the others
	// are never returned and never named by a cursor.
	Accounts []string `json:"accounts,omitempty"`
	State    State    `json:"state,omitempty"`
	// Decisions, when not empty, are the decisions matched.
	Decisions []string `json:"decisions,omitempty"`
	// Acted leaves out records written by triage (TriageOnly).
	Acted bool `json:"acted,omitempty"`
	// Since and Until bound the message's Date (CreatedAt when it has
	// none): Since included, Until excluded.
	Since time.Time `json:"since,omitzero"`
	Until time.Time `json:"until,omitzero"`
	// UpdatedSince keeps records last written at or after it (for a
	// message in state done: when it was decided).
	UpdatedSince time.Time `json:"updated_since,omitzero"`
	// Intent is one of the intents the model gave.
	Intent string `json:"intent,omitempty"`
	// Correspondent is part of an address (From, the authenticated
	// sender, To, Cc, Reply-To), compared case-insensitively.
	Correspondent string `json:"correspondent,omitempty"`
	// Subject words must all appear in the subject, case-insensitively.
	Subject []string `json:"subject,omitempty"`
	// After is where the previous page ended (zero: from the newest).
	After MessageCursor `json:"after"`
	// Limit is the most records returned: 0 means DefaultMessagePageLimit,
	// more than MaxMessagePageLimit is MaxMessagePageLimit.
	Limit int `json:"limit,omitempty"`
	// MaxBytes bounds the summed stored size of the records returned (one
	// is always returned when one matches); 0 means
	// DefaultMessagePageBytes.
	MaxBytes int `json:"max_bytes,omitempty"`
	// MaxScan bounds the index entries examined; 0 means
	// DefaultMessagePageScan. When it is reached the page is Partial: it
	// may be short, or empty, with a Next to go on from.
	MaxScan int `json:"max_scan,omitempty"`
}

// MessagePage is one page of messages, newest stored first.
type MessagePage struct {
	Messages []MessageRecord `json:"messages"`
	// Next is where the following page starts; zero when nothing more
	// matches.
	Next MessageCursor `json:"next"`
	// Partial is set when the scan budget (MaxScan) ran out: the page may
	// hold fewer records than the limit, or none, and more may match
	// after Next.
	Partial bool `json:"partial"`
	// Examined counts the index entries looked at and Loaded the records
	// decoded: what the page cost.
	Examined int `json:"examined"`
	Loaded   int `json:"loaded"`
	// Indexed is false when the file has no message index (a read-only
	// open of a file written before it existed): the page was cut from a
	// full read.
	Indexed bool `json:"indexed"`
}

// msgQuery is a MessagePageQuery made ready to match.
type msgQuery struct {
	MessagePageQuery
	corr                []byte
	words               [][]byte
	since, until, upd   uint64
	hasSince, hasUntil  bool
	hasUpd, textFilters bool
}

func prepare(q MessagePageQuery) *msgQuery {
	m := &msgQuery{MessagePageQuery: q}
	m.corr = []byte(mail.AddrKey(q.Correspondent))
	for _, w := range q.Subject {
		for _, f := range strings.Fields(strings.ToLower(w)) {
			m.words = append(m.words, []byte(f))
		}
	}
	m.since, m.hasSince = timeKey(q.Since), !q.Since.IsZero()
	m.until, m.hasUntil = timeKey(q.Until), !q.Until.IsZero()
	m.upd, m.hasUpd = timeKey(q.UpdatedSince), !q.UpdatedSince.IsZero()
	m.textFilters = q.Intent != "" || len(m.corr) > 0 || len(m.words) > 0
	return m
}

// visible reports whether the query may see (and name) account's mail.
func (m *msgQuery) visible(account []byte) bool {
	return (m.Account == "" || string(account) == m.Account) &&
		(len(m.Accounts) == 0 || slices.Contains(m.Accounts, string(account)))
}

// idxEntry is a decoded index value; its slices point into the value.
type idxEntry struct {
	flags           byte
	date, updated   uint64
	created         uint64
	state, decision []byte
	intents, emails [][]byte
	subject         []byte
}

func appendStr(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// msgIdxVal is r's value in the message creation index.
func msgIdxVal(r *MessageRecord) []byte {
	var flags byte
	if r.TriageOnly {
		flags |= flagTriage
	}
	intents, emails := intentsOf(r), emailsOf(r)
	subject := strings.ToLower(r.Subject)
	n := len(subject)
	for _, s := range slices.Concat(intents, emails) {
		n += len(s) + 1
	}
	if n > maxIdxText {
		flags |= flagLongText
		intents, emails, subject = nil, nil, ""
	}
	b := []byte{msgIdxVersion, flags}
	b = binary.BigEndian.AppendUint64(b, timeKey(r.Date))
	b = binary.BigEndian.AppendUint64(b, timeKey(r.UpdatedAt))
	b = appendStr(b, string(r.State))
	b = appendStr(b, r.Decision)
	b = binary.AppendUvarint(b, uint64(len(intents)))
	for _, s := range intents {
		b = appendStr(b, s)
	}
	b = appendStr(b, subject)
	b = binary.AppendUvarint(b, uint64(len(emails)))
	for _, s := range emails {
		b = appendStr(b, s)
	}
	return b
}

// decode reads v into e, reusing e's slices; false when v is not a value
// this code wrote.
func (e *idxEntry) decode(v []byte) bool {
	if len(v) < 18 || v[0] != msgIdxVersion {
		return false
	}
	e.flags = v[1]
	e.date, e.updated = binary.BigEndian.Uint64(v[2:]), binary.BigEndian.Uint64(v[10:])
	v = v[18:]
	str := func() ([]byte, bool) {
		n, w := binary.Uvarint(v)
		if w <= 0 || n > uint64(len(v)-w) {
			return nil, false
		}
		s := v[w : w+int(n)]
		v = v[w+int(n):]
		return s, true
	}
	list := func(dst [][]byte) ([][]byte, bool) {
		dst = dst[:0]
		n, w := binary.Uvarint(v)
		if w <= 0 || n > uint64(len(v)) {
			return dst, false
		}
		v = v[w:]
		for range n {
			s, ok := str()
			if !ok {
				return dst, false
			}
			dst = append(dst, s)
		}
		return dst, true
	}
	var ok1, ok2, ok3, ok4, ok5 bool
	if e.state, ok1 = str(); !ok1 {
		return false
	}
	if e.decision, ok2 = str(); !ok2 {
		return false
	}
	if e.intents, ok3 = list(e.intents); !ok3 {
		return false
	}
	if e.subject, ok4 = str(); !ok4 {
		return false
	}
	e.emails, ok5 = list(e.emails)
	return ok5
}

// matchIdx applies every filter the entry can answer; text filters of an
// entry without its text are left to matchRecord.
func (m *msgQuery) matchIdx(e *idxEntry) bool {
	if m.State != "" && string(e.state) != string(m.State) {
		return false
	}
	if len(m.Decisions) > 0 && !slices.Contains(m.Decisions, string(e.decision)) {
		return false
	}
	if m.Acted && e.flags&flagTriage != 0 {
		return false
	}
	at := e.date
	if at == 0 {
		at = e.created
	}
	if (m.hasSince && at < m.since) || (m.hasUntil && at >= m.until) || (m.hasUpd && e.updated < m.upd) {
		return false
	}
	if e.flags&flagLongText != 0 {
		return true
	}
	if m.Intent != "" && !slices.ContainsFunc(e.intents, func(s []byte) bool { return string(s) == m.Intent }) {
		return false
	}
	for _, w := range m.words {
		if !bytes.Contains(e.subject, w) {
			return false
		}
	}
	return len(m.corr) == 0 || slices.ContainsFunc(e.emails, func(s []byte) bool { return bytes.Contains(s, m.corr) })
}

// matchRecord applies every filter to a decoded record, the same way
// matchIdx does to an index entry, with the full text.
func (m *msgQuery) matchRecord(r *MessageRecord) bool {
	var e idxEntry
	if !e.decode(msgIdxVal(r)) {
		return false
	}
	e.created = timeKey(r.CreatedAt)
	if e.flags&flagLongText != 0 {
		e.flags &^= flagLongText
		e.subject = []byte(strings.ToLower(r.Subject))
		for _, s := range intentsOf(r) {
			e.intents = append(e.intents, []byte(s))
		}
		for _, s := range emailsOf(r) {
			e.emails = append(e.emails, []byte(s))
		}
	}
	return m.matchIdx(&e)
}

func intentsOf(r *MessageRecord) []string {
	if r.Classification == nil {
		return nil
	}
	return r.Classification.Intents
}

// emailsOf are the addresses a correspondent filter looks at, by
// mail.AddrKey: From, the authenticated sender, To, Cc and Reply-To.
func emailsOf(r *MessageRecord) []string {
	out := []string{mail.AddrKey(r.From.Email)}
	if id := r.SenderAuth.Identity(); id != "" {
		out = append(out, mail.AddrKey(id))
	}
	for _, a := range slices.Concat(r.To, r.Cc, r.ReplyTo) {
		out = append(out, mail.AddrKey(a.Email))
	}
	return out
}

// msgCreatedKey is r's key in the message creation index.
func msgCreatedKey(key []byte, r *MessageRecord) []byte {
	k := binary.BigEndian.AppendUint64(make([]byte, 0, 9+len(key)), timeKey(r.CreatedAt))
	k = append(k, 0)
	return append(k, key...)
}

// accountOfIdx is the account part of a creation-index key.
func accountOfIdx(k []byte) []byte {
	if len(k) < 9 {
		return nil
	}
	a := k[9:]
	if i := bytes.IndexByte(a, 0); i >= 0 {
		return a[:i]
	}
	return a
}

// buildMsgCreatedIndex fills the message creation index from the records
// once (a file written before it existed), in the caller's transaction.
func buildMsgCreatedIndex(tx *bolt.Tx) error {
	meta, b := tx.Bucket(bMeta), tx.Bucket(bIdxMsgCreated)
	if meta == nil || b == nil || meta.Get(metaMsgCreated) != nil {
		return nil
	}
	err := tx.Bucket(bMessages).ForEach(func(k, v []byte) error {
		var r MessageRecord
		if json.Unmarshal(v, &r) != nil || !bytes.Equal(msgKey(r.MessageKey), k) {
			return nil // doctor reports it; a search skips it
		}
		return b.Put(msgCreatedKey(k, &r), msgIdxVal(&r))
	})
	if err != nil {
		return fmt.Errorf("build the message creation index: %w", err)
	}
	return meta.Put(metaMsgCreated, []byte{1})
}

// MessagePage returns one page of the messages matching q, newest stored
// first (CreatedAt, then key, both descending), starting after q.After.
// Through the creation index it examines at most q.MaxScan index entries
// (more only to finish a run of entries stored at the same instant that
// the query cannot see, so that Next never names one) and decodes only the
// records it returns, plus those whose text a text filter needs when the
// index entry does not carry it. One read transaction.
func (s *Store) MessagePage(q MessagePageQuery) (*MessagePage, error) {
	limit := q.Limit
	switch {
	case limit <= 0:
		limit = DefaultMessagePageLimit
	case limit > MaxMessagePageLimit:
		limit = MaxMessagePageLimit
	}
	maxBytes := cmp.Or(max(q.MaxBytes, 0), DefaultMessagePageBytes)
	maxScan := cmp.Or(max(q.MaxScan, 0), DefaultMessagePageScan)
	if q.After.Key != nil {
		if err := q.After.Key.check(); err != nil {
			return nil, fmt.Errorf("message page: cursor: %w", err)
		}
	}
	m := prepare(q)
	p := &MessagePage{Messages: []MessageRecord{}}
	var indexed bool
	err := s.view(func(tx *bolt.Tx) error {
		idx, meta := tx.Bucket(bIdxMsgCreated), tx.Bucket(bMeta)
		indexed = idx != nil && meta != nil && meta.Get(metaMsgCreated) != nil
		if !indexed {
			return nil
		}
		p.Indexed = true
		return msgPageTx(tx, idx, m, limit, maxBytes, maxScan, p)
	})
	if err == nil && !indexed {
		err = s.messagePageScan(m, limit, maxBytes, p)
	}
	if err != nil {
		return nil, fmt.Errorf("message page: %w", err)
	}
	return p, nil
}

func msgPageTx(tx *bolt.Tx, idx *bolt.Bucket, m *msgQuery, limit, maxBytes, maxScan int, p *MessagePage) error {
	mb := tx.Bucket(bMessages)
	c := idx.Cursor()
	var k, v []byte
	if m.After.IsZero() {
		k, v = c.Last()
	} else if k, _ = c.Seek(m.After.indexKey()); k == nil {
		k, v = c.Last()
	} else {
		k, v = c.Prev()
	}
	size := 0
	var (
		last        []byte // the key of the last entry examined
		lastVisible bool
		e           idxEntry
	)
	cursorOf := func(r *MessageRecord) MessageCursor { return MessageCursorOf(r) }
	for ; k != nil; k, v = c.Prev() {
		if p.Examined >= maxScan {
			// Out of budget: go on from the last entry examined, or, when
			// the query may not see it, from before its instant (once
			// every entry of that instant is examined).
			switch {
			case lastVisible:
				p.Next, p.Partial = msgCursorOfKey(last), true
				return nil
			case !bytes.Equal(k[:min(8, len(k))], last[:min(8, len(last))]):
				p.Next, p.Partial = MessageCursor{CreatedAt: dueOf(last, nil)}, true
				return nil
			}
		}
		p.Examined++
		last = k
		acct := accountOfIdx(k)
		lastVisible = m.visible(acct)
		if !lastVisible || len(k) < 9 || !e.decode(v) {
			continue
		}
		e.created = binary.BigEndian.Uint64(k)
		if !m.matchIdx(&e) {
			continue
		}
		raw := mb.Get(k[9:])
		if raw == nil {
			continue // an entry without its record (cannot happen inside one transaction)
		}
		var r *MessageRecord
		if e.flags&flagLongText != 0 && m.textFilters {
			r = new(MessageRecord)
			if err := json.Unmarshal(raw, r); err != nil {
				return fmt.Errorf("decode message %q: %w", k[9:], err)
			}
			p.Loaded++
			if !m.matchRecord(r) {
				continue
			}
		}
		if len(p.Messages) == limit {
			// One more matches: there is a next page.
			p.Next = cursorOf(&p.Messages[len(p.Messages)-1])
			return nil
		}
		if len(p.Messages) > 0 && size+len(raw) > maxBytes {
			p.Next = cursorOf(&p.Messages[len(p.Messages)-1])
			return nil
		}
		if r == nil {
			r = new(MessageRecord)
			if err := json.Unmarshal(raw, r); err != nil {
				return fmt.Errorf("decode message %q: %w", k[9:], err)
			}
			p.Loaded++
		}
		size += len(raw)
		p.Messages = append(p.Messages, *r)
	}
	return nil
}

// msgCursorOfKey reads a creation-index key back into a cursor.
func msgCursorOfKey(k []byte) MessageCursor {
	if len(k) < 9 {
		return MessageCursor{}
	}
	c := MessageCursor{CreatedAt: dueOf(k, nil)}
	if key, ok := parseMsgKey(k[9:]); ok {
		c.Key = &key
	}
	return c
}

// parseMsgKey reads msgKey's bytes back: account \0 mailbox \0
// be32(uidvalidity) \0 be32(uid).
func parseMsgKey(b []byte) (MessageKey, bool) {
	if len(b) < 12 || b[len(b)-5] != 0 || b[len(b)-10] != 0 {
		return MessageKey{}, false
	}
	head := b[:len(b)-10]
	i := bytes.IndexByte(head, 0)
	if i <= 0 || i == len(head)-1 {
		return MessageKey{}, false
	}
	return MessageKey{Account: string(head[:i]), Mailbox: string(head[i+1:]),
		UIDValidity: binary.BigEndian.Uint32(b[len(b)-9:]), UID: binary.BigEndian.Uint32(b[len(b)-4:])}, true
}

// messagePageScan is MessagePage over a file without the creation index:
// every record is read; only the page (and one more) is kept, in the
// index's order. A record is placed by its key and CreatedAt alone, read
// first (createdAtOf: a skim over the JSON for that one field): a record
// of an account the query cannot see, not before the cursor, or after the
// page kept so far is passed over without being decoded in full (Loaded
// counts the records that were).
func (s *Store) messagePageScan(m *msgQuery, limit, maxBytes int, p *MessagePage) error {
	type kept struct {
		k   []byte
		r   MessageRecord
		raw int
	}
	var top []kept
	after := m.After.indexKey()
	err := s.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bMessages).ForEach(func(k, v []byte) error {
			p.Examined++
			// The key's account is the record's (checked below, after the
			// full decode): a record of another account is never returned.
			if i := bytes.IndexByte(k, 0); i < 0 || !m.visible(k[:i]) {
				return nil
			}
			created, err := createdAtOf(v)
			if err != nil {
				return nil // the full decode would fail too
			}
			ik := msgCreatedKey(k, &MessageRecord{CreatedAt: created})
			if !m.After.IsZero() && bytes.Compare(ik, after) >= 0 {
				return nil
			}
			i, _ := slices.BinarySearchFunc(top, ik, func(e kept, t []byte) int { return -bytes.Compare(e.k, t) })
			if i > limit {
				return nil
			}
			var r MessageRecord
			p.Loaded++
			if json.Unmarshal(v, &r) != nil || !bytes.Equal(msgKey(r.MessageKey), k) {
				return nil
			}
			if !m.visible([]byte(r.Account)) || !m.matchRecord(&r) {
				return nil
			}
			top = slices.Insert(top, i, kept{k: ik, r: r, raw: len(v)})
			if len(top) > limit+1 {
				top = top[:limit+1]
			}
			return nil
		})
	})
	if err != nil {
		return err
	}
	size := 0
	for i := range top {
		if len(p.Messages) == limit || (len(p.Messages) > 0 && size+top[i].raw > maxBytes) {
			p.Next = MessageCursorOf(&p.Messages[len(p.Messages)-1])
			return nil
		}
		size += top[i].raw
		p.Messages = append(p.Messages, top[i].r)
	}
	return nil
}

// Match reports whether r is one of the records q selects (its filters
// and accounts; not its cursor or bounds): what MessagePage applies, for a
// caller that reads records some other way.
func (q MessagePageQuery) Match(r *MessageRecord) bool {
	m := prepare(q)
	return m.visible([]byte(r.Account)) && m.matchRecord(r)
}

// Compare orders positions as a MessagePage walk meets them: negative
// when c comes first (stored later, or at the same instant with the
// greater key).
func (c MessageCursor) Compare(d MessageCursor) int {
	return -bytes.Compare(c.indexKey(), d.indexKey())
}
