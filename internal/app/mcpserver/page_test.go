package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mailagent/mailagent/internal/app/api"
	"github.com/mailagent/mailagent/internal/app/mcpserver"
	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/internal/rig/testsize"
	"github.com/mailagent/mailagent/store"
)

var pageNow = time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)

// counting is the store's service with the cost of each queue read
// recorded: the records decoded and index entries examined per page, and
// any full read of the queue.
type counting struct {
	*api.Local
	mu        sync.Mutex
	pages     []store.QueuePage // Items cleared
	fullReads int
}

func (c *counting) QueuePage(ctx context.Context, r api.QueuePageRequest) (*store.QueuePage, error) {
	p, err := c.Local.QueuePage(ctx, r)
	if err == nil {
		c.mu.Lock()
		c.pages = append(c.pages, store.QueuePage{Examined: p.Examined, Loaded: p.Loaded, Indexed: p.Indexed})
		c.mu.Unlock()
	}
	return p, err
}

func (c *counting) Queue(ctx context.Context, f api.QueueFilter) ([]store.QueueItem, error) {
	c.mu.Lock()
	c.fullReads++
	c.mu.Unlock()
	return c.Local.Queue(ctx, f)
}

func (c *counting) reset() ([]store.QueuePage, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, n := c.pages, c.fullReads
	c.pages, c.fullReads = nil, 0
	return p, n
}

// bigQueue is a store of n queue items (accounts personal and work,
// statuses mixed, some pairs created at the same instant) and the counting
// service over it. The items are written once per package and size (one
// commit each, as the product writes them); each call gets its own copy
// of the file.
func bigQueue(t *testing.T, n int) (*store.Store, *counting) {
	t.Helper()
	st := storeCopy(t, fmt.Sprint("queue-", n), func(st *store.Store) error {
		base := pageNow.Add(-time.Duration(n) * time.Minute)
		for i := range n {
			at := base.Add(time.Duration(i) * time.Minute)
			if i%7 == 1 {
				at = at.Add(-time.Minute)
			}
			if err := st.PutQueueItem(newQueueItem(fmt.Sprintf("q_%05d", (i*631)%n), []string{"personal", "work"}[i%2],
				[]string{store.QueuePending, store.QueueSent, store.QueuePending, store.QueueRejected}[i%4], at, "")); err != nil {
				return err
			}
		}
		return nil
	})
	return st, &counting{Local: &api.Local{DB: st, Now: func() time.Time { return pageNow }}}
}

// fixtures holds the stores built once per package, by name: the bytes
// of the closed file.
var fixtures sync.Map // string → func() ([]byte, error)

// storeCopy opens a copy of the store that fill builds, built once per
// package under name (fill must give the same store for the same name).
func storeCopy(t *testing.T, name string, fill func(*store.Store) error) *store.Store {
	t.Helper()
	build, _ := fixtures.LoadOrStore(name, sync.OnceValues(func() ([]byte, error) {
		dir, err := os.MkdirTemp("", "mcpfixture")
		if err != nil {
			return nil, err
		}
		defer func() { _ = os.RemoveAll(dir) }()
		path := filepath.Join(dir, "state.db")
		st, err := store.Open(path, store.Options{Timeout: time.Second, NoSync: true})
		if err != nil {
			return nil, err
		}
		err = fill(st)
		if cerr := st.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, err
		}
		return os.ReadFile(path)
	}))
	data, err := build.(func() ([]byte, error))()
	if err != nil {
		t.Fatalf("fixture %s: %v", name, err)
	}
	path := filepath.Join(t.TempDir(), "state.db")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(path, store.Options{Timeout: time.Second, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

func addItem(t *testing.T, st *store.Store, id, account, status string, at time.Time, draft string) {
	t.Helper()
	if err := st.PutQueueItem(newQueueItem(id, account, status, at, draft)); err != nil {
		t.Fatal(err)
	}
}

func newQueueItem(id, account, status string, at time.Time, draft string) *store.QueueItem {
	if draft == "" {
		draft = "Thanks, see you then."
	}
	return &store.QueueItem{ID: id, Kind: "draft", Account: account, Status: status, CreatedAt: at,
		From: mail.Address{Email: "sender@example.org"}, Subject: "subject of " + id, Draft: draft}
}

// pageModes reach the counting service over the store and through a
// watcher's socket (api.Serve over it, as watch runs).
var pageModes = []struct {
	name string
	open func(t *testing.T, c *counting) func(context.Context) (api.Service, func() error, error)
}{
	{"store", func(_ *testing.T, c *counting) func(context.Context) (api.Service, func() error, error) {
		return func(context.Context) (api.Service, func() error, error) { return c, func() error { return nil }, nil }
	}},
	{"socket", func(t *testing.T, c *counting) func(context.Context) (api.Service, func() error, error) {
		cl := serve(t, c)
		return func(context.Context) (api.Service, func() error, error) { return cl, func() error { return nil }, nil }
	}},
}

func serve(t *testing.T, svc api.Service) *api.Client {
	t.Helper()
	dir, err := os.MkdirTemp("", "mcp")
	if err != nil {
		t.Fatal(err)
	}
	path := api.SocketPath(dir)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- api.Serve(ctx, path, svc, nil) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
		_ = os.RemoveAll(dir)
	})
	for deadline := time.Now().Add(10 * time.Second); ; {
		c, err := api.Dial(context.Background(), path)
		if err == nil {
			t.Cleanup(func() { _ = c.Close() })
			return c
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// walkQueue calls queue_list page after page and returns the ids in order.
func walkQueue(t *testing.T, cs *mcp.ClientSession, args map[string]any) []string {
	t.Helper()
	var out []string
	args = maps(args)
	for range 10000 {
		var p mcpserver.QueueListOut
		if e := call(t, cs, "queue_list", args, &p); e != "" {
			t.Fatalf("queue_list %v: %s", args, e)
		}
		for _, q := range p.Items {
			out = append(out, q.ID)
		}
		if p.NextCursor == "" {
			return out
		}
		args["cursor"] = p.NextCursor
	}
	t.Fatal("the walk does not end")
	return nil
}

func maps(m map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

func fullIDs(t *testing.T, l *api.Local, f api.QueueFilter, allowed ...string) []string {
	t.Helper()
	items, err := l.Queue(context.Background(), f)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, q := range items {
		if len(allowed) == 0 || slices.Contains(allowed, q.Account) {
			out = append(out, q.ID)
		}
	}
	return out
}

// TestQueueListPagesFromTheStore: over 2,000 queue items (400 under
// -race: generated volume; a page's bounds below do not depend on the
// queue's length, and a full read would examine all 400), with and
// without a watcher, queue_list pages through the whole queue in the
// listing's order, each page decoding at most its own items and examining
// at most the entries up to the next match, never reading the queue whole.
func TestQueueListPagesFromTheStore(t *testing.T) {
	t.Parallel()
	_, c := bigQueue(t, testsize.N(2000, 400))
	// The listings in full, read once: nothing writes to the store here.
	wantAll, wantPending := fullIDs(t, c.Local, api.QueueFilter{}), fullIDs(t, c.Local, api.QueueFilter{Status: "pending"})
	wantRejectedWork, wantWork := fullIDs(t, c.Local, api.QueueFilter{Status: "rejected", Account: "work"}), fullIDs(t, c.Local, api.QueueFilter{}, "work")
	for _, m := range pageModes {
		t.Run(m.name, func(t *testing.T) {
			cs := connect(t, mcpserver.Options{Open: m.open(t, c), Now: func() time.Time { return pageNow }})
			limited := connect(t, mcpserver.Options{Open: m.open(t, c), Now: func() time.Time { return pageNow }, Accounts: []string{"work"}})
			for _, tc := range []struct {
				name string
				cs   *mcp.ClientSession
				args map[string]any
				want []string
				// perPage is the most index entries one page may examine:
				// its items and the one after, at their density in the
				// queue (1 in stride), plus one stride for the pairs
				// created at the same instant, whose order is by id.
				perPage int
			}{
				{"all", cs, map[string]any{"limit": 100}, wantAll, 101},
				{"pending, 7 a page", cs, map[string]any{"limit": 7, "status": "pending"}, wantPending, 8*2 + 2},
				{"rejected in work", cs, map[string]any{"status": "rejected", "account": "work"}, wantRejectedWork, 21*4 + 4},
				{"a server limited to work", limited, map[string]any{"limit": 50}, wantWork, 51*2 + 2},
			} {
				c.reset()
				got := walkQueue(t, tc.cs, tc.args)
				if !slices.Equal(got, tc.want) || len(got) == 0 {
					t.Fatalf("%s: %d items, want %d (first %v, want %v)", tc.name, len(got), len(tc.want), got[:min(3, len(got))], tc.want[:min(3, len(tc.want))])
				}
				pages, full := c.reset()
				limit := 20
				if l, ok := tc.args["limit"].(int); ok {
					limit = l
				}
				if full != 0 || len(pages) != (len(got)+limit-1)/limit {
					t.Fatalf("%s: %d full reads and %d pages for %d items; want none and %d", tc.name, full, len(pages), len(got), (len(got)+limit-1)/limit)
				}
				for i, p := range pages {
					if !p.Indexed || p.Loaded > limit || p.Examined > tc.perPage {
						t.Fatalf("%s: page %d decoded %d records, examined %d entries (indexed %v); want at most %d and %d",
							tc.name, i, p.Loaded, p.Examined, p.Indexed, limit, tc.perPage)
					}
				}
			}
		})
	}
}

// TestQueueListCursorStable: items added and removed between pages never
// make a page repeat an item or skip one that was there throughout, with
// and without a watcher.
func TestQueueListCursorStable(t *testing.T) {
	t.Parallel()
	for _, m := range pageModes {
		t.Run(m.name, func(t *testing.T) {
			n := testsize.N(2000, 400) // generated volume: 200 pending items are still 5 pages
			st, c := bigQueue(t, n)
			cs := connect(t, mcpserver.Options{Open: m.open(t, c), Now: func() time.Time { return pageNow }})
			args := map[string]any{"status": "pending", "limit": 40}
			before := fullIDs(t, c.Local, api.QueueFilter{Status: "pending"})
			var p1 mcpserver.QueueListOut
			if e := call(t, cs, "queue_list", args, &p1); e != "" || p1.NextCursor == "" {
				t.Fatalf("first page: %q, next %q", e, p1.NextCursor)
			}
			// Between pages: a newer item, items older than the cursor,
			// and items leaving the listing (rejected) before and after
			// the cursor, the page's last item among them.
			addItem(t, st, "q_new_newest", "work", store.QueuePending, pageNow.Add(time.Hour), "")
			addItem(t, st, "q_new_middle", "work", store.QueuePending, pageNow.Add(-time.Duration(n/2)*time.Minute), "")
			addItem(t, st, "q_new_oldest", "personal", store.QueuePending, pageNow.Add(-100000*time.Minute), "")
			gone := map[string]bool{}
			for _, id := range []string{p1.Items[39].ID, p1.Items[3].ID, before[len(before)/5], before[len(before)*9/10]} {
				if _, err := st.TransitionQueueItem(id, []string{store.QueuePending}, store.QueueRejected, nil); err != nil {
					t.Fatal(err)
				}
				gone[id] = true
			}
			args["cursor"] = p1.NextCursor
			seen := map[string]bool{}
			for _, q := range p1.Items {
				seen[q.ID] = true
			}
			for _, id := range walkQueue(t, cs, args) {
				if seen[id] {
					t.Fatalf("%s shown twice", id)
				}
				if gone[id] {
					t.Errorf("%s, rejected before its page was read, is listed as pending", id)
				}
				seen[id] = true
			}
			for _, id := range before {
				if !seen[id] && !gone[id] {
					t.Errorf("%s (pending throughout) was skipped", id)
				}
			}
			if !seen["q_new_middle"] || !seen["q_new_oldest"] || seen["q_new_newest"] {
				t.Errorf("added items: middle %v, oldest %v (want both), newest %v (want it on a new first page only)",
					seen["q_new_middle"], seen["q_new_oldest"], seen["q_new_newest"])
			}
		})
	}
}

// TestQueueListBoundedInBytes: items whose JSON is large fill a page by
// size long before its limit; the walk lists them all, and no page's items
// are more than mcpserver.MaxResultBytes of JSON (a page may hold one item
// of any size; none here is one).
//
// Each item carries the longest text the server passes on whole: 20
// reasons and 20 intents of 300 characters, 8 recipients, a subject of 300,
// a 500-character excerpt, each written in '<' after an escape sequence and
// a bidi override that the server strips. A '<' is 6 bytes of JSON
// (\u003c), so one item is about 92 kB of JSON: a page holds two (a third
// is over the bound), and five items make three pages. The store's own
// budget (storePageBytes, 4 MB) is far off: it hands the server every item
// on the first call, and the server cuts the page. (Each page's JSON is
// what costs here, about 3 CPU-s a megabyte under -race; the items are as
// few as make three pages.)
//
// Positive control: the page the server would give without its bound,
// the store's page of every item (limit 100 > the items), is more than
// MaxResultBytes of JSON, so the bound check below flags it; and every page
// the server cut is shown to have been full: its next item would have gone
// over the bound.
func TestQueueListBoundedInBytes(t *testing.T) {
	t.Parallel()
	const items = 5
	big := func(n int) string { return "\x1b[31m\u202e" + strings.Repeat("<", n) }
	st := storeCopy(t, "queue-json-heavy", func(st *store.Store) error {
		for i := range items {
			q := newQueueItem(fmt.Sprintf("q_big_%03d", i), "personal", store.QueuePending, pageNow.Add(-time.Duration(i)*time.Minute), big(500))
			q.Subject = big(300)
			q.Classification = &store.Classification{}
			for j := range 20 {
				q.Reasons = append(q.Reasons, big(300))
				q.Classification.Intents = append(q.Classification.Intents, big(300))
				if j < 8 {
					q.To = append(q.To, mail.Address{Email: big(300)})
				}
			}
			if err := st.PutQueueItem(q); err != nil {
				return err
			}
		}
		return nil
	})
	c := &counting{Local: &api.Local{DB: st, Now: func() time.Time { return pageNow }}}
	// within reports whether a page's items are within the bound: at most
	// MaxResultBytes of JSON, or a single item.
	within := func(page []json.RawMessage) (bool, int) {
		n := 0
		for _, it := range page {
			n += len(it)
		}
		return len(page) <= 1 || n <= mcpserver.MaxResultBytes, n
	}
	for _, m := range pageModes {
		t.Run(m.name, func(t *testing.T) {
			cs := connect(t, mcpserver.Options{Open: m.open(t, c), Now: func() time.Time { return pageNow }})
			c.reset()
			args := map[string]any{"limit": 100}
			var pages [][]json.RawMessage
			var all []json.RawMessage
			for len(pages) < 100 {
				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "queue_list", Arguments: args})
				if err != nil || res.IsError {
					t.Fatalf("queue_list: %v %+v", err, res)
				}
				raw, _ := json.Marshal(res.StructuredContent)
				var p struct {
					Items      []json.RawMessage `json:"items"`
					NextCursor string            `json:"next_cursor"`
				}
				if err := json.Unmarshal(raw, &p); err != nil {
					t.Fatal(err)
				}
				if ok, n := within(p.Items); !ok {
					t.Fatalf("page %d: %d items, %d bytes of JSON; the bound is %d", len(pages)+1, len(p.Items), n, mcpserver.MaxResultBytes)
				}
				for _, it := range p.Items {
					if bytes.Contains(it, []byte(`\u001b`)) || bytes.Contains(it, []byte("\u202e")) || !bytes.Contains(it, []byte(`\u003c`)) {
						t.Fatalf("page %d: an item is not the cleaned text: %.200s", len(pages)+1, it)
					}
				}
				pages = append(pages, p.Items)
				all = append(all, p.Items...)
				if p.NextCursor == "" {
					break
				}
				args["cursor"] = p.NextCursor
			}
			if len(all) != items || len(pages) < 3 || len(pages[0]) >= 100 {
				t.Fatalf("%d items in %d pages (the first of %d); want %d in several pages, each cut by its size", len(all), len(pages), len(pages[0]), items)
			}
			ids := make([]string, len(all))
			for i, it := range all {
				var q mcpserver.QueueItem
				if err := json.Unmarshal(it, &q); err != nil {
					t.Fatal(err)
				}
				ids[i] = q.ID
			}
			if want := fullIDs(t, c.Local, api.QueueFilter{}); !slices.Equal(ids, want) {
				t.Fatalf("walked %v; want %v", ids, want)
			}
			// Control: the store gave the server every item on the first
			// call (its budget did not cut the page) ...
			reads, full := c.reset()
			if full != 0 || len(reads) != len(pages) || reads[0].Loaded != items {
				t.Fatalf("control: %d full reads, store pages %+v for %d pages; want none, and a first page of all %d items", full, reads, len(pages), items)
			}
			// ... and that page, served whole, is over the bound: the check
			// above would catch a server without it.
			if ok, n := within(all); ok {
				t.Fatalf("control: the %d items are %d bytes of JSON, within the bound of %d: the test cannot see a page over it", len(all), n, mcpserver.MaxResultBytes)
			}
			// Each page was full: with its next item it is over the bound.
			for i := 0; i+1 < len(pages); i++ {
				if len(pages[i+1]) == 0 {
					t.Fatalf("page %d is empty", i+2)
				}
				if ok, n := within(append(slices.Clone(pages[i]), pages[i+1][0])); ok {
					t.Errorf("control: page %d and the next item are %d bytes of JSON, within the bound: the page was cut short", i+1, n)
				}
			}
		})
	}
}

// TestHostileCursors: garbage, huge, forged and other tools' cursors give
// every paginated tool a clear error, never a panic or a page of someone
// else's listing; the server goes on answering.
//
// The defence (the cursor check of the server's paging) has no switch
// this external test can reach, so the positive control is a detector,
// in the test: refusedClearly, the test's own check, is shown to catch
// each attack as it would land. A server that read a hostile cursor as
// "start again" would answer the tool's first page: that answer, for
// every tool, is flagged for each of its cases. And the other arguments'
// cursor with only its fingerprint field set to this listing's is served
// (a page): it is the fingerprint that refuses it, and the check flags
// that page too.
func TestHostileCursors(t *testing.T) {
	t.Parallel()
	_, c := bigQueue(t, 60)
	for _, m := range pageModes {
		t.Run(m.name, func(t *testing.T) {
			cs := connect(t, mcpserver.Options{Open: m.open(t, c), Now: func() time.Time { return pageNow }})
			var ql mcpserver.QueueListOut
			if e := call(t, cs, "queue_list", map[string]any{"limit": 5}, &ql); e != "" || ql.NextCursor == "" {
				t.Fatalf("queue_list: %q %q", e, ql.NextCursor)
			}
			var pend mcpserver.QueueListOut
			if e := call(t, cs, "queue_list", map[string]any{"limit": 5, "status": "pending"}, &pend); e != "" || pend.NextCursor == "" {
				t.Fatalf("queue_list pending: %q %q", e, pend.NextCursor)
			}
			enc := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
			real, _ := base64.RawURLEncoding.DecodeString(ql.NextCursor)
			fields := strings.Split(string(real), "\x00")
			forge := func(i int, v string) string {
				f := slices.Clone(fields)
				f[i] = v
				return enc(strings.Join(f, "\x00"))
			}
			hostile := map[string]string{
				"garbage":            "not a cursor",
				"path":               "../../",
				"huge":               strings.Repeat("A", 1<<20),
				"just too long":      enc(strings.Repeat("x", 1000)),
				"old offset cursor":  enc("o:40"),
				"nul bytes":          enc("\x00\x00\x00\x00"),
				"extra field":        enc(string(real) + "\x00more"),
				"other version":      forge(0, "v9"),
				"bad time":           forge(3, "-9223372036854775808x"),
				"time overflow":      forge(3, "99999999999999999999999"),
				"empty id":           forge(4, ""),
				"long id":            forge(4, strings.Repeat("q", 5000)),
				"queue_list pending": pend.NextCursor, // same tool, other arguments
				"padding":            ql.NextCursor + "==",
				"control chars":      "\x1b[2J\u202e",
			}
			tools := []struct {
				name string
				args map[string]any
			}{{"queue_list", map[string]any{"limit": 5}}, {"needs_reply", nil}, {"followups", nil}, {"search_mail", nil}, {"decisions", nil}}
			tried, through := 0, 0
			controls, landed := 0, 0
			for _, tool := range tools {
				cases := map[string]string{}
				for k, v := range hostile {
					cases[k] = v
				}
				if tool.name != "queue_list" {
					cases["queue_list's cursor"] = ql.NextCursor
				}
				for name, cur := range cases {
					args := maps(tool.args)
					args["cursor"] = cur
					tried++
					e := call(t, cs, tool.name, args, nil)
					if !refusedClearly(e) {
						through++
						t.Errorf("%s with a %s cursor: error %q; want a clear error about the cursor", tool.name, name, e)
					}
				}
				// Detector: the first page, as a server that read the
				// cursor as "start again" would answer each case.
				controls += len(cases)
				switch e := call(t, cs, tool.name, maps(tool.args), nil); {
				case e != "":
					t.Errorf("positive control: %s's first page: error %q, want a page", tool.name, e)
				case refusedClearly(e):
					t.Errorf("positive control: %s's first page passes the check: the check does not see a page served", tool.name)
				default:
					landed += len(cases)
				}
			}
			// Detector: the other arguments' cursor, its fingerprint
			// field set to this listing's, is served.
			other, _ := base64.RawURLEncoding.DecodeString(pend.NextCursor)
			rebound := strings.Split(string(other), "\x00")
			controls++
			if len(rebound) != len(fields) {
				t.Errorf("positive control: the pending cursor has %d fields, want %d", len(rebound), len(fields))
			} else {
				rebound[2] = fields[2]
				if e := call(t, cs, "queue_list", map[string]any{"limit": 5, "cursor": enc(strings.Join(rebound, "\x00"))}, nil); e == "" && !refusedClearly(e) {
					landed++
				} else {
					t.Errorf("positive control: the pending cursor re-bound to queue_list's arguments is refused (%q): the fingerprint is not what refuses it", e)
				}
			}
			// A forged cursor with a valid shape is only a position: it
			// never shows more than the listing's own items.
			tried++
			var after mcpserver.QueueListOut
			if e := call(t, cs, "queue_list", map[string]any{"limit": 5, "cursor": forge(4, "zzzz")}, &after); e != "" {
				t.Errorf("a well-formed position: %s", e)
			}
			if e := call(t, cs, "queue_list", map[string]any{"limit": 5}, &ql); e != "" || len(ql.Items) != 5 {
				through++
				t.Errorf("after the attacks: %q, %d items", e, len(ql.Items))
			}
			t.Logf("hostile cursors: %d tried, %d got through; positive control: %d of %d landings caught", tried, through, landed, controls)
			if through != 0 {
				t.Errorf("got %d of %d through, want 0", through, tried)
			}
			if controls == 0 || landed != controls {
				t.Errorf("positive control: got %d of %d landings caught, want all", landed, controls)
			}
		})
	}
}

// refusedClearly is TestHostileCursors's check of a tool's answer to a
// hostile cursor: an error that names the cursor and carries no escape.
func refusedClearly(e string) bool {
	return e != "" && strings.Contains(e, "cursor") && !strings.Contains(e, "\x1b")
}

// TestDigestTokensSameThroughSocket: the digest's token figures cover its
// whole period, and are the same through a watcher's socket as over the
// store.
func TestDigestTokensSameThroughSocket(t *testing.T) {
	t.Parallel()
	st, c := bigQueue(t, 10)
	var wantIn, wantOut int64
	for i := range 10 {
		day := store.Day(pageNow.AddDate(0, 0, -i))
		in, out := int64(1000*(i+1)), int64(100*(i+1))
		if err := st.AddUsage(day, in, out); err != nil {
			t.Fatal(err)
		}
		if i <= 4 { // the period: the last 4 days and today
			wantIn, wantOut = wantIn+in, wantOut+out
		}
	}
	since := store.Day(pageNow.AddDate(0, 0, -4))
	got := map[string]mcpserver.DigestOut{}
	for _, m := range pageModes {
		cs := connect(t, mcpserver.Options{Open: m.open(t, c), Now: func() time.Time { return pageNow }, Model: "gemini-2.5-flash"})
		var d mcpserver.DigestOut
		if e := call(t, cs, "digest", map[string]any{"since": since}, &d); e != "" {
			t.Fatalf("%s: digest: %s", m.name, e)
		}
		if d.TokensIn != wantIn || d.TokensOut != wantOut {
			t.Errorf("%s: digest since %s: tokens %d in, %d out; want %d and %d (five days of the ledger)", m.name, since, d.TokensIn, d.TokensOut, wantIn, wantOut)
		}
		got[m.name] = d
	}
	if s, w := got["store"], got["socket"]; s.TokensIn != w.TokensIn || s.TokensOut != w.TokensOut || s.USD != w.USD {
		t.Errorf("store %d/%d $%v, socket %d/%d $%v; want the same", s.TokensIn, s.TokensOut, s.USD, w.TokensIn, w.TokensOut, w.USD)
	}
}

// TestMessageListingsPage: search_mail and decisions page through every
// match in order, with and without a watcher, each id once, and a cursor
// taken between pages still lands right after a message is added.
func TestMessageListingsPage(t *testing.T) {
	t.Parallel()
	st, c := bigQueue(t, 0)
	decisions := []string{"archive", "ignore", "queue", "notify", "auto_send"}
	for i := range 230 {
		r := &store.MessageRecord{MessageKey: store.MessageKey{Account: []string{"personal", "work"}[i%2], Mailbox: "INBOX", UIDValidity: 1, UID: uint32(i + 1)},
			MessageID: fmt.Sprintf("m%d@example.org", i), Subject: fmt.Sprintf("invoice %d", i), From: mail.Address{Email: fmt.Sprintf("s%d@example.org", i%9)},
			Date: pageNow.Add(-time.Duration(i/2) * time.Hour), State: store.StateDone, Decision: decisions[i%len(decisions)]}
		if err := st.PutMessage(r); err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range pageModes {
		t.Run(m.name, func(t *testing.T) {
			cs := connect(t, mcpserver.Options{Open: m.open(t, c), Now: func() time.Time { return pageNow }})
			for _, tc := range []struct {
				tool string
				args map[string]any
				want int
			}{
				{"search_mail", map[string]any{"subject": "invoice", "limit": 9}, 230},
				{"search_mail", map[string]any{"account": "work", "limit": 100}, 115},
				{"decisions", map[string]any{"since": "2000-01-01", "limit": 7}, 230 * 4 / 5},
			} {
				var keys []string
				var dates []time.Time
				args := maps(tc.args)
				for range 1000 {
					var p mcpserver.MessagesOut
					if e := call(t, cs, tc.tool, args, &p); e != "" {
						t.Fatalf("%s: %s", tc.tool, e)
					}
					for _, msg := range p.Messages {
						keys = append(keys, msg.Key)
						dates = append(dates, msg.StoredAt)
					}
					if p.NextCursor == "" {
						break
					}
					args["cursor"] = p.NextCursor
				}
				if len(keys) != tc.want || len(slices.Compact(slices.Sorted(slices.Values(keys)))) != tc.want {
					t.Errorf("%s %v: %d messages (%d distinct), want %d", tc.tool, tc.args, len(keys), len(slices.Compact(slices.Sorted(slices.Values(keys)))), tc.want)
				}
				if tc.tool == "search_mail" && !slices.IsSortedFunc(dates, func(a, b time.Time) int { return b.Compare(a) }) {
					t.Errorf("%s: not newest first", tc.tool)
				}
			}
		})
	}
}
