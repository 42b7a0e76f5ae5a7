package imapsync

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/emersion/go-imap/v2/imapclient"

	"github.com/mailagent/mailagent/internal/retry"
)

// State is what a Watcher is doing, for a status line.
type State int

// Watcher states, reported through Watcher.OnState.
const (
	StateConnecting   State = iota // dialling, logging in, selecting
	StateSyncing                   // running the sync callback
	StateIdle                      // waiting in IDLE for new mail
	StatePolling                   // waiting for the next poll tick
	StateReconnecting              // waiting out the backoff after a failure
)

func (s State) String() string {
	switch s {
	case StateConnecting:
		return "connecting"
	case StateSyncing:
		return "syncing"
	case StateIdle:
		return "idle"
	case StatePolling:
		return "polling"
	case StateReconnecting:
		return "reconnecting"
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// Defaults for Watcher's zero fields.
const (
	DefaultPollInterval = 60 * time.Second
	DefaultIdleRestart  = 25 * time.Minute // RFC 9051 servers may drop IDLE after 30 min
	// A lost connection is tried again at once and then every few
	// seconds at most, so that mail is handled within seconds of the
	// server's return, after a restart or an outage of any length (one
	// connection attempt every few seconds costs a server nothing).
	DefaultMaxBackoff = 3 * time.Second
	DefaultMinBackoff = 250 * time.Millisecond
	DefaultSyncRetry  = 30 * time.Second
	// probeTimeout bounds NOOP health checks and stopping IDLE, so that a
	// half-open connection is noticed instead of waited on forever.
	probeTimeout = 30 * time.Second
	// quietAfter attempts of one outage are logged each; then one in
	// quietEvery.
	quietAfter = 5
	quietEvery = 20
	// healthyAfter is how long a session must last to reset the backoff.
	healthyAfter = 30 * time.Second
)

// errConnClosed reports that the server (or the network) closed the
// connection while the watcher was waiting.
var errConnClosed = errors.New("imap connection closed")

// Watcher keeps a mailbox under watch and calls a sync function whenever
// new mail may have arrived. The zero value is not usable: Dial and Mailbox
// are required.
type Watcher struct {
	// Dial opens a logged-in client. Run closes every client it gets.
	Dial func(ctx context.Context) (*Client, error)
	// Mailbox is selected read-write on every connection.
	Mailbox string
	// PollInterval is the wait between polls (NOOP, then sync) when the
	// server lacks IDLE or DisableIdle is set; default 60s.
	PollInterval time.Duration
	// DisableIdle forces polling even when the server supports IDLE.
	DisableIdle bool
	// IdleRestart re-issues IDLE this often (servers may end it after 30
	// minutes of silence); default 25 min.
	IdleRestart time.Duration
	// MinBackoff and MaxBackoff bound the exponential, jittered wait
	// between reconnection attempts; defaults 1s and 5 min. The wait
	// never exceeds MaxBackoff and starts over after a healthy session.
	MinBackoff time.Duration
	MaxBackoff time.Duration
	// SyncRetry is the first wait before a failed sync is run again on a
	// connection that is still healthy (doubled after each failure, at
	// most MaxBackoff, reset by a sync that succeeds); default 30s. The
	// retry does not wait for new mail: a message that failed (a full
	// disk, an unreachable model) is tried again on this timer.
	SyncRetry time.Duration
	// Logger receives one warning per reconnection attempt and one error
	// per failed sync; nil discards. Errors never contain secrets.
	Logger *slog.Logger
	// Wake, when set, makes the watcher sync at once when it receives a
	// value, as new mail would (the daemon wakes it when it may act on
	// mail it had left to another watcher: claim.go there).
	Wake <-chan struct{}
	// OnState, if set, is called from Run's goroutine on every state
	// change. It must not block.
	OnState func(State)
	// OnError, if set, is called from Run's goroutine with the error of
	// each failed connection attempt or session, before the backoff wait
	// (for a status line). It must not block.
	OnError func(error)
	// OnRetry, if set, is called from Run's goroutine before each backoff
	// wait with the error that caused it and the wait (for a terminal
	// line "retrying in 4s"). It must not block.
	OnRetry func(err error, wait time.Duration)
}

// Run watches until ctx is cancelled, then returns nil.
//
// On each connection Run selects Mailbox and calls sync at once, then
// waits in IDLE (or polls) and calls sync again after every EXISTS or poll
// tick. sync always runs on the watcher's own connection with IDLE
// stopped, so it may use c freely; st.UIDValidity comes from the SELECT of
// this connection and st.NumMessages is current. When UIDVALIDITY differs
// from the previous connection's, st.UIDValidityChanged is set: every
// stored UID is then void and the caller must rescan (callers should also
// compare st.UIDValidity with their persisted checkpoint, which survives
// restarts).
//
// A sync error on a connection that still answers NOOP is logged and the
// watch goes on (the caller records per-message state); the sync is run
// again after SyncRetry (with backoff) even when no new mail arrives. A dead connection
// (failed IDLE or NOOP, read error, server BYE) is closed and Run
// reconnects with exponential backoff and jitter; so does a login the
// server refuses temporarily (ErrLoginUnavailable). Run returns early only
// for permanent errors (IsPermanent): ErrAuth, ErrPlaintextNotLoopback,
// ErrInsecureTLS, or an error the Dial function marked with Permanent.
//
// Every goroutine Run starts has ended (or is ending, having closed its
// connection) when it returns.
func (w *Watcher) Run(ctx context.Context, sync func(ctx context.Context, c *Client, st MailboxStatus) error) error {
	if w.Dial == nil || w.Mailbox == "" || sync == nil {
		return errors.New("imap watcher: Dial, Mailbox and sync are required")
	}
	minB := orDefault(w.MinBackoff, DefaultMinBackoff)
	maxB := max(orDefault(w.MaxBackoff, DefaultMaxBackoff), minB)
	bo := retry.Jittered(minB, maxB)

	r := &watchRun{w: w, log: w.logger(), state: -1}
	for attempt := 1; ; attempt++ {
		r.setState(StateConnecting)
		healthy, err := r.session(ctx, sync)
		if ctx.Err() != nil {
			return nil
		}
		if isPermanent(err) {
			return fmt.Errorf("imap watcher %s: %w", w.Mailbox, err)
		}
		if healthy {
			bo.Reset()
			attempt = 1
		}
		wait := min(bo.NextBackOff(), maxB)
		if w.OnError != nil && err != nil {
			w.OnError(err)
		}
		r.setState(StateReconnecting)
		if w.OnRetry != nil {
			w.OnRetry(err, wait)
		}
		if attempt <= quietAfter || attempt%quietEvery == 0 {
			// Retries come every few seconds: a long outage logs its
			// first attempts, then one line in quietEvery.
			r.log.Warn("imap watcher: connection lost, reconnecting",
				"mailbox", w.Mailbox, "attempt", attempt, "retry_in", wait.String(), "err", err)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

func isPermanent(err error) bool { return IsPermanent(err) }

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

func (w *Watcher) logger() *slog.Logger {
	if w.Logger != nil {
		return w.Logger
	}
	return slog.New(slog.DiscardHandler)
}

// watchRun is the state of one Run call.
type watchRun struct {
	w            *Watcher
	log          *slog.Logger
	state        State
	lastValidity uint32
	retry        time.Duration // the last sync retry wait; 0 after a success
}

func (r *watchRun) setState(s State) {
	if s == r.state {
		return
	}
	r.state = s
	if r.w.OnState != nil {
		r.w.OnState(s)
	}
}

// session runs one connection until it fails or ctx ends. healthy reports
// that its first sync completed and it then lived for healthyAfter, which
// resets the backoff; a server that drops every connection soon after
// login keeps the backoff growing.
func (r *watchRun) session(ctx context.Context, sync func(context.Context, *Client, MailboxStatus) error) (healthy bool, err error) {
	start := time.Now()
	synced := false
	defer func() { healthy = synced && time.Since(start) >= healthyAfter }()
	c, err := r.w.Dial(ctx)
	if err != nil {
		return false, fmt.Errorf("dial: %w", err)
	}
	defer func() { _ = c.Close() }()

	st, err := c.Select(ctx, r.w.Mailbox, false)
	if err != nil {
		return false, err
	}
	st.UIDValidityChanged = r.lastValidity != 0 && r.lastValidity != st.UIDValidity
	r.lastValidity = st.UIDValidity

	useIdle := c.Has("IDLE") && !r.w.DisableIdle
	for {
		r.setState(StateSyncing)
		failed, err := r.sync(ctx, c, st, sync)
		if err != nil {
			return false, err
		}
		synced = true
		var retry time.Duration
		if failed {
			retry = r.nextRetry()
			r.log.Warn("imap watcher: sync will be retried", "mailbox", r.w.Mailbox, "retry_in", retry.String())
		} else {
			r.retry = 0
		}
		if useIdle {
			err = r.idle(ctx, c, retry)
		} else {
			err = r.poll(ctx, c, retry)
		}
		if err != nil {
			return false, err
		}
		next := c.status()
		next.UIDNext = 0 // unknown since the SELECT
		st = next
	}
}

// nextRetry returns the wait before retrying a failed sync: SyncRetry,
// doubled after each consecutive failure, at most MaxBackoff.
func (r *watchRun) nextRetry() time.Duration {
	first := orDefault(r.w.SyncRetry, DefaultSyncRetry)
	limit := max(orDefault(r.w.MaxBackoff, DefaultMaxBackoff), first)
	if r.retry == 0 {
		r.retry = first
	} else {
		r.retry = min(2*r.retry, limit)
	}
	return r.retry
}

// sync calls the callback; its error ends the session only if the
// connection is dead (err). failed reports a sync error on a live
// connection, to be retried on a timer.
func (r *watchRun) sync(ctx context.Context, c *Client, st MailboxStatus, sync func(context.Context, *Client, MailboxStatus) error) (failed bool, err error) {
	err = sync(ctx, c, st)
	if err == nil || ctx.Err() != nil {
		return false, ctx.Err()
	}
	if perr := probe(ctx, c); perr != nil {
		return false, fmt.Errorf("sync: %w (connection: %v)", err, perr)
	}
	r.log.Error("imap watcher: sync failed", "mailbox", r.w.Mailbox, "err", err)
	return true, nil
}

// probe checks the connection with a bounded NOOP.
func probe(ctx context.Context, c *Client) error {
	select {
	case <-c.Done():
		return errConnClosed
	default:
	}
	pctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	return c.Noop(pctx)
}

// idle waits in IDLE until the server reports EXISTS or retry (when not
// zero) has passed (returns nil), the connection dies or ctx ends
// (returns an error). IDLE is re-issued every IdleRestart.
func (r *watchRun) idle(ctx context.Context, c *Client, retry time.Duration) error {
	restart := orDefault(r.w.IdleRestart, DefaultIdleRestart)
	var retryC <-chan time.Time
	if retry > 0 {
		rt := time.NewTimer(retry)
		defer rt.Stop()
		retryC = rt.C
	}
	for {
		select {
		case <-c.exists: // mail arrived while sync ran
			return nil
		default:
		}
		var cmd *imapclient.IdleCommand
		err := c.guard(ctx, func() error {
			var err error
			cmd, err = c.ic.Idle()
			return err
		})
		if err != nil {
			return fmt.Errorf("idle: %w", err)
		}
		r.setState(StateIdle)

		timer := time.NewTimer(restart)
		wake := false
		select {
		case <-ctx.Done():
		case <-c.exists:
			wake = true
		case <-retryC:
			wake = true
		case <-r.w.Wake:
			wake = true
		case <-timer.C:
		case <-c.Done():
		}
		timer.Stop()
		if ctx.Err() != nil {
			// Leaving: no need for DONE. Close, and let go-imap's IDLE
			// goroutine finish before we return.
			_ = c.Close()
			_ = cmd.Wait()
			return ctx.Err()
		}
		sctx, cancel := context.WithTimeout(ctx, probeTimeout)
		err = c.guard(sctx, func() error {
			if err := cmd.Close(); err != nil {
				return err
			}
			return cmd.Wait()
		})
		cancel()
		if err != nil {
			return fmt.Errorf("stop idle: %w", err)
		}
		if wake {
			return nil
		}
	}
}

// poll waits PollInterval (or retry, when shorter and not zero), then
// checks the connection with NOOP (which also lets the server report new
// mail).
func (r *watchRun) poll(ctx context.Context, c *Client, retry time.Duration) error {
	r.setState(StatePolling)
	wait := orDefault(r.w.PollInterval, DefaultPollInterval)
	if retry > 0 {
		wait = min(wait, retry)
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-c.Done():
		return errConnClosed
	case <-t.C:
	case <-r.w.Wake:
	}
	if err := probe(ctx, c); err != nil {
		return fmt.Errorf("poll: %w", err)
	}
	select {
	case <-c.exists: // we sync on every tick anyway
	default:
	}
	return nil
}
