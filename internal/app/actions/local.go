package actions

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/internal/app/api"
	"github.com/mailagent/mailagent/internal/app/daemon"
	"github.com/mailagent/mailagent/store"
)

// Local performs queue actions in this process: the same pipeline code
// watch uses, so sends still go through the outbox. Watch serves it on
// its socket (NoWatcher false: the daemon's due timer sends); a command
// that runs with no watcher sets NoWatcher.
type Local struct {
	*agent.Pipeline
	// Daemon retries a message (Retry); watch's, or one built over the
	// same store for this process.
	Daemon *daemon.Daemon
	// NoWatcher is set when no watcher runs (so no due timer will send
	// the reply): Approve and RSVP then wait out policy.approval_delay
	// here, saying so on Undo when that is set; an ended context (Ctrl-C)
	// in the window cancels the approval.
	NoWatcher bool
	// Undo, when set, is told of the undo window this process waits out.
	Undo io.Writer
	// DeferSend: Approve and RSVP do not wait out the window; the caller
	// sends when it ends (the review TUI counts it down and sends).
	DeferSend bool
	// Hold, when set, serves the API socket from this process while it
	// waits out an undo window holding the database (api.ServeHeld), so
	// that status, queue (cancel included) and review work meanwhile;
	// command names the holder ("queue approve"). It returns the func
	// that stops serving.
	Hold func(ctx context.Context, command string) (stop func())
}

var (
	_ api.Actions   = Local{}
	_ api.Inviter   = Local{}
	_ api.Proposer  = Local{}
	_ api.OwnMailer = Local{}
)

// undoWait is the wait SendApproval calls: WaitUndo, serving the socket
// meanwhile when a.Hold is set.
func (a Local) undoWait(id, what, command string) func(context.Context, time.Time) error {
	return func(ctx context.Context, at time.Time) error {
		if a.Hold != nil {
			now := time.Now
			if a.Pipeline.Now != nil {
				now = a.Pipeline.Now
			}
			if at.After(now()) {
				stop := a.Hold(ctx, command)
				defer stop()
			}
		}
		return WaitUndo(ctx, a.Undo, id, what, at, a.Pipeline.Now)
	}
}

// Approve approves, and with no watcher running waits out the undo window
// and sends (see agent.Pipeline.SendApproval).
func (a Local) Approve(ctx context.Context, id, final string) (*store.QueueItem, error) {
	item, err := a.Pipeline.Approve(ctx, id, final)
	if err != nil || !a.NoWatcher || a.DeferSend || item == nil || item.Status != store.QueueApproved {
		return item, err
	}
	learned := item.Learned // what the approval taught: kept for the result
	item, err = a.SendApproval(ctx, item.ID, a.undoWait(id, "sending", "queue approve"))
	if item != nil {
		item.Learned = learned
	}
	return CancelledMeanwhile(id, item, err)
}

// RSVP answers an invitation, and with no watcher running waits out the
// undo window and sends, like Approve.
func (a Local) RSVP(ctx context.Context, id, answer string) (*store.QueueItem, error) {
	item, err := a.Pipeline.RSVP(ctx, id, answer)
	if err != nil || !a.NoWatcher || a.DeferSend || item == nil || item.Status != store.QueueApproved {
		return item, err
	}
	item, err = a.SendApproval(ctx, item.ID, a.undoWait(id, "sending the reply", "queue rsvp"))
	return CancelledMeanwhile(id, item, err)
}

// CancelledMeanwhile turns an approval that another command cancelled in
// its undo window (`queue cancel`, through this process's socket) into
// the error a cancel with Ctrl-C gives: nothing was sent. Any other
// outcome is returned as it is.
func CancelledMeanwhile(id string, item *store.QueueItem, err error) (*store.QueueItem, error) {
	if err == nil && item != nil && item.Status == store.QueuePending {
		return nil, fmt.Errorf("%w: %s: cancelled in its undo window: not sent; it is back in the queue", agent.ErrApprovalCancelled, id)
	}
	return item, err
}

// Retry processes a stored message again (daemon.Daemon.Retry).
func (a Local) Retry(ctx context.Context, k store.MessageKey) error { return a.Daemon.Retry(ctx, k) }

// Defer adapts a service opened with local actions (an *api.Local whose
// Actions are a Local) for a caller that counts the undo window down
// itself and sends when it ends (the review TUI: review.Backend's
// SendApproved): its Approve and RSVP return once approved, announcing
// nothing. Any other service (a watcher's socket, no actions) is left as
// it is. Call it before the service is used.
func Defer(svc api.Service) {
	if l, ok := svc.(*api.Local); ok {
		if a, ok := l.Actions.(Local); ok {
			a.DeferSend, a.Undo = true, nil
			l.Actions = a
		}
	}
}

// Announce adapts a service opened with local actions so that an
// approval waiting out its undo window in this process says so on w
// ("<id>: sending in 5s; press Ctrl-C to cancel": `queue approve`,
// `queue rsvp`). Any other service is left as it is. Call it before the
// service is used.
func Announce(svc api.Service, w io.Writer) {
	if l, ok := svc.(*api.Local); ok {
		if a, ok := l.Actions.(Local); ok {
			a.Undo = w
			l.Actions = a
		}
	}
}
