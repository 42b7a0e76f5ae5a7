package tui

import (
	"context"
	"log/slog"
	"time"

	"github.com/mailagent/mailagent/internal/termsafe"
)

// Item kinds.
const (
	KindDraft       = "draft"
	KindNotify      = "notify"
	KindNeedsReview = "needs_review"
	KindSent        = "sent"
	// KindDecided is a message the agent handled without asking the
	// owner and without a reply or queue item: archived or ignored (and,
	// in the Decided view, also what it notified about or answered).
	KindDecided = "decided"
)

// Item statuses.
const (
	StatusPending  = "pending"
	StatusApproved = "approved"
	StatusSent     = "sent"
	StatusRejected = "rejected"
	StatusSnoozed  = "snoozed"
	StatusFailed   = "failed"
	StatusSending  = "sending"
	// StatusDone is a decided message: nothing more will happen to it.
	StatusDone = "done"
)

// Event kinds.
const (
	EventItemAdded   = "item_added"
	EventItemUpdated = "item_updated"
	EventItemRemoved = "item_removed"
	EventStatus      = "status"
	// EventReload asks the TUI to load every item and the status again:
	// the backend lost events (a reset) or reached the watcher again.
	EventReload = "reload"
)

// Item is one reviewable unit: a queued draft, a notification, a message
// that needs review, or a reply the agent sent (or is about to send).
type Item struct {
	ID       string
	Kind     string // draft | notify | needs_review | sent
	Account  string
	Received time.Time
	From     Address
	// To are the recipients a draft goes to (chosen by code at queue
	// time: Reply-To, else From), or those a sent item went to. An
	// address with New set is highlighted, and approving a send to it
	// asks for confirmation.
	To []Address
	// Cc are the other recipients of the message being answered.
	Cc      []Address
	Subject string

	Intents    []string
	Risk       string // low | medium | high
	Confidence float64
	Summary    string
	Comments   string // the classifier's rationale

	Draft string // the generated reply
	Final string // the owner's edited reply; "" when unedited

	Gates []Gate
	// Warnings are the failed gates that should make a person think
	// twice before sending (chosen by the backend, like `queue approve`:
	// an unauthenticated sender, a high-risk intent, a draft the output
	// guard flagged), "gate: reason" each. Approving asks first.
	Warnings []string
	Thread   []ThreadMessage

	Status string    // pending | approved | sent | rejected | snoozed | failed | sending | done
	SendAt time.Time // when a delayed send (auto-send, or an approval's undo window) goes out; Cancel works until then
	Error  string    // why the item needs attention or failed
	// Updated is the item's version: when the backend last changed what
	// it is built from (zero: unknown). Reads race (a Detail asked for
	// before an answer can come back after it, a list or an event read
	// before it), so a copy older than the one shown is stale and never
	// replaces it: the owner never sees a send undone that is still
	// waiting, nor loses the c that cancels it.
	Updated time.Time

	// Decision is what the agent decided on its own: auto_send | queue |
	// notify | archive | ignore | needs_review ("" when unknown), and
	// Reasons say why.
	Decision string
	Reasons  []string
	// SnoozeUntil is when a snoozed item comes back.
	SnoozeUntil time.Time
	// Ids for `mailagent explain`: the mail's Message-ID, its trace, the
	// queue item and the reply's outbox record ("" when none).
	MessageID string
	TraceID   string
	QueueID   string
	OutboxID  string
	// Steps are the trace's step snapshots (trace.snapshots), shown in a
	// short section of the detail; none when snapshots are off or pruned.
	Steps []StepSnapshot
	// Invitation is the title of the calendar invitation (an iTIP
	// REQUEST) the item carries, "" when none: A, D and T answer it
	// through Inviter. Untrusted; the TUI cleans it.
	Invitation string
}

// Address is one mail address, both parts untrusted. The TUI shows it
// with String, so a display name that looks like an address never passes
// for the address.
type Address struct {
	Name  string
	Email string
	// New: the owner has never written to this address (recipients).
	New bool
}

// String is the sanitised display form (termsafe.Address). With cleanOff
// (the positive control of the hostile-text tests only) it is the name
// and address as they are.
func (a Address) String() string {
	if cleanOff.Load() {
		if a.Name == "" {
			return a.Email
		}
		return a.Name + " <" + a.Email + ">"
	}
	return termsafe.Address(a.Name, a.Email)
}

// NewRecipients returns the recipients the owner has never written to.
func (it *Item) NewRecipients() []Address {
	var out []Address
	for _, a := range it.To {
		if a.New {
			out = append(out, a)
		}
	}
	return out
}

// Gate is the result of one deterministic safety gate.
type Gate struct {
	Name   string
	Pass   bool
	Reason string
}

// ThreadMessage is one message of the item's thread, as clean text.
type ThreadMessage struct {
	From    Address
	Date    time.Time
	Subject string
	Text    string
}

// Status is the state shown in the status line.
type Status struct {
	WatcherConnected bool // false: the store was opened directly
	// Holder names the process whose socket answered when it is not a
	// watcher ("a triage (pid 4242)"): actions go through it.
	Holder string
	// Remote, when set, is the ssh address of the watcher's host (review
	// --remote): not connected then means the connection is lost and is
	// being retried; nothing runs locally.
	Remote        string
	Accounts      []AccountState
	AutoSentToday int
	AutoSendCap   int
}

// AccountState is one account's sync state ("idle", "syncing", "error: …").
type AccountState struct {
	Name  string
	State string
}

// Event is a live change pushed by the backend.
//
// item_added and item_updated carry Item; item_removed carries ID; status
// carries Status; reload carries nothing.
type Event struct {
	Kind   string
	Item   *Item
	ID     string
	Status *Status
}

// Backend is everything the TUI needs from the rest of mailagent. The TUI
// calls every method from a tea.Cmd goroutine, never from Update or View,
// so implementations may block on I/O; they must honour ctx and be safe for
// concurrent use.
type Backend interface {
	// List returns the items of every view.
	List(ctx context.Context) ([]Item, error)
	// Status returns the watcher and account state.
	Status(ctx context.Context) (Status, error)
	// Approve sends the item through the outbox; finalText "" sends the
	// draft unchanged.
	Approve(ctx context.Context, id string, finalText string) error
	// Reject drops the draft; reason may be empty.
	Reject(ctx context.Context, id string, reason string) error
	// Edit stores the owner's text for the item, keeping the original draft.
	Edit(ctx context.Context, id string, text string) error
	// Regenerate drafts again following instruction and returns the
	// updated item.
	Regenerate(ctx context.Context, id string, instruction string) (Item, error)
	// Snooze hides the item until the given time.
	Snooze(ctx context.Context, id string, until time.Time) error
	// Retry re-runs a needs_review or failed item.
	Retry(ctx context.Context, id string) error
	// Cancel stops a send that has not gone out yet: a delayed auto-send,
	// or any send the owner started (an approval, an RSVP; any kind of
	// item) in its undo window, which then comes back whole, unsent.
	Cancel(ctx context.Context, id string) error
	// Events streams live changes. It returns a nil channel when there is
	// no live source; the channel is closed when ctx ends. When it closes
	// (or Events fails) while the TUI runs, the TUI shows the watcher as
	// gone and subscribes again every Options.Resubscribe, reloading
	// everything once it succeeds.
	Events(ctx context.Context) (<-chan Event, error)
}

// Learner is optionally implemented by a Backend whose approvals teach
// the agent: LastLearned returns, once, the records approving id wrote.
type Learner interface {
	LastLearned(id string) []Learned
}

// Learned is one memory record an approval wrote: its id (mem_…, what
// Forgetter and `mailagent memory forget` take) and one line saying what
// it holds. Both are untrusted; the TUI cleans them.
type Learned struct {
	ID   string
	Text string
}

// Forgetter is optionally implemented by a Learner's backend that can
// undo what an approval taught: ForgetLearned deletes the memory records
// with these ids. While the countdown note shows "learned: …", the Forget
// key (L) calls it with the ids LastLearned returned.
type Forgetter interface {
	ForgetLearned(ctx context.Context, ids []string) error
}

// Options configure the TUI. The zero value is usable.
type Options struct {
	// Editor is the command line of the external editor ($VISUAL or
	// $EDITOR, resolved by the caller), split on spaces and run without a
	// shell, with the temp file's path appended. "" selects the inline
	// editor.
	Editor string
	// ASCII draws 7-bit glyphs only.
	ASCII bool
	// NoColor draws no colour or text attributes at all.
	NoColor bool
	// Now is the clock used for ages and countdowns; nil means time.Now.
	Now func() time.Time
	// Logger receives diagnostics; nil discards them. The TUI never writes
	// to the terminal it draws on.
	Logger *slog.Logger
	// StatusEvery is how often the status line is refreshed from
	// Backend.Status besides on events (0 means DefaultStatusEvery).
	StatusEvery time.Duration
	// Resubscribe is the wait before subscribing to Backend.Events again
	// after the stream closed or failed (0 means DefaultResubscribe).
	Resubscribe time.Duration
}

// Defaults of Options.
const (
	DefaultStatusEvery = 3 * time.Second
	DefaultResubscribe = time.Second
)

// Detailer is implemented by backends that load an item's thread only when
// it is opened. List may then leave Item.Thread empty.
type Detailer interface {
	Detail(ctx context.Context, id string) (Item, error)
}

// Unsnoozer is implemented by backends that can return a snoozed item to
// the queue at once. Without it, the TUI's unsnooze snoozes the item until
// now, which the watcher wakes on its next pass.
type Unsnoozer interface {
	Unsnooze(ctx context.Context, id string) error
}

// ApprovalSender is implemented by backends in which an approved reply
// waits in its undo window (Item.SendAt) for the caller to send it, because
// no watcher runs to do so. The TUI calls SendApproved once the countdown
// has run out; Approve itself must then return without waiting out the
// window, so the TUI stays responsive and the database is not held. A
// backend that finds a watcher running leaves the send to it.
type ApprovalSender interface {
	SendApproved(ctx context.Context, id string) error
}
