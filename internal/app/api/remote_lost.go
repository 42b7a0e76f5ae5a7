package api

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mailagent/mailagent/store"
)

// LostError is an action whose connection to the watcher broke after the
// request was sent and before the answer came: the watcher may or may not
// have done it. The client never sends it again by itself (an approval
// is not idempotent); it re-reads the item and says what state it is in,
// so that the owner decides. The watcher's outbox sends an approved reply
// exactly once whatever the client does.
type LostError struct {
	Action string           // "approval"
	ID     string           // the queue item
	Item   *store.QueueItem // as re-read after the loss; nil when that failed too
	Outbox *store.OutboxRecord
	// ReadErr is why the item could not be re-read (Item is nil).
	ReadErr error
	// Err is the transport failure.
	Err error
}

func (e *LostError) Error() string {
	return fmt.Sprintf("connection lost during %s; %s", e.Action, e.State())
}

func (e *LostError) Unwrap() error { return e.Err }

// State says, in one sentence for the owner, what the item is now.
func (e *LostError) State() string {
	if e.Item == nil {
		return fmt.Sprintf("the item's state is unknown (it could not be re-read: %v): check it with `mailagent queue show %s` before approving again", e.ReadErr, e.ID)
	}
	st := e.Item.Status
	switch st {
	case store.QueueApproved:
		if ob := e.Outbox; ob != nil && ob.Status == store.OutboxScheduled && !ob.SendAt.IsZero() {
			return fmt.Sprintf("the item's state is approved: the watcher sends it at %s, once (undo: mailagent queue cancel %s)", ob.SendAt.Local().Format(time.TimeOnly), ob.ID)
		}
		return "the item's state is approved: the watcher is sending it, once; nothing more to do"
	case store.QueueSent:
		return "the item's state is sent: the approval went through, once"
	case store.QueuePending, store.QueueSnoozed, store.QueueFailed:
		return fmt.Sprintf("the item's state is %s: the approval did not reach the watcher and nothing was sent; approve it again when connected", st)
	}
	return fmt.Sprintf("the item's state is %s: nothing more was sent", st)
}

// lostReadTimeout bounds the re-read after a lost connection.
const lostReadTimeout = 30 * time.Second

// lost turns a failure of action on id into a *LostError when it is a
// transport failure after the request may have reached the watcher: not
// an answer of the watcher (*Error), not the caller's cancellation, not a
// connection refused before anything was sent (ErrNoWatcher). Anything
// else is returned as it is.
func (c *Client) lost(ctx context.Context, action, id string, err error) error {
	var remote *Error
	if err == nil || errors.As(err, &remote) || errors.Is(err, ErrNoWatcher) || ctx.Err() != nil {
		return err
	}
	le := &LostError{Action: action, ID: id, Err: err}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), lostReadTimeout)
	defer cancel()
	d, rerr := c.QueueItem(rctx, id)
	if rerr != nil {
		le.ReadErr = rerr
		return le
	}
	le.Item, le.Outbox = &d.Item, d.Outbox
	return le
}
