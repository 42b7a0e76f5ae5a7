package store

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

var pageStatuses = []string{QueuePending, QueueSent, QueueSent, QueueRejected, QueueSnoozed}

// seedQueue writes n queue items in one transaction: creation times one
// second apart from base, with every tenth pair sharing a creation time
// (so that ties are ordered by id), statuses, kinds and accounts mixed.
func seedQueue(tb testing.TB, s *Store, n int, base time.Time) {
	tb.Helper()
	if err := seedQueueErr(s, n, base); err != nil {
		tb.Fatal(err)
	}
}

var queueBase = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// seededQueueFile is a database file holding seedQueue(2000) from
// queueBase, written once per process.
var seededQueueFile = sync.OnceValues(func() ([]byte, error) {
	dir, err := os.MkdirTemp("", "store-queue-seed-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	path := filepath.Join(dir, "state.db")
	s, err := Open(path, Options{NoSync: true}) // Close flushes it
	if err != nil {
		return nil, err
	}
	err = seedQueueErr(s, 2000, queueBase)
	if cerr := s.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	return os.ReadFile(path)
})

// openSeededQueue is openTest of a store already holding seedQueue(2000)
// from queueBase: a copy of seededQueueFile of its own (the tests that
// use it read or change 2,000 items, which took each of them longer to
// write than to test).
func openSeededQueue(t *testing.T) (*Store, *fakeClock) {
	t.Helper()
	data, err := seededQueueFile()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "state.db"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	return openTestIn(t, dir)
}

func seedQueueErr(s *Store, n int, base time.Time) error {
	return s.updateTx(func(tx *bolt.Tx) error {
		for i := range n {
			at := base.Add(time.Duration(i) * time.Second)
			if i%10 == 1 {
				at = base.Add(time.Duration(i-1) * time.Second)
			}
			q := &QueueItem{ID: fmt.Sprintf("q_%05d_%x", (i*7919)%n, i), Kind: []string{"draft", "notify"}[i%2],
				Account: []string{"personal", "work", "other"}[i%3], Status: pageStatuses[i%len(pageStatuses)],
				Subject: fmt.Sprintf("subject %d", i), Draft: strings.Repeat("draft text ", 20), CreatedAt: at, UpdatedAt: at}
			if err := putQueueTx(tx, q, nil); err != nil {
				return err
			}
		}
		return nil
	})
}

// readAll is the listing as api.Local.Queue builds it: every item read,
// filtered, sorted newest first, ties by id descending.
func readAll(tb testing.TB, s *Store, q QueuePageQuery) []QueueItem {
	tb.Helper()
	var out []QueueItem
	err := s.ListQueue(q.Status, func(it *QueueItem) error {
		if q.match(it.Status, it.Kind, it.Account) {
			out = append(out, *it)
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	slices.SortStableFunc(out, func(a, b QueueItem) int {
		return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), cmp.Compare(b.ID, a.ID))
	})
	return out
}

// readAllOf is readAll of a query without a status, from the listing of
// every item (readAll with the zero query): its filter applied to it.
func readAllOf(all []QueueItem, q QueuePageQuery) []QueueItem {
	var out []QueueItem
	for _, it := range all {
		if q.match(it.Status, it.Kind, it.Account) {
			out = append(out, it)
		}
	}
	return out
}

func ids(items []QueueItem) []string {
	out := make([]string, len(items))
	for i := range items {
		out[i] = items[i].ID
	}
	return out
}

// walk reads every page of q and returns the items in order, failing when a
// page costs more than it should.
func walk(t *testing.T, s *Store, q QueuePageQuery) []QueueItem {
	t.Helper()
	var out []QueueItem
	for pages := 0; ; pages++ {
		if pages > 10000 {
			t.Fatal("the walk does not end")
		}
		p, err := s.QueuePage(q)
		if err != nil {
			t.Fatal(err)
		}
		if p.Loaded != len(p.Items) {
			t.Fatalf("page loaded %d records for %d items", p.Loaded, len(p.Items))
		}
		out = append(out, p.Items...)
		if p.Next.IsZero() {
			return out
		}
		q.After = p.Next
	}
}

func TestQueuePageMatchesTheFullListing(t *testing.T) {
	t.Parallel()
	s, _ := openSeededQueue(t)
	all := readAll(t, s, QueuePageQuery{}) // the queries without a status filter it
	for _, tc := range []struct {
		name string
		q    QueuePageQuery
	}{
		{"all", QueuePageQuery{Limit: 37}},
		{"pending", QueuePageQuery{Status: QueuePending, Limit: 20}},
		{"sent work drafts", QueuePageQuery{Status: QueueSent, Kind: "draft", Account: "work", Limit: 7}},
		{"accounts allowed", QueuePageQuery{Accounts: []string{"personal", "other"}, Limit: 100}},
		{"account outside the allowed", QueuePageQuery{Account: "work", Accounts: []string{"personal"}}},
		{"one by one", QueuePageQuery{Status: QueueRejected, Kind: "notify", Limit: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := ids(readAllOf(all, tc.q))
			if tc.q.Status != "" {
				want = ids(readAll(t, s, tc.q)) // through the status index, as api.Local.Queue reads it
			}
			got := ids(walk(t, s, tc.q))
			if !slices.Equal(got, want) {
				t.Fatalf("paged walk differs from the full listing: got %d items, want %d\nfirst got %v\nfirst want %v",
					len(got), len(want), got[:min(5, len(got))], want[:min(5, len(want))])
			}
		})
	}
}

func TestQueuePageTouchesOnlyThePage(t *testing.T) {
	t.Parallel()
	s, _ := openSeededQueue(t)
	p, err := s.QueuePage(QueuePageQuery{Limit: 20})
	if err != nil {
		t.Fatal(err)
	}
	if !p.Indexed || len(p.Items) != 20 || p.Loaded != 20 || p.Examined != 21 || p.Next.IsZero() {
		t.Fatalf("first page: indexed %v, %d items, loaded %d, examined %d, next %v; want 20 items, 20 loaded, 21 examined (the page plus one), a next cursor",
			p.Indexed, len(p.Items), p.Loaded, p.Examined, p.Next)
	}
	// Deep in the queue, a page costs the same.
	all := readAll(t, s, QueuePageQuery{})
	q := QueuePageQuery{Limit: 20, After: CursorOf(&all[1500])}
	if p, err = s.QueuePage(q); err != nil || p.Loaded != 20 || p.Examined != 21 {
		t.Fatalf("page after 1500: %v, loaded %d examined %d; want 20 and 21", err, p.Loaded, p.Examined)
	}
	// A filter passes over other items without decoding them.
	if p, err = s.QueuePage(QueuePageQuery{Status: QueuePending, Limit: 10}); err != nil || p.Loaded != 10 || p.Examined > 5*11 {
		t.Fatalf("pending page: %v, loaded %d examined %d; want 10 loaded, at most 55 examined", err, p.Loaded, p.Examined)
	}
	// The last page has no next cursor (nothing was written since all was
	// read).
	if p, err = s.QueuePage(QueuePageQuery{Limit: 20, After: CursorOf(&all[len(all)-6])}); err != nil || len(p.Items) != 5 || !p.Next.IsZero() {
		t.Fatalf("last page: %v, %d items, next %v; want 5 and none", err, len(p.Items), p.Next)
	}
}

func TestQueuePageBounds(t *testing.T) {
	t.Parallel()
	s, _ := openTest(t)
	seedQueue(t, s, 300, time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	huge := &QueueItem{ID: "q_huge", Kind: "draft", Account: "personal", Status: QueuePending,
		Draft: strings.Repeat("x", 200<<10), CreatedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	if err := s.PutQueueItem(huge); err != nil {
		t.Fatal(err)
	}
	// Bytes: the huge item alone fills a page, and is still returned.
	p, err := s.QueuePage(QueuePageQuery{Limit: 100, MaxBytes: 64 << 10})
	if err != nil || len(p.Items) != 1 || p.Items[0].ID != "q_huge" || p.Next.IsZero() {
		t.Fatalf("byte bound: %v, %v, next %v; want only q_huge and a next cursor", err, ids(p.Items), p.Next)
	}
	p, err = s.QueuePage(QueuePageQuery{Limit: 100, MaxBytes: 8 << 10, After: p.Next})
	if err != nil || len(p.Items) == 0 || len(p.Items) >= 100 || p.Next.IsZero() {
		t.Fatalf("byte bound after: %v, %d items, next %v; want a short page and a next cursor", err, len(p.Items), p.Next)
	}
	// Scan budget: a filter nothing matches stops after MaxScan entries
	// with a cursor to go on from, and the walk ends.
	q := QueuePageQuery{Kind: "needs_review", MaxScan: 50}
	p, err = s.QueuePage(q)
	if err != nil || len(p.Items) != 0 || p.Examined != 50 || p.Next.IsZero() {
		t.Fatalf("scan budget: %v, %d items, examined %d, next %v; want 0, 50 and a cursor", err, len(p.Items), p.Examined, p.Next)
	}
	if got := walk(t, s, q); len(got) != 0 {
		t.Fatalf("walk of nothing: %v", ids(got))
	}
	// Limits out of range are brought into it.
	if p, err = s.QueuePage(QueuePageQuery{Limit: -3}); err != nil || len(p.Items) != DefaultQueuePageLimit {
		t.Fatalf("limit -3: %v, %d items; want %d", err, len(p.Items), DefaultQueuePageLimit)
	}
	if p, err = s.QueuePage(QueuePageQuery{Limit: 1 << 30}); err != nil || len(p.Items) != 301 {
		t.Fatalf("limit 2^30: %v, %d items; want all 301", err, len(p.Items))
	}
}

// TestQueuePageCursorIsStable adds and removes items between pages: the
// walk never repeats an item, never skips one that was there throughout,
// and shows the items added after the cursor's position.
func TestQueuePageCursorIsStable(t *testing.T) {
	t.Parallel()
	s, clk := openSeededQueue(t)
	base := queueBase
	before := readAll(t, s, QueuePageQuery{})
	p1, err := s.QueuePage(QueuePageQuery{Limit: 50})
	if err != nil {
		t.Fatal(err)
	}
	// Between pages: newer items (a listing of "newest first" shows them
	// from its next first page), items older than the cursor (they come
	// later in this walk), items removed before and after the cursor, and
	// an item moved to another status.
	for i, at := range []time.Time{base.Add(10000 * time.Second), base.Add(500 * time.Second), base.Add(-time.Hour)} {
		if err := s.PutQueueItem(&QueueItem{ID: fmt.Sprintf("q_new_%d", i), Kind: "draft", Account: "work", Status: QueuePending, CreatedAt: at}); err != nil {
			t.Fatal(err)
		}
	}
	removed := map[string]bool{}
	clk.Advance(400 * 24 * time.Hour)
	for _, it := range []QueueItem{p1.Items[49], p1.Items[10], before[60], before[1900]} {
		if err := s.updateTx(func(tx *bolt.Tx) error {
			if err := indexCreatedTx(tx, nil, &it); err != nil {
				return err
			}
			if err := tx.Bucket(bIdxQueue).Delete(dueKey(it.Status, queueDue(&it), it.ID)); err != nil {
				return err
			}
			return tx.Bucket(bQueue).Delete([]byte(it.ID))
		}); err != nil {
			t.Fatal(err)
		}
		removed[it.ID] = true
	}
	if _, err := s.TransitionQueueItem(before[70].ID, []string{before[70].Status}, QueueResolved, nil); err != nil {
		t.Fatal(err)
	}
	rest := walk(t, s, QueuePageQuery{Limit: 50, After: p1.Next})
	seen := map[string]bool{}
	for _, it := range append(slices.Clone(p1.Items), rest...) {
		if seen[it.ID] {
			t.Fatalf("%s shown twice", it.ID)
		}
		seen[it.ID] = true
	}
	for _, it := range before {
		if !seen[it.ID] && !removed[it.ID] {
			t.Errorf("%s (there throughout) was skipped", it.ID)
		}
	}
	for _, id := range []string{"q_new_1", "q_new_2"} {
		if !seen[id] {
			t.Errorf("%s, added after the cursor's position, is missing", id)
		}
	}
	if seen["q_new_0"] {
		t.Error("q_new_0, newer than the first page, appeared in a later page")
	}
	if !slices.ContainsFunc(rest, func(q QueueItem) bool { return q.ID == before[70].ID && q.Status == QueueResolved }) {
		t.Errorf("%s moved to resolved: its page shows the old status or skips it", before[70].ID)
	}
}

// TestQueuePageIndexBuiltOnOpen: a file written before the creation index
// existed gets it on its first read-write open; opened read-only before
// that, a page is still right (from a full read).
func TestQueuePageIndexBuiltOnOpen(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "state.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	seedQueue(t, s, 500, time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	want := ids(readAll(t, s, QueuePageQuery{Status: QueueSent}))
	if err := s.db.Update(func(tx *bolt.Tx) error { // the old layout
		if err := tx.DeleteBucket(bIdxQueueCreated); err != nil {
			return err
		}
		return tx.Bucket(bMeta).Delete(metaQueueCreated)
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	ro, err := Open(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	p, err := ro.QueuePage(QueuePageQuery{Status: QueueSent, Limit: 30})
	if err != nil || p.Indexed || !slices.Equal(ids(p.Items), want[:30]) {
		t.Fatalf("read-only, no index: %v, indexed %v, %v; want the first 30 of the full listing", err, p.Indexed, ids(p.Items))
	}
	if got := ids(walk(t, ro, QueuePageQuery{Status: QueueSent, Limit: 30})); !slices.Equal(got, want) {
		t.Fatalf("read-only walk: %d items, want %d", len(got), len(want))
	}
	if err := ro.Close(); err != nil {
		t.Fatal(err)
	}

	rw, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rw.Close() }()
	p, err = rw.QueuePage(QueuePageQuery{Status: QueueSent, Limit: 30})
	if err != nil || !p.Indexed || !slices.Equal(ids(p.Items), want[:30]) {
		t.Fatalf("after a read-write open: %v, indexed %v; want the index built", err, p.Indexed)
	}
	if got := ids(walk(t, rw, QueuePageQuery{Status: QueueSent, Limit: 30})); !slices.Equal(got, want) {
		t.Fatalf("indexed walk: %d items, want %d", len(got), len(want))
	}
}

// TestQueueCreatedIndexFollowsPruneAndRepair: pruning removes an item's
// entry, and a repair rebuilds the index.
func TestQueueCreatedIndexFollowsPruneAndRepair(t *testing.T) {
	t.Parallel()
	s, clk := openTest(t)
	seedQueue(t, s, 200, time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	clk.Advance(5 * 365 * 24 * time.Hour)
	if _, err := s.Prune(PruneOptions{Retention: time.Hour}); err != nil {
		t.Fatal(err)
	}
	entries := 0
	if err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bIdxQueueCreated).ForEach(func(k, _ []byte) error {
			entries++
			if tx.Bucket(bQueue).Get(k[9:]) == nil {
				return fmt.Errorf("entry %q has no item", k[9:])
			}
			return nil
		})
	}); err != nil {
		t.Fatal(err)
	}
	if n := len(readAll(t, s, QueuePageQuery{})); entries != n || n == 200 {
		t.Fatalf("after prune: %d index entries, %d items (of 200)", entries, n)
	}
	if err := s.db.Update(func(tx *bolt.Tx) error { return rebuildIndexes(tx) }); err != nil {
		t.Fatal(err)
	}
	if got, want := ids(walk(t, s, QueuePageQuery{Limit: 9})), ids(readAll(t, s, QueuePageQuery{})); !slices.Equal(got, want) {
		t.Fatalf("after a rebuild: %d items, want %d", len(got), len(want))
	}
}

func TestEachQueueItem(t *testing.T) {
	t.Parallel()
	s, _ := openTest(t)
	seedQueue(t, s, 333, time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	var got []string
	if err := s.EachQueueItem(QueuePageQuery{Account: "work", Limit: 10}, func(q *QueueItem) error {
		got = append(got, q.ID)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if want := ids(readAll(t, s, QueuePageQuery{Account: "work"})); !slices.Equal(got, want) {
		t.Fatalf("got %d items, want %d", len(got), len(want))
	}
}

// BenchmarkQueuePage reads the first page and a page deep in the queue,
// against the full read a listing did before (read every item, sort, cut),
// over queues of growing size: a page's time stays flat.
func BenchmarkQueuePage(b *testing.B) {
	for _, n := range []int{1000, 10000, 50000} {
		s, _ := openTest(b)
		seedQueue(b, s, n, time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
		all := readAll(b, s, QueuePageQuery{})
		deep := CursorOf(&all[n/2])
		b.Run(fmt.Sprintf("n=%d/page", n), func(b *testing.B) {
			for b.Loop() {
				if p, err := s.QueuePage(QueuePageQuery{Limit: 20, After: deep}); err != nil || len(p.Items) != 20 {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("n=%d/pending-page", n), func(b *testing.B) {
			for b.Loop() {
				if p, err := s.QueuePage(QueuePageQuery{Status: QueuePending, Limit: 20}); err != nil || len(p.Items) != 20 {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("n=%d/readall", n), func(b *testing.B) {
			for b.Loop() {
				items := readAll(b, s, QueuePageQuery{})
				i, _ := slices.BinarySearchFunc(items, deep, func(it QueueItem, c QueueCursor) int { return compareCreatedDesc(CursorOf(&it), c) })
				if len(items[i+1:i+21]) != 20 {
					b.Fatal("short")
				}
			}
		})
	}
}
