package imapsync

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2"
)

func noErr(code imap.ResponseCode, text string) error {
	return &imap.Error{Type: imap.StatusResponseTypeNo, Code: code, Text: text}
}

// A FETCH answered NO is not "the messages were expunged": Fetch must
// fail so that the caller fetches them again, never skip them.
func TestFetchNOIsAnError(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  error
	}{
		{"unavailable", noErr(imap.ResponseCodeUnavailable, "Temporary failure")},
		{"limit", noErr(imap.ResponseCodeLimit, "Too many commands")},
		{"dovecot read failure", noErr(imap.ResponseCodeServerBug, "Internal error occurred. Refer to server log for more information.")},
		{"plain NO", noErr("", "Error reading message")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ts := startServer(t, serverConfig{})
			var uids []uint32
			for i := range 3 {
				uids = append(uids, ts.add(t, "INBOX", textMessage("m", fmt.Sprintf("<f%d@x>", i), "x"), time.Time{}))
			}
			c := ts.dial(t)
			if _, err := c.Select(context.Background(), "INBOX", false); err != nil {
				t.Fatalf("Select: %v", err)
			}
			ts.injectFetch(failTimes(1, tc.err))
			var seen []uint32
			err := c.Fetch(context.Background(), uids, FetchOptions{}, func(m RawMessage) error {
				seen = append(seen, m.UID)
				return nil
			})
			if err == nil {
				t.Fatalf("Fetch answered NO: got nil error and UIDs %v, want an error", seen)
			}
			var ie *imap.Error
			if !errors.As(err, &ie) || ie.Code != tc.err.(*imap.Error).Code {
				t.Errorf("Fetch error %v does not carry the server's answer", err)
			}
			// The messages are all there: nothing is missing.
			missing, err := c.Missing(context.Background(), uids)
			if err != nil || len(missing) != 0 {
				t.Errorf("Missing: got %v, %v; want none", missing, err)
			}
			// The next attempt gets them all.
			seen = nil
			if err := c.Fetch(context.Background(), uids, FetchOptions{}, func(m RawMessage) error {
				seen = append(seen, m.UID)
				return nil
			}); err != nil {
				t.Fatalf("second Fetch: %v", err)
			}
			if !slices.Equal(seen, uids) {
				t.Errorf("second Fetch: got %v, want %v", seen, uids)
			}
		})
	}
}

func TestMissingConfirmsExpunged(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverConfig{})
	var uids []uint32
	for i := range 4 {
		uids = append(uids, ts.add(t, "INBOX", textMessage("m", fmt.Sprintf("<x%d@x>", i), "x"), time.Time{}))
	}
	c := ts.dial(t)
	if _, err := c.Select(context.Background(), "INBOX", false); err != nil {
		t.Fatalf("Select: %v", err)
	}
	if err := c.Delete(context.Background(), []uint32{uids[1], uids[3]}); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	got, err := c.Missing(context.Background(), append(slices.Clone(uids), 999))
	if err != nil {
		t.Fatalf("Missing: %v", err)
	}
	if want := []uint32{uids[1], uids[3], 999}; !slices.Equal(got, want) {
		t.Errorf("Missing: got %v, want %v", got, want)
	}
}

// A login refused with a temporary RFC 5530 code is not a wrong password.
func TestLoginTemporaryVersusAuthFailure(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		err       error
		wantAuth  bool
		wantTempo bool
	}{
		{"unavailable", noErr(imap.ResponseCodeUnavailable, "Temporary authentication failure"), false, true},
		{"serverbug", noErr(imap.ResponseCodeServerBug, "Internal error"), false, true},
		{"authenticationfailed", noErr(imap.ResponseCodeAuthenticationFailed, "Authentication failed."), true, false},
		{"plain NO", noErr("", "Login failed"), true, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ts := startServer(t, serverConfig{})
			ts.injectLogin(failTimes(1, tc.err))
			_, err := Dial(context.Background(), ts.options())
			if err == nil {
				t.Fatal("Dial: got nil error")
			}
			if got := errors.Is(err, ErrAuth); got != tc.wantAuth {
				t.Errorf("errors.Is(%v, ErrAuth) = %v, want %v", err, got, tc.wantAuth)
			}
			if got := errors.Is(err, ErrLoginUnavailable); got != tc.wantTempo {
				t.Errorf("errors.Is(%v, ErrLoginUnavailable) = %v, want %v", err, got, tc.wantTempo)
			}
			if IsPermanent(err) == tc.wantTempo {
				t.Errorf("IsPermanent(%v) = %v", err, !tc.wantTempo)
			}
			if strings.Contains(err.Error(), testPassword) {
				t.Errorf("error leaks the password: %v", err)
			}
		})
	}
}

// Dovecot answers NO [UNAVAILABLE] while its auth backend is down: the
// watcher keeps trying and handles the mail once the login succeeds.
func TestWatcherRetriesUnavailableLogin(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverConfig{})
	uid := ts.add(t, "INBOX", textMessage("waiting", "<w@x>", "x"), time.Time{})
	ts.injectLogin(failTimes(3, noErr(imap.ResponseCodeUnavailable, "Temporary authentication failure")))
	var dials atomic.Int32
	rec := newRecorder()
	w := &Watcher{Dial: dialer(ts, nil, &dials), Mailbox: "INBOX", MinBackoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond}
	stop := runWatcher(t, w, rec.sync)
	rec.waitFor(t, uid)
	if err := stop(); err != nil {
		t.Fatalf("Run: got %v, want nil", err)
	}
	if n := dials.Load(); n < 4 {
		t.Errorf("got %d dials, want at least 4 (three refused logins, then one that works)", n)
	}
}

// An error the Dial function marks Permanent (a failing password_cmd)
// stops the watcher instead of a silent retry loop.
func TestWatcherStopsOnPermanentDialError(t *testing.T) {
	t.Parallel()
	cfgErr := errors.New("account work imap password_cmd: exit status 1")
	var dials atomic.Int32
	w := &Watcher{
		Dial: func(context.Context) (*Client, error) {
			dials.Add(1)
			return nil, Permanent(cfgErr)
		},
		Mailbox: "INBOX", MinBackoff: time.Millisecond,
	}
	done := make(chan error, 1)
	go func() { done <- w.Run(context.Background(), newRecorder().sync) }()
	select {
	case err := <-done:
		if !errors.Is(err, cfgErr) {
			t.Errorf("Run: got %v, want the dial error", err)
		}
	case <-time.After(waitLimit):
		t.Fatalf("Run kept retrying a permanent dial error (%d dials)", dials.Load())
	}
	if n := dials.Load(); n != 1 {
		t.Errorf("got %d dials, want 1", n)
	}
}

// A failed sync on a healthy connection is retried on a timer, without
// waiting for new mail (a full disk freed, a model back up).
func TestWatcherRetriesFailedSyncOnTimer(t *testing.T) {
	t.Parallel()
	for _, idle := range []bool{true, false} {
		t.Run(fmt.Sprintf("idle=%v", idle), func(t *testing.T) {
			ts := startServer(t, serverConfig{})
			rec := newRecorder()
			rec.fail.Store(2)
			var logs bytes.Buffer
			var lw traceBuffer
			w := &Watcher{
				Dial: dialer(ts, nil, nil), Mailbox: "INBOX", DisableIdle: !idle,
				PollInterval: time.Hour, IdleRestart: time.Hour, SyncRetry: 20 * time.Millisecond,
				Logger: slog.New(slog.NewJSONHandler(&lw, nil)),
			}
			stop := runWatcher(t, w, rec.sync)
			for i := range 3 { // two failures, then the retry that works
				select {
				case <-rec.events:
				case <-time.After(waitLimit):
					t.Fatalf("sync %d did not happen within %v: a failed sync is retried only on new mail", i+1, waitLimit)
				}
			}
			if err := stop(); err != nil {
				t.Fatalf("Run: %v", err)
			}
			logs.WriteString(lw.String())
			// retry_in is readable (a duration string), not nanoseconds.
			var sawRetry bool
			for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
				var rec map[string]any
				if json.Unmarshal([]byte(line), &rec) != nil {
					continue
				}
				if v, ok := rec["retry_in"]; ok {
					sawRetry = true
					s, isStr := v.(string)
					if _, err := time.ParseDuration(s); !isStr || err != nil {
						t.Errorf("retry_in = %v, want a duration string", v)
					}
				}
			}
			if !sawRetry {
				t.Errorf("no retry_in logged:\n%s", logs.String())
			}
		})
	}
}

// One message the server can never read (Dovecot: NO, "Error reading
// message") must not hold up the others: with OnRefused, the batch is
// split and only that message is reported.
func TestFetchIsolatesARefusedMessage(t *testing.T) {
	t.Parallel()
	for _, prefetch := range []bool{false, true} {
		t.Run(fmt.Sprint("prefetch=", prefetch), func(t *testing.T) { fetchIsolatesARefusedMessage(t, prefetch) })
	}
}

func fetchIsolatesARefusedMessage(t *testing.T, prefetch bool) {
	ts := startServer(t, serverConfig{})
	var uids []uint32
	for i := range 5 {
		uids = append(uids, ts.add(t, "INBOX", textMessage("m", fmt.Sprintf("<i%d@x>", i), "x"), time.Time{}))
	}
	bad := uids[2]
	ts.mu.Lock()
	ts.fetchSetErr = func(set imap.NumSet) error {
		if us, ok := set.(imap.UIDSet); ok && us.Contains(imap.UID(bad)) {
			return noErr(imap.ResponseCodeServerBug, "Error reading message")
		}
		return nil
	}
	ts.mu.Unlock()
	c := ts.dial(t)
	if _, err := c.Select(context.Background(), "INBOX", false); err != nil {
		t.Fatal(err)
	}
	var seen []uint32
	refusedUIDs := map[uint32]error{}
	err := c.Fetch(context.Background(), uids, FetchOptions{Prefetch: prefetch, OnRefused: func(uid uint32, err error) { refusedUIDs[uid] = err }},
		func(m RawMessage) error {
			seen = append(seen, m.UID)
			return nil
		})
	if err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	if want := []uint32{uids[0], uids[1], uids[3], uids[4]}; !slices.Equal(seen, want) {
		t.Errorf("delivered %v, want %v (each once, the refused one left out)", seen, want)
	}
	if len(refusedUIDs) != 1 || refusedUIDs[bad] == nil {
		t.Errorf("refused: got %v, want only uid %d", refusedUIDs, bad)
	}
	// Without OnRefused the whole Fetch fails.
	if err := c.Fetch(context.Background(), uids, FetchOptions{Prefetch: prefetch}, func(RawMessage) error { return nil }); err == nil {
		t.Error("Fetch without OnRefused: got nil, want the server's NO")
	}
	// A callback error is the callback's, never taken for a refusal.
	stop := errors.New("stop")
	err = c.Fetch(context.Background(), uids[:2], FetchOptions{Prefetch: prefetch, OnRefused: func(uint32, error) { t.Error("callback error taken for a refusal") }},
		func(RawMessage) error { return stop })
	if !errors.Is(err, stop) {
		t.Errorf("Fetch: got %v, want the callback's error", err)
	}
}
