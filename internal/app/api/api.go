package api

import (
	"context"
	"errors"
	"path/filepath"
	"time"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/internal/app/status"
	"github.com/mailagent/mailagent/store"
)

// SocketName is the file name of the watcher's socket in the state
// directory.
const SocketName = "mailagent.sock"

// SocketPath returns where the watcher of stateDir listens.
func SocketPath(stateDir string) string { return filepath.Join(stateDir, SocketName) }

// Sentinel errors, matched with errors.Is (also on the client side of the
// socket).
var (
	// ErrNoWatcher: nothing answers on the socket (no file, connection
	// refused, or a stale file left by a crash).
	ErrNoWatcher = errors.New("no watcher is running")
	// ErrNoActions: the operation sends or changes mail state and this
	// process has no pipeline to do it with.
	ErrNoActions = errors.New("this action needs the watcher: start `mailagent watch` and try again")
	// ErrWatcherRunning: Serve found another watcher answering on the
	// socket.
	ErrWatcherRunning = errors.New("another mailagent watch is already serving")
)

// Service is every operation the commands and the TUI need. Local
// implements it over an open store; Client implements it over the socket.
// All methods are safe for concurrent use.
type Service interface {
	// Status reports the watcher's state and the database counters.
	Status(ctx context.Context) (Status, error)
	// Queue lists queue items matching f, newest first.
	Queue(ctx context.Context, f QueueFilter) ([]store.QueueItem, error)
	// QueueItem returns one item with its thread and outbox record; an
	// unknown id is an error wrapping store.ErrNotFound.
	QueueItem(ctx context.Context, id string) (*QueueDetail, error)
	// Actions: approve, reject, edit, snooze, unsnooze, regenerate, cancel, retry.
	Actions
	// Outbox lists outbox records with that status ("" for all), newest
	// first, without their Raw bytes.
	Outbox(ctx context.Context, status string) ([]store.OutboxRecord, error)
	// NeedsReview lists the messages in state needs_review, newest first.
	NeedsReview(ctx context.Context) ([]store.MessageRecord, error)
	// Contacts lists the contacts of an account in email order.
	Contacts(ctx context.Context, account string) ([]store.Contact, error)
	// ContactNames lists at most limit contacts of an account whose
	// address starts with prefix, in email order, address and name only
	// (shell completion: its cost follows limit, not the contacts).
	ContactNames(ctx context.Context, account, prefix string, limit int) ([]store.ContactName, error)
	// Contact returns one contact, or an error wrapping store.ErrNotFound.
	Contact(ctx context.Context, account, email string) (*store.Contact, error)
	// RecipientStatus reports, for each address, whether the owner has
	// written to it before (its contact is Known). Keys are the addresses
	// as given; an address with no contact is false. For display and
	// approval-time confirmation only: it changes nothing.
	RecipientStatus(ctx context.Context, account string, addrs []string) (map[string]bool, error)
	// ForgetContact deletes a contact's memory.
	ForgetContact(ctx context.Context, account, email string) error
	// NoteContact adds one of the owner's context notes to a contact's
	// memory (creating the contact when needed).
	NoteContact(ctx context.Context, account, email, note string) error
	// Memory lists memory records matching f, oldest first.
	Memory(ctx context.Context, f MemoryFilter) ([]store.MemoryRecord, error)
	// MemoryRecord returns one record, or an error wrapping
	// store.ErrNotFound.
	MemoryRecord(ctx context.Context, id string) (*store.MemoryRecord, error)
	// AddMemory stores a record the owner typed (source "manual"); an
	// invalid one is an error wrapping ErrBadRequest.
	AddMemory(ctx context.Context, r store.MemoryRecord) (*store.MemoryRecord, error)
	// EditMemory replaces a record's text.
	EditMemory(ctx context.Context, id, text string) (*store.MemoryRecord, error)
	// ForgetMemory deletes one record (the undo of "learned: …").
	ForgetMemory(ctx context.Context, id string) error
	// Explain finds a trace by trace id or Message-ID, with its message
	// record when there is one.
	Explain(ctx context.Context, ref string) (*Explain, error)
	// Followups lists reply-tracking threads (followups.go), earliest
	// deadline first.
	Followups(ctx context.Context, f FollowupFilter) ([]store.Followup, error)
	// FollowupAction marks a thread done, snoozes it until until, or
	// queues a follow-up draft (FollowupActDone, …Snooze, …Nudge).
	FollowupAction(ctx context.Context, id, action string, until time.Time) (*FollowupActionResult, error)
	// Schedule lists the durable scheduler's jobs, the next due first
	// (schedule.go).
	Schedule(ctx context.Context, f ScheduleFilter) ([]store.Job, error)
	// Replies lists the stored messages that answer messageID.
	Replies(ctx context.Context, account, messageID string) ([]store.MessageRecord, error)
	// RecordUnsubscribe keeps the record of an unsubscribe request.
	RecordUnsubscribe(ctx context.Context, u store.Unsubscribe) error
	// Events streams what changes in the watcher. The channel is closed
	// when ctx ends or the source goes away. Local without a Broker
	// returns a nil channel (no live source: it never delivers).
	Events(ctx context.Context) (<-chan agent.Event, error)
	// Store is the pipeline's view of the database, for triage.
	Store() RemoteStore
}

// Actions are the side-effecting operations. *agent.Pipeline, plus a
// Retry that the watcher provides, implements them; Local delegates to it.
type Actions interface {
	// Approve sends a queued draft; final, when non-empty, replaces its text.
	// On error the item is nil (also when the reply went out and only its
	// copy to Sent failed: QueueItem then shows it sent).
	Approve(ctx context.Context, id, final string) (*store.QueueItem, error)
	// Reject closes an item without sending.
	Reject(ctx context.Context, id, reason string) error
	// Edit stores the owner's text for a draft.
	Edit(ctx context.Context, id, text string) (*store.QueueItem, error)
	// Snooze hides an item until the given time.
	Snooze(ctx context.Context, id string, until time.Time) error
	// Unsnooze returns a snoozed item to the queue now; an item that is
	// not snoozed is an error wrapping agent.ErrNotActionable.
	Unsnooze(ctx context.Context, id string) error
	// Regenerate drafts the reply again with the owner's instruction.
	Regenerate(ctx context.Context, id, instruction string) (*store.QueueItem, error)
	// Cancel stops a scheduled send: a delayed auto-send (its draft is
	// queued) or, by queue or outbox id, an approval in its undo window.
	Cancel(ctx context.Context, outboxID string) error
	// Retry processes a message that needs review again.
	Retry(ctx context.Context, key store.MessageKey) error
}

// RemoteStore is what the triage pipeline needs from the database: the
// methods of agent.Store plus ListMessages. *store.Store implements it; so
// does the store a Client returns, by RPC. The methods take no context
// because agent.Store does not; see Client.StoreContext.
type RemoteStore interface {
	agent.Store
	ListMessages(f store.MessageFilter, fn func(*store.MessageRecord) error) error
}

var _ RemoteStore = (*store.Store)(nil)

// Status is the watcher's state and the database counters.
type Status struct {
	// Watcher is true when a running watcher answered.
	Watcher bool `json:"watcher"`
	// PID is the watcher's process id (0 without a watcher).
	PID int `json:"pid,omitempty"`
	// Started is when the watcher started.
	Started  time.Time       `json:"started,omitzero"`
	Accounts []AccountStatus `json:"accounts,omitempty"`
	// AutoSentToday counts today's auto-sends across accounts (UTC day).
	AutoSentToday int                 `json:"auto_sent_today"`
	AutoSendCap   int                 `json:"auto_send_cap"`
	Counts        map[store.State]int `json:"counts"`
	TokensToday   store.UsageDay      `json:"tokens_today"`
}

// AccountStatus is one account's sync state as the watcher sees it.
type AccountStatus = status.Account

// QueueFilter selects queue items; zero fields match everything.
type QueueFilter struct {
	Status  string `json:"status,omitempty"`
	Kind    string `json:"kind,omitempty"`
	Account string `json:"account,omitempty"`
}

// QueueDetail is one queue item with its context.
type QueueDetail struct {
	Item store.QueueItem `json:"item"`
	// Thread holds the thread's message records, oldest first (only the
	// item's own message when it has no thread id).
	Thread []store.MessageRecord `json:"thread"`
	// Outbox is the item's outbox record, without Raw, when there is one.
	Outbox *store.OutboxRecord `json:"outbox,omitempty"`
}

// Explain is a trace and the message it belongs to.
type Explain struct {
	Trace *store.Trace `json:"trace"`
	// Message is nil when the record is gone.
	Message *store.MessageRecord `json:"message,omitempty"`
}
