package mcpserver

import (
	"cmp"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Bounds of a page.
const (
	// maxCursorLen is longer than any cursor the server gives (the id in
	// it, a queue id or a message key, is at most maxCursorID bytes); a
	// longer one is refused before it is decoded.
	maxCursorLen = 4096
	maxCursorID  = 2048
	// maxResultBytes bounds the JSON of one page's items; a page holds at
	// least one item whatever its size (each item is itself bounded).
	maxResultBytes = 256 << 10
	// storePageBytes bounds the stored size of the queue items one page
	// reads from the store (they are cut to snippets afterwards).
	storePageBytes = 4 << 20
)

// Cursors are opaque to the client: base64url of
//
//	v1 \0 tool \0 fingerprint \0 time \0 id
//
// where (time, id) is the key of the last item of the page in the
// listing's order (never an offset: items added or removed meanwhile do
// not shift the next page), tool the listing that gave it and fingerprint
// a hash of its arguments: a cursor is only ever taken back by the same
// tool with the same arguments.
const cursorVersion = "v1"

// key is an item's position in a listing's order.
type key struct {
	at time.Time
	id string
}

// compareKeys orders keys by time, then id.
func compareKeys(a, b key) int {
	return cmp.Or(a.at.Compare(b.at), strings.Compare(a.id, b.id))
}

// page is a parsed cursor and limit: after is nil on the first page.
type page struct {
	tool, fp string
	after    *key
	limit    int
}

// fingerprint hashes a listing's arguments.
func fingerprint(args ...string) string {
	h := sha256.New()
	for _, a := range args {
		h.Write([]byte(strconv.Itoa(len(a)) + ":" + a))
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// cursorError is what every refused cursor says, with why.
func cursorError(why string) error {
	return fmt.Errorf("%w: the cursor %s; pass back the next_cursor this tool gave for the same arguments, or leave cursor empty to start again", ErrInvalid, why)
}

// parsePage checks the limit and decodes the cursor the tool gave for the
// arguments whose fingerprint is fp.
func parsePage(tool, fp, cursor string, limit int) (page, error) {
	p := page{tool: tool, fp: fp, limit: limit}
	switch {
	case limit == 0:
		p.limit = DefaultLimit
	case limit < 0 || limit > MaxLimit:
		return p, fmt.Errorf("%w: limit %d is outside 1–%d", ErrInvalid, limit, MaxLimit)
	}
	if cursor == "" {
		return p, nil
	}
	if len(cursor) > maxCursorLen {
		return p, cursorError(fmt.Sprintf("is %d bytes, longer than any this server gives", len(cursor)))
	}
	b, err := base64.RawURLEncoding.DecodeString(cursor)
	f := strings.Split(string(b), "\x00")
	if err != nil || len(f) != 5 || f[0] != cursorVersion {
		return p, cursorError("is not one this server gave")
	}
	if f[1] != tool {
		return p, cursorError("was given by another tool")
	}
	if f[2] != fp {
		return p, cursorError("was given for other arguments")
	}
	k := key{id: f[4]}
	if f[3] != "" {
		n, err := strconv.ParseInt(f[3], 10, 64)
		if err != nil {
			return p, cursorError("is not one this server gave")
		}
		k.at = time.Unix(0, n).UTC()
	}
	if k.id == "" || len(k.id) > maxCursorID {
		return p, cursorError("is not one this server gave")
	}
	p.after = &k
	return p, nil
}

// cursor encodes the position after k for p's tool and arguments.
func (p page) cursor(k key) string {
	at := ""
	if !k.at.IsZero() {
		at = strconv.FormatInt(k.at.UnixNano(), 10)
	}
	return base64.RawURLEncoding.EncodeToString([]byte(strings.Join([]string{cursorVersion, p.tool, p.fp, at, k.id}, "\x00")))
}

// budget bounds a page's JSON size.
type budget struct{ left int }

func newBudget() *budget { return &budget{left: maxResultBytes} }

// take reports whether v still fits, and counts it; the first item of a
// page always fits.
func (b *budget) take(v any, first bool) bool {
	raw, err := json.Marshal(v)
	n := len(raw)
	if err != nil {
		n = b.left + 1
	}
	if !first && n > b.left {
		return false
	}
	b.left -= n
	return true
}

// cutPage returns the page of items (already in the listing's order: by
// key, descending when desc) that follows p's cursor, converted, bounded
// by p.limit and by the byte budget, and the next cursor ("" at the end).
func cutPage[T, O any](items []T, keyOf func(*T) key, desc bool, p page, conv func(*T) O) ([]O, string) {
	out := []O{}
	i := 0
	if p.after != nil {
		// Skip every item at or before the cursor's position.
		i = len(items)
		for j := range items {
			c := compareKeys(keyOf(&items[j]), *p.after)
			if desc {
				c = -c
			}
			if c > 0 {
				i = j
				break
			}
		}
	}
	b := newBudget()
	for ; i < len(items); i++ {
		if len(out) == p.limit {
			break
		}
		o := conv(&items[i])
		if !b.take(o, len(out) == 0) {
			break
		}
		out = append(out, o)
	}
	if i < len(items) && len(out) > 0 {
		return out, p.cursor(keyOf(&items[i-1]))
	}
	return out, ""
}

// sortKeyed sorts items by key (descending when desc).
func sortKeyed[T any](items []T, keyOf func(*T) key, desc bool) {
	slices.SortStableFunc(items, func(a, b T) int {
		c := compareKeys(keyOf(&a), keyOf(&b))
		if desc {
			return -c
		}
		return c
	})
}

// topAfter keeps, while a read streams past, the first n items after a
// cursor in a listing's order: memory for n items, whatever the size of
// the read.
type topAfter[T any] struct {
	keyOf func(*T) key
	desc  bool
	after *key
	n     int
	items []T
}

// before reports whether a comes before b in the listing's order.
func (t *topAfter[T]) before(a, b key) bool {
	if t.desc {
		return compareKeys(a, b) > 0
	}
	return compareKeys(a, b) < 0
}

func (t *topAfter[T]) add(it T) {
	k := t.keyOf(&it)
	if t.after != nil && !t.before(*t.after, k) {
		return // at or before the cursor
	}
	if len(t.items) == t.n && !t.before(k, t.keyOf(&t.items[t.n-1])) {
		return
	}
	i, _ := slices.BinarySearchFunc(t.items, k, func(e T, k key) int {
		if t.before(t.keyOf(&e), k) {
			return -1
		}
		return 1
	})
	t.items = slices.Insert(t.items, i, it)
	if len(t.items) > t.n {
		clear(t.items[t.n:])
		t.items = t.items[:t.n]
	}
}

// streamPage starts keeping the page that follows p's cursor: its items
// and one more (to know whether a next page exists).
func streamPage[T any](p page, keyOf func(*T) key, desc bool) *topAfter[T] {
	return &topAfter[T]{keyOf: keyOf, desc: desc, after: p.after, n: p.limit + 1}
}

// page cuts the kept items to p's limit and byte budget, with the next
// cursor.
func finishPage[T, O any](t *topAfter[T], p page, conv func(*T) O) ([]O, string) {
	p.after = nil // the items kept all follow it already
	return cutPage(t.items, t.keyOf, t.desc, p, conv)
}
