package api

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/store"
)

// pipelineActions is the shape of the watcher's Actions: a *agent.Pipeline
// plus a Retry of its own (the daemon's, in the watcher; apitest.Actions
// is the real one).
type pipelineActions struct {
	*agent.Pipeline
}

func (pipelineActions) Retry(context.Context, store.MessageKey) error { return nil }

// testNow is the fixed clock of the seeded data and of Local.
var testNow = time.Date(2025, 3, 14, 12, 0, 0, 0, time.UTC)

// waitLimit bounds every wait on a channel so that a bug fails the test
// instead of hanging it; it is not an assertion on speed.
const waitLimit = 10 * time.Second

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

// shortDir returns a temp dir short enough for a unix socket path (108
// bytes), removed at cleanup.
func shortDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "ma")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// putMessages stores recs with PutMessage from several goroutines at
// once: the store's group commit then writes many records per
// transaction (one commit each was most of a thousand-record fixture
// under -race). Each record is stored exactly as a PutMessage of its own
// would store it; the keys must differ.
func putMessages(t *testing.T, st *store.Store, recs []*store.MessageRecord) {
	t.Helper()
	const writers = 32
	errs := make(chan error, writers)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := w; i < len(recs); i += writers {
				if err := st.PutMessage(recs[i]); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// openStore opens a fresh store. NoSync: what these tests check is what
// the service reads and writes, not the fsync of each commit (most of
// their wall time with it).
func openStore(t *testing.T) *store.Store {
	t.Helper()
	st, err := store.Open(filepath.Join(t.TempDir(), "state.db"), store.Options{Timeout: time.Second, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// Seed data.
var (
	keyM1   = store.MessageKey{Account: "home", Mailbox: "INBOX", UIDValidity: 7, UID: 1}
	keyM2   = store.MessageKey{Account: "home", Mailbox: "INBOX", UIDValidity: 7, UID: 2}
	keyM3   = store.MessageKey{Account: "home", Mailbox: "INBOX", UIDValidity: 7, UID: 3}
	keyM4   = store.MessageKey{Account: "work", Mailbox: "INBOX", UIDValidity: 9, UID: 4}
	keyNone = store.MessageKey{Account: "home", Mailbox: "INBOX", UIDValidity: 7, UID: 999}
)

// seed fills st with messages, queue items, outbox records, contacts, a
// trace, usage and auto-send counts.
func seed(t *testing.T, st *store.Store) {
	t.Helper()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	alice := mail.Address{Name: "Alice", Email: "alice@example.org"}
	msgs := []*store.MessageRecord{
		{MessageKey: keyM1, MessageID: "m1@x", ThreadID: "t1", From: alice, Subject: "lunch?", Date: testNow.Add(-3 * time.Hour), State: store.StateDone, TraceID: "tr1"},
		{MessageKey: keyM2, MessageID: "m2@x", ThreadID: "t1", From: alice, Subject: "Re: lunch?", Date: testNow.Add(-2 * time.Hour), State: store.StateDone, TraceID: "tr2",
			Classification: &store.Classification{Intents: []string{"scheduling"}, Risk: "low", Action: "reply", Confidence: 0.9}},
		{MessageKey: keyM3, MessageID: "m3@x", ThreadID: "t2", From: mail.Address{Email: "bob@example.org"}, Subject: "broken", Date: testNow.Add(-time.Hour), State: store.StateNeedsReview, Error: "model timed out"},
		{MessageKey: keyM4, MessageID: "m4@x", ThreadID: "t3", From: mail.Address{Email: "carol@example.com"}, Subject: "invoice", Date: testNow.Add(-time.Hour), State: store.StateNeedsReview, Error: "parse"},
	}
	for _, m := range msgs {
		must(st.PutMessage(m))
	}
	// Ids do not sort by creation (as agent.QueueID's hashes do not).
	items := []*store.QueueItem{
		{ID: "q_d", Kind: store.KindDraft, Account: "home", Message: keyM2, MessageID: "m2@x", ThreadID: "t1", From: alice, To: []mail.Address{alice}, Subject: "Re: lunch?", Draft: "Sure.", Status: store.QueuePending, CreatedAt: testNow.Add(-50 * time.Minute)},
		{ID: "q_b", Kind: store.KindNotify, Account: "work", Message: keyM4, MessageID: "m4@x", ThreadID: "t3", Subject: "invoice", Status: store.QueuePending, CreatedAt: testNow.Add(-40 * time.Minute)},
		{ID: "q_e", Kind: store.KindDraft, Account: "home", Message: keyM3, MessageID: "m3@x", Subject: "broken", Draft: "Hm.", Status: store.QueueRejected, CreatedAt: testNow.Add(-30 * time.Minute)},
		{ID: "q_a", Kind: store.KindDraft, Account: "home", Message: keyM1, MessageID: "m1@x", ThreadID: "t1", Subject: "lunch?", Draft: "Yes.", Status: store.QueueSent, CreatedAt: testNow.Add(-20 * time.Minute)},
		{ID: "q_c", Kind: store.KindNeedsReview, Account: "home", Message: keyM3, MessageID: "m3@x", ThreadID: "t2", Subject: "broken", Status: store.QueuePending, CreatedAt: testNow.Add(-10 * time.Minute)},
		// Items the action tests consume, one per test.
		{ID: "q_approve", Kind: store.KindDraft, Account: "home", Message: keyM2, Status: store.QueuePending, CreatedAt: testNow.Add(-100 * time.Minute)},
		{ID: "q_reject", Kind: store.KindDraft, Account: "home", Message: keyM2, Status: store.QueuePending, CreatedAt: testNow.Add(-101 * time.Minute)},
		{ID: "q_edit", Kind: store.KindDraft, Account: "home", Message: keyM2, Status: store.QueuePending, CreatedAt: testNow.Add(-102 * time.Minute)},
		{ID: "q_snooze", Kind: store.KindDraft, Account: "home", Message: keyM2, Status: store.QueuePending, CreatedAt: testNow.Add(-103 * time.Minute)},
		{ID: "q_regen", Kind: store.KindDraft, Account: "home", Message: keyM2, Status: store.QueuePending, CreatedAt: testNow.Add(-104 * time.Minute)},
		{ID: "q_conc", Kind: store.KindDraft, Account: "home", Message: keyM2, Status: store.QueuePending, CreatedAt: testNow.Add(-105 * time.Minute)},
		{ID: "q_temp", Kind: store.KindDraft, Account: "home", Message: keyM2, Status: store.QueuePending, CreatedAt: testNow.Add(-106 * time.Minute)},
	}
	for _, q := range items {
		must(st.PutQueueItem(q))
	}
	obs := []*store.OutboxRecord{
		{ID: "ob_q_a", Account: "home", From: "me@example.org", MessageID: "<r1@me>", QueueID: "q_a", To: []string{"alice@example.org"}, Raw: []byte("From: me\r\n\r\nYes."), Status: store.OutboxAppended, CreatedAt: testNow.Add(-19 * time.Minute)},
		{ID: "ob_sched", Account: "home", From: "me@example.org", MessageID: "<r2@me>", Message: keyM2, To: []string{"alice@example.org"}, Raw: []byte("x"), Status: store.OutboxScheduled, SendAt: testNow.Add(time.Hour), CreatedAt: testNow.Add(-5 * time.Minute)},
		{ID: "ob_fail", Account: "work", From: "me@example.com", MessageID: "<r3@me>", To: []string{"carol@example.com"}, Raw: []byte("y"), Status: store.OutboxFailed, Error: "550", CreatedAt: testNow.Add(-15 * time.Minute)},
	}
	for _, r := range obs {
		must(st.PutOutbox(r))
	}
	for _, c := range []struct{ account, email string }{{"home", "alice@example.org"}, {"home", "bob@example.org"}, {"work", "carol@example.com"}} {
		_, err := st.UpdateContact(c.account, c.email, func(ct *store.Contact) error {
			ct.Inbound++
			ct.Notes = append(ct.Notes, "seeded")
			return nil
		})
		must(err)
	}
	must(st.MarkKnown("home", []string{"alice@example.org"}))
	must(st.PutTrace(&store.Trace{TraceID: "tr2", Message: keyM2, MessageID: "m2@x", Started: testNow.Add(-2 * time.Hour),
		Steps: []store.Step{{Name: "classify", LatencyMS: 812, TokensIn: 900, TokensOut: 60}}, Decision: "queue",
		Gates: []store.GateResult{{Gate: "mode", Pass: false, Reason: "review mode"}}}))
	day := store.Day(testNow)
	must(st.AddUsage(day, 900, 60))
	must(st.AddUsage(day, 100, 40))
	for range 2 {
		if ok, err := st.IncrAutoSend("home", "alice@example.org", day, 5, 10); err != nil || !ok {
			t.Fatalf("IncrAutoSend: got %v, %v, want true, nil", ok, err)
		}
	}
}

// newLocal builds the Local under test; act may be nil.
func newLocal(st *store.Store, act Actions) *Local {
	return &Local{DB: st, Actions: act, AutoSendCap: 10, Now: func() time.Time { return testNow }}
}

// server is a Serve running in the background.
type server struct {
	path   string
	cancel context.CancelFunc
	done   chan error
}

// startServer serves svc on a socket in a short temp dir; the socket is
// ready when it returns. Cleanup stops it.
func startServer(t *testing.T, svc Service) *server {
	t.Helper()
	path := SocketPath(shortDir(t))
	ctx, cancel := context.WithCancel(context.Background())
	ln, err := listen(ctx, path, discard())
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	s := &server{path: path, cancel: cancel, done: make(chan error, 1)}
	go func() { s.done <- serveOn(ctx, ln, path, svc, discard()) }()
	t.Cleanup(func() { _ = s.stop(t) })
	return s
}

// stop ends Serve and returns its error; calling it again returns nil.
func (s *server) stop(t *testing.T) error {
	t.Helper()
	s.cancel()
	select {
	case err, ok := <-s.done:
		if ok {
			close(s.done)
		}
		return err
	case <-time.After(waitLimit):
		t.Fatal("Serve did not return after its context ended")
		return nil
	}
}

func dial(t *testing.T, path string) *Client {
	t.Helper()
	c, err := Dial(context.Background(), path)
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// sameJSON fails unless got and want encode to the same JSON.
func sameJSON(t *testing.T, what string, got, want any) {
	t.Helper()
	g, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	w, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	if string(g) != string(w) {
		t.Errorf("%s:\ngot  %s\nwant %s", what, g, w)
	}
}

// waitGoroutines waits until the goroutine count is back to at most n.
func waitGoroutines(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for runtime.NumGoroutine() > n {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			buf = buf[:runtime.Stack(buf, true)]
			t.Fatalf("goroutines: got %d, want at most %d\n%s", runtime.NumGoroutine(), n, buf)
		}
		runtime.Gosched()
		time.Sleep(10 * time.Millisecond)
	}
}

// recv waits for the next value of ch; ok is false when ch was closed.
func recv[T any](t *testing.T, ch <-chan T) (v T, ok bool) {
	t.Helper()
	select {
	case v, ok = <-ch:
		return v, ok
	case <-time.After(waitLimit):
		t.Fatal("timed out waiting on a channel")
		return v, false
	}
}

// drainClosed waits until ch is closed, discarding what is left.
func drainClosed[T any](t *testing.T, ch <-chan T) {
	t.Helper()
	for {
		if _, ok := recv(t, ch); !ok {
			return
		}
	}
}
