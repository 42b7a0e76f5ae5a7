package store

import (
	"bytes"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/internal/rig/testsize"
)

var (
	pageAccounts  = []string{"personal", "work", "other"}
	pageDecisions = []string{"archive", "queue", "ignore", "notify", "auto_send", ""}
	pageIntents   = []string{"meeting_request", "invoice", "newsletter"}
	pageStates    = []State{StateDone, StateDone, StateDone, StateNeedsReview, StateClassified}
)

// seedMsg is the i-th message of seedMessages, stored at at.
func seedMsg(i int, at time.Time) *MessageRecord {
	r := &MessageRecord{
		MessageKey: MessageKey{Account: pageAccounts[i%3], Mailbox: []string{"INBOX", "Lists/News"}[i%2], UIDValidity: 7, UID: uint32(100000 + (i*7919)%1000003)},
		MessageID:  fmt.Sprintf("<m%d@example.com>", i),
		ThreadID:   fmt.Sprintf("t%d", i%40),
		From:       mail.Address{Name: "Sender", Email: fmt.Sprintf("Person%d@Example%d.org", i%13, i%4)},
		To:         []mail.Address{{Email: fmt.Sprintf("owner%d@home.test", i%3)}},
		Subject:    fmt.Sprintf("Report number %d about %s", i, []string{"Budget", "travel", "LUNCH plans"}[i%3]),
		Date:       at.Add(-time.Duration(i%7) * time.Hour),
		State:      pageStates[i%len(pageStates)],
		Decision:   pageDecisions[i%len(pageDecisions)],
		TriageOnly: i%11 == 0,
		Excerpt:    strings.Repeat("excerpt ", 30),
		CreatedAt:  at,
	}
	if i%4 != 3 {
		r.Classification = &Classification{Intents: []string{pageIntents[i%3]}}
	}
	if i%5 == 0 {
		r.Cc = []mail.Address{{Email: "Boss@Corp.example"}}
	}
	if i%9 == 0 {
		r.SenderAuth = &SenderAuth{Authenticated: true, Address: fmt.Sprintf("verified%d@auth.example", i%13)}
	}
	if i%23 == 0 {
		r.Date = time.Time{} // no Date: CreatedAt stands for it
	}
	if i%17 == 0 {
		// Longer than an index entry carries: matched on the record.
		r.Subject = "Budget " + strings.Repeat("long ", 300) + fmt.Sprint(i)
	}
	return r
}

// seedMessages writes n messages in one transaction, stored a second apart
// from base, with runs of up to six sharing one instant (so that ties are
// ordered by key), accounts, states, decisions and text mixed.
func seedMessages(tb testing.TB, s *Store, n int, base time.Time) []*MessageRecord {
	tb.Helper()
	var recs []*MessageRecord
	err := s.updateTx(func(tx *bolt.Tx) error {
		for i := range n {
			at := base.Add(time.Duration(i-i%6*((i/6)%2)) * time.Second)
			r := seedMsg(i, at)
			if err := putMessageTx(tx, r, at.Add(time.Duration(i%5)*time.Minute)); err != nil {
				return err
			}
			recs = append(recs, r)
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return recs
}

// reference is what a page walk must give: every record read, filtered by
// this independent reading of MessagePageQuery, sorted newest stored
// first, ties by key descending.
func reference(tb testing.TB, s *Store, q MessagePageQuery) []MessageRecord {
	tb.Helper()
	return referenceOf(readMessages(tb, s), q)
}

// readMessages is every record of s, read in full.
func readMessages(tb testing.TB, s *Store) []MessageRecord {
	tb.Helper()
	var all []MessageRecord
	err := s.ListMessages(MessageFilter{}, func(r *MessageRecord) error {
		all = append(all, *r)
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return all
}

// referenceOf is reference over records already read (all, in the
// store's order).
func referenceOf(all []MessageRecord, q MessagePageQuery) []MessageRecord {
	var out []MessageRecord
	for i := range all {
		if refMatch(q, &all[i]) {
			out = append(out, all[i])
		}
	}
	slices.SortStableFunc(out, func(a, b MessageRecord) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return bytes.Compare(msgKey(b.MessageKey), msgKey(a.MessageKey))
	})
	return out
}

func refMatch(q MessagePageQuery, r *MessageRecord) bool {
	if (q.Account != "" && r.Account != q.Account) || (len(q.Accounts) > 0 && !slices.Contains(q.Accounts, r.Account)) ||
		(q.State != "" && r.State != q.State) || (len(q.Decisions) > 0 && !slices.Contains(q.Decisions, r.Decision)) ||
		(q.Acted && r.TriageOnly) || (!q.UpdatedSince.IsZero() && r.UpdatedAt.Before(q.UpdatedSince)) {
		return false
	}
	d := r.Date
	if d.IsZero() {
		d = r.CreatedAt
	}
	if (!q.Since.IsZero() && d.Before(q.Since)) || (!q.Until.IsZero() && !d.Before(q.Until)) {
		return false
	}
	if q.Intent != "" && (r.Classification == nil || !slices.Contains(r.Classification.Intents, q.Intent)) {
		return false
	}
	for _, w := range q.Subject {
		for _, f := range strings.Fields(w) {
			if !strings.Contains(strings.ToLower(r.Subject), strings.ToLower(f)) {
				return false
			}
		}
	}
	if c := strings.ToLower(strings.TrimSpace(q.Correspondent)); c != "" {
		addrs := []string{r.From.Email, r.SenderAuth.Identity()}
		for _, a := range slices.Concat(r.To, r.Cc, r.ReplyTo) {
			addrs = append(addrs, a.Email)
		}
		return slices.ContainsFunc(addrs, func(a string) bool { return a != "" && strings.Contains(strings.ToLower(a), c) })
	}
	return true
}

func keysOf(recs []MessageRecord) []string {
	out := make([]string, len(recs))
	for i := range recs {
		out[i] = recs[i].MessageKey.String()
	}
	return out
}

// walkMessages pages through q to the end and returns every record in
// order, checking the bounds of each page; partial counts the pages the
// scan budget cut.
func walkMessages(tb testing.TB, s *Store, q MessagePageQuery) (recs []MessageRecord, partial int) {
	tb.Helper()
	for range 100000 {
		p, err := s.MessagePage(q)
		if err != nil {
			tb.Fatal(err)
		}
		if q.Limit > 0 && len(p.Messages) > q.Limit {
			tb.Fatalf("page of %d records; limit %d", len(p.Messages), q.Limit)
		}
		if p.Indexed && q.MaxScan > 0 && p.Examined > q.MaxScan && len(q.Accounts) == 0 && q.Account == "" {
			tb.Fatalf("examined %d entries; budget %d", p.Examined, q.MaxScan)
		}
		if p.Partial {
			partial++
			if p.Next.IsZero() {
				tb.Fatal("a partial page without a cursor to go on from")
			}
		}
		if k := p.Next.Key; k != nil && ((q.Account != "" && k.Account != q.Account) || (len(q.Accounts) > 0 && !slices.Contains(q.Accounts, k.Account))) {
			tb.Fatalf("the cursor names %s, of an account the query excludes", k)
		}
		recs = append(recs, p.Messages...)
		if p.Next.IsZero() {
			return recs, partial
		}
		if !p.Partial && len(p.Messages) == 0 {
			tb.Fatal("an empty page that is not partial, with a cursor")
		}
		q.After = p.Next
	}
	tb.Fatal("the walk does not end")
	return nil, 0
}

var pageBase = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

func pageQueries() []MessagePageQuery {
	return []MessagePageQuery{
		{Limit: 25},
		{Account: "work", Limit: 7},
		{Accounts: []string{"personal", "other"}, Limit: 40},
		{State: StateDone, Decisions: []string{"archive", "ignore", "notify", "auto_send"}, Acted: true, UpdatedSince: pageBase.Add(300 * time.Second), Limit: 10},
		{Since: pageBase.Add(100 * time.Second), Until: pageBase.Add(400 * time.Second), Limit: 9},
		{Intent: "invoice", Limit: 11},
		{Correspondent: " EXAMPLE2.org ", Limit: 13},
		{Correspondent: "verified3@", Limit: 5},
		{Correspondent: "boss@corp", Accounts: []string{"work"}, Limit: 3},
		{Subject: []string{"budget REPORT"}, Limit: 17},
		{Subject: []string{"long"}, Limit: 4},
		{Decisions: []string{"ignore"}, Intent: "newsletter", Subject: []string{"lunch"}, Limit: 6},
		{Correspondent: "nobody@nowhere"},
	}
}

// TestMessagePageMatchesFullRead: walking the pages of a query gives
// exactly the records a full read filters and sorts, each once, in
// order, whatever the limit and the scan budget, indexed or not.
//
// The number of messages is generated volume: each query's walk is
// checked against the full read at any size, and every query still
// matches (no "useless case") from about 200 messages, where the
// UpdatedSince and Since/Until windows start to hold records. Under
// -race, where the walks without the index (a full read per page) cost
// minutes at 700, it is 250.
func TestMessagePageMatchesFullRead(t *testing.T) {
	t.Parallel()
	s, _ := openTest(t)
	seedMessages(t, s, testsize.N(700, 250), pageBase)
	all := readMessages(t, s) // one full read for every query's reference
	for _, q := range pageQueries() {
		want := keysOf(referenceOf(all, q))
		if len(want) == 0 && q.Correspondent != "nobody@nowhere" {
			t.Fatalf("%+v matches nothing: a useless case", q)
		}
		for _, scan := range []int{0, 1, 37, 500} {
			qq := q
			qq.MaxScan = scan
			got, partial := walkMessages(t, s, qq)
			if !slices.Equal(keysOf(got), want) {
				t.Fatalf("%+v, budget %d: %d records %v…; want %d %v…", q, scan, len(got), head(keysOf(got)), len(want), head(want))
			}
			if scan == 1 && partial == 0 {
				t.Errorf("%+v: a budget of 1 entry never cut a page", q)
			}
		}
	}
	// The full-read path (a file without the index) gives the same pages.
	if err := s.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bMeta).Delete(metaMsgCreated) }); err != nil {
		t.Fatal(err)
	}
	all = readMessages(t, s)
	for _, q := range pageQueries() {
		got, _ := walkMessages(t, s, q)
		if want := keysOf(referenceOf(all, q)); !slices.Equal(keysOf(got), want) {
			t.Fatalf("without the index, %+v: %d records, want %d", q, len(got), len(want))
		}
	}
}

func head(s []string) []string { return s[:min(len(s), 3)] }

// checkMsgIndex fails unless the creation index holds exactly one entry
// per record, with the record's key and value.
func checkMsgIndex(tb testing.TB, s *Store) int {
	tb.Helper()
	n := 0
	err := s.db.View(func(tx *bolt.Tx) error {
		idx := tx.Bucket(bIdxMsgCreated)
		if err := tx.Bucket(bMessages).ForEach(func(k, v []byte) error {
			n++
			var r MessageRecord
			if err := getJSON(tx.Bucket(bMessages), k, &r); err != nil {
				return err
			}
			if got := idx.Get(msgCreatedKey(k, &r)); !bytes.Equal(got, msgIdxVal(&r)) {
				return fmt.Errorf("%s: index value %q, want %q", r.MessageKey, got, msgIdxVal(&r))
			}
			return nil
		}); err != nil {
			return err
		}
		if e := idx.Stats().KeyN; e != n {
			return fmt.Errorf("%d index entries for %d records", e, n)
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return n
}

// TestMessageIndexFollowsWrites: every write of a message (put, outcome,
// batch, thread relabel, a contact forgotten, a repair) leaves the index
// with one up-to-date entry per record, and a page sees the latest record.
func TestMessageIndexFollowsWrites(t *testing.T) {
	t.Parallel()
	s, clk := openTest(t)
	recs := seedMessages(t, s, 120, pageBase)
	checkMsgIndex(t, s)

	r := recs[5]
	r.Decision, r.Subject, r.State = "ignore", "Changed subject zebra", StateDone
	clk.Advance(time.Hour)
	mustPut(t, s, r)
	checkMsgIndex(t, s)
	p, err := s.MessagePage(MessagePageQuery{Subject: []string{"zebra"}})
	if err != nil || len(p.Messages) != 1 || p.Messages[0].Decision != "ignore" || !p.Messages[0].CreatedAt.Equal(recs[5].CreatedAt) {
		t.Fatalf("after an update: %v %+v; want the one changed record, its arrival kept", err, p)
	}
	if p, _ := s.MessagePage(MessagePageQuery{Subject: []string{"zebra"}, Decisions: []string{pageDecisions[5]}}); len(p.Messages) != 0 {
		t.Fatalf("the old decision still matches: %v", keysOf(p.Messages))
	}

	fresh := seedMsg(5000, time.Time{})
	fresh.CreatedAt = time.Time{}
	if err := s.PutOutcome(fresh, &Trace{TraceID: "tr1", Message: fresh.MessageKey}, "2025-03-01", 0, 0); err != nil {
		t.Fatal(err)
	}
	b := NewBatch(s, 10)
	for i := range 15 {
		if err := b.PutOutcome(seedMsg(6000+i, time.Time{}), &Trace{TraceID: fmt.Sprint("tb", i), Message: seedMsg(6000+i, time.Time{}).MessageKey}, "2025-03-01", 0, 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := s.RelabelThread("t3", "t4"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.UpdateContact("work", "person1@example1.org", func(c *Contact) error { c.Notes = []string{"n"}; return nil }); err != nil {
		t.Fatal(err)
	}
	if err := s.ForgetContact("work", "person1@example1.org"); err != nil {
		t.Fatal(err)
	}
	if n := checkMsgIndex(t, s); n != 120+1+15 {
		t.Fatalf("%d records, want 136", n)
	}
	p, err = s.MessagePage(MessagePageQuery{Limit: 1})
	if err != nil || len(p.Messages) != 1 || !p.Messages[0].CreatedAt.Equal(clk.Now()) {
		t.Fatalf("newest first: %v %+v; want a record stored now", err, p.Messages)
	}

	// A repair empties the index and fills it again.
	if err := s.db.Update(func(tx *bolt.Tx) error {
		if err := tx.Bucket(bIdxMsgCreated).Put([]byte("\x00\x00\x00\x00\x00\x00\x00\x01\x00junk"), []byte("junk")); err != nil {
			return err
		}
		return rebuildIndexes(tx)
	}); err != nil {
		t.Fatal(err)
	}
	checkMsgIndex(t, s)
	got, _ := walkMessages(t, s, MessagePageQuery{Limit: 50})
	if want := keysOf(reference(t, s, MessagePageQuery{})); !slices.Equal(keysOf(got), want) {
		t.Fatalf("after a repair: %d records, want %d", len(got), len(want))
	}
}

// TestMessagePageStableUnderInserts: messages stored and updated between
// two pages neither repeat nor skip one that was there before; a message
// stored after the walk began does not turn up in its later pages unless
// it was stored earlier than the cursor (an import with its own arrival).
func TestMessagePageStableUnderInserts(t *testing.T) {
	t.Parallel()
	s, clk := openTest(t)
	clk.t = pageBase.Add(time.Hour)
	seedMessages(t, s, 400, pageBase)
	before := reference(t, s, MessagePageQuery{})
	q := MessagePageQuery{Limit: 30}
	p, err := s.MessagePage(q)
	if err != nil {
		t.Fatal(err)
	}
	seen := keysOf(p.Messages)
	for round := range 20 {
		// New mail, mail updated (a decision taken, a thread relabelled)
		// and a page, in turn.
		clk.Advance(time.Second)
		mustPut(t, s, seedMsg(10000+round, time.Time{}))
		old := seedMsg(20000+round, pageBase.Add(time.Duration(round*17)*time.Second)) // stored with an old arrival
		mustPut(t, s, old)
		upd, err := s.GetMessage(before[(round*37)%len(before)].MessageKey)
		if err != nil {
			t.Fatal(err)
		}
		upd.Decision = "archive"
		mustPut(t, s, upd)
		if err := s.RelabelThread(fmt.Sprint("t", round), "t39"); err != nil {
			t.Fatal(err)
		}
		if p.Next.IsZero() {
			break
		}
		q.After = p.Next
		if p, err = s.MessagePage(q); err != nil {
			t.Fatal(err)
		}
		seen = append(seen, keysOf(p.Messages)...)
	}
	for !p.Next.IsZero() {
		q.After = p.Next
		if p, err = s.MessagePage(q); err != nil {
			t.Fatal(err)
		}
		seen = append(seen, keysOf(p.Messages)...)
	}
	count := map[string]int{}
	for _, k := range seen {
		count[k]++
	}
	for _, r := range before {
		if n := count[r.MessageKey.String()]; n != 1 {
			t.Errorf("%s, there before the walk, came %d times", r.MessageKey, n)
		}
	}
	for k, n := range count {
		if n != 1 {
			t.Errorf("%s came %d times", k, n)
		}
	}
	for i := range 20 {
		if k := seedMsg(10000+i, time.Time{}).MessageKey.String(); count[k] != 0 {
			t.Errorf("%s, stored after the first page and newer than it, turned up in a later page", k)
		}
	}
}

// TestMessagePageBudgetHidesOtherAccounts: a page cut by its scan budget
// where the last entry examined belongs to an account the query excludes
// goes on from before that entry's instant, never naming it, and the walk
// still gives every record once.
func TestMessagePageBudgetHidesOtherAccounts(t *testing.T) {
	t.Parallel()
	s, _ := openTest(t)
	// Runs of ten messages stored at one instant: one visible, first in
	// the newest-first order, then nine of a hidden account.
	err := s.updateTx(func(tx *bolt.Tx) error {
		for i := range 300 {
			at := pageBase.Add(time.Duration(i/10) * time.Second)
			r := seedMsg(i, at)
			r.Account = "alpha"
			if i%10 == 9 {
				r.Account = "personal"
			}
			if err := putMessageTx(tx, r, at); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	q := MessagePageQuery{Accounts: []string{"personal"}, Limit: 5, MaxScan: 3}
	want := keysOf(reference(t, s, q))
	got, partial := walkMessages(t, s, q)
	if !slices.Equal(keysOf(got), want) || len(want) != 30 || partial == 0 {
		t.Fatalf("%d records (%d partial pages), want %d", len(got), partial, len(want))
	}
	p, err := s.MessagePage(q)
	if err != nil || !p.Partial || p.Next.Key != nil || p.Examined > 10 {
		t.Fatalf("first page: %v %+v; want partial, a cursor without a key, at most one instant examined", err, p)
	}
}

// TestMessagePageBadCursor: a cursor whose key could not be a message's is
// refused; one past the end or before the start is an empty page.
func TestMessagePageBadCursor(t *testing.T) {
	t.Parallel()
	s, _ := openTest(t)
	seedMessages(t, s, 50, pageBase)
	for _, k := range []MessageKey{{Account: "", Mailbox: "INBOX"}, {Account: "a\x00b", Mailbox: "INBOX"}, {Account: "a", Mailbox: ""}} {
		if _, err := s.MessagePage(MessagePageQuery{After: MessageCursor{CreatedAt: pageBase, Key: &k}}); err == nil {
			t.Errorf("cursor key %q: no error", k)
		}
	}
	k := MessageKey{Account: "zzz", Mailbox: "x"}
	if p, err := s.MessagePage(MessagePageQuery{After: MessageCursor{CreatedAt: time.Unix(0, 1), Key: &k}}); err != nil || len(p.Messages) != 0 || !p.Next.IsZero() {
		t.Fatalf("a cursor older than everything: %v %+v", err, p)
	}
	p, err := s.MessagePage(MessagePageQuery{After: MessageCursor{CreatedAt: pageBase.Add(1000 * time.Hour), Key: &k}, Limit: 100})
	if err != nil || len(p.Messages) != 50 {
		t.Fatalf("a cursor newer than everything: %v, %d records", err, len(p.Messages))
	}
}

// TestMessagePageIndexBuiltOnOpen: a file written before the index
// existed gets it on its first read-write open; opened read-only before
// that, a page is still right (from a full read).
func TestMessagePageIndexBuiltOnOpen(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "state.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	seedMessages(t, s, 300, pageBase)
	q := MessagePageQuery{State: StateDone, Limit: 20}
	want := keysOf(reference(t, s, q))
	if err := s.db.Update(func(tx *bolt.Tx) error { // the old layout
		if err := tx.DeleteBucket(bIdxMsgCreated); err != nil {
			return err
		}
		return tx.Bucket(bMeta).Delete(metaMsgCreated)
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
	p, err := ro.MessagePage(q)
	if err != nil || p.Indexed || !slices.Equal(keysOf(p.Messages), want[:20]) {
		t.Fatalf("read-only, no index: %v, indexed %v; want the first 20 of the full read", err, p.Indexed)
	}
	if got, _ := walkMessages(t, ro, q); !slices.Equal(keysOf(got), want) {
		t.Fatalf("read-only walk: %d records, want %d", len(got), len(want))
	}
	if err := ro.Close(); err != nil {
		t.Fatal(err)
	}
	rw, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rw.Close() }()
	p, err = rw.MessagePage(q)
	if err != nil || !p.Indexed || !slices.Equal(keysOf(p.Messages), want[:20]) {
		t.Fatalf("after a read-write open: %v, indexed %v; want the index built", err, p.Indexed)
	}
	checkMsgIndex(t, rw)
}
