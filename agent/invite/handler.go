package invite

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/mailagent/mailagent/agent/outbox"
	"github.com/mailagent/mailagent/internal/compose"
	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/store"
)

// Handler reads, answers and applies the calendar invitations of one
// pipeline. It is cheap to build (agent builds one per use from its
// pipeline) and safe for concurrent use when its parts are.
type Handler struct {
	// Queue holds the queue items invitations live on.
	Queue QueueStore
	// Messages reads the message record of an item (whose correspondent
	// it is); nil: no item resolves to anyone.
	Messages MessageStore
	// Host is what the pipeline does for an invitation: build and send
	// the reply through the outbox, cancel it, queue notices.
	Host Host
	// Accounts answers who the owner is and which address an account
	// sends from.
	Accounts Accounts
	// Calendar is the owner's calendar; its optional sides
	// (BusyCalendar, EventWriter, EventDeleter, EventReader) are used
	// where it has them. nil: no conflicts, no writes.
	Calendar any
	// ApprovalDelay is policy.approval_delay: the undo window of an RSVP.
	ApprovalDelay time.Duration
	// Now is the clock; nil is time.Now.
	Now func() time.Time
	// Logger gets what went wrong off the message's path; nil discards.
	Logger *slog.Logger
}

// QueueStore is what invitations need of the queue (*store.Store
// implements it).
type QueueStore interface {
	GetQueueItem(id string) (*store.QueueItem, error)
	ListQueue(status string, fn func(*store.QueueItem) error) error
	TransitionQueueItem(id string, from []string, to string, mutate func(*store.QueueItem) error) (*store.QueueItem, error)
	// ApproveQueueItem moves an item to approved and writes its outbox
	// record in one transaction.
	ApproveQueueItem(id string, from []string, mutate func(*store.QueueItem) error, ob *store.OutboxRecord) (*store.QueueItem, *store.OutboxRecord, error)
}

// MessageStore reads message records.
type MessageStore interface {
	GetMessage(k store.MessageKey) (*store.MessageRecord, error)
}

// Accounts is what invitations need to know of the accounts
// (agent.Accounts implements it).
type Accounts interface {
	// IsOwner reports whether addr is one of the owner's addresses on
	// account.
	IsOwner(account, addr string) bool
	// Sender is the address (with the owner's name) account sends from.
	Sender(account string) mail.Address
}

// Host is what invitations need from the pipeline (agent.Pipeline
// provides it). Every mail goes through its outbox; nothing here sends.
type Host interface {
	// Reply is the reply to item's message as the pipeline builds it,
	// with the trace header naming item; the caller sets its recipients.
	Reply(item *store.QueueItem) compose.Reply
	// NewMessageID is a fresh Message-ID on account's domain.
	NewMessageID(account string) string
	// Schedule passes a new outbox record through the outbox's one door
	// (outbox.Schedule), to go out after delay.
	Schedule(ob *store.OutboxRecord, now time.Time, delay time.Duration) error
	// Deliver sends a pending outbox record now.
	Deliver(ctx context.Context, id string) error
	// Cancel takes back an approval still in its undo window; it wraps
	// outbox.ErrNotActionable when the send has started.
	Cancel(ctx context.Context, id string) error
	// DropDraft removes the Drafts-folder copy of an item that will not
	// be sent.
	DropDraft(ctx context.Context, item *store.QueueItem)
	// Enqueue writes a new queue item (a notice for the owner).
	Enqueue(ctx context.Context, item *store.QueueItem) error
	// Notify tells listeners of a change (kind: queue_updated, scheduled).
	Notify(kind, id, account string)
}

func (h *Handler) now() time.Time {
	if h.Now != nil {
		return h.Now()
	}
	return time.Now()
}

func (h *Handler) logger() *slog.Logger {
	if h.Logger != nil {
		return h.Logger
	}
	return slog.New(slog.DiscardHandler)
}

func (h *Handler) notify(kind, id, account string) {
	if h.Host != nil {
		h.Host.Notify(kind, id, account)
	}
}

func (h *Handler) isOwner(account, addr string) bool {
	return h.Accounts != nil && h.Accounts.IsOwner(account, addr)
}

func (h *Handler) sender(account string) mail.Address {
	if h.Accounts == nil {
		return mail.Address{}
	}
	return h.Accounts.Sender(account)
}

// notActionable is the error of an action on item id in a state it does
// not apply to, naming the state when the item can be read.
func (h *Handler) notActionable(id string) error {
	if q, err := h.Queue.GetQueueItem(id); err == nil {
		return fmt.Errorf("%w: %s is %s", outbox.ErrNotActionable, id, q.Status)
	}
	return fmt.Errorf("%w: %s", outbox.ErrNotActionable, id)
}
