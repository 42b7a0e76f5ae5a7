package daemon

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/imapsync"
	"github.com/mailagent/mailagent/internal/memimap"
	"github.com/mailagent/mailagent/internal/smtpsend"
	"github.com/mailagent/mailagent/internal/smtpsend/smtptest"
	"github.com/mailagent/mailagent/store"
)

// dueRig is a daemon whose timer loop runs against a real store, a real
// IMAP server (imapmemserver, for the Sent copies) and a go-smtp sink, all
// inside the calling test's testing/synctest bubble: the servers speak
// over in-memory connections (pipeListener), so the clock the tests time
// the sends by is the bubble's fake one, which moves only when every
// goroutine waits.
type dueRig struct {
	st   *store.Store
	p    *agent.Pipeline
	d    *Daemon
	smtp *smtptest.Sink
	stop func()
}

// newDueRig must be called inside a synctest bubble.
func newDueRig(t *testing.T, dueCap time.Duration) *dueRig {
	t.Helper()
	st, err := store.Open(filepath.Join(t.TempDir(), "db"), store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	imapLn := newPipeListener("127.0.0.1:143")
	srv, err := memimap.Start(memimap.Options{Users: []memimap.User{{Name: testUser, Password: testPass}},
		Mailboxes: []string{"Sent", "Drafts"}, Listener: imapLn})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	am := &AccountMailer{Name: "personal", Dial: func(ctx context.Context) (*imapsync.Client, error) {
		return imapsync.Dial(ctx, imapsync.Options{Host: srv.Host, Port: srv.Port, Security: imapsync.SecurityInsecure,
			Username: testUser, Password: testPass, Account: "personal", DialContext: imapLn.DialContext})
	}}
	smtpLn := newPipeListener("127.0.0.1:25")
	sink := smtptest.NewSink(t, smtptest.SinkOptions{Listener: smtpLn})
	am.SMTP = func(context.Context) (*smtpsend.Sender, error) {
		return smtpsend.New(smtpsend.Options{Host: sink.Host, Port: sink.Port, Security: smtpsend.SecurityInsecure, DialContext: smtpLn.DialContext})
	}
	m := &Mailer{Accounts: map[string]*AccountMailer{"personal": am}}
	t.Cleanup(m.Close)
	p := &agent.Pipeline{Store: st, Actor: &agent.Actor{Store: st, Mailer: m}}
	d := &Daemon{Store: st, Pipeline: p, Mailer: m, DueCap: dueCap}
	p.Actor.Notify = d.Notify // as watch wires it
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s, err := d.startJobs()
		if err != nil {
			t.Error(err)
		}
		d.sched.Store(s)
		_ = s.Run(ctx)
	}()
	r := &dueRig{st: st, p: p, d: d, smtp: sink, stop: func() { cancel(); <-done }}
	t.Cleanup(r.stop)
	return r
}

// schedule writes a scheduled send due in after, as the actor does for
// policy.send_delay (act.go: the record, then the "scheduled" event);
// notify=false leaves the event out.
func (r *dueRig) schedule(t *testing.T, n int, after time.Duration, notify bool) string {
	t.Helper()
	id := fmt.Sprintf("ob_due%d", n)
	now := time.Now()
	raw := strings.ReplaceAll(fmt.Sprintf("From: Ada <ada@example.com>\nTo: bob@example.org\nSubject: reply %d\nMessage-ID: <due%d@example.com>\n\nyes\n", n, n), "\n", "\r\n")
	ob := &store.OutboxRecord{ID: id, Account: "personal", From: "ada@example.com", MessageID: fmt.Sprintf("due%d@example.com", n),
		Message: store.MessageKey{Account: "personal", Mailbox: "INBOX", UIDValidity: 1, UID: uint32(n)},
		To:      []string{"bob@example.org"}, Raw: []byte(raw), Status: store.OutboxScheduled, SendAt: now.Add(after), Auto: true,
		Subject: fmt.Sprintf("reply %d", n), Body: "yes", CreatedAt: now, UpdatedAt: now}
	if err := r.st.PutOutbox(ob); err != nil {
		t.Fatal(err)
	}
	if notify {
		r.p.Actor.Notify(agent.Event{Kind: "scheduled", ID: id, Account: "personal"})
	}
	return id
}

// sentAt waits (up to limit) for the sink to hold n messages and returns
// when the n-th arrived; ok is false when it did not.
func (r *dueRig) sentAt(n int, limit time.Duration) (time.Time, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	if err := r.smtp.WaitFor(ctx, n); err != nil {
		return time.Time{}, false
	}
	return time.Now(), true
}

// The timer sleeps (cap 60 s) and a send_delay of 2 s still goes out at
// ~2 s: the "scheduled" event wakes it and it sets itself for SendAt.
func TestDueLoopSendsScheduledOnTime(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		r := newDueRig(t, 0)
		time.Sleep(200 * time.Millisecond) // the loop is asleep on its cap
		start := time.Now()
		id := r.schedule(t, 1, 2*time.Second, true)
		at, ok := r.sentAt(1, 10*time.Second)
		if !ok {
			t.Fatalf("the scheduled send never went out")
		}
		if got := at.Sub(start); got < 2*time.Second || got > 3*time.Second {
			t.Errorf("sent after %v, want 2s..3s (due at 2s, within 1s)", got)
		}
		// The record moves on once SMTP has answered.
		var status string
		for range 100 {
			ob, err := r.st.GetOutbox(id)
			if err != nil {
				t.Fatal(err)
			}
			if status = ob.Status; status == store.OutboxAppended {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if status != store.OutboxAppended {
			t.Errorf("outbox after the send: %s, want appended", status)
		}
		if n := len(r.smtp.Messages()); n != 1 {
			t.Errorf("sink holds %d messages, want 1", n)
		}
	})
}

// A cancel between scheduling and the due time prevents the send; the
// other send scheduled alongside goes out once.
func TestDueLoopCancelInBetween(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		r := newDueRig(t, 0)
		a := r.schedule(t, 1, 1500*time.Millisecond, true)
		r.schedule(t, 2, 1500*time.Millisecond, true)
		time.Sleep(500 * time.Millisecond)
		if err := r.p.Cancel(context.Background(), a); err != nil {
			t.Fatal(err)
		}
		if _, ok := r.sentAt(1, 5*time.Second); !ok {
			t.Fatal("the uncancelled send never went out")
		}
		time.Sleep(1500 * time.Millisecond) // room for a wrong second send
		msgs := r.smtp.Messages()
		if len(msgs) != 1 || !strings.Contains(string(msgs[0].Data), "due2@example.com") {
			t.Errorf("sink holds %d messages, want only the uncancelled one (due2)", len(msgs))
		}
		if ob, err := r.st.GetOutbox(a); err != nil || ob.Status != store.OutboxCancelled {
			t.Errorf("cancelled record: %+v, %v; want cancelled", ob, err)
		}
	})
}

// A snooze wakes on time: the item is pending again within 1 s of
// SnoozeUntil, not at the cap.
func TestDueLoopWakesSnoozeOnTime(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		r := newDueRig(t, 0)
		now := time.Now()
		q := &store.QueueItem{ID: "q_snooze", Kind: store.KindNotify, Account: "personal", Status: store.QueuePending, CreatedAt: now, UpdatedAt: now}
		if err := r.st.PutQueueItem(q); err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var woke []time.Time
		r.p.Actor.Notify = func(e agent.Event) {
			if e.Kind == "queue_updated" && e.ID == q.ID {
				mu.Lock()
				woke = append(woke, time.Now())
				mu.Unlock()
			}
			r.d.Notify(e)
		}
		time.Sleep(200 * time.Millisecond)
		start := time.Now()
		if err := r.p.Snooze(context.Background(), q.ID, start.Add(2*time.Second)); err != nil {
			t.Fatal(err)
		}
		// The wake is timed by its event, which follows the store write: a
		// poll of the store can see the item pending a moment before the
		// event is sent, so wait for the event too, then make sure no third
		// one follows.
		events := func() []time.Time {
			mu.Lock()
			defer mu.Unlock()
			return append([]time.Time(nil), woke...)
		}
		deadline := time.Now().Add(8 * time.Second)
		for time.Now().Before(deadline) {
			it, err := r.st.GetQueueItem(q.ID)
			if err != nil {
				t.Fatal(err)
			}
			if it.Status == store.QueuePending && len(events()) >= 2 {
				time.Sleep(300 * time.Millisecond)
				ev := events()
				if len(ev) != 2 { // the snooze, then the wake
					t.Errorf("queue_updated events: got %d, want 2", len(ev))
				}
				if got := ev[1].Sub(start); got < 2*time.Second || got > 3*time.Second {
					t.Errorf("woke after %v, want 2s..3s", got)
				}
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Fatalf("the snoozed item never woke (%d queue_updated events)", len(events()))
	})
}

// A change that reaches the store without an event (another process) is
// still found, at the latest after DueCap, and then sent at its time.
func TestDueLoopCapFindsUnannouncedWork(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		r := newDueRig(t, 300*time.Millisecond)
		time.Sleep(100 * time.Millisecond)
		start := time.Now()
		r.schedule(t, 1, time.Second, false)
		at, ok := r.sentAt(1, 5*time.Second)
		if !ok {
			t.Fatal("an unannounced scheduled send never went out")
		}
		if got := at.Sub(start); got < time.Second || got > 2*time.Second {
			t.Errorf("sent after %v, want 1s..2s", got)
		}
	})
}

// Idle, the loop does not poll: with only a far-future send waiting, and
// events that change nothing due, it makes its start-up pass and no other.
func TestDueLoopIdleDoesNotPoll(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		r := newDueRig(t, 0)
		r.schedule(t, 1, time.Hour, true)
		for range 20 {
			r.p.Actor.Notify(agent.Event{Kind: "message_done", ID: "x", Account: "personal"})
			time.Sleep(50 * time.Millisecond)
		}
		time.Sleep(time.Second)
		if got := r.d.duePasses.Load(); got != 1 {
			t.Errorf("passes over 2s idle: got %d, want 1 (the start-up pass)", got)
		}
		if n := len(r.smtp.Messages()); n != 0 {
			t.Errorf("sent %d before their time", n)
		}
	})
}

func TestUntilDue(t *testing.T) {
	t.Parallel()
	st, err := store.Open(filepath.Join(t.TempDir(), "db"), store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = st.Close() }()
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	d := &Daemon{Store: st, Now: func() time.Time { return now }}
	if got := d.untilDue(time.Time{}); got != defaultDueCap {
		t.Errorf("nothing waits: got %v, want the cap %v", got, defaultDueCap)
	}
	put := func(id string, sendAt time.Time) {
		t.Helper()
		if err := st.PutOutbox(&store.OutboxRecord{ID: id, Account: "a", Status: store.OutboxScheduled, SendAt: sendAt, CreatedAt: now, UpdatedAt: now}); err != nil {
			t.Fatal(err)
		}
	}
	put("ob_later", now.Add(2*time.Hour))
	if got := d.untilDue(now); got != defaultDueCap {
		t.Errorf("due in 2h: got %v, want the cap", got)
	}
	put("ob_soon", now.Add(1500*time.Millisecond))
	if got := d.untilDue(now); got != 1500*time.Millisecond {
		t.Errorf("due in 1.5s: got %v, want 1.5s", got)
	}
	put("ob_past", now.Add(-time.Minute))
	tests := []struct {
		name string
		last time.Time
		want time.Duration
	}{
		{"never ran", time.Time{}, 0},
		{"ran long ago", now.Add(-time.Hour), 0},
		// Still due right after a pass (a send that cannot move on): at
		// most one pass a second, never a spin.
		{"just ran", now, time.Second},
		{"ran 400ms ago", now.Add(-400 * time.Millisecond), 600 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := d.untilDue(tt.last); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}
