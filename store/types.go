package store

import (
	"time"

	"github.com/mailagent/mailagent/internal/mail"
)

// State is where a message is in its life. Terminal states are Done and
// NeedsReview; the sync checkpoint only moves past messages in those.
type State string

const (
	StateFetched     State = "fetched"
	StateParsed      State = "parsed"
	StateClassified  State = "classified"
	StateDecided     State = "decided"
	StateActed       State = "acted"
	StateDone        State = "done"
	StateNeedsReview State = "needs_review"
)

// Terminal reports whether no further automatic step is pending.
func (s State) Terminal() bool { return s == StateDone || s == StateNeedsReview }

// MessageKey names one message on one server: account, mailbox,
// UIDVALIDITY and UID.
type MessageKey struct {
	Account     string `json:"account"`
	Mailbox     string `json:"mailbox"`
	UIDValidity uint32 `json:"uidvalidity"`
	UID         uint32 `json:"uid"`
}

// Classification is the model's validated verdict on one message.
type Classification struct {
	Intents          []string `json:"intents"`
	Risk             string   `json:"risk"`
	Action           string   `json:"action"`
	RequiresApproval bool     `json:"requires_approval"`
	Confidence       float64  `json:"confidence"`
	Summary          string   `json:"summary"`
	Comments         string   `json:"comments"`
	// ReplyBy is a date the message asks an answer by ("YYYY-MM-DD"), as
	// the model read it; reply tracking uses it only after checking it
	// (followup.ValidDeadline).
	ReplyBy string `json:"reply_by,omitempty"`
	// RequestedWindow is the span of days a scheduling message asks about,
	// as the model read it; the agent offers free slots inside it only
	// after checking it (agent.ValidWindow), else its default window.
	RequestedWindow *DateWindow `json:"requested_window,omitempty"`
}

// DateWindow is a span of whole days, "YYYY-MM-DD" to "YYYY-MM-DD", both
// included, as a model read it from a message: unchecked.
type DateWindow struct {
	Start string `json:"start"`
	End   string `json:"end"`
}

// GateResult is the outcome of one deterministic policy gate or routing rule.
type GateResult struct {
	Gate   string `json:"gate"`
	Pass   bool   `json:"pass"`
	Reason string `json:"reason"`
}

// Methods of SenderAuth.
const (
	AuthDMARC      = "dmarc"       // DMARC pass for the From domain
	AuthDKIM       = "dkim"        // DKIM pass with a signing domain aligned to the From domain
	AuthSentFolder = "sent_folder" // read from the owner's own Sent folder
)

// SenderAuth is the outcome of authenticating a message's From address.
// Only the Authentication-Results headers added by the owner's own server
// (accounts.authserv_id) count; everything else in a message is text its
// sender wrote.
type SenderAuth struct {
	// Authenticated is true when the owner's server vouches for Address.
	Authenticated bool `json:"authenticated"`
	// Address is the From address (lowercased) that was checked; it is the
	// sender's identity only when Authenticated.
	Address string `json:"address,omitempty"`
	// Method is how it was authenticated: dmarc | dkim | sent_folder; empty
	// when not authenticated.
	Method string `json:"method,omitempty"`
	// Reason says why, in words (for explain and the trace).
	Reason string `json:"reason,omitempty"`
}

// Identity returns the authenticated address, or "" when a is nil or not
// authenticated.
func (a *SenderAuth) Identity() string {
	if a == nil || !a.Authenticated {
		return ""
	}
	return a.Address
}

// MessageRecord is everything mailagent knows about one message.
type MessageRecord struct {
	MessageKey
	MessageID string         `json:"message_id"`
	ThreadID  string         `json:"thread_id"`
	From      mail.Address   `json:"from"`
	ReplyTo   []mail.Address `json:"reply_to,omitempty"`
	To        []mail.Address `json:"to,omitempty"`
	Cc        []mail.Address `json:"cc,omitempty"`
	Subject   string         `json:"subject"`
	Date      time.Time      `json:"date"`
	InReplyTo []string       `json:"in_reply_to,omitempty"`
	// Synthesized is set when the message had no Message-ID of its own.
	Synthesized bool     `json:"synthesized,omitempty"`
	References  []string `json:"references,omitempty"`
	// Excerpt is the start of the message's clean text, kept so that later
	// prompts can show the thread without refetching.
	Excerpt  string   `json:"excerpt,omitempty"`
	Problems []string `json:"problems,omitempty"`
	// SenderAuth is who sent the message as far as the owner's own server
	// vouches for it (Authentication-Results) or the Sent folder shows. nil
	// (records written before it existed) means not authenticated.
	SenderAuth *SenderAuth `json:"sender_auth,omitempty"`
	// Invitation is the calendar invitation the message carries, if any.
	Invitation *Invitation `json:"invitation,omitempty"`
	// Offer is what the calendar offered a scheduling draft (offer.go).
	Offer *SlotOffer `json:"offer,omitempty"`
	// DelegatedBy is, on the record of a delegated original (a message
	// the owner forwarded to the agent), the key of the owner's forward.
	// Flagging the original \Answered after the reply is sent checks that
	// this forward routed as the owner's own mail.
	DelegatedBy *MessageKey `json:"delegated_by,omitempty"`

	Route          string          `json:"route"` // external | owner | self | automated
	RouteReason    string          `json:"route_reason,omitempty"`
	Classification *Classification `json:"classification,omitempty"`
	Decision       string          `json:"decision,omitempty"` // auto_send | queue | notify | archive | ignore | needs_review
	Reasons        []string        `json:"reasons,omitempty"`
	Gates          []GateResult    `json:"gates,omitempty"`

	State State `json:"state"`
	// TriageOnly marks a record written by triage, which decides but never
	// acts: watch still acts on such a message when it reaches it.
	TriageOnly bool   `json:"triage_only,omitempty"`
	Error      string `json:"error,omitempty"` // why it needs review
	Attempts   int    `json:"attempts,omitempty"`
	TraceID    string `json:"trace_id"`

	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Step is one timed step of a trace.
type Step struct {
	Name      string    `json:"name"`
	Start     time.Time `json:"start"`
	LatencyMS int64     `json:"latency_ms"`
	TokensIn  int32     `json:"tokens_in,omitempty"`
	TokensOut int32     `json:"tokens_out,omitempty"`
	Model     string    `json:"model,omitempty"`
	Retries   int       `json:"retries,omitempty"`
	Error     string    `json:"error,omitempty"`
	Detail    string    `json:"detail,omitempty"`
	// Snapshot is the step's input and output. It is stored apart from
	// the trace (snapshots.go): GetTrace leaves it nil, LoadSnapshots
	// fills it.
	Snapshot *StepSnapshot `json:"snapshot,omitempty"`
}

// Trace is the record of how one message was handled.
type Trace struct {
	TraceID   string       `json:"trace_id"`
	Message   MessageKey   `json:"message"`
	MessageID string       `json:"message_id"`
	Started   time.Time    `json:"started"`
	Steps     []Step       `json:"steps"`
	Decision  string       `json:"decision,omitempty"`
	Reasons   []string     `json:"reasons,omitempty"`
	Gates     []GateResult `json:"gates,omitempty"`
	// snapZ is the stored form of the steps' snapshots, encoded ahead of
	// the write transaction (presnap); never serialised.
	snapZ []byte
}

// Checkpoint is the sync position of one mailbox: every UID up to and
// including LastUID has reached a terminal state.
type Checkpoint struct {
	UIDValidity uint32    `json:"uidvalidity"`
	LastUID     uint32    `json:"last_uid"`
	UpdatedAt   time.Time `json:"updated_at"`
}

// Queue item statuses.
const (
	QueuePending  = "pending"  // waiting for the owner
	QueueApproved = "approved" // the owner approved; the send is under way
	QueueRejected = "rejected"
	QueueSent     = "sent"
	QueueResolved = "resolved" // handled outside mailagent (the owner replied, or dismissed a notice)
	QueueSnoozed  = "snoozed"  // hidden until SnoozeUntil
	QueueFailed   = "failed"
)

// Queue item kinds.
const (
	KindDraft       = "draft"        // a reply waiting for approval
	KindNotify      = "notify"       // the owner should look, no reply drafted
	KindNeedsReview = "needs_review" // processing failed; a human must decide
)

// QueueItem is one thing waiting for the owner: a draft to approve, a
// notice, or a message the pipeline could not handle.
type QueueItem struct {
	ID        string       `json:"id"`
	Kind      string       `json:"kind"` // draft | notify | needs_review
	Account   string       `json:"account"`
	Message   MessageKey   `json:"message"`
	MessageID string       `json:"message_id"`
	ThreadID  string       `json:"thread_id"`
	From      mail.Address `json:"from"`
	// To holds the recipients chosen by code (never by the model).
	To             []mail.Address  `json:"to,omitempty"`
	Subject        string          `json:"subject"`
	Classification *Classification `json:"classification,omitempty"`
	Gates          []GateResult    `json:"gates,omitempty"`
	Reasons        []string        `json:"reasons,omitempty"`
	Draft          string          `json:"draft,omitempty"` // as the model wrote it
	Final          string          `json:"final,omitempty"` // as the owner edited it
	Status         string          `json:"status"`          // pending|approved|rejected|sent|resolved|snoozed|failed
	RejectReason   string          `json:"reject_reason,omitempty"`
	SnoozeUntil    time.Time       `json:"snooze_until,omitzero"`
	IMAPDraftUID   uint32          `json:"imap_draft_uid,omitempty"`
	Error          string          `json:"error,omitempty"`
	CreatedAt      time.Time       `json:"created_at"`
	UpdatedAt      time.Time       `json:"updated_at"`
	// MessageDate is the Date of the item's message, filled from its
	// record when the item is first written (putQueueTx): what AGE counts
	// from in every listing (zero: CreatedAt).
	MessageDate time.Time `json:"message_date,omitzero"`

	// DraftMessageID is the one Message-ID of this item's reply: the
	// Drafts-folder copy carries it, and so does the reply sent on
	// approval. A copy the owner sent from their own client is recognised
	// by it in the Sent folder, and approval then sends nothing.
	DraftMessageID string `json:"draft_message_id,omitempty"`
	// Learned lists the memory records the owner's approval of this item
	// wrote, for the "learned: …" line and its undo: filled on the result
	// of Approve only, never stored.
	Learned []Learned `json:"learned,omitempty"`
	// Invitation is the calendar invitation the message carries, if any.
	Invitation *Invitation `json:"invitation,omitempty"`
	// Offer is what the calendar offered a scheduling draft (offer.go).
	Offer *SlotOffer `json:"offer,omitempty"`
}

// Outbox record statuses.
const (
	OutboxScheduled = "scheduled" // waiting for SendAt (policy.send_delay); can be cancelled
	OutboxPending   = "pending"   // written before the SMTP transaction
	OutboxSending   = "sending"   // the SMTP transaction is under way; after a crash: ambiguous
	OutboxSent      = "sent"      // the SMTP server accepted it
	OutboxAppended  = "appended"  // and the copy is in the Sent folder
	OutboxFailed    = "failed"
	OutboxCancelled = "cancelled" // the owner cancelled a scheduled send
)

// OutboxRecord is one outgoing message. It is written before the SMTP
// transaction, so that a crash can be reconciled against the Sent folder by
// MessageID instead of sending twice.
type OutboxRecord struct {
	ID        string `json:"id"`
	Account   string `json:"account"`
	From      string `json:"from"`       // envelope sender: the account address
	MessageID string `json:"message_id"` // the Message-ID we generated
	// Message is the message this answers; Subject and Body are kept so
	// that a cancelled or failed send can go back to the queue as a draft.
	Message MessageKey `json:"message"`
	Subject string     `json:"subject,omitempty"`
	Body    string     `json:"body,omitempty"`
	// SendAt is when a scheduled send goes out.
	SendAt    time.Time `json:"send_at,omitzero"`
	QueueID   string    `json:"queue_id,omitempty"`
	InReplyTo string    `json:"in_reply_to,omitempty"`
	To        []string  `json:"to"`
	Raw       []byte    `json:"raw"`
	// RawPruned: Raw was dropped after RawRetention (the send finished
	// long ago; the Sent folder has the copy).
	RawPruned bool   `json:"raw_pruned,omitempty"`
	Status    string `json:"status"` // one of the Outbox* statuses
	Attempts  int    `json:"attempts"`
	// FailingSince is when the send first failed temporarily (zero once
	// it went through): its retries are spaced by how long it has been
	// failing (SendRetryAt), not by how often it was tried.
	FailingSince time.Time `json:"failing_since,omitzero"`
	Error        string    `json:"error,omitempty"`
	Auto         bool      `json:"auto"` // sent without human approval
	CreatedAt    time.Time `json:"created_at"`
	SentAt       time.Time `json:"sent_at,omitzero"`
	UpdatedAt    time.Time `json:"updated_at"`
	// Offer is the scheduling offer of the reply (offer.go): once it is
	// sent, the one slot it confirms may become a tentative event.
	Offer *SlotOffer `json:"offer,omitempty"`
	// Kind is what the mail is: "" a reply to Message; otherwise a mail of
	// its own that answers no message (OutboxKindUnsubscribe, …Digest,
	// …Nudge): it never marks anything answered, never updates a
	// contact's memory and never becomes a draft in the queue when it is
	// cancelled or fails.
	Kind string `json:"kind,omitempty"`
	// BeforeData is set, on a record going to "sending", when the mailer
	// reports the moment before SMTP DATA (outbox.StagedMailer), and
	// cleared, durably, at that moment. A record a crash left in
	// "sending" with BeforeData still set never reached DATA, so nothing
	// can have been delivered and Recover sends it again; without it the
	// send may have gone through, and it goes to the owner instead.
	BeforeData bool `json:"before_data,omitempty"`
}

// Kinds of outbox records that answer no message (OutboxRecord.Kind).
const (
	OutboxKindUnsubscribe = "unsubscribe" // the owner's unsubscribe mail to a list
	OutboxKindDigest      = "digest"      // the owner's periodic report
	OutboxKindNudge       = "nudge"       // an unattended follow-up nudge
)

// HistoryCap bounds Contact.History; UpdateContact drops the oldest.
const HistoryCap = 50

// HistoryEntry is one exchange with a contact.
type HistoryEntry struct {
	Date      time.Time `json:"date"`
	Direction string    `json:"direction"` // in | out
	Subject   string    `json:"subject"`
	Summary   string    `json:"summary,omitempty"`
	MessageID string    `json:"message_id,omitempty"` // dedups a resumed message
}

// Contact is what mailagent remembers about one correspondent of one
// account. Prompts see only the contact of the message at hand.
type Contact struct {
	Email        string         `json:"email"` // lowercased
	Name         string         `json:"name,omitempty"`
	FirstSeen    time.Time      `json:"first_seen"`
	LastSeen     time.Time      `json:"last_seen"`
	Inbound      int            `json:"inbound"`
	Outbound     int            `json:"outbound"`
	OwnerReplies int            `json:"owner_replies"`
	AutoReplies  int            `json:"auto_replies"`
	History      []HistoryEntry `json:"history,omitempty"` // newest last, at most HistoryCap
	Summary      string         `json:"summary,omitempty"`
	SummaryAt    time.Time      `json:"summary_at,omitzero"`
	SinceSummary int            `json:"since_summary"` // exchanges since Summary was written
	Notes        []string       `json:"notes,omitempty"`
	Known        bool           `json:"known"` // the owner has written to them
}

// UsageDay is the token ledger of one day (UTC, "2006-01-02").
type UsageDay struct {
	Day       string `json:"day"`
	Calls     int64  `json:"calls"`
	TokensIn  int64  `json:"tokens_in"`
	TokensOut int64  `json:"tokens_out"`
	// ModelCalls counts the model calls whose latency is recorded (the
	// trace steps with a model), LatencyMS their total, and
	// LatencyBuckets how many fell under each of LatencyBounds (the last
	// bucket: longer).
	ModelCalls     int64   `json:"model_calls"`
	LatencyMS      int64   `json:"latency_ms"`
	LatencyBuckets []int64 `json:"latency_buckets,omitempty"`
}
