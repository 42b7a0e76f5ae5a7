package store

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

func dueIDsOf(t *testing.T, s *Store, status string, before time.Time) []string {
	t.Helper()
	var ids []string
	if err := s.DueOutbox(status, before, func(r *OutboxRecord) error {
		if r.Raw != nil {
			t.Errorf("DueOutbox returned the raw message of %s", r.ID)
		}
		ids = append(ids, r.ID)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return ids
}

func TestDueOutboxAndNextDue(t *testing.T) {
	t.Parallel()
	s, clk := openTest(t)
	t0 := clk.Now()
	if _, ok, _ := s.NextDue(); ok {
		t.Fatal("NextDue on an empty store")
	}
	for i, d := range []time.Duration{30 * time.Second, 10 * time.Second, 2 * time.Hour} {
		if err := s.PutOutbox(&OutboxRecord{ID: fmt.Sprintf("s%d", i), Status: OutboxScheduled, SendAt: t0.Add(d), Raw: []byte("x")}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 100 { // history: never read by the due queries
		if err := s.PutOutbox(&OutboxRecord{ID: fmt.Sprintf("h%03d", i), Status: OutboxAppended, Raw: []byte("old")}); err != nil {
			t.Fatal(err)
		}
	}
	if got := dueIDsOf(t, s, OutboxScheduled, t0); len(got) != 0 {
		t.Fatalf("due now: %v", got)
	}
	if got := dueIDsOf(t, s, OutboxScheduled, t0.Add(30*time.Second)); !slices.Equal(got, []string{"s1", "s0"}) {
		t.Fatalf("due in 30s: %v, want [s1 s0] (earliest first)", got)
	}
	next, ok, err := s.NextDue()
	if err != nil || !ok || !next.Equal(t0.Add(10*time.Second)) {
		t.Fatalf("NextDue: %v %v %v", next, ok, err)
	}
	// A transition moves the entry: s1 sent, no longer due.
	if _, err := s.TransitionOutbox("s1", []string{OutboxScheduled}, OutboxPending, nil); err != nil {
		t.Fatal(err)
	}
	if got := dueIDsOf(t, s, OutboxScheduled, t0.Add(time.Minute)); !slices.Equal(got, []string{"s0"}) {
		t.Fatalf("after transition: %v", got)
	}
	// Pending is due after the retry backoff of its attempts.
	if got := dueIDsOf(t, s, OutboxPending, t0.Add(59*time.Second)); len(got) != 0 {
		t.Fatalf("pending due before its backoff: %v", got)
	}
	if got := dueIDsOf(t, s, OutboxPending, t0.Add(time.Minute)); !slices.Equal(got, []string{"s1"}) {
		t.Fatalf("pending after backoff: %v", got)
	}
	if _, err := s.TransitionOutbox("s1", []string{OutboxPending}, OutboxPending, func(r *OutboxRecord) error { r.Attempts = 3; return nil }); err != nil {
		t.Fatal(err)
	}
	if got := dueIDsOf(t, s, OutboxPending, t0.Add(3*time.Minute)); len(got) != 0 {
		t.Fatalf("3 attempts due after 3m: %v (backoff is 4m)", got)
	}
	if got := dueIDsOf(t, s, OutboxPending, t0.Add(4*time.Minute)); !slices.Equal(got, []string{"s1"}) {
		t.Fatalf("3 attempts after 4m: %v", got)
	}
	// The full record still has its raw message.
	if r, err := s.GetOutbox("s1"); err != nil || string(r.Raw) != "x" {
		t.Fatalf("GetOutbox: %v %v", r, err)
	}
	// Snoozed queue items.
	if err := s.PutQueueItem(&QueueItem{ID: "z", Status: QueueSnoozed, SnoozeUntil: t0.Add(5 * time.Second)}); err != nil {
		t.Fatal(err)
	}
	if next, _, _ := s.NextDue(); !next.Equal(t0.Add(5 * time.Second)) {
		t.Fatalf("NextDue with a snooze: %v", next)
	}
	var woke []string
	_ = s.DueQueue(QueueSnoozed, t0.Add(5*time.Second), func(q *QueueItem) error { woke = append(woke, q.ID); return nil })
	if !slices.Equal(woke, []string{"z"}) {
		t.Fatalf("DueQueue: %v", woke)
	}
	if _, err := s.TransitionQueueItem("z", []string{QueueSnoozed}, QueuePending, nil); err != nil {
		t.Fatal(err)
	}
	woke = nil
	_ = s.DueQueue(QueueSnoozed, t0.Add(time.Hour), func(q *QueueItem) error { woke = append(woke, q.ID); return nil })
	if len(woke) != 0 {
		t.Fatalf("woken item still due: %v", woke)
	}
	// ListOutbox by status reads the index and keeps its contract.
	var appended int
	_ = s.ListOutbox(OutboxAppended, func(r *OutboxRecord) error {
		if string(r.Raw) != "old" {
			t.Errorf("ListOutbox without raw: %s", r.ID)
		}
		appended++
		return nil
	})
	if appended != 100 {
		t.Fatalf("ListOutbox(appended): %d", appended)
	}
}

func TestPrune(t *testing.T) {
	t.Parallel()
	s, clk := openTest(t)
	put := func(id, status string) {
		t.Helper()
		if err := s.PutOutbox(&OutboxRecord{ID: id, Status: status, Raw: []byte("raw"), Body: "body"}); err != nil {
			t.Fatal(err)
		}
	}
	putQ := func(id, status string) {
		t.Helper()
		if err := s.PutQueueItem(&QueueItem{ID: id, Status: status}); err != nil {
			t.Fatal(err)
		}
	}
	put("old-appended", OutboxAppended)
	put("old-failed", OutboxFailed)
	put("old-cancelled", OutboxCancelled)
	putQ("old-sent", QueueSent)
	putQ("old-pending", QueuePending)
	putQ("old-rejected", QueueRejected)
	clk.Advance(10 * 24 * time.Hour)
	put("mid-appended", OutboxAppended)
	clk.Advance(85 * 24 * time.Hour)
	put("new-appended", OutboxAppended)
	putQ("new-sent", QueueSent)

	rep, err := s.Prune(PruneOptions{Retention: 90 * 24 * time.Hour, RawAfter: 7 * 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if rep.OutboxDeleted != 2 || rep.QueueDeleted != 2 || rep.RawDropped != 1 {
		t.Fatalf("report %+v", rep)
	}
	for id, want := range map[string]bool{"old-appended": false, "old-cancelled": false, "old-failed": true, "mid-appended": true, "new-appended": true} {
		r, err := s.GetOutbox(id)
		if (err == nil) != want {
			t.Errorf("outbox %s kept=%v, want %v", id, err == nil, want)
		}
		if id == "mid-appended" && r != nil && (r.Raw != nil || !r.RawPruned || r.Body != "body") {
			t.Errorf("mid-appended: raw %q pruned %v body %q", r.Raw, r.RawPruned, r.Body)
		}
		if id == "new-appended" && r != nil && string(r.Raw) != "raw" {
			t.Errorf("recent raw dropped")
		}
		if id == "old-failed" && r != nil && string(r.Raw) != "raw" {
			t.Errorf("failed record's raw dropped (a re-approval may resend it)")
		}
	}
	for id, want := range map[string]bool{"old-sent": false, "old-rejected": false, "old-pending": true, "new-sent": true} {
		if _, err := s.GetQueueItem(id); (err == nil) != want {
			t.Errorf("queue %s kept=%v, want %v", id, err == nil, want)
		}
	}
	// Indexes follow: nothing listed that is gone.
	n := 0
	_ = s.ListOutbox(OutboxAppended, func(*OutboxRecord) error { n++; return nil })
	if n != 2 {
		t.Fatalf("ListOutbox(appended) after prune: %d", n)
	}
	// PruneIfDue: once per interval.
	if _, ran, err := s.PruneIfDue(clk.Now()); err != nil || !ran {
		t.Fatalf("first PruneIfDue: %v %v", ran, err)
	}
	if _, ran, _ := s.PruneIfDue(clk.Now().Add(time.Hour)); ran {
		t.Fatal("PruneIfDue ran again within the interval")
	}
	if _, ran, _ := s.PruneIfDue(clk.Now().Add(25 * time.Hour)); !ran {
		t.Fatal("PruneIfDue did not run after the interval")
	}
}

// TestMigrateSchema1: a file written by the first layout (raw messages
// inline, no indexes, no meta marker) is read as before by a read-only
// open, and upgraded by a read-write one.
func TestMigrateSchema1(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "old.db")
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bMessages, bIdxMsgID, bIdxThread, bIdxState, bTraces, bIdxTraceMID, bCheckpoints, bUsage, bQueue, bOutbox, bContacts, bAutoSend, bMeta, bThreadIn, bStateCount} {
			if _, err := tx.CreateBucket(b); err != nil {
				return err
			}
		}
		for i, st := range []string{OutboxScheduled, OutboxAppended, OutboxPending} {
			r := OutboxRecord{ID: fmt.Sprintf("o%d", i), Status: st, Raw: []byte("raw" + st), SendAt: now, UpdatedAt: now}
			v, _ := json.Marshal(r)
			if err := tx.Bucket(bOutbox).Put([]byte(r.ID), v); err != nil {
				return err
			}
		}
		v, _ := json.Marshal(QueueItem{ID: "q", Status: QueueSnoozed, SnoozeUntil: now})
		return tx.Bucket(bQueue).Put([]byte("q"), v)
	})
	if err != nil {
		t.Fatal(err)
	}
	_ = db.Close()

	check := func(s *Store) {
		t.Helper()
		if got := dueIDsOf(t, s, OutboxScheduled, now); !slices.Equal(got, []string{"o0"}) {
			t.Fatalf("due scheduled: %v", got)
		}
		if r, err := s.GetOutbox("o1"); err != nil || string(r.Raw) != "raw"+OutboxAppended {
			t.Fatalf("GetOutbox: %+v %v", r, err)
		}
		var snoozed []string
		_ = s.DueQueue(QueueSnoozed, now, func(q *QueueItem) error { snoozed = append(snoozed, q.ID); return nil })
		if !slices.Equal(snoozed, []string{"q"}) {
			t.Fatalf("snoozed: %v", snoozed)
		}
		if next, ok, err := s.NextDue(); err != nil || !ok || !next.Equal(now) {
			t.Fatalf("NextDue: %v %v %v", next, ok, err)
		}
	}
	ro, err := Open(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if ro.Info().Schema != 1 || ro.indexed {
		t.Fatalf("read-only old file: %+v", ro.Info())
	}
	check(ro)
	_ = ro.Close()
	rw, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rw.Close() }()
	if rw.Info().Schema != SchemaVersion || !rw.indexed || rw.Info().Fresh {
		t.Fatalf("after migration: %+v", rw.Info())
	}
	check(rw)
	// The raw message left the record.
	_ = rw.view(func(tx *bolt.Tx) error {
		var head map[string]any
		_ = json.Unmarshal(tx.Bucket(bOutbox).Get([]byte("o1")), &head)
		if head["raw"] != nil {
			t.Errorf("raw still inline after migration")
		}
		return nil
	})
}
