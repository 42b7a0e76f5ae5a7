package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/mailagent/mailagent/internal/mail"
)

// openTest opens a fresh store with a controllable clock. It does not
// fsync its commits (NoSync; Close flushes them): no test of it is about
// durability (those open their stores themselves), and the fsyncs were
// most of the package's waiting.
func openTest(t testing.TB) (*Store, *fakeClock) {
	t.Helper()
	return openTestIn(t, t.TempDir())
}

// openTestIn is openTest of dir/state.db, which may exist already.
func openTestIn(t testing.TB, dir string) (*Store, *fakeClock) {
	t.Helper()
	path := filepath.Join(dir, "state.db")
	s, err := Open(path, Options{Timeout: 200 * time.Millisecond, NoSync: true})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	clk := &fakeClock{t: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)}
	s.now = clk.Now
	return s, clk
}

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func msg(account, mailbox string, uidv, uid uint32, state State) *MessageRecord {
	return &MessageRecord{
		MessageKey: MessageKey{Account: account, Mailbox: mailbox, UIDValidity: uidv, UID: uid},
		MessageID:  fmt.Sprintf("m%d-%d@example.com", uidv, uid),
		State:      state,
	}
}

func mustPut(t testing.TB, s *Store, recs ...*MessageRecord) {
	t.Helper()
	for _, r := range recs {
		if err := s.PutMessage(r); err != nil {
			t.Fatalf("PutMessage %s: %v", r.MessageKey, err)
		}
	}
}

func uids(recs []*MessageRecord) []uint32 {
	var out []uint32
	for _, r := range recs {
		out = append(out, r.UID)
	}
	return out
}

func TestOpenLocked(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "state.db")
	first, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = first.Close() }()

	// bbolt's flock belongs to the open file description, so a second Open
	// in the same process contends exactly as another process would.
	_, err = Open(path, Options{Timeout: 100 * time.Millisecond})
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("got %v, want ErrLocked", err)
	}
	want := "the state database " + path + " is in use; is `mailagent watch` running?"
	if err.Error() != want {
		t.Errorf("got %q, want %q", err, want)
	}
	var le *LockedError
	if !errors.As(err, &le) || le.Path != path {
		t.Errorf("got %#v, want a *LockedError for %s", err, path)
	}
	_, err = Open(path, Options{ReadOnly: true, Timeout: 100 * time.Millisecond})
	if !errors.Is(err, ErrLocked) {
		t.Errorf("read-only open while locked: got %v, want ErrLocked", err)
	}

	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	second, err := Open(path, Options{Timeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatalf("open after close: %v", err)
	}
	_ = second.Close()
}

func TestOpenMode(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fresh := filepath.Join(dir, "fresh.db")
	s, err := Open(fresh, Options{})
	if err != nil {
		t.Fatal(err)
	}
	_ = s.Close()
	if fi, _ := os.Stat(fresh); fi.Mode().Perm() != 0o600 {
		t.Errorf("new file: got mode %04o, want 0600", fi.Mode().Perm())
	}
	if err := os.Chmod(fresh, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err = Open(fresh, Options{})
	if err != nil {
		t.Fatal(err)
	}
	_ = s.Close()
	if fi, _ := os.Stat(fresh); fi.Mode().Perm() != 0o600 {
		t.Errorf("loose file: got mode %04o after Open, want 0600", fi.Mode().Perm())
	}
}

func TestReadOnly(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "state.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	mustPut(t, s, msg("a", "INBOX", 1, 1, StateDone))
	_ = s.Close()

	r1, err := Open(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = r1.Close() }()
	r2, err := Open(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("second read-only open: got %v, want shared lock", err)
	}
	defer func() { _ = r2.Close() }()
	if _, err := r2.GetMessage(MessageKey{"a", "INBOX", 1, 1}); err != nil {
		t.Errorf("read: %v", err)
	}
	if err := r1.PutMessage(msg("a", "INBOX", 1, 2, StateDone)); err == nil {
		t.Error("write on a read-only store: got nil error")
	}
}

func TestMessageRoundTrip(t *testing.T) {
	t.Parallel()
	s, clk := openTest(t)
	in := msg("personal", "INBOX", 7, 42, StateFetched)
	in.From = mail.Address{Name: "Bob", Email: "bob@example.com"}
	in.Subject = "hello"
	in.Classification = &Classification{Intents: []string{"question"}, Confidence: 0.9}
	mustPut(t, s, in)
	created := clk.Now()

	got, err := s.GetMessage(in.MessageKey)
	if err != nil {
		t.Fatal(err)
	}
	if got.Subject != "hello" || got.From.Email != "bob@example.com" || got.Classification.Confidence != 0.9 {
		t.Errorf("got %+v, want the record written", got)
	}
	if !got.CreatedAt.Equal(created) || !got.UpdatedAt.Equal(created) {
		t.Errorf("timestamps: got %v/%v, want %v", got.CreatedAt, got.UpdatedAt, created)
	}

	clk.Advance(time.Minute)
	got.State = StateDone
	got.CreatedAt = time.Time{} // a careless caller must not reset it
	mustPut(t, s, got)
	again, _ := s.GetMessage(in.MessageKey)
	if !again.CreatedAt.Equal(created) {
		t.Errorf("CreatedAt: got %v, want %v kept", again.CreatedAt, created)
	}
	if !again.UpdatedAt.Equal(created.Add(time.Minute)) {
		t.Errorf("UpdatedAt: got %v, want %v", again.UpdatedAt, created.Add(time.Minute))
	}

	_, err = s.GetMessage(MessageKey{"personal", "INBOX", 7, 43})
	if !errors.Is(err, ErrNotFound) {
		t.Errorf("missing: got %v, want ErrNotFound", err)
	}
	for _, bad := range []*MessageRecord{msg("", "INBOX", 1, 1, StateFetched), msg("a", "", 1, 1, StateFetched), msg("a\x00b", "INBOX", 1, 1, StateFetched)} {
		if err := s.PutMessage(bad); err == nil {
			t.Errorf("PutMessage(%q,%q): got nil error, want refusal", bad.Account, bad.Mailbox)
		}
	}
}

func TestFindByMessageID(t *testing.T) {
	t.Parallel()
	s, _ := openTest(t)
	inbox := msg("personal", "INBOX", 1, 1, StateDone)
	inbox.MessageID = "CAF+Abc@Mail.Example.com"
	sent := msg("personal", "Sent", 1, 9, StateDone)
	sent.MessageID = "caf+abc@mail.example.com"
	work := msg("work", "INBOX", 1, 1, StateDone)
	work.MessageID = "CAF+abc@mail.example.com"
	prefixTrap := msg("personal", "INBOX", 1, 2, StateDone)
	prefixTrap.MessageID = "caf+abc@mail.example.com.evil"
	mustPut(t, s, inbox, sent, work, prefixTrap)

	tests := []struct {
		name    string
		account string
		id      string
		want    []string // account/mailbox
	}{
		{"exact case", "personal", "CAF+Abc@Mail.Example.com", []string{"personal/INBOX", "personal/Sent"}},
		{"lower case with brackets", "personal", "<caf+abc@mail.example.com>", []string{"personal/INBOX", "personal/Sent"}},
		{"other account", "work", "caf+ABC@mail.example.com", []string{"work/INBOX"}},
		{"every account", "", "caf+abc@mail.example.com", []string{"personal/INBOX", "personal/Sent", "work/INBOX"}},
		{"unknown", "personal", "nope@example.com", nil},
		{"empty", "personal", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			recs, err := s.FindByMessageID(tt.account, tt.id)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range recs {
				got = append(got, r.Account+"/"+r.Mailbox)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}

	// Changing the message id moves the index entry.
	inbox.MessageID = "new@example.com"
	mustPut(t, s, inbox)
	recs, _ := s.FindByMessageID("personal", "caf+abc@mail.example.com")
	if len(recs) != 1 || recs[0].Mailbox != "Sent" {
		t.Errorf("after re-id: got %d records, want only Sent", len(recs))
	}
}

func TestListMessages(t *testing.T) {
	t.Parallel()
	s, clk := openTest(t)
	base := clk.Now()
	// Written out of UID order, across two mailboxes and accounts.
	for _, uid := range []uint32{30, 4, 17, 1, 256, 1000} {
		r := msg("personal", "INBOX", 5, uid, StateDone)
		r.Date = base.Add(time.Duration(uid) * time.Hour)
		if uid%2 == 0 {
			r.State = StateNeedsReview
		}
		mustPut(t, s, r)
	}
	mustPut(t, s, msg("personal", "INBOXX", 5, 2, StateDone), msg("personal", "Sent", 5, 3, StateDone), msg("work", "INBOX", 5, 1, StateDone))

	list := func(f MessageFilter) []uint32 {
		t.Helper()
		var got []*MessageRecord
		if err := s.ListMessages(f, func(r *MessageRecord) error { got = append(got, r); return nil }); err != nil {
			t.Fatal(err)
		}
		return uids(got)
	}
	tests := []struct {
		name string
		f    MessageFilter
		want []uint32
	}{
		{"mailbox in UID order", MessageFilter{Account: "personal", Mailbox: "INBOX"}, []uint32{1, 4, 17, 30, 256, 1000}},
		{"state", MessageFilter{Account: "personal", Mailbox: "INBOX", State: StateNeedsReview}, []uint32{4, 30, 256, 1000}},
		{"limit", MessageFilter{Account: "personal", Mailbox: "INBOX", Limit: 2}, []uint32{1, 4}},
		{"since", MessageFilter{Account: "personal", Mailbox: "INBOX", Since: base.Add(20 * time.Hour)}, []uint32{30, 256, 1000}},
		{"account", MessageFilter{Account: "work"}, []uint32{1}},
		{"mailbox without account", MessageFilter{Mailbox: "Sent"}, []uint32{3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := list(tt.f); !slices.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}

	t.Run("callback may write", func(t *testing.T) {
		n := 0
		err := s.ListMessages(MessageFilter{Account: "personal", Mailbox: "INBOX"}, func(r *MessageRecord) error {
			r.Attempts++
			n++
			return s.PutMessage(r)
		})
		if err != nil || n != 6 {
			t.Fatalf("got %d calls, %v; want 6, nil", n, err)
		}
	})
	t.Run("callback error stops", func(t *testing.T) {
		stop := errors.New("enough")
		n := 0
		err := s.ListMessages(MessageFilter{}, func(*MessageRecord) error { n++; return stop })
		if !errors.Is(err, stop) || n != 1 {
			t.Errorf("got %d calls, %v; want 1, %v", n, err, stop)
		}
	})
}

func TestListMessagesAcrossBatches(t *testing.T) {
	t.Parallel()
	s, _ := openTest(t)
	const n = batchSize*2 + 17
	if err := s.updateTx(func(tx *bolt.Tx) error { // one commit, as PutMessage writes each
		for i := 1; i <= n; i++ {
			if err := putMessageTx(tx, msg("a", "INBOX", 1, uint32(i), StateDone), s.now().UTC()); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var got []uint32
	err := s.ListMessages(MessageFilter{Account: "a", Mailbox: "INBOX"}, func(r *MessageRecord) error {
		got = append(got, r.UID)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != n || !slices.IsSorted(got) || got[0] != 1 || got[n-1] != n {
		t.Errorf("got %d uids (first %d), want 1..%d in order", len(got), got[0], n)
	}
	got = got[:0]
	_ = s.ListMessages(MessageFilter{State: StateDone}, func(r *MessageRecord) error { got = append(got, r.UID); return nil })
	if len(got) != n {
		t.Errorf("state index: got %d, want %d", len(got), n)
	}
}

func TestThreadsAndCounts(t *testing.T) {
	t.Parallel()
	s, clk := openTest(t)
	base := clk.Now()
	a := msg("p", "INBOX", 1, 1, StateDone)
	a.ThreadID, a.Date = "t1", base.Add(2*time.Hour)
	b := msg("p", "INBOX", 1, 2, StateNeedsReview)
	b.ThreadID, b.Date = "t1", base
	c := msg("p", "Sent", 1, 1, StateDone)
	c.ThreadID, c.Date = "t1", base.Add(time.Hour)
	d := msg("p", "INBOX", 1, 3, StateFetched)
	d.ThreadID, d.Date = "t2", base.Add(3*time.Hour)
	mustPut(t, s, a, b, c, d)
	q := &QueueItem{ID: NewID(), ThreadID: "t2", Status: QueuePending}
	if err := s.PutQueueItem(q); err != nil {
		t.Fatal(err)
	}

	got, err := s.ThreadMessages("t1", 0)
	if err != nil {
		t.Fatal(err)
	}
	if want := []time.Time{b.Date, c.Date, a.Date}; len(got) != 3 || !got[0].Date.Equal(want[0]) || !got[2].Date.Equal(want[2]) {
		t.Errorf("thread order: got %v, want oldest first, newest last", uids(got))
	}
	last, _ := s.ThreadMessages("t1", 2)
	if len(last) != 2 || !last[1].Date.Equal(a.Date) {
		t.Errorf("limit 2: got %d messages, want the newest 2", len(last))
	}

	counts, err := s.CountByState()
	if err != nil {
		t.Fatal(err)
	}
	if counts[StateDone] != 2 || counts[StateNeedsReview] != 1 || counts[StateFetched] != 1 {
		t.Errorf("counts: got %v, want done:2 needs_review:1 fetched:1", counts)
	}

	if err := s.RelabelThread("t2", "t1"); err != nil {
		t.Fatal(err)
	}
	merged, _ := s.ThreadMessages("t1", 0)
	if len(merged) != 4 || merged[3].UID != 3 {
		t.Errorf("after merge: got %v, want 4 messages ending with uid 3", uids(merged))
	}
	if old, _ := s.ThreadMessages("t2", 0); len(old) != 0 {
		t.Errorf("old thread: got %d messages, want 0", len(old))
	}
	rec, _ := s.GetMessage(d.MessageKey)
	if rec.ThreadID != "t1" {
		t.Errorf("record thread: got %q, want t1", rec.ThreadID)
	}
	qi, _ := s.GetQueueItem(q.ID)
	if qi.ThreadID != "t1" {
		t.Errorf("queue item thread: got %q, want t1", qi.ThreadID)
	}
	// Counts survive the rewrite (indexes not duplicated).
	counts, _ = s.CountByState()
	if counts[StateDone]+counts[StateNeedsReview]+counts[StateFetched] != 4 {
		t.Errorf("counts after relabel: got %v, want 4 in total", counts)
	}
}

func TestAdvanceCheckpoint(t *testing.T) {
	t.Parallel()
	type rec struct {
		uid   uint32
		state State
	}
	tests := []struct {
		name    string
		start   *Checkpoint // stored before the call
		records []rec
		uidv    uint32
		want    uint32
	}{
		{"empty mailbox", nil, nil, 9, 0},
		{"contiguous terminal", nil, []rec{{1, StateDone}, {2, StateNeedsReview}, {3, StateDone}}, 9, 3},
		{"gaps do not block", nil, []rec{{2, StateDone}, {7, StateDone}, {50, StateDone}}, 9, 50},
		{"non-terminal blocks", nil, []rec{{1, StateDone}, {2, StateClassified}, {3, StateDone}}, 9, 1},
		{"first non-terminal", nil, []rec{{1, StateFetched}, {2, StateDone}}, 9, 0},
		{"resumes from LastUID", &Checkpoint{UIDValidity: 9, LastUID: 5}, []rec{{3, StateFetched}, {6, StateDone}, {8, StateActed}}, 9, 6},
		{"uidvalidity change resets", &Checkpoint{UIDValidity: 8, LastUID: 500}, []rec{{1, StateDone}, {2, StateParsed}}, 9, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := openTest(t)
			if tt.start != nil {
				if err := s.SetCheckpoint("p", "INBOX", *tt.start); err != nil {
					t.Fatal(err)
				}
			}
			for _, r := range tt.records {
				mustPut(t, s, msg("p", "INBOX", tt.uidv, r.uid, r.state))
			}
			// Noise that must not count: other uidvalidity, mailbox, account.
			mustPut(t, s, msg("p", "INBOX", tt.uidv+1, 1000, StateDone), msg("p", "INBOX2", tt.uidv, 1000, StateDone), msg("q", "INBOX", tt.uidv, 1000, StateDone))
			cp, err := s.AdvanceCheckpoint("p", "INBOX", tt.uidv)
			if err != nil {
				t.Fatal(err)
			}
			if cp.LastUID != tt.want || cp.UIDValidity != tt.uidv {
				t.Errorf("got %d@%d, want %d@%d", cp.LastUID, cp.UIDValidity, tt.want, tt.uidv)
			}
			stored, ok, err := s.Checkpoint("p", "INBOX")
			if err != nil || !ok || stored.LastUID != cp.LastUID || stored.UIDValidity != cp.UIDValidity {
				t.Errorf("stored: got %+v ok=%v err=%v, want %+v", stored, ok, err, cp)
			}
		})
	}

	t.Run("advances after the blocker finishes", func(t *testing.T) {
		s, _ := openTest(t)
		blocker := msg("p", "INBOX", 1, 2, StateClassified)
		mustPut(t, s, msg("p", "INBOX", 1, 1, StateDone), blocker, msg("p", "INBOX", 1, 3, StateDone))
		if cp, _ := s.AdvanceCheckpoint("p", "INBOX", 1); cp.LastUID != 1 {
			t.Fatalf("got %d, want 1", cp.LastUID)
		}
		blocker.State = StateDone
		mustPut(t, s, blocker)
		if cp, _ := s.AdvanceCheckpoint("p", "INBOX", 1); cp.LastUID != 3 {
			t.Errorf("got %d, want 3", cp.LastUID)
		}
	})
	t.Run("no checkpoint yet", func(t *testing.T) {
		s, _ := openTest(t)
		if _, ok, err := s.Checkpoint("p", "INBOX"); ok || err != nil {
			t.Errorf("got ok=%v err=%v, want false, nil", ok, err)
		}
	})
}

func TestTraces(t *testing.T) {
	t.Parallel()
	s, clk := openTest(t)
	key := MessageKey{"personal", "INBOX", 1, 5}
	older := &Trace{TraceID: "tr-1", Message: key, MessageID: "<X@Example.com>", Started: clk.Now(), Steps: []Step{{Name: "classify", TokensIn: 10}}}
	newer := &Trace{TraceID: "tr-2", Message: key, MessageID: "x@example.com", Started: clk.Now().Add(time.Minute)}
	other := &Trace{TraceID: "tr-3", Message: MessageKey{"work", "INBOX", 1, 5}, MessageID: "x@example.com", Started: clk.Now().Add(time.Hour)}
	for _, tr := range []*Trace{older, newer, other} {
		if err := s.PutTrace(tr); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.GetTrace("tr-1")
	if err != nil || len(got.Steps) != 1 || got.Steps[0].TokensIn != 10 {
		t.Errorf("GetTrace: got %+v, %v", got, err)
	}
	tests := []struct {
		name, account, ref, want string
		wantErr                  error
	}{
		{"by message id, newest of account", "personal", "X@EXAMPLE.COM", "tr-2", nil},
		{"by message id, any account", "", "<x@example.com>", "tr-3", nil},
		{"by trace id", "", "tr-1", "tr-1", nil},
		{"trace id of another account", "work", "tr-1", "", ErrNotFound},
		{"unknown", "", "nothing", "", ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr, err := s.ResolveTrace(tt.account, tt.ref)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Errorf("got %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil || tr.TraceID != tt.want {
				t.Errorf("got %v, %v; want %s", tr, err, tt.want)
			}
		})
	}
}

func TestUsage(t *testing.T) {
	t.Parallel()
	s, _ := openTest(t)
	for _, u := range []struct {
		day     string
		in, out int64
	}{{"2025-03-01", 100, 10}, {"2025-03-01", 50, 5}, {"2025-03-02", 7, 1}} {
		if err := s.AddUsage(u.day, u.in, u.out); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.Usage("2025-03-01")
	if err != nil || !reflect.DeepEqual(got, UsageDay{Day: "2025-03-01", Calls: 2, TokensIn: 150, TokensOut: 15}) {
		t.Errorf("got %+v, %v; want 2 calls, 150 in, 15 out", got, err)
	}
	empty, err := s.Usage("2025-01-01")
	if err != nil || empty.Calls != 0 {
		t.Errorf("empty day: got %+v, %v", empty, err)
	}
	days, err := s.UsageRange("2025-03-02", "")
	if err != nil || len(days) != 1 || days[0].TokensIn != 7 {
		t.Errorf("range: got %+v, %v", days, err)
	}
	if err := s.AddUsage("March 1", 1, 1); err == nil {
		t.Error("bad day: got nil error")
	}
}

func TestQueueTransitionConcurrent(t *testing.T) {
	t.Parallel()
	s, _ := openTest(t)
	item := &QueueItem{ID: NewID(), Kind: KindDraft, Account: "p", Status: QueuePending, Draft: "hi",
		To: []mail.Address{{Email: "bob@example.com"}}}
	if err := s.PutQueueItem(item); err != nil {
		t.Fatal(err)
	}
	const workers = 10
	var (
		wg        sync.WaitGroup
		mu        sync.Mutex
		wins      int
		conflicts int
		others    []error
	)
	for i := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := s.TransitionQueueItem(item.ID, []string{QueuePending}, QueueApproved, func(q *QueueItem) error {
				q.Final = fmt.Sprintf("edit %d", i)
				return nil
			})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				wins++
			case errors.Is(err, ErrConflict):
				conflicts++
			default:
				others = append(others, err)
			}
		}()
	}
	wg.Wait()
	if wins != 1 || conflicts != workers-1 || len(others) != 0 {
		t.Errorf("got %d wins, %d conflicts, %v; want 1, %d, none", wins, conflicts, others, workers-1)
	}
	got, _ := s.GetQueueItem(item.ID)
	if got.Status != QueueApproved || got.Final == "" {
		t.Errorf("got status %q final %q, want approved with the winner's edit", got.Status, got.Final)
	}
}

func TestQueueAndOutbox(t *testing.T) {
	t.Parallel()
	s, _ := openTest(t)
	ids := []string{NewID(), NewID(), NewID()}
	for i, id := range ids {
		st := QueuePending
		if i == 1 {
			st = QueueSnoozed
		}
		if err := s.PutQueueItem(&QueueItem{ID: id, Status: st, Subject: fmt.Sprint(i)}); err != nil {
			t.Fatal(err)
		}
	}
	var pending []string
	if err := s.ListQueue(QueuePending, func(q *QueueItem) error { pending = append(pending, q.ID); return nil }); err != nil {
		t.Fatal(err)
	}
	if want := []string{ids[0], ids[2]}; !slices.Equal(pending, want) {
		t.Errorf("pending: got %v, want %v", pending, want)
	}
	all := 0
	_ = s.ListQueue("", func(*QueueItem) error { all++; return nil })
	if all != 3 {
		t.Errorf("all: got %d, want 3", all)
	}

	boom := errors.New("boom")
	_, err := s.TransitionQueueItem(ids[0], []string{QueuePending}, QueueRejected, func(q *QueueItem) error {
		q.RejectReason = "no"
		return boom
	})
	if !errors.Is(err, boom) {
		t.Errorf("mutate error: got %v, want boom", err)
	}
	if q, _ := s.GetQueueItem(ids[0]); q.Status != QueuePending || q.RejectReason != "" {
		t.Errorf("after aborted transition: got %q/%q, want pending unchanged", q.Status, q.RejectReason)
	}
	if _, err := s.TransitionQueueItem("missing", []string{QueuePending}, QueueApproved, nil); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing item: got %v, want ErrNotFound", err)
	}

	ob := &OutboxRecord{ID: NewID(), Account: "p", MessageID: "gen@example.com", To: []string{"bob@example.com"}, Raw: []byte("Subject: x\r\n\r\nhi"), Status: OutboxPending}
	if err := s.PutOutbox(ob); err != nil {
		t.Fatal(err)
	}
	sent, err := s.TransitionOutbox(ob.ID, []string{OutboxPending}, OutboxSent, func(r *OutboxRecord) error {
		r.Attempts++
		return nil
	})
	if err != nil || sent.Status != OutboxSent || sent.Attempts != 1 || string(sent.Raw) != string(ob.Raw) {
		t.Errorf("outbox transition: got %+v, %v", sent, err)
	}
	if _, err := s.TransitionOutbox(ob.ID, []string{OutboxPending}, OutboxSent, nil); !errors.Is(err, ErrConflict) {
		t.Errorf("second send: got %v, want ErrConflict", err)
	}
	var pend int
	_ = s.ListOutbox(OutboxPending, func(*OutboxRecord) error { pend++; return nil })
	if pend != 0 {
		t.Errorf("pending outbox: got %d, want 0", pend)
	}
	got, err := s.GetOutbox(ob.ID)
	if err != nil || got.Status != OutboxSent {
		t.Errorf("GetOutbox: got %+v, %v", got, err)
	}
}

func TestContacts(t *testing.T) {
	t.Parallel()
	s, clk := openTest(t)
	for i := range HistoryCap + 7 {
		_, err := s.UpdateContact("p", "Bob@Example.COM", func(c *Contact) error {
			c.Inbound++
			c.Name = "Bob"
			c.History = append(c.History, HistoryEntry{Date: clk.Now(), Direction: "in", Subject: fmt.Sprint(i)})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	c, err := s.GetContact("p", "bob@example.com")
	if err != nil {
		t.Fatal(err)
	}
	if c.Email != "bob@example.com" || c.Inbound != HistoryCap+7 {
		t.Errorf("got %s inbound %d, want bob@example.com %d", c.Email, c.Inbound, HistoryCap+7)
	}
	if len(c.History) != HistoryCap || c.History[0].Subject != "7" || c.History[HistoryCap-1].Subject != fmt.Sprint(HistoryCap+6) {
		t.Errorf("history: got %d entries from %q to %q, want %d newest", len(c.History), c.History[0].Subject, c.History[len(c.History)-1].Subject, HistoryCap)
	}
	if !c.FirstSeen.Equal(clk.Now()) {
		t.Errorf("FirstSeen: got %v, want %v", c.FirstSeen, clk.Now())
	}
	if _, err := s.GetContact("other", "bob@example.com"); !errors.Is(err, ErrNotFound) {
		t.Errorf("other account: got %v, want ErrNotFound (memory is per account)", err)
	}

	if err := s.MarkKnown("p", []string{"BOB@example.com", "carol@example.com"}); err != nil {
		t.Fatal(err)
	}
	var listed []string
	_ = s.ListContacts("p", func(c *Contact) error {
		if c.Known {
			listed = append(listed, c.Email)
		}
		return nil
	})
	if want := []string{"bob@example.com", "carol@example.com"}; !slices.Equal(listed, want) {
		t.Errorf("known: got %v, want %v", listed, want)
	}
	if b, _ := s.GetContact("p", "bob@example.com"); b.Inbound != HistoryCap+7 {
		t.Errorf("MarkKnown must keep the rest: got inbound %d", b.Inbound)
	}

	if err := s.ForgetContact("p", "Carol@Example.com"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetContact("p", "carol@example.com"); !errors.Is(err, ErrNotFound) {
		t.Errorf("after forget: got %v, want ErrNotFound", err)
	}
	if err := s.ForgetContact("p", "carol@example.com"); !errors.Is(err, ErrNotFound) {
		t.Errorf("forget twice: got %v, want ErrNotFound", err)
	}
	if _, err := s.UpdateContact("p", "", nil); err == nil {
		t.Error("empty email: got nil error")
	}
}

func TestAutoSendCaps(t *testing.T) {
	t.Parallel()
	t.Run("per contact under concurrency", func(t *testing.T) {
		s, _ := openTest(t)
		okCount := runCaps(t, s, 40, func(int) string { return "bob@example.com" }, 3, 20)
		if okCount != 3 {
			t.Errorf("got %d sends allowed, want 3", okCount)
		}
		pc, g, err := s.AutoSendCounts("p", "BOB@example.com", "2025-03-01")
		if err != nil || pc != 3 || g != 3 {
			t.Errorf("counts: got %d/%d, %v; want 3/3", pc, g, err)
		}
	})
	t.Run("global under concurrency", func(t *testing.T) {
		s, _ := openTest(t)
		okCount := runCaps(t, s, 60, func(i int) string { return fmt.Sprintf("c%d@example.com", i) }, 3, 20)
		if okCount != 20 {
			t.Errorf("got %d sends allowed, want 20", okCount)
		}
	})
	t.Run("zero allows none, new day resets, persists", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "state.db")
		s, err := Open(path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if ok, _ := s.IncrAutoSend("p", "a@example.com", "2025-03-01", 0, 10); ok {
			t.Error("perContactMax 0: got ok, want refused")
		}
		if ok, _ := s.IncrAutoSend("p", "a@example.com", "2025-03-01", 1, 10); !ok {
			t.Error("first send: got refused")
		}
		_ = s.Close()
		s, err = Open(path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = s.Close() }()
		if ok, _ := s.IncrAutoSend("p", "a@example.com", "2025-03-01", 1, 10); ok {
			t.Error("after restart: got ok, want the cap to persist")
		}
		if ok, _ := s.IncrAutoSend("p", "a@example.com", "2025-03-02", 1, 10); !ok {
			t.Error("next day: got refused")
		}
	})
}

func runCaps(t *testing.T, s *Store, n int, contact func(int) string, perContact, global int) int {
	t.Helper()
	var (
		wg sync.WaitGroup
		mu sync.Mutex
		ok int
	)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			allowed, err := s.IncrAutoSend("p", contact(i), "2025-03-01", perContact, global)
			if err != nil {
				t.Error(err)
			}
			if allowed {
				mu.Lock()
				ok++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return ok
}

func TestNewIDOrdered(t *testing.T) {
	t.Parallel()
	ids := make([]string, 1000)
	for i := range ids {
		ids[i] = NewID()
	}
	for i := 1; i < len(ids); i++ {
		if ids[i] <= ids[i-1] || len(ids[i]) != len(ids[0]) {
			t.Fatalf("id %d: got %q after %q, want strictly increasing ids of equal length", i, ids[i], ids[i-1])
		}
	}
}

// TestRefundAutoSend: a reservation refunded gives the cap back, both
// counts, never below zero, for that contact and day only.
func TestRefundAutoSend(t *testing.T) {
	t.Parallel()
	s, _ := openTest(t)
	const day = "2025-03-01"
	if ok, err := s.IncrAutoSend("p", "bob@example.com", day, 1, 10); !ok || err != nil {
		t.Fatalf("first send: %v %v", ok, err)
	}
	if ok, _ := s.IncrAutoSend("p", "bob@example.com", day, 1, 10); ok {
		t.Fatal("second send: allowed over the cap of 1")
	}
	if ok, _ := s.IncrAutoSend("p", "carol@example.com", day, 1, 10); !ok {
		t.Fatal("carol: refused")
	}
	if err := s.RefundAutoSend("p", "BOB@example.com", day); err != nil {
		t.Fatal(err)
	}
	if pc, g, _ := s.AutoSendCounts("p", "bob@example.com", day); pc != 0 || g != 1 {
		t.Errorf("after the refund: %d/%d, want 0/1 (carol's stays)", pc, g)
	}
	if ok, _ := s.IncrAutoSend("p", "bob@example.com", day, 1, 10); !ok {
		t.Error("after the refund: the cap was not given back")
	}
	// Refunds beyond what was counted stop at zero.
	for range 3 {
		if err := s.RefundAutoSend("p", "dave@example.com", day); err != nil {
			t.Fatal(err)
		}
	}
	if pc, _, _ := s.AutoSendCounts("p", "dave@example.com", day); pc != 0 {
		t.Errorf("dave: %d, want 0", pc)
	}
	if _, g, _ := s.AutoSendCounts("p", "bob@example.com", day); g != 2 {
		t.Errorf("day total after refunds for a contact with no reservation: %d, want 2 (bob's and carol's)", g)
	}
	if err := s.RefundAutoSend("p", "bob@example.com", "yesterday"); err == nil {
		t.Error("a bad day: got nil error")
	}
}
