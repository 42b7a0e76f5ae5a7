package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/internal/app/api"
	"github.com/mailagent/mailagent/internal/config"
	"github.com/mailagent/mailagent/internal/termsafe"
	"github.com/mailagent/mailagent/store"
)

// One process at a time holds the state database (bbolt's file lock).
// This file is how the others live beside it, whichever started first:
//
//   - a process that holds it for long serves the API socket while it
//     does (watch; triage and a CLI approval waiting out its undo window
//     through api.ServeHeld), and names itself in api.HolderFile;
//   - the short commands go through that socket (api.Open);
//   - watch, and a triage that finds no socket, wait for the lock, saying
//     once what holds it (waitForStore, waitForService);
//   - long readers never hold it: they work on a private copy
//     (store.OpenSnapshot, see openPipelineStore).

// lockPoll is how often a waiting command tries the lock again (on top
// of the store's own one-second lock timeout).
const lockPoll = 500 * time.Millisecond

// lockWaiter says, once per holder, what a waiting command waits for.
type lockWaiter struct {
	stateDir string
	// starts completes "…; <starts> when it finishes", e.g. "watching
	// starts".
	starts string
	say    func(string)
	last   string
}

// announce says who holds the database (pid from the socket's status
// when the holder file is missing).
func (w *lockWaiter) announce(pid int) {
	who := "another mailagent process"
	if h := api.ReadHolder(w.stateDir); h != nil {
		who = h.String()
	} else if pid != 0 {
		who = fmt.Sprintf("another mailagent process (pid %d)", pid)
	}
	msg := fmt.Sprintf("%s holds the state database; %s when it finishes", termsafe.Line(who), w.starts)
	if msg != w.last {
		w.last = msg
		w.say(msg)
	}
}

// sleepCtx waits d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// waitForStore opens the state database for watch. When another watcher
// runs (its socket answers as a watcher) it is exit 4; when anything else
// holds the database (a triage, an approval in its undo window, a short
// command) it says so once through say and waits until it is free, or
// until ctx ends (then it returns ctx's error).
func waitForStore(ctx context.Context, f *Factory, cfg *config.Config, say func(string)) (*store.Store, error) {
	w := &lockWaiter{stateDir: cfg.StateDir, starts: "watching starts", say: say}
	for {
		st, err := f.OpenStore(false)
		if err == nil || !errors.Is(err, store.ErrLocked) {
			return st, err
		}
		pid := 0
		if c, derr := api.Dial(ctx, api.SocketPath(cfg.StateDir)); derr == nil {
			s, serr := c.Status(ctx)
			_ = c.Close()
			if serr == nil && s.Watcher {
				return nil, &UserError{Code: ExitLocked, Err: fmt.Errorf("%w: a watcher is already running (pid %d)", err, s.PID),
					Hint: "stop it first; the other commands work through it meanwhile"}
			}
			pid = s.PID
		}
		w.announce(pid)
		if err := sleepCtx(ctx, lockPoll); err != nil {
			return nil, err
		}
	}
}

// waitForService is api.Open for triage and the dry runs (replay):
// through a watcher's socket, else over the store openStore opens. A
// holder that is not the watcher (another triage, an approval waiting
// out its undo window) is not gone through, since it ends when its own
// work does and would take the store away mid-run: as when the database
// is held and nothing answers, waitForService says so once through say
// ("…; <starts> when it finishes") and tries again until ctx ends.
func waitForService(ctx context.Context, stateDir, starts string, say func(string), openStore func() (*store.Store, error)) (api.Service, func() error, error) {
	w := &lockWaiter{stateDir: stateDir, starts: starts, say: say}
	for {
		svc, closeSvc, err := api.Open(ctx, stateDir, openStore, nil)
		if err != nil && !errors.Is(err, store.ErrLocked) {
			return nil, nil, err
		}
		pid := 0
		if err == nil {
			c, remote := svc.(*api.Client)
			if !remote {
				return svc, closeSvc, nil
			}
			s, serr := c.Status(ctx)
			if serr == nil && s.Watcher {
				return svc, closeSvc, nil
			}
			_ = closeSvc()
			if serr != nil && ctx.Err() != nil {
				return nil, nil, ctx.Err()
			}
			pid = s.PID
		}
		w.announce(pid)
		if err := sleepCtx(ctx, lockPoll); err != nil {
			return nil, nil, err
		}
	}
}

// heldStatus is the Status a holder that is not the watcher reports.
func heldStatus() func(context.Context) api.Status {
	started := time.Now()
	return func(context.Context) api.Status {
		return api.Status{Watcher: false, PID: os.Getpid(), Started: started}
	}
}

// lazyActions builds local actions on first use: a triage that serves the
// socket pays for the agent (threader, mailer) only when a command asks
// it to act.
type lazyActions struct {
	build func() (localActions, func(), error)

	once    sync.Once
	actions localActions
	close   func()
	err     error
}

func (l *lazyActions) get() (localActions, error) {
	l.once.Do(func() { l.actions, l.close, l.err = l.build() })
	return l.actions, l.err
}

// Close releases what was built.
func (l *lazyActions) Close() {
	l.once.Do(func() { l.err = errors.New("closed") }) // nothing built: nothing to build later
	if l.close != nil {
		l.close()
	}
}

func (l *lazyActions) Approve(ctx context.Context, id, final string) (*store.QueueItem, error) {
	a, err := l.get()
	if err != nil {
		return nil, err
	}
	return a.Approve(ctx, id, final)
}

func (l *lazyActions) Reject(ctx context.Context, id, reason string) error {
	a, err := l.get()
	if err != nil {
		return err
	}
	return a.Reject(ctx, id, reason)
}

func (l *lazyActions) Edit(ctx context.Context, id, text string) (*store.QueueItem, error) {
	a, err := l.get()
	if err != nil {
		return nil, err
	}
	return a.Edit(ctx, id, text)
}

func (l *lazyActions) Snooze(ctx context.Context, id string, until time.Time) error {
	a, err := l.get()
	if err != nil {
		return err
	}
	return a.Snooze(ctx, id, until)
}

func (l *lazyActions) Unsnooze(ctx context.Context, id string) error {
	a, err := l.get()
	if err != nil {
		return err
	}
	return a.Unsnooze(ctx, id)
}

func (l *lazyActions) Regenerate(ctx context.Context, id, instruction string) (*store.QueueItem, error) {
	a, err := l.get()
	if err != nil {
		return nil, err
	}
	return a.Regenerate(ctx, id, instruction)
}

func (l *lazyActions) Cancel(ctx context.Context, outboxID string) error {
	a, err := l.get()
	if err != nil {
		return err
	}
	return a.Cancel(ctx, outboxID)
}

func (l *lazyActions) Retry(ctx context.Context, k store.MessageKey) error {
	a, err := l.get()
	if err != nil {
		return err
	}
	return a.Retry(ctx, k)
}

// RSVP answers an invitation (api.RSVPer through the socket).
func (l *lazyActions) RSVP(ctx context.Context, id, answer string) (*store.QueueItem, error) {
	a, err := l.get()
	if err != nil {
		return nil, err
	}
	return a.RSVP(ctx, id, answer)
}

var _ api.Actions = (*lazyActions)(nil)

// waitUndo waits out an approval's undo window: until at, or until ctx
// ends (agent.Pipeline.SendApproval then cancels the approval). With w
// set it first says "<id>: <what> in 5s; press Ctrl-C to cancel". now is
// the clock (nil: time.Now). It is the one wait of the three places that
// send an approval in this process: queue approve, queue rsvp and
// review's send at the end of its countdown.
func waitUndo(ctx context.Context, w io.Writer, id, what string, at time.Time, now func() time.Time) error {
	if now == nil {
		now = time.Now
	}
	wait := at.Sub(now())
	if wait <= 0 {
		return nil
	}
	if w != nil {
		fmt.Fprintf(w, "%s: %s in %s; press Ctrl-C to cancel\n", termsafe.Line(id), what, countdown(wait))
	}
	return sleepCtx(ctx, wait)
}

// Propose stores a proposed reply (api.Proposer through the socket).
func (l *lazyActions) Propose(ctx context.Context, k store.MessageKey, text, source string) (*store.QueueItem, error) {
	a, err := l.get()
	if err != nil {
		return nil, err
	}
	return a.Propose(ctx, k, text, source)
}

// SendOwnMail sends a mail of its own, an unsubscribe (api.OwnMailer
// through the socket).
func (l *lazyActions) SendOwnMail(ctx context.Context, m agent.OwnMail) (*store.OutboxRecord, error) {
	a, err := l.get()
	if err != nil {
		return nil, err
	}
	return a.SendOwnMail(ctx, m)
}

var (
	_ api.Inviter   = (*lazyActions)(nil)
	_ api.Proposer  = (*lazyActions)(nil)
	_ api.OwnMailer = (*lazyActions)(nil)
)
