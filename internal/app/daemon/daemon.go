// Package daemon is `mailagent watch`: one IMAP watcher per account, all
// run together, feeding new mail through the agent pipeline, plus the
// timers that send delayed replies, wake snoozed items and retry messages
// that need review.
//
// Contract:
//   - Every goroutine belongs to Run's errgroup and ends when ctx ends; Run
//     then returns nil (SIGINT/SIGTERM is a clean exit).
//   - The checkpoint of a mailbox only moves past messages whose record is
//     terminal (done or needs_review), so a crash at any point is resumed
//     on the next start; acting is idempotent, so nothing is done twice.
//   - On the very first start of a mailbox only mail from the last
//     InitialLookback is processed, never years of history.
//   - A UIDVALIDITY change voids stored UIDs: the mailbox is rescanned and
//     messages already handled are recognised by Message-ID.
package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/imapsync"
	"github.com/mailagent/mailagent/internal/app/status"
	"github.com/mailagent/mailagent/internal/config"
	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/internal/notify"
	"github.com/mailagent/mailagent/store"
)

// Account is one mailbox to watch.
type Account struct {
	Name    string
	Mailbox string
	// Dial opens a logged-in IMAP client for the watcher connection.
	Dial func(ctx context.Context) (*imapsync.Client, error)
}

// Status is what the daemon reports about one account (the type the
// API reports too).
type Status = status.Account

// Daemon runs the watch.
type Daemon struct {
	Store           *store.Store
	Pipeline        *agent.Pipeline
	Mailer          *Mailer
	Accounts        []Account
	MaxMessageBytes int64
	InitialLookback time.Duration // default config.DefaultInitialLookback
	RetryInterval   time.Duration // default config.DefaultRetryInterval
	PollInterval    time.Duration // default 60s (servers without IDLE)
	DisableIdle     bool          // poll even when IDLE is available
	Concurrency     int           // messages in flight per account; default 4
	// SentLookback bounds the first scan of the Sent folder (default agent.SentLookback).
	SentLookback time.Duration
	// RetryBatch bounds how many needs_review messages one retry pass
	// takes (the oldest first; the rest wait for the next pass), and
	// RetryConcurrency how many run at once; defaults 50 and 2. The pass
	// at start-up runs in the background after the watchers are up, so
	// new mail never waits behind a backlog of retries.
	RetryBatch       int
	RetryConcurrency int
	// SyncRetry is the first wait before a failed sync is run again on a
	// live connection (imapsync.Watcher.SyncRetry); default 30s.
	SyncRetry time.Duration
	// ThreadWindow and ThreadLimit bound the pipeline's threader as the
	// start-up rebuild does (the newest ThreadLimit messages of the last
	// ThreadWindow; defaults 180 days and 25,000): once it holds a quarter
	// more than ThreadLimit, or a day after the last rebuild, it is
	// rebuilt from that window (mail.Threader.Rebuild).
	ThreadWindow time.Duration
	ThreadLimit  int
	// DueCap is the longest the timer of due sends and snoozes sleeps
	// without looking at the store (default 60s): it sleeps until the next
	// due time or a Wake, and this bounds the wait when a change reached
	// the store without a Wake (another process, a clock jump). It also
	// paces the daily prune.
	DueCap time.Duration
	// JobMaxSleep bounds the durable scheduler's sleep when no job is due
	// (Scheduler.MaxSleep; default 1h).
	JobMaxSleep time.Duration

	Logger *slog.Logger
	Now    func() time.Time
	// OnSynced, when set, is called after each sync pass of an account
	// (tests and benchmarks wait on it).
	OnSynced func(account string)
	// OnState and OnRetry, when set, are called with each account's
	// watcher state changes and before each reconnection wait (with its
	// reason); watch prints them on a terminal. They must not block.
	OnState func(account string, s imapsync.State)
	OnRetry func(account string, err error, wait time.Duration)
	// Digest, when set, sends the owner's digest once per period
	// (digest.schedule); see digest.go.
	Digest DigestRunner
	// Notifier, when set, is told when a new message needs the owner (a
	// draft queued for approval, a message set aside for review); see
	// notify.go. nil ([notify] desktop = false, the default) tells no one.
	Notifier notify.Notifier
	// Claims: several watchers of one account claim each message in the
	// mailbox before acting on it (claim.go).
	Claims ClaimOptions

	// sentBodyWindow overrides agent.SentBodyWindow (tests' control), and
	// sentBodyBatch sentHandleBatch for the body pass (tests).
	sentBodyWindow time.Duration
	sentBodyBatch  int

	mu     sync.Mutex
	status map[string]*Status
	lat    latency // push latency per account (latency.go)
	// sentScan remembers when each account's Sent folder was last scanned.
	sentScan map[string]time.Time
	// sentIdle holds the accounts whose watcher reached idle in this Run,
	// and sentKick wakes the body pass (sentbodies.go) while Run runs.
	sentIdle map[string]bool
	sentKick chan struct{}
	// threadsRebuilt is when the threader was last bounded (Run's start
	// counts: the caller loaded the window).
	threadsRebuilt time.Time
	// refusals counts, per message, the syncs in a row whose FETCH the
	// server refused (see recordRefused).
	refusals map[store.MessageKey]int
	// duePasses counts the sends job's passes of sendDue (tests).
	duePasses atomic.Int64
	// sched is the durable scheduler while Run runs (Wake nudges it too).
	sched atomic.Pointer[Scheduler]
	// holder and claimState are the claims' (claim.go).
	holder     string
	claimState map[string]*accountClaims
}

func (d *Daemon) now() time.Time {
	if d.Now != nil {
		return d.Now()
	}
	return time.Now()
}

func (d *Daemon) log() *slog.Logger {
	if d.Logger != nil {
		return d.Logger
	}
	return slog.New(slog.DiscardHandler)
}

func orDefault(v, def time.Duration) time.Duration {
	if v > 0 {
		return v
	}
	return def
}

// Statuses returns a snapshot of every account's state.
func (d *Daemon) Statuses() []Status {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]Status, 0, len(d.Accounts))
	for _, a := range d.Accounts {
		if s, ok := d.status[a.Name]; ok {
			out = append(out, *s)
		} else {
			out = append(out, Status{Name: a.Name, State: "starting"})
		}
	}
	return out
}

func (d *Daemon) setStatus(name string, f func(*Status)) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.status == nil {
		d.status = map[string]*Status{}
	}
	s, ok := d.status[name]
	if !ok {
		s = &Status{Name: name}
		d.status[name] = s
	}
	f(s)
}

// Run watches every account until ctx ends. With once, it catches up on
// every account and returns (for cron jobs and scripts).
//
// Accounts fail independently: an account whose watcher stops for good
// (a rejected password, a password command that fails) is shown in
// Statuses with its error, and the others keep running. Run returns an
// error only when every account has stopped so.
func (d *Daemon) Run(ctx context.Context, once bool) error {
	if err := d.Pipeline.Recover(ctx); err != nil {
		d.log().Warn("outbox recovery", "err", err)
	}
	if once {
		d.resumeStranded(ctx)
		d.retryNeedsReview(ctx, true)
		return d.runOnce(ctx)
	}
	d.threadsRebuilt = d.now()
	g, gctx := errgroup.WithContext(ctx)
	kick := make(chan struct{}, 1)
	d.mu.Lock()
	d.sentKick, d.sentIdle = kick, nil // idle is this Run's
	d.mu.Unlock()
	g.Go(func() error {
		d.runSentBodies(gctx, kick) // the owner's Sent bodies, once idle (sentbodies.go)
		return nil
	})
	var (
		failMu  sync.Mutex
		failed  int
		failErr error
	)
	for _, a := range d.Accounts {
		var lostAt time.Time // when this account's connection was lost; zero while connected
		w := &imapsync.Watcher{
			Dial: a.Dial, Mailbox: a.Mailbox, PollInterval: d.PollInterval, DisableIdle: d.DisableIdle,
			SyncRetry: d.SyncRetry, Wake: d.claims(a.Name).wake,
			Logger: d.log().With("account", a.Name),
			OnState: func(s imapsync.State) {
				switch {
				case s == imapsync.StateReconnecting && lostAt.IsZero():
					lostAt = d.now()
				case (s == imapsync.StateIdle || s == imapsync.StatePolling) && !lostAt.IsZero():
					d.log().Info("imap connection back", "account", a.Name, "down_for", d.now().Sub(lostAt).Round(time.Millisecond).String())
					lostAt = time.Time{}
				}
				d.setStatus(a.Name, func(st *Status) {
					st.State = s.String()
					if s != imapsync.StateReconnecting {
						st.RetryAt = time.Time{}
					}
				})
				if d.OnState != nil {
					d.OnState(a.Name, s)
				}
				if s == imapsync.StateIdle || s == imapsync.StatePolling {
					d.sentIdleReached(a.Name) // the start is over: the owner's Sent bodies may be read
				}
			},
			OnRetry: func(err error, wait time.Duration) {
				d.setStatus(a.Name, func(st *Status) { st.RetryAt = d.now().Add(wait) })
				if d.OnRetry != nil {
					d.OnRetry(a.Name, err, wait)
				}
			},
			OnError: func(err error) {
				d.setStatus(a.Name, func(st *Status) { st.SetError(err, d.now()) })
			},
		}
		g.Go(func() error {
			err := w.Run(gctx, func(ctx context.Context, c *imapsync.Client, st imapsync.MailboxStatus) error {
				return d.Sync(ctx, a, c, st)
			})
			if err == nil || gctx.Err() != nil {
				return nil
			}
			d.setStatus(a.Name, func(st *Status) {
				st.State = "stopped"
				st.SetError(err, d.now())
			})
			d.log().Error("account stopped; the other accounts go on", "account", a.Name, "err", err)
			failMu.Lock()
			defer failMu.Unlock()
			failed++
			failErr = errors.Join(failErr, fmt.Errorf("account %s: %w", a.Name, err))
			if failed == len(d.Accounts) {
				return failErr // nothing left to watch
			}
			return nil
		})
	}
	g.Go(func() error {
		d.runElections(gctx) // servers without CONDSTORE (claim.go)
		return nil
	})
	g.Go(func() error {
		// Start-up catch-up, in the background once the watchers run.
		d.resumeStranded(gctx)
		d.retryNeedsReview(gctx, true)
		d.recordCopies(d.retryCopies(gctx))
		return nil
	})
	// Due sends and snoozes, the followup timers, the digest, the
	// needs_review retries and the maintenance pass run as jobs of the
	// durable scheduler (scheduler_jobs.go).
	sched, err := d.startJobs()
	if err != nil {
		d.log().Warn("schedule the watcher's jobs", "err", err)
	}
	d.sched.Store(sched)
	d.Wake() // a nudge that came before the scheduler existed
	g.Go(func() error { return sched.Run(gctx) })
	err = g.Wait()
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// boundThreader rebuilds the pipeline's threader from the window the
// start-up uses once it has grown a quarter past ThreadLimit or a day has
// passed, so a watcher running for months does not grow without bound.
func (d *Daemon) boundThreader() {
	th := d.Pipeline.Threader
	if th == nil {
		return
	}
	limit := d.ThreadLimit
	if limit <= 0 {
		limit = 25000
	}
	if th.Len() <= limit+limit/4 && d.now().Sub(d.threadsRebuilt) < 24*time.Hour {
		return
	}
	since := d.now().Add(-orDefault(d.ThreadWindow, 180*24*time.Hour))
	err := th.Rebuild(func(add func(mail.ThreadInput)) error {
		return d.Store.ThreadInputs(since, limit, func(in mail.ThreadInput) error {
			add(in)
			return nil
		})
	})
	if err != nil {
		d.log().Error("bound the threader", "err", err)
		return
	}
	d.threadsRebuilt = d.now()
	d.log().Info("threader rebuilt from its window", "messages", th.Len())
}

// recordCopies puts what retryCopies left undone in each account's status.
func (d *Daemon) recordCopies(missing map[string]copyState) {
	for _, a := range d.Accounts {
		m := missing[a.Name]
		d.setStatus(a.Name, func(s *Status) {
			s.CopiesMissing, s.CopyError = m.missing, ""
			if m.err != nil {
				s.CopyError = m.err.Error()
			}
		})
	}
}

// defaultDueCap is the default of Daemon.DueCap.
const defaultDueCap = 60 * time.Second

// dueMinGap is the shortest time between two passes of sendDue when the
// store still shows something due after a pass (a send that cannot move
// on): the loop then works at most once a second instead of spinning.
const dueMinGap = time.Second

// Wake tells the durable scheduler that what is due may have changed (a
// new outbox record, a snooze, an approval, a cancel, a followup timer):
// it re-reads the next scheduled send, send retry, snooze end and
// followup timer, and moves their jobs earlier when needed. It never
// blocks; nudges that arrive together are merged. Wire it to
// agent.Actor.Notify (every event is fine: a wake only reads due times).
func (d *Daemon) Wake() {
	if s := d.sched.Load(); s != nil {
		s.Wake()
	}
}

// Notify is Wake in the shape of agent.Actor.Notify.
func (d *Daemon) Notify(agent.Event) { d.Wake() }

// untilDue is how long the sends job may wait after a pass of sendDue at
// last: until the next due time, at most DueCap, and at least what is left of
// dueMinGap after last when something is due already.
func (d *Daemon) untilDue(last time.Time) time.Duration {
	next, ok, err := d.Store.NextDue()
	if err != nil {
		d.log().Warn("next due time", "err", err)
		return dueMinGap
	}
	now := d.now()
	if !ok {
		return orDefault(d.DueCap, defaultDueCap)
	}
	wait := min(next.Sub(now), orDefault(d.DueCap, defaultDueCap))
	if wait <= 0 {
		wait = max(0, dueMinGap-now.Sub(last))
	}
	return wait
}

func (d *Daemon) sendDue(ctx context.Context) {
	if err := d.Pipeline.SendDue(ctx); err != nil && ctx.Err() == nil {
		d.log().Warn("scheduled sends", "err", err)
	}
}

func (d *Daemon) runOnce(ctx context.Context) error {
	var errs error
	for _, a := range d.Accounts {
		err := func() error {
			c, err := a.Dial(ctx)
			if err != nil {
				return err
			}
			defer func() { _ = c.Close() }()
			st, err := c.Select(ctx, a.Mailbox, false)
			if err != nil {
				return err
			}
			return d.Sync(ctx, a, c, st)
		}()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			errs = errors.Join(errs, fmt.Errorf("account %s: %w", a.Name, err))
		}
	}
	for _, a := range d.Accounts {
		// No idle in a single pass: the owner's Sent bodies are read
		// after the accounts are caught up.
		if err := d.readSentBodies(ctx, a.Name); err != nil && ctx.Err() == nil {
			d.log().Warn("read the owner's Sent mail", "account", a.Name, "err", err)
		}
	}
	d.releaseLeases() // servers without CONDSTORE (claim.go)
	d.sendDue(ctx)
	d.runDigest(ctx)
	d.fireFollowups(ctx)
	return errs
}

// Sync catches up on one account: everything after its checkpoint (or, the
// first time, the last InitialLookback), then the Sent folder.
func (d *Daemon) Sync(ctx context.Context, a Account, c *imapsync.Client, st imapsync.MailboxStatus) error {
	d.beginSync(a.Name)
	uids, rescan, cut, err := d.pending(ctx, a, c, st)
	if err != nil {
		d.setStatus(a.Name, func(s *Status) { s.SetError(err, d.now()) })
		return err
	}
	err = d.process(ctx, a, c, st, uids, rescan, cut)
	d.setStatus(a.Name, func(s *Status) {
		s.LastSync = d.now()
		s.SetError(err, d.now())
	})
	d.scanSent(ctx, a.Name, false)
	if d.OnSynced != nil {
		d.OnSynced(a.Name)
	}
	return err
}

// pending decides which UIDs to fetch, and sets the checkpoint on a first
// start or after a UIDVALIDITY change.
// cut, when set, drops messages whose INTERNALDATE is before it.
func (d *Daemon) pending(ctx context.Context, a Account, c *imapsync.Client, st imapsync.MailboxStatus) (uids []uint32, rescan bool, cut time.Time, err error) {
	cp, ok, err := d.Store.Checkpoint(a.Name, a.Mailbox)
	if err != nil {
		return nil, false, cut, err
	}
	lookback := d.now().Add(-orDefault(d.InitialLookback, config.DefaultInitialLookback))
	if ok && cp.UIDValidity == st.UIDValidity {
		uids, err = c.Search(ctx, imapsync.Criteria{UIDMin: cp.LastUID + 1})
		return uids, false, cut, err
	}
	since := lookback
	if ok {
		// UIDVALIDITY changed: rescan from the last sync (or the lookback,
		// whichever is earlier); duplicates are found by Message-ID.
		rescan = true
		if !cp.UpdatedAt.IsZero() && cp.UpdatedAt.Before(since) {
			since = cp.UpdatedAt.Add(-24 * time.Hour)
		}
		d.log().Warn("UIDVALIDITY changed: rescanning", "account", a.Name, "mailbox", a.Mailbox, "old", cp.UIDValidity, "new", st.UIDValidity)
	}
	uids, err = c.Search(ctx, imapsync.Criteria{Since: since})
	if err != nil {
		return nil, false, cut, err
	}
	// IMAP SINCE compares dates, so a day's worth of older mail may come
	// back; the precise cut is made on INTERNALDATE after the fetch.
	last := uint32(0)
	if len(uids) > 0 {
		last = uids[0] - 1
	} else if st.UIDNext > 0 {
		last = st.UIDNext - 1
	}
	if err := d.Store.SetCheckpoint(a.Name, a.Mailbox, store.Checkpoint{UIDValidity: st.UIDValidity, LastUID: last}); err != nil {
		return nil, false, cut, err
	}
	if !ok {
		d.scanSent(ctx, a.Name, true) // learn known contacts before the first decisions
		cut = lookback
	}
	return uids, rescan, cut, nil
}

// process fetches uids and runs each through the pipeline with bounded
// concurrency, then moves the checkpoint over the terminal prefix.
func (d *Daemon) process(ctx context.Context, a Account, c *imapsync.Client, st imapsync.MailboxStatus, uids []uint32, rescan bool, cut time.Time) error {
	if len(uids) == 0 {
		// Nothing new: the status still says how the account is shared
		// (a watcher restarted after its mail was handled says so too).
		_, err := d.filterClaimed(ctx, a, c, st.UIDValidity, nil)
		return err
	}
	// Only the messages this watcher may act on are fetched; the ones
	// another watcher holds stay unrecorded (claim.go).
	act, err := d.filterClaimed(ctx, a, c, st.UIDValidity, uids)
	if err != nil {
		return err
	}
	deferred := map[uint32]bool{}
	for _, uid := range uids {
		deferred[uid] = true
	}
	for _, uid := range act {
		delete(deferred, uid)
	}
	conc := max(d.Concurrency, 1)
	if d.Concurrency == 0 {
		conc = 4
	}
	var mu sync.Mutex
	skipped := map[uint32]bool{} // too old for the first start: not ours to process
	fetched := map[uint32]bool{}
	refused := map[uint32]error{} // the server answered NO for these alone
	var procErr error
	fetch := func(ctx context.Context, send func(imapsync.RawMessage) error) error {
		opts := imapsync.FetchOptions{MaxMessageBytes: d.MaxMessageBytes, OnRefused: func(uid uint32, err error) {
			mu.Lock()
			refused[uid] = err
			mu.Unlock()
		}}
		return c.Fetch(ctx, act, opts, func(m imapsync.RawMessage) error {
			mu.Lock()
			fetched[m.UID] = true
			mu.Unlock()
			d.noteArrival(a.Name, m)
			if !cut.IsZero() && !m.InternalDate.IsZero() && m.InternalDate.Before(cut) {
				mu.Lock()
				skipped[m.UID] = true
				mu.Unlock()
				return nil
			}
			return send(m)
		})
	}
	work := func(ctx context.Context, m imapsync.RawMessage) error {
		key := store.MessageKey{Account: a.Name, Mailbox: a.Mailbox, UIDValidity: m.UIDValidity, UID: m.UID}
		if rescan {
			dup, err := d.duplicate(key, m.Raw)
			if err != nil {
				// Unknown whether it was handled before: leave it
				// unrecorded, so it blocks the checkpoint and is
				// tried again, rather than risk acting twice.
				d.log().Error("look for a message handled before the UIDVALIDITY change", "account", a.Name, "uid", m.UID, "err", err)
				mu.Lock()
				procErr = errors.Join(procErr, fmt.Errorf("uid %d: %w", m.UID, err))
				mu.Unlock()
				return nil
			}
			if dup {
				return nil
			}
		}
		if !d.mayAct(a.Name, m.UID) {
			return nil // its claim runs short: claimed again by the next sync
		}
		out, err := d.Pipeline.Process(ctx, agent.Input{Key: key, Raw: m.Raw, Truncated: m.Truncated})
		d.tellOwner(ctx, out)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			// The message stays non-terminal and blocks the
			// checkpoint, so the next sync tries it again.
			d.log().Error("process message", "account", a.Name, "uid", m.UID, "err", err)
			mu.Lock()
			procErr = errors.Join(procErr, fmt.Errorf("uid %d: %w", m.UID, err))
			mu.Unlock()
		}
		return nil
	}
	if err := agent.RunPool(ctx, conc, fetch, work); err != nil {
		// A failed FETCH (NO [UNAVAILABLE], a dropped connection) says
		// nothing about the messages it did not return: the checkpoint
		// moves only over what was handled, and the rest is fetched again.
		if ctx.Err() != nil {
			// A stop: what was decided before it is still marked done
			// (finishOwn outlives the stop), so its claim is not left
			// for a lease.
			d.finishClaims(ctx, a, c, st.UIDValidity, act, skipped)
			return err
		}
		return errors.Join(err, d.advance(a, st.UIDValidity, uids, skipped, fetched, nil))
	}
	procErr = errors.Join(procErr, d.recordRefused(a, st.UIDValidity, refused))
	d.finishClaims(ctx, a, c, st.UIDValidity, act, skipped)
	// A UID the server left out of its answer counts as expunged only when
	// a fresh UID SEARCH confirms it is gone.
	var notFetched []uint32
	for _, uid := range uids {
		if !fetched[uid] && refused[uid] == nil && !deferred[uid] {
			notFetched = append(notFetched, uid)
		}
	}
	gone := map[uint32]bool{}
	var missErr error
	if len(notFetched) > 0 {
		missing, err := c.Missing(ctx, notFetched)
		if err != nil {
			missErr = fmt.Errorf("confirm %d messages the server did not return: %w", len(notFetched), err)
		}
		for _, uid := range missing {
			gone[uid] = true
		}
		if n := len(notFetched) - len(missing); err == nil && n > 0 {
			missErr = fmt.Errorf("the server did not return %d messages that still exist: they are fetched again", n)
		}
	}
	return errors.Join(procErr, missErr, d.advance(a, st.UIDValidity, uids, skipped, fetched, gone))
}

// maxRefusals is how many syncs in a row may find a message refused by the
// server before it is recorded as needing review (so that it stops
// holding the checkpoint back, and the owner sees it).
const maxRefusals = 3

// recordRefused counts the messages the server refused to return. Each is
// fetched again by the next sync (the error returned makes the watcher
// retry on its timer); one refused maxRefusals times in a row is recorded
// as needs_review with the server's answer: never skipped silently, and
// retried with the other needs_review messages.
func (d *Daemon) recordRefused(a Account, uidvalidity uint32, refused map[uint32]error) error {
	var errs error
	for uid, rerr := range refused {
		key := store.MessageKey{Account: a.Name, Mailbox: a.Mailbox, UIDValidity: uidvalidity, UID: uid}
		d.mu.Lock()
		if d.refusals == nil {
			d.refusals = map[store.MessageKey]int{}
		}
		d.refusals[key]++
		n := d.refusals[key]
		if n >= maxRefusals {
			delete(d.refusals, key)
		}
		d.mu.Unlock()
		if n < maxRefusals {
			errs = errors.Join(errs, fmt.Errorf("uid %d: the server refused to return it (%d of %d tries): %w", uid, n, maxRefusals, rerr))
			continue
		}
		why := fmt.Sprintf("the server refused to return this message %d times: %v", maxRefusals, rerr)
		rec, err := d.Store.GetMessage(key)
		if errors.Is(err, store.ErrNotFound) {
			rec, err = &store.MessageRecord{MessageKey: key}, nil
		}
		if err == nil && rec.State.Terminal() {
			continue
		}
		if err == nil {
			rec.State, rec.Decision, rec.Error = store.StateNeedsReview, agent.DecisionNeedsReview, why
			rec.Reasons = append(rec.Reasons, why)
			err = d.Store.PutMessage(rec)
		}
		if err != nil {
			errs = errors.Join(errs, fmt.Errorf("uid %d: record that the server refuses it: %w", uid, err))
			continue
		}
		d.log().Error("message refused by the server: recorded as needing review", "account", a.Name, "uid", uid, "err", rerr)
	}
	return errs
}

// advance moves the checkpoint over the longest prefix of uids whose
// messages are terminal (or were skipped as too old, or are confirmed
// gone by a fresh search).
func (d *Daemon) advance(a Account, uidvalidity uint32, uids []uint32, skipped, fetched, gone map[uint32]bool) error {
	cp, _, err := d.Store.Checkpoint(a.Name, a.Mailbox)
	if err != nil {
		return err
	}
	last := cp.LastUID
	for _, uid := range uids {
		if uid <= last {
			continue
		}
		if !skipped[uid] {
			rec, err := d.Store.GetMessage(store.MessageKey{Account: a.Name, Mailbox: a.Mailbox, UIDValidity: uidvalidity, UID: uid})
			if errors.Is(err, store.ErrNotFound) {
				if fetched[uid] || !gone[uid] {
					break // not recorded and not known to be gone: try again next time
				}
				// Expunged between SEARCH and FETCH (confirmed).
				last = uid
				continue
			}
			if err != nil {
				return err
			}
			if !rec.State.Terminal() {
				break
			}
		}
		last = uid
	}
	if last == cp.LastUID {
		return nil
	}
	return d.Store.SetCheckpoint(a.Name, a.Mailbox, store.Checkpoint{UIDValidity: uidvalidity, LastUID: last})
}

// duplicate reports whether a message found in a rescan (after a
// UIDVALIDITY change) was already handled under its old UID, and if so
// records the new UID as done with the old outcome. The old record must
// carry its Message-ID and be from the same correspondent, as the owner's
// server authenticated both (store.SameCorrespondent): a Message-ID is
// text a sender chose, and a stranger who reused or predicted a contact's
// must never hide the contact's mail. An error means the answer is
// unknown.
func (d *Daemon) duplicate(key store.MessageKey, raw []byte) (bool, error) {
	var owner agent.Owner
	if acct, ok := d.Pipeline.Accounts[key.Account]; ok {
		owner = acct.Owner
	}
	m := agent.Identify(key, raw, owner)
	if m.Synthesized {
		return false, nil
	}
	olds, err := d.Store.FindByMessageID(key.Account, m.MessageID)
	if err != nil {
		return false, fmt.Errorf("find %s by Message-ID: %w", m.MessageID, err)
	}
	for _, old := range olds {
		if old.Mailbox != key.Mailbox || old.UIDValidity == key.UIDValidity || !old.State.Terminal() {
			continue
		}
		if !store.SameCorrespondent(old, m) {
			continue // another sender's message under the same Message-ID
		}
		cp := *old
		cp.MessageKey = key
		cp.Reasons = append(slices.Clone(old.Reasons), fmt.Sprintf("already handled as uid %d before the UIDVALIDITY change", old.UID))
		if err := d.Store.PutMessage(&cp); err != nil {
			return false, fmt.Errorf("record uid %d as handled before: %w", key.UID, err)
		}
		return true, nil
	}
	return false, nil
}
