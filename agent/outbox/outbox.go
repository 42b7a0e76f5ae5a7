// Package outbox is the send protocol of mailagent, in one place: how a
// reply is sent exactly once (Deliver: pending → sending → sent →
// appended, with the Sent folder and the mailbox's "already answered"
// checked before SMTP), what each failure means (temporary: retried by
// SendDue after a backoff; cut off after DATA: ambiguous, never re-sent
// blindly; permanent: back to the owner as a draft), the timer of due
// work (SendDue), cancelling a delayed send or an approval in its undo
// window (Cancel, SendApproval), and recovery after a crash (Recover).
//
// The records, their status and due-time indexes live in store; this
// package only moves them between states. It knows nothing of the agent:
// it reaches the store and the mail servers through the small interfaces
// it declares (Store, Mailer), and the agent's side effects (events,
// contact memory, closing a queue item answered elsewhere) through the
// hooks of Outbox. Every method is safe to call twice and from two
// processes: each step is a transition from an expected status, and a
// conflict means someone else did it.
package outbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/mailagent/mailagent/store"
)

// Store is what the outbox needs from persistent state.
type Store interface {
	GetOutbox(id string) (*store.OutboxRecord, error)
	ListOutbox(status string, fn func(*store.OutboxRecord) error) error
	TransitionOutbox(id string, from []string, to string, mutate func(*store.OutboxRecord) error) (*store.OutboxRecord, error)
	GetQueueItem(id string) (*store.QueueItem, error)
	GetMessage(key store.MessageKey) (*store.MessageRecord, error)
	PutQueueItem(q *store.QueueItem) error
	ListQueue(status string, fn func(*store.QueueItem) error) error
	TransitionQueueItem(id string, from []string, to string, mutate func(*store.QueueItem) error) (*store.QueueItem, error)
	// CancelApproval undoes a scheduled approval: the outbox record goes
	// scheduled → cancelled and its item approved → pending, in one
	// transaction.
	CancelApproval(outboxID string) (*store.QueueItem, error)
}

// dueStore is what SendDue uses when the store has it (store.Store
// does): indexed queries that read only what is due, and the daily prune.
type dueStore interface {
	DueOutbox(status string, before time.Time, fn func(*store.OutboxRecord) error) error
	DueQueue(status string, before time.Time, fn func(*store.QueueItem) error) error
	PruneIfDue(now time.Time) (store.PruneReport, bool, error)
}

// strandedStore is what Recover uses when the store has it: approvals an
// older version left approved with no outbox record.
type strandedStore interface {
	StrandedApprovals(outboxID func(string) string) ([]*store.QueueItem, error)
}

// StagedMailer is a Mailer that can report the moment before SMTP DATA.
// Deliver uses it when the Mailer has it: beforeData is called once the
// server accepted the envelope and before DATA is issued, and the
// transaction goes on only if it returns nil. Until then nothing can have
// been delivered; Deliver records that moment (OutboxRecord.BeforeData),
// so that Recover resends a record a crash cut off before DATA instead of
// handing it to the owner as a send that may have gone through.
type StagedMailer interface {
	SendStaged(ctx context.Context, account, from string, to []string, raw []byte, beforeData func() error) error
}

// Mailer is the IMAP and SMTP side of sending, for one account.
type Mailer interface {
	// Send runs one SMTP transaction. Errors that may succeed later
	// satisfy interface{ Temporary() bool } (or are *TemporaryError);
	// errors after the message was handed over and before the server
	// confirmed it satisfy interface{ MaybeDeliveredErr() bool }.
	Send(ctx context.Context, account, from string, to []string, raw []byte) error
	AppendSent(ctx context.Context, account string, raw []byte) error
	SentHas(ctx context.Context, account, messageID string) (bool, error)
	DeleteDraft(ctx context.Context, account string, uid uint32) error
	// Answered reports whether the mailbox of original.Account shows
	// original answered, and how: a reply in Sent that names original's
	// Message-ID AND is addressed to its reply party (store.AnswersTo), or
	// \Answered on original itself (its UID under the same UIDVALIDITY,
	// or a message carrying its Message-ID from the same authenticated
	// correspondent, store.SameCorrespondent). Evidence about anyone
	// else's message never counts.
	Answered(ctx context.Context, original *store.MessageRecord) (found bool, how string, err error)
	// MarkAnswered sets \Answered on original, and on no message of
	// another correspondent that reuses its Message-ID.
	MarkAnswered(ctx context.Context, original *store.MessageRecord) error
}

// Outbox runs the protocol over a store and a mailer. The zero hooks do
// nothing.
type Outbox struct {
	Store Store
	// Mailer may be nil only for Cancel and the checks that read the
	// store; sending needs it.
	Mailer Mailer
	Now    func() time.Time
	Logger *slog.Logger
	// Notify is told of every change (kind: queue_added, queue_updated,
	// sent); it must not block.
	Notify func(kind, id, account string)
	// Sent is called once a reply is delivered, after its queue item is
	// closed (the agent updates the recipients' contact memory).
	Sent func(ob *store.OutboxRecord)
	// Resolve closes the approved queue item id whose reply was not sent
	// because the message was answered elsewhere (reason says how). nil
	// moves the item to resolved with no other effect.
	Resolve func(ctx context.Context, id, reason string) error
	// MarkAnswered, when set, flags the original of a delivered reply
	// \Answered in place of Mailer.MarkAnswered (after every send, and
	// again in Recover for a record a crash left in "sent"): the agent
	// finds the original of a delegated reply, which is in no mailbox it
	// knows the key of. It must be safe to call twice.
	MarkAnswered func(ctx context.Context, ob *store.OutboxRecord) error
}

// TemporaryError marks a send failure that may succeed later.
type TemporaryError struct{ Err error }

func (e *TemporaryError) Error() string   { return e.Err.Error() }
func (e *TemporaryError) Unwrap() error   { return e.Err }
func (e *TemporaryError) Temporary() bool { return true }

// ErrAmbiguousSend is recorded when a failure or a crash interrupted an
// SMTP transaction: the message may or may not have been delivered.
var ErrAmbiguousSend = errors.New("interrupted during the SMTP transaction: it may have been delivered, so it is not re-sent automatically")

// ErrNotActionable: the record or item is not in a state the action
// applies to (Cancel once the send has started).
var ErrNotActionable = errors.New("queue item is not in a state this action applies to")

// OpenStatuses are the statuses of a queue item the owner can still act
// on (approve, edit, reject, snooze); any other status is final or a send
// under way.
var OpenStatuses = []string{store.QueuePending, store.QueueSnoozed, store.QueueFailed}

// ErrApprovalCancelled is returned by SendApproval when the undo window
// ended with a cancellation.
var ErrApprovalCancelled = errors.New("approval cancelled")

// ErrNotSent is returned by an approval that sent nothing without
// failing: the message had been answered already (a reply to its sender
// in Sent or in the outbox, \Answered on it), or the owner had sent the
// draft themselves. The item is resolved with the reason, which the error
// carries (NotSent).
var ErrNotSent = errors.New("nothing was sent")

// NotSent is ErrNotSent for an approved item that ended resolved, with
// the reason it was resolved; nil for an item in any other status.
func NotSent(item *store.QueueItem) error {
	if item == nil || item.Status != store.QueueResolved {
		return nil
	}
	reason := "the item was resolved"
	if n := len(item.Reasons); n > 0 {
		reason = item.Reasons[n-1]
	}
	return fmt.Errorf("%s: %w: %s", item.ID, ErrNotSent, reason)
}

// QueueID is the queue item id for a message: derived from its key so that
// acting twice on the same message (after a crash) never makes two items.
func QueueID(k store.MessageKey) string { return "q_" + keyHash(k) }

// ID is the outbox record id of a message's automatic reply.
func ID(k store.MessageKey) string { return "ob_" + keyHash(k) }

// ApprovalID is the outbox record id of an approved queue item's reply:
// one per item, so approving twice cannot make two.
func ApprovalID(queueID string) string { return "ob_" + queueID }

func keyHash(k store.MessageKey) string {
	h := sha256.Sum256([]byte(fmt.Sprintf("%s\x00%s\x00%d\x00%d", k.Account, k.Mailbox, k.UIDValidity, k.UID)))
	return hex.EncodeToString(h[:8])
}

// maybeDelivered reports a failure after the message was handed over and
// before the server confirmed it.
func maybeDelivered(err error) bool {
	var m interface{ MaybeDeliveredErr() bool }
	return errors.As(err, &m) && m.MaybeDeliveredErr()
}

func isTemporary(err error) bool {
	var t interface{ Temporary() bool }
	return errors.As(err, &t) && t.Temporary()
}

func (o *Outbox) now() time.Time {
	if o.Now != nil {
		return o.Now()
	}
	return time.Now()
}

func (o *Outbox) logger() *slog.Logger {
	if o.Logger != nil {
		return o.Logger
	}
	return slog.New(slog.DiscardHandler)
}

func (o *Outbox) notify(kind, id, account string) {
	if o.Notify != nil {
		o.Notify(kind, id, account)
	}
}
