package store

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
)

// The queue is also indexed by creation time, so that a listing reads one
// page, newest first, and a cursor stays valid while items come and go
// (a creation time never changes):
//
//	idx_queue_created  be64(CreatedAt) \0 id → status \0 kind \0 account
//
// The value carries what a listing filters on, so that items of other
// statuses, kinds or accounts are passed over without being decoded.
// putQueueTx keeps it; Open fills it once for a file written before it
// existed (meta key idx_queue_created_built).
var (
	bIdxQueueCreated = []byte("idx_queue_created")
	metaQueueCreated = []byte("idx_queue_created_built")
)

func init() { allBuckets = append(allBuckets, bIdxQueueCreated) }

// Bounds of one QueuePage call.
const (
	// DefaultQueuePageLimit is the page size when the query gives none.
	DefaultQueuePageLimit = 50
	// MaxQueuePageLimit is the largest page.
	MaxQueuePageLimit = 1000
	// DefaultQueuePageBytes bounds the stored size of one page's items.
	DefaultQueuePageBytes = 1 << 20
	// DefaultQueuePageScan bounds the index entries one page examines.
	DefaultQueuePageScan = 10000
)

// QueueCursor is a position in the queue's newest-first order: the
// creation time and id of the item a page ended with. The zero cursor is
// the start. It is a key, not an offset: items added or removed meanwhile
// never shift what follows it.
type QueueCursor struct {
	CreatedAt time.Time `json:"created_at"`
	ID        string    `json:"id"`
}

// IsZero reports whether c is the start.
func (c QueueCursor) IsZero() bool { return c.ID == "" && c.CreatedAt.IsZero() }

// CursorOf is the cursor just after q.
func CursorOf(q *QueueItem) QueueCursor { return QueueCursor{CreatedAt: q.CreatedAt, ID: q.ID} }

// QueuePageQuery selects one page of the queue. Zero filter fields match
// everything.
type QueuePageQuery struct {
	Status  string `json:"status,omitempty"`
	Kind    string `json:"kind,omitempty"`
	Account string `json:"account,omitempty"`
	// Accounts, when not empty, are the only accounts matched.
	Accounts []string `json:"accounts,omitempty"`
	// After is where the previous page ended (zero: from the newest).
	After QueueCursor `json:"after"`
	// Limit is the most items returned: 0 means DefaultQueuePageLimit,
	// more than MaxQueuePageLimit is MaxQueuePageLimit.
	Limit int `json:"limit,omitempty"`
	// MaxBytes bounds the summed stored size of the items returned (one
	// item is always returned when one matches); 0 means
	// DefaultQueuePageBytes.
	MaxBytes int `json:"max_bytes,omitempty"`
	// MaxScan bounds the index entries examined; 0 means
	// DefaultQueuePageScan. When it is reached the page may be short, or
	// empty, with a Next to go on from.
	MaxScan int `json:"max_scan,omitempty"`
}

func (q QueuePageQuery) match(status, kind, account string) bool {
	return (q.Status == "" || status == q.Status) && (q.Kind == "" || kind == q.Kind) &&
		(q.Account == "" || account == q.Account) && (len(q.Accounts) == 0 || slices.Contains(q.Accounts, account))
}

// QueuePage is one page of the queue, newest first.
type QueuePage struct {
	Items []QueueItem `json:"items"`
	// Next is where the following page starts; zero when nothing more
	// matches.
	Next QueueCursor `json:"next"`
	// Examined counts the index entries looked at and Loaded the records
	// decoded: what the page cost (Loaded never exceeds the items
	// returned).
	Examined int `json:"examined"`
	Loaded   int `json:"loaded"`
	// Indexed is false when the file has no creation index (a read-only
	// open of a file written before it existed): the page was cut from a
	// full read.
	Indexed bool `json:"indexed"`
}

func createdKey(t time.Time, id string) []byte {
	k := binary.BigEndian.AppendUint64(nil, timeKey(t))
	k = append(k, 0)
	return append(k, id...)
}

func createdVal(q *QueueItem) []byte {
	return []byte(q.Status + "\x00" + q.Kind + "\x00" + q.Account)
}

// indexCreatedTx moves q's creation-index entry from old's (nil: none).
func indexCreatedTx(tx *bolt.Tx, q, old *QueueItem) error {
	b := tx.Bucket(bIdxQueueCreated)
	if b == nil {
		return nil
	}
	if old != nil {
		if err := b.Delete(createdKey(old.CreatedAt, old.ID)); err != nil {
			return err
		}
	}
	if q == nil {
		return nil
	}
	return b.Put(createdKey(q.CreatedAt, q.ID), createdVal(q))
}

// buildQueueCreatedIndex fills the creation index from the queue once (a
// file written before it existed), in the caller's transaction.
func buildQueueCreatedIndex(tx *bolt.Tx) error {
	meta, b := tx.Bucket(bMeta), tx.Bucket(bIdxQueueCreated)
	if meta == nil || b == nil || meta.Get(metaQueueCreated) != nil {
		return nil
	}
	err := tx.Bucket(bQueue).ForEach(func(k, v []byte) error {
		var q QueueItem
		if err := json.Unmarshal(v, &q); err != nil {
			return nil // doctor reports it; a listing skips it
		}
		q.ID = string(k)
		return b.Put(createdKey(q.CreatedAt, q.ID), createdVal(&q))
	})
	if err != nil {
		return fmt.Errorf("build the queue creation index: %w", err)
	}
	return meta.Put(metaQueueCreated, []byte{1})
}

// QueuePage returns one page of the queue matching q, newest first
// (creation time, then id, both descending: the order of a full listing
// sorted so), starting after q.After. Through the creation index it
// examines at most q.MaxScan index entries and decodes only the items it
// returns; one more matching entry is looked for (not loaded) to know
// whether Next is set. One read transaction.
func (s *Store) QueuePage(q QueuePageQuery) (*QueuePage, error) {
	limit := q.Limit
	switch {
	case limit <= 0:
		limit = DefaultQueuePageLimit
	case limit > MaxQueuePageLimit:
		limit = MaxQueuePageLimit
	}
	maxBytes := cmp.Or(max(q.MaxBytes, 0), DefaultQueuePageBytes)
	maxScan := cmp.Or(max(q.MaxScan, 0), DefaultQueuePageScan)
	p := &QueuePage{Items: []QueueItem{}}
	var indexed bool
	err := s.view(func(tx *bolt.Tx) error {
		idx, meta := tx.Bucket(bIdxQueueCreated), tx.Bucket(bMeta)
		indexed = idx != nil && meta != nil && meta.Get(metaQueueCreated) != nil
		if !indexed {
			return nil
		}
		p.Indexed = true
		return pageTx(tx, idx, q, limit, maxBytes, maxScan, p)
	})
	if err == nil && !indexed {
		err = s.queuePageScan(q, limit, maxBytes, p)
	}
	if err != nil {
		return nil, fmt.Errorf("queue page: %w", err)
	}
	return p, nil
}

func pageTx(tx *bolt.Tx, idx *bolt.Bucket, q QueuePageQuery, limit, maxBytes, maxScan int, p *QueuePage) error {
	qb := tx.Bucket(bQueue)
	c := idx.Cursor()
	var k, v []byte
	if q.After.IsZero() {
		k, v = c.Last()
	} else if k, _ = c.Seek(createdKey(q.After.CreatedAt, q.After.ID)); k == nil {
		k, v = c.Last()
	} else {
		k, v = c.Prev()
	}
	size := 0
	var last []byte // the key of the last entry examined
	for ; k != nil; k, v = c.Prev() {
		if p.Examined == maxScan {
			// Out of budget: go on from the last entry examined.
			p.Next = cursorOfKey(last)
			return nil
		}
		p.Examined++
		last = k
		if len(k) < 9 {
			continue
		}
		f := strings.SplitN(string(v), "\x00", 3)
		if len(f) != 3 || !q.match(f[0], f[1], f[2]) {
			continue
		}
		if len(p.Items) == limit {
			// One more matches: there is a next page.
			p.Next = CursorOf(&p.Items[len(p.Items)-1])
			return nil
		}
		raw := qb.Get(k[9:])
		if raw == nil {
			continue // an entry without its item (cannot happen inside one transaction)
		}
		if len(p.Items) > 0 && size+len(raw) > maxBytes {
			p.Next = CursorOf(&p.Items[len(p.Items)-1])
			return nil
		}
		var item QueueItem
		if err := json.Unmarshal(raw, &item); err != nil {
			return fmt.Errorf("decode queue item %q: %w", k[9:], err)
		}
		p.Loaded++
		size += len(raw)
		p.Items = append(p.Items, item)
	}
	return nil
}

// cursorOfKey reads a creation-index key back into a cursor.
func cursorOfKey(k []byte) QueueCursor {
	if len(k) < 9 {
		return QueueCursor{}
	}
	return QueueCursor{CreatedAt: dueOf(k, nil), ID: string(k[9:])}
}

// queuePageScan is QueuePage over a file without the creation index: every
// item is read and sorted, then the page is cut after q.After.
func (s *Store) queuePageScan(q QueuePageQuery, limit, maxBytes int, p *QueuePage) error {
	var all []QueueItem
	err := s.ListQueue(q.Status, func(it *QueueItem) error {
		p.Examined++
		if q.match(it.Status, it.Kind, it.Account) {
			all = append(all, *it)
		}
		return nil
	})
	if err != nil {
		return err
	}
	slices.SortFunc(all, func(a, b QueueItem) int { return compareCreatedDesc(CursorOf(&a), CursorOf(&b)) })
	i := 0
	if !q.After.IsZero() {
		i, _ = slices.BinarySearchFunc(all, q.After, func(it QueueItem, c QueueCursor) int {
			return compareCreatedDesc(CursorOf(&it), c)
		})
		for i < len(all) && compareCreatedDesc(CursorOf(&all[i]), q.After) == 0 {
			i++
		}
	}
	size := 0
	for ; i < len(all); i++ {
		raw, err := json.Marshal(&all[i])
		if err != nil {
			return err
		}
		if len(p.Items) == limit || (len(p.Items) > 0 && size+len(raw) > maxBytes) {
			p.Next = CursorOf(&p.Items[len(p.Items)-1])
			return nil
		}
		size += len(raw)
		p.Loaded++
		p.Items = append(p.Items, all[i])
	}
	return nil
}

// compareCreatedDesc orders cursors as the creation index read backwards
// does: later creation first, then the greater id.
func compareCreatedDesc(a, b QueueCursor) int {
	return -bytes.Compare(createdKey(a.CreatedAt, a.ID), createdKey(b.CreatedAt, b.ID))
}

// EachQueueItem calls fn for every queue item matching q's filter, newest
// first, from q.After on: one page (q.Limit items, default 256; one read
// transaction) at a time through the same index as QueuePage, so that a
// long walk never holds a transaction. A file without the index (a
// read-only open of an older file) is read whole once. fn runs outside
// any transaction; its error stops the walk.
func (s *Store) EachQueueItem(q QueuePageQuery, fn func(*QueueItem) error) error {
	if q.Limit <= 0 {
		q.Limit = batchSize
	}
	for {
		p, err := s.QueuePage(q)
		if err != nil {
			return err
		}
		if !p.Indexed {
			p = &QueuePage{Items: []QueueItem{}}
			if err := s.queuePageScan(q, math.MaxInt, math.MaxInt, p); err != nil {
				return fmt.Errorf("queue: %w", err)
			}
		}
		for i := range p.Items {
			if err := fn(&p.Items[i]); err != nil {
				return err
			}
		}
		if p.Next.IsZero() {
			return nil
		}
		q.After = p.Next
	}
}
