package main

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2/imapserver"

	"github.com/mailagent/mailagent/internal/app/doctor"
	"github.com/mailagent/mailagent/internal/memimap"
)

// pollingServer makes the in-memory server behave as Courier-IMAP without
// enhanced IDLE and Cyrus without idled: a client in IDLE hears of new
// mail only when the server polls, on a fixed schedule (every period,
// aligned to the wall clock), never when the mail arrives. polls records
// when each poll ran.
type pollingServer struct {
	period time.Duration
	// fromIdle polls every period from the start of each IDLE, as
	// Courier-IMAP without enhanced IDLE does, instead of on the wall
	// clock.
	fromIdle bool
	mu       sync.Mutex
	polls    []time.Time
}

func (p *pollingServer) wrap(o *memimap.Options) {
	o.Wrap = func(s imapserver.SessionIMAP4rev2) imapserver.SessionIMAP4rev2 {
		return &pollingSession{SessionIMAP4rev2: s, p: p}
	}
}

// firstPollAfter is when the server first polled after t (zero: not yet).
func (p *pollingServer) firstPollAfter(t time.Time) time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, at := range p.polls {
		if at.After(t) {
			return at
		}
	}
	return time.Time{}
}

type pollingSession struct {
	imapserver.SessionIMAP4rev2
	p *pollingServer
}

func (s *pollingSession) Idle(w *imapserver.UpdateWriter, stop <-chan struct{}) error {
	start := time.Now()
	for {
		now := time.Now()
		next := now.Truncate(s.p.period).Add(s.p.period)
		if s.p.fromIdle {
			next = start.Add(now.Sub(start).Truncate(s.p.period) + s.p.period)
		}
		t := time.NewTimer(next.Sub(now))
		select {
		case <-stop:
			t.Stop()
			return nil
		case <-t.C:
		}
		s.p.mu.Lock()
		s.p.polls = append(s.p.polls, time.Now())
		s.p.mu.Unlock()
		if err := s.Poll(w, true); err != nil {
			return err
		}
	}
}

// TestPushLatency: how soon new mail reaches IDLE, measured by watch
// (watchMeasuresPushLatency) and by doctor (doctorNamesAPollingServer),
// each on a polling and a pushing server. The four run beside each
// other, as they mostly wait for a poll.
func TestPushLatency(t *testing.T) {
	// sequential: the four read wall-clock latencies (under 1.5 s on a
	// pushing server; the 3 s poll less the APPEND's own delay, to a
	// tenth), which the parallel tests' load would stretch.
	if testing.Short() {
		t.Skip("waits for a polling server")
	}
	t.Run("watch", watchMeasuresPushLatency)
	t.Run("doctor", doctorNamesAPollingServer)
}

// accountLatency is the push latency `status --json` reports for the
// harness's account.
func accountLatency(t *testing.T, h *harness) AccountStatusJSON {
	t.Helper()
	stdout, stderr, code := h.run("status", "--json")
	if code != 0 {
		t.Fatalf("status --json: exit %d %s", code, stderr)
	}
	var st StatusJSON
	if err := json.Unmarshal([]byte(stdout), &st); err != nil || len(st.Accounts) != 1 {
		t.Fatalf("status --json: %v %s", err, stdout)
	}
	return st.Accounts[0]
}

// watchMeasuresPushLatency: watch measures how long new mail took to
// reach it, from the message's INTERNALDATE to the sync the server's
// EXISTS started. On a server that reports new mail only when it polls
// (every 3 s here, every 60 s on stock Courier and Cyrus) the figure is
// the wait for the server's poll, not the mail's arrival; `status` shows
// it (text and --json) and calls it slow past 10 s. Control: the same
// watcher on a server that pushes at once measures well under a second.
// Mail that was there before the watcher started is not counted.
func watchMeasuresPushLatency(t *testing.T) {
	t.Parallel() // beside doctorNamesAPollingServer: see TestPushLatency
	for _, tt := range []struct {
		name    string
		polling bool
	}{{"polling server", true}, {"pushing server", false}} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel() // beside the other server's subtest
			srv := &pollingServer{period: 3 * time.Second}
			var opts []func(*memimap.Options)
			if tt.polling {
				opts = append(opts, srv.wrap)
			}
			h := newHarness(t, classifyReply, "", opts...)
			h.deliver(rawMail("Old <old@example.org>", "Before", "Already here."))
			h.startWatch(t)
			waitStatus(t, h, func(a AccountStatusJSON) bool { return a.State == "idle" && a.LastSync != nil })
			if a := accountLatency(t, h); a.LatencySamples != 0 {
				t.Fatalf("mail from before the watcher counted: %+v", a)
			}
			// The first second of a poll period, so the server's poll is
			// ~2 s away on the polling server; on the pushing server, the
			// first fifth of a second (INTERNALDATE is to the second).
			align := srv.period
			if !tt.polling {
				align = time.Second
			}
			time.Sleep(time.Until(time.Now().Truncate(align).Add(align + 200*time.Millisecond)))
			appended := time.Now()
			h.deliver(rawMail("Bob <bob@example.org>", "Hello", "Are you there?"))
			a := waitStatus(t, h, func(a AccountStatusJSON) bool { return a.LatencySamples == 1 })
			got := time.Duration(*a.LatencyLastMS) * time.Millisecond
			// INTERNALDATE is to the second: the measure starts at the
			// whole second of the APPEND.
			from := appended.Truncate(time.Second)
			if tt.polling {
				polled := srv.firstPollAfter(appended)
				want := polled.Sub(from)
				if got < want.Truncate(time.Millisecond) || got > want+time.Second {
					t.Errorf("latency: got %v, want the wait for the server's poll, %v (up to 1s more)", got, want)
				}
				if got < 1500*time.Millisecond {
					t.Errorf("latency: got %v on a server that polls every 3s after a 2s wait", got)
				}
			} else if max := time.Since(from); got > max || got > 1500*time.Millisecond {
				t.Errorf("latency on a pushing server: got %v, want under 1.5s (and under %v)", got, max)
			}
			if *a.LatencyMedianMS != *a.LatencyLastMS {
				t.Errorf("median of one sample: got %d, want %d", *a.LatencyMedianMS, *a.LatencyLastMS)
			}
			stdout, _, _ := h.run("status")
			if !strings.Contains(stdout, "new mail reaches it in ") || !strings.Contains(stdout, "(median of the last 1 message; the last took ") {
				t.Errorf("status does not show the latency:\n%s", stdout)
			}
		})
	}
}

// waitStatus polls `status --json` until ok holds (at most 30 s).
func waitStatus(t *testing.T, h *harness, ok func(AccountStatusJSON) bool) AccountStatusJSON {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		a := accountLatency(t, h)
		if ok(a) {
			return a
		}
		if time.Now().After(deadline) {
			t.Fatalf("status never got there: %+v", a)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// doctorNamesAPollingServer: doctor measures how soon new mail
// reaches IDLE (a scratch folder, an APPEND on one connection, IDLE on
// another) and, on a server that only polls, says so with the server's
// name and its fix; the scratch folder is gone afterwards. Control: on a
// server that pushes, the check passes.
func doctorNamesAPollingServer(t *testing.T) {
	t.Parallel() // beside watchMeasuresPushLatency: see TestPushLatency
	for _, tt := range []struct {
		name    string
		polling bool
		want    string
	}{
		{"polling", true, "WARN  imap personal: push: new mail reached IDLE only after 3"},
		{"pushing", false, "PASS  imap personal: push: new mail reached IDLE in "},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel() // beside the other server's subtest
			srv := &pollingServer{period: 3 * time.Second, fromIdle: true}
			var opts []func(*memimap.Options)
			if tt.polling {
				opts = append(opts, srv.wrap)
			}
			h := newHarness(t, classifyReply, "", opts...)
			stdout, stderr, _ := h.run("doctor", "--no-model")
			if !strings.Contains(stdout, tt.want) {
				t.Fatalf("doctor: want %q in\n%s%s", tt.want, stdout, stderr)
			}
			if tt.polling {
				// The in-memory server announces no Courier extension and
				// answers no ID: the fix names both polling servers'
				// settings (TestPollingFixPerServer: one server's own).
				for _, want := range []string{
					"the server tells IDLE clients of new mail only when it polls",
					"fix: ask the server's admin to make IDLE push new mail (Courier-IMAP: IMAP_ENHANCEDIDLE=1; Cyrus: idled in cyrus.conf)",
				} {
					if !strings.Contains(stdout, want) {
						t.Errorf("doctor does not say %q:\n%s", want, stdout)
					}
				}
			}
			c, err := dialOwner(h)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = c.Close() }()
			boxes, err := c.List("", "*", nil).Collect()
			if err != nil || len(boxes) == 0 {
				t.Fatalf("list: %d, %v", len(boxes), err)
			}
			for _, b := range boxes {
				if strings.Contains(b.Mailbox, "push-probe") {
					t.Errorf("the probe's folder %q is left behind", b.Mailbox)
				}
			}
		})
	}
}

// TestPollingFixPerServer: each polling server gets its own setting.
func TestPollingFixPerServer(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ server, want string }{
		{"Cyrus IMAPD v3.6.1-Debian", "idled"},
		{"Courier-IMAP", "IMAP_ENHANCEDIDLE=1"},
		{"Dovecot", "mailbox_idle_check_interval"},
		{"", "Courier-IMAP: IMAP_ENHANCEDIDLE=1; Cyrus: idled"},
	} {
		if got := doctor.PollingFix(tt.server); !strings.Contains(got, tt.want) {
			t.Errorf("doctor.PollingFix(%q): got %q, want it to name %q", tt.server, got, tt.want)
		}
	}
	if got := doctor.PollEvery("Cyrus IMAPD 3.6.1"); !strings.Contains(got, "~60 s") {
		t.Errorf("pollEvery(Cyrus): got %q", got)
	}
}
