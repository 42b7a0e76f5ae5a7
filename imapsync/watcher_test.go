package imapsync

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// waitLimit is how long a test waits for an event before failing. It is a
// deadline against hangs, not a performance assertion.
const waitLimit = 20 * time.Second

// syncEvent is one call of the sync callback.
type syncEvent struct {
	st   MailboxStatus
	uids []uint32 // new messages fetched by this call
}

// recorder is a sync callback that fetches every message above the last
// UID it saw, the way the real caller will, and reports each call.
type recorder struct {
	mu      sync.Mutex
	lastUID uint32
	events  chan syncEvent
	fail    atomic.Int32 // fail this many calls with an error
}

func newRecorder() *recorder { return &recorder{events: make(chan syncEvent, 100)} }

func (r *recorder) sync(ctx context.Context, c *Client, st MailboxStatus) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if st.UIDValidityChanged {
		r.lastUID = 0
	}
	uids, err := c.Search(ctx, Criteria{UIDMin: r.lastUID + 1})
	if err != nil {
		return err
	}
	var got []uint32
	err = c.Fetch(ctx, uids, FetchOptions{}, func(m RawMessage) error {
		got = append(got, m.UID)
		r.lastUID = max(r.lastUID, m.UID)
		return nil
	})
	if err != nil {
		return err
	}
	r.events <- syncEvent{st: st, uids: got}
	if r.fail.Load() > 0 {
		r.fail.Add(-1)
		return errors.New("caller failed to record a message")
	}
	return nil
}

// waitFor waits until a sync call fetched uid.
func (r *recorder) waitFor(t *testing.T, uid uint32) syncEvent {
	t.Helper()
	deadline := time.After(waitLimit)
	for {
		select {
		case ev := <-r.events:
			for _, u := range ev.uids {
				if u == uid {
					return ev
				}
			}
		case <-deadline:
			t.Fatalf("no sync fetched uid %d within %v", uid, waitLimit)
		}
	}
}

// runWatcher starts w.Run and returns a stop function that cancels it and
// returns Run's result.
func runWatcher(t *testing.T, w *Watcher, syncFn func(context.Context, *Client, MailboxStatus) error) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx, syncFn) }()
	var once sync.Once
	var result error
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case result = <-done:
			case <-time.After(waitLimit):
				t.Fatalf("Run did not return within %v of cancel", waitLimit)
			}
		})
		return result
	}
	t.Cleanup(func() { _ = stop() })
	return stop
}

func dialer(ts *testServer, trace *traceBuffer, dials *atomic.Int32) func(context.Context) (*Client, error) {
	return func(ctx context.Context) (*Client, error) {
		if dials != nil {
			dials.Add(1)
		}
		o := ts.options()
		if trace != nil {
			o.Debug = trace
		}
		return Dial(ctx, o)
	}
}

// checkNoLeaks waits until no goroutine of this package or of go-imap's
// client is left.
func checkNoLeaks(t *testing.T) {
	t.Helper()
	markers := []string{"imapsync.(*Watcher)", "imapsync.(*watchRun)", "imapsync.(*Client)",
		"imapclient.(*Client).read", "imapclient.(*IdleCommand).run"}
	deadline := time.Now().Add(waitLimit)
	for {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		var leaked []string
		for _, g := range strings.Split(string(buf), "\n\n") {
			for _, m := range markers {
				if strings.Contains(g, m) && !strings.Contains(g, "checkNoLeaks") {
					leaked = append(leaked, g)
					break
				}
			}
		}
		if len(leaked) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines leaked:\n%s", len(leaked), strings.Join(leaked, "\n\n"))
		}
		time.Sleep(10 * time.Millisecond) // polling for exit, not asserting time
	}
}

func TestWatcherIdleSyncsNewMail(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverConfig{})
	first := ts.add(t, "INBOX", textMessage("old", "<old@x>", "x"), time.Time{})
	rec := newRecorder()
	var trace traceBuffer
	var states []State
	var statesMu sync.Mutex
	w := &Watcher{
		Dial:    dialer(ts, &trace, nil),
		Mailbox: "INBOX",
		OnState: func(s State) { statesMu.Lock(); states = append(states, s); statesMu.Unlock() },
	}
	stop := runWatcher(t, w, rec.sync)

	ev := rec.waitFor(t, first) // the initial sync
	if ev.st.Name != "INBOX" || ev.st.UIDValidity == 0 || ev.st.NumMessages != 1 {
		t.Errorf("initial status: got %+v, want INBOX with a UIDVALIDITY and 1 message", ev.st)
	}

	// Another client appends; the watcher must hear about it over IDLE.
	other := ts.dial(t)
	uid, err := other.Append(context.Background(), "INBOX", nil, time.Time{}, textMessage("new", "<new@x>", "y"))
	if err != nil {
		t.Fatalf("Append: %v", err)
	}
	_ = other.Close()
	ev = rec.waitFor(t, uid)
	if ev.st.NumMessages != 2 {
		t.Errorf("status after new mail: got %d messages, want 2", ev.st.NumMessages)
	}
	if !strings.Contains(trace.String(), " IDLE\r\n") {
		t.Errorf("the watcher never sent IDLE")
	}

	if err := stop(); err != nil {
		t.Fatalf("Run after cancel: got %v, want nil", err)
	}
	checkNoLeaks(t)
	statesMu.Lock()
	defer statesMu.Unlock()
	want := []State{StateConnecting, StateSyncing, StateIdle, StateSyncing}
	if len(states) < len(want) || fmt.Sprint(states[:len(want)]) != fmt.Sprint(want) {
		t.Errorf("states: got %v, want prefix %v", states, want)
	}
}

func TestWatcherPollsWithoutIdle(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverConfig{})
	rec := newRecorder()
	var trace traceBuffer
	w := &Watcher{
		Dial:         dialer(ts, &trace, nil),
		Mailbox:      "INBOX",
		DisableIdle:  true,
		PollInterval: 5 * time.Millisecond,
	}
	stop := runWatcher(t, w, rec.sync)
	uid := ts.add(t, "INBOX", textMessage("polled", "<p@x>", "x"), time.Time{})
	rec.waitFor(t, uid)
	uid2 := ts.add(t, "INBOX", textMessage("polled 2", "<p2@x>", "x"), time.Time{})
	rec.waitFor(t, uid2)
	if err := stop(); err != nil {
		t.Fatalf("Run: got %v, want nil", err)
	}
	if strings.Contains(trace.String(), " IDLE\r\n") {
		t.Errorf("IDLE sent although DisableIdle is set")
	}
	if !strings.Contains(trace.String(), " NOOP\r\n") {
		t.Errorf("the poll loop never sent NOOP")
	}
	checkNoLeaks(t)
}

func TestWatcherReconnects(t *testing.T) {
	t.Parallel()
	for _, mode := range []struct {
		name        string
		disableIdle bool
	}{{"idle", false}, {"poll", true}} {
		t.Run(mode.name, func(t *testing.T) {
			ts := startServer(t, serverConfig{})
			ts.createMailbox(t, "Work")
			first := ts.add(t, "Work", textMessage("one", "<1@x>", "x"), time.Time{})
			rec := newRecorder()
			var logs traceBuffer
			var dials atomic.Int32
			w := &Watcher{
				Dial:         dialer(ts, nil, &dials),
				Mailbox:      "Work",
				DisableIdle:  mode.disableIdle,
				PollInterval: 5 * time.Millisecond,
				MinBackoff:   5 * time.Millisecond,
				MaxBackoff:   20 * time.Millisecond,
				Logger:       slog.New(slog.NewTextHandler(&logs, nil)),
			}
			stop := runWatcher(t, w, rec.sync)
			ev := rec.waitFor(t, first)
			validity := ev.st.UIDValidity

			// Kill every connection; the mailbox is re-created meanwhile,
			// so its UIDVALIDITY changes.
			ts.stop()
			if err := ts.user.Delete("Work"); err != nil {
				t.Fatalf("delete Work: %v", err)
			}
			ts.createMailbox(t, "Work")
			uid := ts.add(t, "Work", textMessage("two", "<2@x>", "x"), time.Time{})
			ts.restart()

			ev = rec.waitFor(t, uid)
			if !ev.st.UIDValidityChanged || ev.st.UIDValidity == validity {
				t.Errorf("after re-creation: got validity %d (changed=%v), want a new one (was %d)", ev.st.UIDValidity, ev.st.UIDValidityChanged, validity)
			}
			if n := dials.Load(); n < 2 {
				t.Errorf("got %d dials, want at least 2", n)
			}
			if err := stop(); err != nil {
				t.Fatalf("Run: got %v, want nil", err)
			}
			if !strings.Contains(logs.String(), "reconnecting") {
				t.Errorf("no reconnect was logged:\n%s", logs.String())
			}
			if strings.Contains(logs.String(), testPassword) {
				t.Errorf("the password appears in the logs")
			}
			checkNoLeaks(t)
		})
	}
}

func TestWatcherSyncErrorKeepsConnection(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverConfig{})
	rec := newRecorder()
	rec.fail.Store(1)
	var dials atomic.Int32
	var logs traceBuffer
	w := &Watcher{
		Dial:    dialer(ts, nil, &dials),
		Mailbox: "INBOX",
		Logger:  slog.New(slog.NewTextHandler(&logs, nil)),
	}
	stop := runWatcher(t, w, rec.sync)
	select {
	case <-rec.events: // the first (failing) sync
	case <-time.After(waitLimit):
		t.Fatalf("no initial sync within %v", waitLimit)
	}
	uid := ts.add(t, "INBOX", textMessage("after error", "<e@x>", "x"), time.Time{})
	rec.waitFor(t, uid)
	if err := stop(); err != nil {
		t.Fatalf("Run: got %v, want nil", err)
	}
	if n := dials.Load(); n != 1 {
		t.Errorf("got %d dials, want 1 (a sync error on a live connection must not reconnect)", n)
	}
	if !strings.Contains(logs.String(), "sync failed") {
		t.Errorf("the sync error was not logged:\n%s", logs.String())
	}
}

func TestWatcherPermanentErrors(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverConfig{})
	tests := []struct {
		name string
		opts func(Options) Options
		want error
	}{
		{name: "wrong password", opts: func(o Options) Options { o.Password = "wrong"; return o }, want: ErrAuth},
		{name: "plaintext off loopback", opts: func(o Options) Options { o.Host = "192.0.2.7"; return o }, want: ErrPlaintextNotLoopback},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var dials atomic.Int32
			w := &Watcher{
				Dial: func(ctx context.Context) (*Client, error) {
					dials.Add(1)
					return Dial(ctx, tt.opts(ts.options()))
				},
				Mailbox:    "INBOX",
				MinBackoff: time.Millisecond,
			}
			err := w.Run(context.Background(), func(context.Context, *Client, MailboxStatus) error { return nil })
			if !errors.Is(err, tt.want) {
				t.Fatalf("Run: got %v, want %v", err, tt.want)
			}
			if n := dials.Load(); n != 1 {
				t.Errorf("got %d dials, want 1 (no retry on a permanent error)", n)
			}
		})
	}
}

func TestWatcherRetriesUntilCancelled(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverConfig{})
	ts.stop() // nothing listens: every dial fails
	var dials atomic.Int32
	reached := make(chan struct{})
	var logs traceBuffer
	w := &Watcher{
		Dial: func(ctx context.Context) (*Client, error) {
			if dials.Add(1) == 3 {
				close(reached)
			}
			return Dial(ctx, ts.options())
		},
		Mailbox:    "INBOX",
		MinBackoff: time.Millisecond,
		MaxBackoff: 2 * time.Millisecond,
		Logger:     slog.New(slog.NewTextHandler(&logs, nil)),
	}
	stop := runWatcher(t, w, func(context.Context, *Client, MailboxStatus) error { return nil })
	select {
	case <-reached:
	case <-time.After(waitLimit):
		t.Fatalf("fewer than 3 dial attempts within %v (%d); logs:\n%s", waitLimit, dials.Load(), logs.String())
	}
	if err := stop(); err != nil {
		t.Fatalf("Run: got %v, want nil", err)
	}
	n := int(dials.Load())
	if got := strings.Count(logs.String(), "reconnecting"); got < n-1 || got > n {
		t.Errorf("got %d reconnect log lines for %d attempts, want one per attempt", got, n)
	}
	checkNoLeaks(t)
}

func TestWatcherValidation(t *testing.T) {
	t.Parallel()
	w := &Watcher{Mailbox: "INBOX"}
	if err := w.Run(context.Background(), func(context.Context, *Client, MailboxStatus) error { return nil }); err == nil {
		t.Fatalf("Run without Dial: got nil, want an error")
	}
}

func TestStateString(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	for s := StateConnecting; s <= StateReconnecting; s++ {
		fmt.Fprint(&b, s, " ")
	}
	if got, want := b.String(), "connecting syncing idle polling reconnecting "; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
