// Package actions is how the commands, the review TUI and the API socket
// act on the queue in this process when no watcher runs, and how one
// process at a time holds the state database while the others live
// beside it (the hold machinery). The agent's pipeline decides; this
// package only schedules the waiting: the undo window of an approval
// (WaitUndo), the lock of the database (WaitForStore, WaitForService),
// and the socket a holder serves meanwhile.
package actions

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
	"github.com/mailagent/mailagent/internal/app/apperr"
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
//     once what holds it (WaitForStore, WaitForService);
//   - long readers never hold it: they work on a private copy
//     (store.OpenSnapshot, see internal/app/triage's OpenStore).

// LockPoll is how often a waiting command tries the lock again (on top
// of the store's own one-second lock timeout).
const LockPoll = 500 * time.Millisecond

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

// SleepCtx waits d or until ctx ends (then it returns ctx's error).
func SleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// WaitForStore opens the state database of stateDir for watch through
// open. When another watcher runs (its socket answers as a watcher) it is
// an *apperr.Error with CodeLocked (exit 4) wrapping store.ErrLocked;
// when anything else holds the database (a triage, an approval in its
// undo window, a short command) it says so once through say and waits
// until it is free, or until ctx ends (then it returns ctx's error). Any
// other error of open is returned as it is.
func WaitForStore(ctx context.Context, stateDir string, open func() (*store.Store, error), say func(string)) (*store.Store, error) {
	w := &lockWaiter{stateDir: stateDir, starts: "watching starts", say: say}
	for {
		st, err := open()
		if err == nil || !errors.Is(err, store.ErrLocked) {
			return st, err
		}
		pid := 0
		if c, derr := api.Dial(ctx, api.SocketPath(stateDir)); derr == nil {
			s, serr := c.Status(ctx)
			_ = c.Close()
			if serr == nil && s.Watcher {
				return nil, &apperr.Error{Code: apperr.CodeLocked, Err: fmt.Errorf("%w: a watcher is already running (pid %d)", err, s.PID),
					Hint: "stop it first; the other commands work through it meanwhile"}
			}
			pid = s.PID
		}
		w.announce(pid)
		if err := SleepCtx(ctx, LockPoll); err != nil {
			return nil, err
		}
	}
}

// WaitForService is api.Open for triage and the dry runs (replay):
// through a watcher's socket, else over the store openStore opens. A
// holder that is not the watcher (another triage, an approval waiting
// out its undo window) is not gone through, since it ends when its own
// work does and would take the store away mid-run: as when the database
// is held and nothing answers, WaitForService says so once through say
// ("…; <starts> when it finishes") and tries again until ctx ends.
func WaitForService(ctx context.Context, stateDir, starts string, say func(string), openStore func() (*store.Store, error)) (api.Service, func() error, error) {
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
		if err := SleepCtx(ctx, LockPoll); err != nil {
			return nil, nil, err
		}
	}
}

// HeldStatus is the Status a holder that is not the watcher reports:
// this process's pid and the time HeldStatus was called.
func HeldStatus() func(context.Context) api.Status {
	started := time.Now()
	return func(context.Context) api.Status {
		return api.Status{Watcher: false, PID: os.Getpid(), Started: started}
	}
}

// Lazy builds local actions on first use: a triage that serves the
// socket pays for the agent (threader, mailer) only when a command asks
// it to act. Build is called at most once; its error is every action's
// error. Safe for concurrent use.
type Lazy struct {
	// Build makes the actions and the func that releases them.
	Build func() (Local, func(), error)

	once    sync.Once
	actions Local
	close   func()
	err     error
}

func (l *Lazy) get() (Local, error) {
	l.once.Do(func() { l.actions, l.close, l.err = l.Build() })
	return l.actions, l.err
}

// Close releases what was built; nothing is built after it.
func (l *Lazy) Close() {
	l.once.Do(func() { l.err = errors.New("closed") }) // nothing built: nothing to build later
	if l.close != nil {
		l.close()
	}
}

func (l *Lazy) Approve(ctx context.Context, id, final string) (*store.QueueItem, error) {
	a, err := l.get()
	if err != nil {
		return nil, err
	}
	return a.Approve(ctx, id, final)
}

func (l *Lazy) Reject(ctx context.Context, id, reason string) error {
	a, err := l.get()
	if err != nil {
		return err
	}
	return a.Reject(ctx, id, reason)
}

func (l *Lazy) Edit(ctx context.Context, id, text string) (*store.QueueItem, error) {
	a, err := l.get()
	if err != nil {
		return nil, err
	}
	return a.Edit(ctx, id, text)
}

func (l *Lazy) Snooze(ctx context.Context, id string, until time.Time) error {
	a, err := l.get()
	if err != nil {
		return err
	}
	return a.Snooze(ctx, id, until)
}

func (l *Lazy) Unsnooze(ctx context.Context, id string) error {
	a, err := l.get()
	if err != nil {
		return err
	}
	return a.Unsnooze(ctx, id)
}

func (l *Lazy) Regenerate(ctx context.Context, id, instruction string) (*store.QueueItem, error) {
	a, err := l.get()
	if err != nil {
		return nil, err
	}
	return a.Regenerate(ctx, id, instruction)
}

func (l *Lazy) Cancel(ctx context.Context, outboxID string) error {
	a, err := l.get()
	if err != nil {
		return err
	}
	return a.Cancel(ctx, outboxID)
}

func (l *Lazy) Retry(ctx context.Context, k store.MessageKey) error {
	a, err := l.get()
	if err != nil {
		return err
	}
	return a.Retry(ctx, k)
}

// RSVP answers an invitation (api.RSVPer through the socket).
func (l *Lazy) RSVP(ctx context.Context, id, answer string) (*store.QueueItem, error) {
	a, err := l.get()
	if err != nil {
		return nil, err
	}
	return a.RSVP(ctx, id, answer)
}

var _ api.Actions = (*Lazy)(nil)

// WaitUndo waits out an approval's undo window: until at, or until ctx
// ends (agent.Pipeline.SendApproval then cancels the approval). With w
// set it first says "<id>: <what> in 5s; press Ctrl-C to cancel". now is
// the clock (nil: time.Now). It is the one wait of the places that send
// in this process: queue approve, queue rsvp, an unsubscribe mail and
// review's send at the end of its countdown.
func WaitUndo(ctx context.Context, w io.Writer, id, what string, at time.Time, now func() time.Time) error {
	if now == nil {
		now = time.Now
	}
	wait := at.Sub(now())
	if wait <= 0 {
		return nil
	}
	if w != nil {
		fmt.Fprintf(w, "%s: %s in %s; press Ctrl-C to cancel\n", termsafe.Line(id), what, Countdown(wait))
	}
	return SleepCtx(ctx, wait)
}

// Countdown shows the time left in an undo window the way a countdown
// does: whole seconds, rounded up, so 0.9s left of a 1s window reads
// "1s" (the window the owner set), and a send never comes sooner than
// the line says.
func Countdown(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return ((d + time.Second - 1) / time.Second) * time.Second
}

// Propose stores a proposed reply (api.Proposer through the socket).
func (l *Lazy) Propose(ctx context.Context, k store.MessageKey, text, source string) (*store.QueueItem, error) {
	a, err := l.get()
	if err != nil {
		return nil, err
	}
	return a.Propose(ctx, k, text, source)
}

// SendOwnMail sends a mail of its own, an unsubscribe (api.OwnMailer
// through the socket).
func (l *Lazy) SendOwnMail(ctx context.Context, m agent.OwnMail) (*store.OutboxRecord, error) {
	a, err := l.get()
	if err != nil {
		return nil, err
	}
	return a.SendOwnMail(ctx, m)
}

var (
	_ api.Inviter   = (*Lazy)(nil)
	_ api.Proposer  = (*Lazy)(nil)
	_ api.OwnMailer = (*Lazy)(nil)
)
