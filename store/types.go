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
}

// GateResult is the outcome of one deterministic policy gate or routing rule.
type GateResult struct {
	Gate   string `json:"gate"`
	Pass   bool   `json:"pass"`
	Reason string `json:"reason"`
}

// MessageRecord is everything mailagent knows about one message.
type MessageRecord struct {
	MessageKey
	MessageID  string         `json:"message_id"`
	ThreadID   string         `json:"thread_id"`
	From       mail.Address   `json:"from"`
	ReplyTo    []mail.Address `json:"reply_to,omitempty"`
	To         []mail.Address `json:"to,omitempty"`
	Cc         []mail.Address `json:"cc,omitempty"`
	Subject    string         `json:"subject"`
	Date       time.Time      `json:"date"`
	InReplyTo  []string       `json:"in_reply_to,omitempty"`
	References []string       `json:"references,omitempty"`
	// Excerpt is the start of the message's clean text, kept so that later
	// prompts can show the thread without refetching.
	Excerpt  string   `json:"excerpt,omitempty"`
	Problems []string `json:"problems,omitempty"`

	Route          string          `json:"route"` // external | owner | self | automated
	RouteReason    string          `json:"route_reason,omitempty"`
	Classification *Classification `json:"classification,omitempty"`
	Decision       string          `json:"decision,omitempty"` // auto_send | queue | notify | archive | ignore | needs_review
	Reasons        []string        `json:"reasons,omitempty"`
	Gates          []GateResult    `json:"gates,omitempty"`

	State    State  `json:"state"`
	Error    string `json:"error,omitempty"` // why it needs review
	Attempts int    `json:"attempts,omitempty"`
	TraceID  string `json:"trace_id"`

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
}

// Checkpoint is the sync position of one mailbox: every UID up to and
// including LastUID has reached a terminal state.
type Checkpoint struct {
	UIDValidity uint32    `json:"uidvalidity"`
	LastUID     uint32    `json:"last_uid"`
	UpdatedAt   time.Time `json:"updated_at"`
}
