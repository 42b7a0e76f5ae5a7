// Package view is the public JSON schema of every --json output: one Go
// type per kind of record, shared by every command that prints that kind
// (and by anything else that shows records the same way). Every field is
// always present (no omitempty): null where unknown, [] for an empty list.
// README.md "JSON output" documents these types; cmd/mailagent's
// jsonschema_test.go pins them with golden files.
package view

// The public JSON schema of every --json output: one Go type per kind of
// record, shared by every command that prints that kind. Every field is
// always present (no omitempty): null where unknown, [] for an empty list.
// README.md "JSON output" documents these types; jsonschema_test.go pins
// them with golden files.

import (
	"time"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/internal/app/api"
	"github.com/mailagent/mailagent/internal/calendar"
	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/store"
)

// AddressJSON is a mail address: {"name","email"}; name is "" when the
// header had none.
type AddressJSON struct {
	Name  string `json:"name"`
	Email string `json:"email"`
}

// MessageKeyJSON names one message in one mailbox.
type MessageKeyJSON struct {
	Account     string `json:"account"`
	Mailbox     string `json:"mailbox"`
	UIDValidity uint32 `json:"uidvalidity"`
	UID         uint32 `json:"uid"`
}

// GateJSON is one policy gate's outcome.
type GateJSON struct {
	Gate   string `json:"gate"`
	Pass   bool   `json:"pass"`
	Reason string `json:"reason"`
}

// ClassificationJSON is the model's classification, flattened into message
// records and queue items. Every field but intents is null when the model
// never saw the message (automated mail, needs_review); intents is then [].
type ClassificationJSON struct {
	Intents          []string `json:"intents"`
	Risk             *string  `json:"risk"`
	Action           *string  `json:"action"`
	Confidence       *float64 `json:"confidence"`
	RequiresApproval *bool    `json:"requires_approval"`
	Summary          *string  `json:"summary"`
	// Rationale is the model's own explanation of its classification.
	Rationale *string `json:"rationale"`
}

// SenderAuthJSON is how the From address was authenticated.
type SenderAuthJSON struct {
	Authenticated bool    `json:"authenticated"`
	Address       *string `json:"address"`
	Method        *string `json:"method"`
}

// MessageJSON is a message and what was decided about it: the record kind
// of `triage --json` (plus its triage fields), `explain --json` (message)
// and `queue show --json` (thread).
type MessageJSON struct {
	MessageKeyJSON
	MessageID  string          `json:"message_id"`
	ThreadID   string          `json:"thread_id"`
	From       AddressJSON     `json:"from"`
	ReplyTo    []AddressJSON   `json:"reply_to"`
	To         []AddressJSON   `json:"to"`
	Cc         []AddressJSON   `json:"cc"`
	Subject    string          `json:"subject"`
	Date       *time.Time      `json:"date"`
	SenderAuth *SenderAuthJSON `json:"sender_auth"`
	Problems   []string        `json:"problems"`
	Excerpt    *string         `json:"excerpt"`

	Route       string  `json:"route"`
	RouteReason *string `json:"route_reason"`
	ClassificationJSON
	Decision *string  `json:"decision"`
	Reasons  []string `json:"reasons"`
	// Gates is null when no gate ran (automated mail, needs_review).
	Gates []GateJSON `json:"gates"`

	State      string    `json:"state"`
	TriageOnly bool      `json:"triage_only"`
	Error      *string   `json:"error"`
	Attempts   int       `json:"attempts"`
	TraceID    string    `json:"trace_id"`
	CreatedAt  time.Time `json:"created_at"`
	UpdatedAt  time.Time `json:"updated_at"`
}

// TriageJSON is one line of `triage --json`: the message record plus what
// this run spent on it.
type TriageJSON struct {
	MessageJSON
	TokensIn  int32 `json:"tokens_in"`
	TokensOut int32 `json:"tokens_out"`
	// Skipped: an earlier run had already triaged it (without --redo).
	Skipped bool `json:"skipped"`
}

// QueueItemJSON is one item of `queue list --json` and `queue show --json`.
type QueueItemJSON struct {
	ID        string         `json:"id"`
	Kind      string         `json:"kind"`
	Status    string         `json:"status"`
	Account   string         `json:"account"`
	Message   MessageKeyJSON `json:"message"`
	MessageID string         `json:"message_id"`
	ThreadID  string         `json:"thread_id"`
	From      AddressJSON    `json:"from"`
	To        []AddressJSON  `json:"to"`
	Subject   string         `json:"subject"`
	ClassificationJSON
	Reasons        []string   `json:"reasons"`
	Gates          []GateJSON `json:"gates"`
	Draft          *string    `json:"draft"`
	Final          *string    `json:"final"`
	RejectReason   *string    `json:"reject_reason"`
	SnoozeUntil    *time.Time `json:"snooze_until"`
	IMAPDraftUID   *uint32    `json:"imap_draft_uid"`
	DraftMessageID *string    `json:"draft_message_id"`
	Error          *string    `json:"error"`
	CreatedAt      time.Time  `json:"created_at"`
	UpdatedAt      time.Time  `json:"updated_at"`
	// Invitation is the calendar invitation the message carries (null
	// when none).
	Invitation *InvitationJSON `json:"invitation"`
}

// InvitationJSON is a calendar invitation as code read it (queue list and
// show): conflicts are the owner's busy times it overlaps.
type InvitationJSON struct {
	Method            string         `json:"method"`
	UID               string         `json:"uid"`
	Sequence          int            `json:"sequence"`
	RecurrenceID      *string        `json:"recurrence_id"`
	Summary           string         `json:"summary"`
	Location          *string        `json:"location"`
	Organizer         string         `json:"organizer"`
	OrganizerName     *string        `json:"organizer_name"`
	OrganizerVerified bool           `json:"organizer_verified"`
	OrganizerNote     *string        `json:"organizer_note"`
	Start             *string        `json:"start"` // RFC 3339 in the event's zone
	End               *string        `json:"end"`
	AllDay            bool           `json:"all_day"`
	TZID              *string        `json:"tzid"`
	Recurring         bool           `json:"recurring"`
	Conflicts         []FreeSlotJSON `json:"conflicts"`
	ConflictError     *string        `json:"conflict_error"`
	RSVP              *string        `json:"rsvp"`
	CalendarPath      *string        `json:"calendar_path"`
	CalendarError     *string        `json:"calendar_error"`
	// Status is null while the invitation stands, "cancelled" once its
	// authenticated organizer cancelled it, "superseded" once they sent
	// an update; StatusNote says by which message and what was done.
	Status     *string `json:"status"`
	StatusNote *string `json:"status_note"`
	// Applied is, on a CANCEL or an update, what mailagent did with the
	// invitation it names (or why nothing).
	Applied *string `json:"applied"`
	// Occurrences are, on a CANCEL or REQUEST of single occurrences of a
	// recurring event, each occurrence and what was done with it on the
	// series on the owner's calendar (text: the same in words).
	Occurrences []OccurrenceJSON `json:"occurrences"`
}

// OccurrenceJSON is one occurrence a message cancelled or moved.
type OccurrenceJSON struct {
	Kind         string  `json:"kind"` // cancelled | cancelled_from | changed
	RecurrenceID string  `json:"recurrence_id"`
	Start        *string `json:"start"` // RFC 3339, the original start; null when it matched no occurrence
	AllDay       bool    `json:"all_day"`
	NewStart     *string `json:"new_start"` // a moved occurrence's new times
	NewEnd       *string `json:"new_end"`
	Applied      bool    `json:"applied"`
	Note         *string `json:"note"`
	Text         string  `json:"text"`
}

// OutboxJSON is a reply's send record (without the raw message).
type OutboxJSON struct {
	ID        string         `json:"id"`
	Account   string         `json:"account"`
	From      string         `json:"envelope_from"`
	MessageID string         `json:"message_id"`
	Message   MessageKeyJSON `json:"message"`
	QueueID   *string        `json:"queue_id"`
	InReplyTo *string        `json:"in_reply_to"`
	// To is the list of recipients, as address objects like every "to"
	// (an outbox record keeps addresses only: name is "").
	To        []AddressJSON `json:"to"`
	Subject   string        `json:"subject"`
	Body      *string       `json:"body"`
	Status    string        `json:"status"`
	Auto      bool          `json:"auto"`
	Attempts  int           `json:"attempts"`
	Error     *string       `json:"error"`
	RawPruned bool          `json:"raw_pruned"`
	SendAt    *time.Time    `json:"send_at"`
	SentAt    *time.Time    `json:"sent_at"`
	CreatedAt time.Time     `json:"created_at"`
	UpdatedAt time.Time     `json:"updated_at"`
}

// DecisionJSON is one line of `decisions --json`: a message the agent
// decided on without asking (decision archive, ignore, notify or
// auto_send), and for an auto_send the reply it sent (null otherwise).
type DecisionJSON struct {
	MessageJSON
	Reply *OutboxJSON `json:"reply"`
}

// QueueShowJSON is `queue show --json`.
type QueueShowJSON struct {
	Item   QueueItemJSON `json:"item"`
	Thread []MessageJSON `json:"thread"`
	Outbox *OutboxJSON   `json:"outbox"`
}

// StepJSON is one step of a trace.
type StepJSON struct {
	Name      string    `json:"name"`
	Start     time.Time `json:"start"`
	LatencyMS int64     `json:"latency_ms"`
	TokensIn  int32     `json:"tokens_in"`
	TokensOut int32     `json:"tokens_out"`
	Model     *string   `json:"model"`
	Retries   int       `json:"retries"`
	Detail    *string   `json:"detail"`
	Error     *string   `json:"error"`
	// Snapshot is the step's input and output (redacted, capped); null
	// when snapshots were off, pruned, or the step keeps none.
	Snapshot *SnapshotJSON `json:"snapshot"`
}

// SnapshotJSON is what went into a trace step and what came out of it
// (prompt variables and the model's raw answer, a gate's inputs). Mail and
// model text: hostile, printed as received.
type SnapshotJSON struct {
	Input  string `json:"input"`
	Output string `json:"output"`
}

// TraceJSON is how one message was handled, step by step.
type TraceJSON struct {
	TraceID   string         `json:"trace_id"`
	Message   MessageKeyJSON `json:"message"`
	MessageID string         `json:"message_id"`
	Started   time.Time      `json:"started"`
	Steps     []StepJSON     `json:"steps"`
	Decision  *string        `json:"decision"`
	Reasons   []string       `json:"reasons"`
	Gates     []GateJSON     `json:"gates"`
}

// ExplainJSON is `explain --json`; message is null when the record is gone.
type ExplainJSON struct {
	Trace   TraceJSON    `json:"trace"`
	Message *MessageJSON `json:"message"`
}

// AccountStatusJSON is one account's sync state in `status --json`.
type AccountStatusJSON struct {
	Name          string     `json:"name"`
	State         string     `json:"state"`
	LastSync      *time.Time `json:"last_sync"`
	Error         *string    `json:"error"`
	ErrorSince    *time.Time `json:"error_since"`
	CopiesMissing int        `json:"copies_missing"`
	CopyError     *string    `json:"copy_error"`
	// RetryAt is when a lost connection is tried again (null while
	// connected).
	RetryAt *time.Time `json:"retry_at"`
	// Push latency of new mail (status.Account): the newest message's and
	// the median over the last LatencySamples (at most 20) messages that
	// arrived while the watcher ran; null before the first.
	LatencyLastMS   *int64 `json:"latency_last_ms"`
	LatencyMedianMS *int64 `json:"latency_median_ms"`
	LatencySamples  int    `json:"latency_samples"`
	// Claims (status.Account): how this watcher shares the mailbox with
	// other watchers of the account ("claims", "elected", "passive",
	// "off"; null before the first sync), its id in claim keywords, why
	// it is passive or who holds what, and the messages another watcher
	// is handling now or has decided.
	ClaimMode        *string `json:"claim_mode"`
	ClaimHolder      *string `json:"claim_holder"`
	ClaimNote        *string `json:"claim_note"`
	HeldElsewhere    int     `json:"held_elsewhere"`
	HandledElsewhere int     `json:"handled_elsewhere"`
}

// UsageJSON is a day's token ledger.
type UsageJSON struct {
	Day       string `json:"day"`
	Calls     int64  `json:"calls"`
	TokensIn  int64  `json:"tokens_in"`
	TokensOut int64  `json:"tokens_out"`
	// ModelCalls counts the model calls with a recorded latency;
	// LatencyMeanMS is their mean and LatencyP95MS the upper bound of the
	// latency bucket holding their 95th percentile (null without calls, or
	// past the last bucket, 60 s).
	ModelCalls    int64  `json:"model_calls"`
	LatencyMeanMS *int64 `json:"latency_mean_ms"`
	LatencyP95MS  *int64 `json:"latency_p95_ms"`
}

func ToUsageJSON(u store.UsageDay) UsageJSON {
	j := UsageJSON{Day: u.Day, Calls: u.Calls, TokensIn: u.TokensIn, TokensOut: u.TokensOut, ModelCalls: u.ModelCalls}
	if u.ModelCalls > 0 {
		mean := u.LatencyMean().Milliseconds()
		j.LatencyMeanMS = &mean
	}
	if p95, ok := u.LatencyP95(); ok {
		ms := p95.Milliseconds()
		j.LatencyP95MS = &ms
	}
	return j
}

// StatusJSON is `status --json`.
type StatusJSON struct {
	Watcher       bool                `json:"watcher"`
	PID           *int                `json:"pid"`
	Started       *time.Time          `json:"started"`
	Accounts      []AccountStatusJSON `json:"accounts"`
	AutoSentToday int                 `json:"auto_sent_today"`
	AutoSendCap   int                 `json:"auto_send_cap"`
	Counts        map[string]int      `json:"counts"`
	TokensToday   UsageJSON           `json:"tokens_today"`
}

// HistoryJSON is one exchange in a contact's history.
type HistoryJSON struct {
	Date      time.Time `json:"date"`
	Direction string    `json:"direction"`
	Subject   string    `json:"subject"`
	Summary   *string   `json:"summary"`
	MessageID *string   `json:"message_id"`
}

// ContactJSON is one contact in `contacts list --json` and
// `contacts show --json`.
type ContactJSON struct {
	Account      string        `json:"account"`
	Email        string        `json:"email"`
	Name         *string       `json:"name"`
	Known        bool          `json:"known"`
	FirstSeen    *time.Time    `json:"first_seen"`
	LastSeen     *time.Time    `json:"last_seen"`
	Inbound      int           `json:"inbound"`
	Outbound     int           `json:"outbound"`
	OwnerReplies int           `json:"owner_replies"`
	AutoReplies  int           `json:"auto_replies"`
	Summary      *string       `json:"summary"`
	SummaryAt    *time.Time    `json:"summary_at"`
	SinceSummary int           `json:"since_summary"`
	Notes        []string      `json:"notes"`
	History      []HistoryJSON `json:"history"`
}

// CostJSON is model usage with its estimated price: estimated_usd is null
// for a model without a known list price (price_as_of is then null too).
type CostJSON struct {
	Calls        int64    `json:"calls"`
	TokensIn     int64    `json:"tokens_in"`
	TokensOut    int64    `json:"tokens_out"`
	Model        string   `json:"model"`
	EstimatedUSD *float64 `json:"estimated_usd"`
	PriceAsOf    *string  `json:"price_as_of"`
}

// ReplayThresholdJSON is one row of replay's threshold table.
type ReplayThresholdJSON struct {
	MinConfidence float64 `json:"min_confidence"`
	AutoSends     int     `json:"auto_sends"`
	Unwanted      int     `json:"unwanted"`
	// CapLimited: would-be auto-sends the daily caps queued instead.
	CapLimited int `json:"cap_limited"`
}

// ReplayAutoSendJSON is one would-be auto-send of replay's lists:
// unwanted_messages (the owner never answered it; similarity is null) and
// very_different_messages (the owner answered very differently;
// similarity is the draft's similarity to the owner's reply).
type ReplayAutoSendJSON struct {
	Message    MessageKeyJSON `json:"message"`
	From       string         `json:"from"`
	Subject    string         `json:"subject"`
	Date       time.Time      `json:"date"`
	Confidence float64        `json:"confidence"`
	Similarity *float64       `json:"similarity"`
}

// ReplayJSON is `replay --json`: the scores of one replay. Ratios are
// null when undefined (no denominator); answered_very_differently, the
// similarities and very_different_messages are null without --drafts.
// "Unwanted" is one thing everywhere: an auto-send the owner never
// answered (auto_sends.unwanted, the thresholds' unwanted and
// unwanted_messages).
type ReplayJSON struct {
	Messages    int            `json:"messages"`
	Incoming    int            `json:"incoming"`
	NeedsReview int            `json:"needs_review"`
	Decisions   map[string]int `json:"decisions"`
	Owner       struct {
		Replied            int      `json:"replied"`
		MedianReplySeconds *float64 `json:"median_reply_seconds"`
		Flagged            int      `json:"flagged"`
		Unread             int      `json:"unread"`
		Deleted            int      `json:"deleted"`
		Archived           int      `json:"archived"`
	} `json:"owner"`
	NeedsReply struct {
		TruePositive  int      `json:"true_positive"`
		FalsePositive int      `json:"false_positive"`
		FalseNegative int      `json:"false_negative"`
		TrueNegative  int      `json:"true_negative"`
		Precision     *float64 `json:"precision"`
		Recall        *float64 `json:"recall"`
	} `json:"needs_reply"`
	AutoSends struct {
		MinConfidence           float64 `json:"min_confidence"`
		Total                   int     `json:"total"`
		OwnerAlsoAnswered       int     `json:"owner_also_answered"`
		AnsweredVeryDifferently *int    `json:"answered_very_differently"`
		NeverAnswered           int     `json:"never_answered"`
		Unwanted                int     `json:"unwanted"`
		// CapLimited: would-be auto-sends the daily caps (simulated in
		// arrival order) turned into queue items; not in total.
		CapLimited          int `json:"cap_limited"`
		MaxPerContactPerDay int `json:"max_per_contact_per_day"`
		MaxPerDay           int `json:"max_per_day"`
	} `json:"auto_sends"`
	Drafts struct {
		Enabled            bool     `json:"enabled"`
		Compared           int      `json:"compared"`
		MeanSimilarity     *float64 `json:"mean_similarity"`
		MedianSimilarity   *float64 `json:"median_similarity"`
		Measure            string   `json:"measure"`
		VeryDifferentBelow float64  `json:"very_different_below"`
	} `json:"drafts"`
	Thresholds          []ReplayThresholdJSON `json:"thresholds"`
	Unwanted            []ReplayAutoSendJSON  `json:"unwanted_messages"`
	VeryDifferent       []ReplayAutoSendJSON  `json:"very_different_messages"`
	Cost                CostJSON              `json:"cost"`
	ElapsedSeconds      float64               `json:"elapsed_seconds"`
	TotalElapsedSeconds float64               `json:"total_elapsed_seconds"`
}

// DigestSendJSON is one reply mailagent sent (or will send) on its own.
type DigestSendJSON struct {
	Account string        `json:"account"`
	To      []AddressJSON `json:"to"`
	Subject string        `json:"subject"`
	At      time.Time     `json:"at"`
}

// DigestWaitingJSON is one queue item still waiting for the owner.
type DigestWaitingJSON struct {
	ID      string      `json:"id"`
	Kind    string      `json:"kind"`
	Account string      `json:"account"`
	From    AddressJSON `json:"from"`
	Subject string      `json:"subject"`
	Since   time.Time   `json:"since"`
	New     bool        `json:"new"`
}

// DigestReviewJSON is one message that needs review.
type DigestReviewJSON struct {
	Message MessageKeyJSON `json:"message"`
	From    AddressJSON    `json:"from"`
	Subject string         `json:"subject"`
	Error   string         `json:"error"`
}

// DigestDueJSON is one tracked thread past its deadline: state is
// needs_reply (the owner owes the answer) or awaiting_reply.
type DigestDueJSON struct {
	ID             string    `json:"id"`
	Account        string    `json:"account"`
	State          string    `json:"state"`
	Correspondents []string  `json:"correspondents"`
	Subject        string    `json:"subject"`
	Deadline       time.Time `json:"deadline"`
	Nudges         int       `json:"nudges"`
}

// DigestJSON is `digest --json`: what the agent did between since and
// until. archived and ignored count messages by category (the first
// intent, or the route when the model never saw the message).
type DigestJSON struct {
	Since       time.Time           `json:"since"`
	Until       time.Time           `json:"until"`
	AutoSent    []DigestSendJSON    `json:"auto_sent"`
	Scheduled   []DigestSendJSON    `json:"scheduled"`
	Waiting     []DigestWaitingJSON `json:"waiting"`
	Processed   int                 `json:"processed"`
	Archived    map[string]int      `json:"archived"`
	Ignored     map[string]int      `json:"ignored"`
	NeedsReview []DigestReviewJSON  `json:"needs_review"`
	// FollowupsDue: open threads past their deadline, oldest first.
	FollowupsDue []DigestDueJSON `json:"followups_due"`
	Cost         CostJSON        `json:"cost"`
}

// MemoryJSON is one memory record in `memory list --json` and
// `memory show --json`. Contact is null for a global record.
type MemoryJSON struct {
	ID      string     `json:"id"`
	Account string     `json:"account"`
	Kind    string     `json:"kind"`
	Contact *string    `json:"contact"`
	Intent  *string    `json:"intent"`
	Text    string     `json:"text"`
	Source  string     `json:"source"`
	Created time.Time  `json:"created"`
	Expires *time.Time `json:"expires"`
}

func ToMemoryJSON(r *store.MemoryRecord) MemoryJSON {
	return MemoryJSON{ID: r.ID, Account: r.Account, Kind: r.Kind, Contact: OptStr(r.Contact), Intent: OptStr(r.Intent),
		Text: r.Text, Source: r.Source, Created: r.Created, Expires: OptTime(r.Expires)}
}

func ToMemoryJSONs(rs []store.MemoryRecord) []MemoryJSON {
	out := make([]MemoryJSON, 0, len(rs))
	for i := range rs {
		out = append(out, ToMemoryJSON(&rs[i]))
	}
	return out
}

// CheckJSON is one doctor check. Check is a fixed id (imap.login,
// smtp.login, model.round_trip…); the account and mailbox it concerns are
// fields of their own.
type CheckJSON struct {
	Check   string  `json:"check"`
	Account *string `json:"account"`
	Mailbox *string `json:"mailbox"`
	Status  string  `json:"status"`
	Detail  *string `json:"detail"`
	Fix     *string `json:"fix"`
}

// ScheduleJobJSON is one job of the durable scheduler in `schedule list
// --json`. State is pending | running | done | failed; due is when it runs
// next (a running job: when its claim may be resumed, lease_until), and
// due_in_seconds is negative when it is overdue; cron is its spec
// (robfig/cron/v3 standard form) or null; attempts counts the failures
// since its last success, last_error the last one's text.
type ScheduleJobJSON struct {
	ID           string     `json:"id"`
	Kind         string     `json:"kind"`
	State        string     `json:"state"`
	Due          time.Time  `json:"due"`
	DueInSeconds int64      `json:"due_in_seconds"`
	Cron         *string    `json:"cron"`
	Reason       string     `json:"reason"`
	Attempts     int        `json:"attempts"`
	MaxAttempts  int        `json:"max_attempts"`
	LastError    *string    `json:"last_error"`
	LeaseUntil   *time.Time `json:"lease_until"`
	Runs         int        `json:"runs"`
	LastRun      *time.Time `json:"last_run"`
	CreatedAt    time.Time  `json:"created_at"`
	UpdatedAt    time.Time  `json:"updated_at"`
}

func ToScheduleJobJSON(j *store.Job, now time.Time) ScheduleJobJSON {
	due := JobDueAt(j)
	maxAttempts := j.MaxAttempts
	if maxAttempts <= 0 {
		maxAttempts = store.DefaultJobAttempts
	}
	return ScheduleJobJSON{ID: j.ID, Kind: j.Kind, State: string(j.State), Due: due,
		DueInSeconds: int64(due.Sub(now) / time.Second), Cron: OptStr(j.Cron), Reason: j.Reason,
		Attempts: j.Attempts, MaxAttempts: maxAttempts, LastError: OptStr(j.LastError),
		LeaseUntil: OptTime(j.LeaseUntil), Runs: j.Runs, LastRun: OptTime(j.LastRun),
		CreatedAt: j.CreatedAt, UpdatedAt: j.UpdatedAt}
}

// FollowupJSON is one reply-tracking thread in `followups --json`.
// State is needs_reply | awaiting_reply | done | gave_up; tier is 0 (nothing
// fired yet), 1 (reminded) or 2 (a follow-up draft was queued).
type FollowupJSON struct {
	ID             string     `json:"id"`
	Account        string     `json:"account"`
	ThreadID       string     `json:"thread_id"`
	State          string     `json:"state"`
	Correspondents []string   `json:"correspondents"`
	Subject        string     `json:"subject"`
	MessageID      string     `json:"message_id"`
	LastAt         time.Time  `json:"last_at"`
	AgeSeconds     int64      `json:"age_seconds"`
	Deadline       time.Time  `json:"deadline"`
	DeadlineSource string     `json:"deadline_source"`
	Overdue        bool       `json:"overdue"`
	Tier           int        `json:"tier"`
	Nudges         int        `json:"nudges"`
	NudgeIDs       []string   `json:"nudge_ids"`
	SnoozeUntil    *time.Time `json:"snooze_until"`
	Due            *time.Time `json:"due"`
	Reason         string     `json:"reason"`
	ClosedAt       *time.Time `json:"closed_at"`
}

func ToFollowupJSON(fu *store.Followup, now time.Time) FollowupJSON {
	return FollowupJSON{ID: fu.ID, Account: fu.Account, ThreadID: fu.ThreadID, State: fu.State,
		Correspondents: Strs(fu.Correspondents), Subject: fu.Subject, MessageID: fu.MessageID, LastAt: fu.LastAt,
		AgeSeconds: int64(max(0, now.Sub(fu.LastAt)) / time.Second), Deadline: fu.Deadline, DeadlineSource: fu.DeadlineSource,
		Overdue: store.FollowupOpen(fu.State) && fu.Deadline.Before(now), Tier: fu.Tier, Nudges: fu.Nudges,
		NudgeIDs: Strs(fu.NudgeIDs), SnoozeUntil: OptTime(fu.SnoozeUntil), Due: OptTime(fu.Due), Reason: fu.Reason,
		ClosedAt: OptTime(fu.ClosedAt)}
}

func ToFollowupsJSON(fs []store.Followup, now time.Time) []FollowupJSON {
	out := make([]FollowupJSON, 0, len(fs))
	for i := range fs {
		out = append(out, ToFollowupJSON(&fs[i], now))
	}
	return out
}

// UnsubscribeJSON is the record `unsubscribe --json` prints. Method is
// one_click or mailto; target is the URL or the address used; result is
// "ok" (a failure exits non-zero and prints no record).
type UnsubscribeJSON struct {
	Account   string    `json:"account"`
	MessageID string    `json:"message_id"`
	List      string    `json:"list"`
	Method    string    `json:"method"`
	Target    string    `json:"target"`
	Result    string    `json:"result"`
	At        time.Time `json:"at"`
}

func OptStr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func OptTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

func Strs(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func ToAddressJSON(a mail.Address) AddressJSON { return AddressJSON{Name: a.Name, Email: a.Email} }

// EmailsJSON is a list of bare addresses as address objects.
func EmailsJSON(es []string) []AddressJSON {
	out := make([]AddressJSON, 0, len(es))
	for _, e := range es {
		out = append(out, AddressJSON{Email: e})
	}
	return out
}

func ToAddressesJSON(as []mail.Address) []AddressJSON {
	out := make([]AddressJSON, 0, len(as))
	for _, a := range as {
		out = append(out, ToAddressJSON(a))
	}
	return out
}

func ToKeyJSON(k store.MessageKey) MessageKeyJSON {
	return MessageKeyJSON{Account: k.Account, Mailbox: k.Mailbox, UIDValidity: k.UIDValidity, UID: k.UID}
}

// ToGatesJSON is null when no gate ran.
func ToGatesJSON(gs []store.GateResult) []GateJSON {
	if len(gs) == 0 {
		return nil
	}
	out := make([]GateJSON, 0, len(gs))
	for _, g := range gs {
		out = append(out, GateJSON(g))
	}
	return out
}

func ToClassificationJSON(c *store.Classification) ClassificationJSON {
	if c == nil {
		return ClassificationJSON{Intents: []string{}}
	}
	conf, appr := c.Confidence, c.RequiresApproval
	return ClassificationJSON{Intents: Strs(c.Intents), Risk: OptStr(c.Risk), Action: OptStr(c.Action),
		Confidence: &conf, RequiresApproval: &appr, Summary: OptStr(c.Summary), Rationale: OptStr(c.Comments)}
}

func ToMessageJSON(rec *store.MessageRecord) MessageJSON {
	j := MessageJSON{
		MessageKeyJSON: ToKeyJSON(rec.MessageKey), MessageID: rec.MessageID, ThreadID: rec.ThreadID,
		From: ToAddressJSON(rec.From), ReplyTo: ToAddressesJSON(rec.ReplyTo), To: ToAddressesJSON(rec.To),
		Cc: ToAddressesJSON(rec.Cc), Subject: rec.Subject, Date: OptTime(rec.Date), Problems: Strs(rec.Problems),
		Excerpt: OptStr(rec.Excerpt), Route: rec.Route, RouteReason: OptStr(rec.RouteReason),
		ClassificationJSON: ToClassificationJSON(rec.Classification), Decision: OptStr(rec.Decision),
		Reasons: Strs(rec.Reasons), Gates: ToGatesJSON(rec.Gates), State: string(rec.State),
		TriageOnly: rec.TriageOnly, Error: OptStr(rec.Error), Attempts: rec.Attempts, TraceID: rec.TraceID,
		CreatedAt: rec.CreatedAt, UpdatedAt: rec.UpdatedAt,
	}
	if a := rec.SenderAuth; a != nil {
		j.SenderAuth = &SenderAuthJSON{Authenticated: a.Authenticated, Address: OptStr(a.Address), Method: OptStr(a.Method)}
	}
	return j
}

func ToQueueItemJSON(q *store.QueueItem) QueueItemJSON {
	j := QueueItemJSON{
		ID: q.ID, Kind: q.Kind, Status: q.Status, Account: q.Account, Message: ToKeyJSON(q.Message),
		MessageID: q.MessageID, ThreadID: q.ThreadID, From: ToAddressJSON(q.From), To: ToAddressesJSON(q.To),
		Subject: q.Subject, ClassificationJSON: ToClassificationJSON(q.Classification), Reasons: Strs(q.Reasons),
		Gates: ToGatesJSON(q.Gates), Draft: OptStr(q.Draft), Final: OptStr(q.Final), RejectReason: OptStr(q.RejectReason),
		SnoozeUntil: OptTime(q.SnoozeUntil), DraftMessageID: OptStr(q.DraftMessageID), Error: OptStr(q.Error),
		CreatedAt: q.CreatedAt, UpdatedAt: q.UpdatedAt,
	}
	if q.IMAPDraftUID != 0 {
		uid := q.IMAPDraftUID
		j.IMAPDraftUID = &uid
	}
	j.Invitation = ToInvitationJSON(q.Invitation)
	return j
}

func ToInvitationJSON(inv *store.Invitation) *InvitationJSON {
	if inv == nil {
		return nil
	}
	j := &InvitationJSON{Method: inv.Method, UID: inv.UID, Sequence: inv.Sequence, RecurrenceID: OptStr(inv.RecurrenceID),
		Summary: inv.Summary, Location: OptStr(inv.Location), Organizer: inv.Organizer, OrganizerName: OptStr(inv.OrganizerCN),
		OrganizerVerified: inv.OrganizerVerified, OrganizerNote: OptStr(inv.OrganizerNote), AllDay: inv.AllDay,
		TZID: OptStr(inv.TZID), Recurring: inv.Recurring, Conflicts: make([]FreeSlotJSON, 0, len(inv.Conflicts)),
		ConflictError: OptStr(inv.ConflictError), RSVP: OptStr(inv.RSVP), CalendarPath: OptStr(inv.CalendarPath),
		CalendarError: OptStr(inv.CalendarError), Status: OptStr(inv.Status), StatusNote: OptStr(inv.StatusNote), Applied: OptStr(inv.Applied)}
	j.Occurrences = make([]OccurrenceJSON, 0, len(inv.Occurrences))
	for _, o := range inv.Occurrences {
		j.Occurrences = append(j.Occurrences, OccurrenceJSON{Kind: o.Kind, RecurrenceID: o.RecurrenceID, Start: OptRFC3339(o.Start),
			AllDay: o.AllDay, NewStart: OptRFC3339(o.NewStart), NewEnd: OptRFC3339(o.NewEnd), Applied: o.Applied, Note: OptStr(o.Note), Text: o.Text})
	}
	loc := time.UTC
	if l, err := time.LoadLocation(inv.TZID); err == nil && inv.TZID != "" {
		loc = l
	}
	if !inv.Start.IsZero() {
		s, e := inv.Start.In(loc).Format(time.RFC3339), inv.End.In(loc).Format(time.RFC3339)
		j.Start, j.End = &s, &e
	}
	for _, c := range inv.Conflicts {
		j.Conflicts = append(j.Conflicts, ToFreeSlotJSON(calendar.Interval{Start: c.Start, End: c.End}))
	}
	return j
}

func ToQueueItemsJSON(items []store.QueueItem) []QueueItemJSON {
	out := make([]QueueItemJSON, 0, len(items))
	for i := range items {
		out = append(out, ToQueueItemJSON(&items[i]))
	}
	return out
}

func ToQueueShowJSON(d *api.QueueDetail) QueueShowJSON {
	j := QueueShowJSON{Item: ToQueueItemJSON(&d.Item), Thread: make([]MessageJSON, 0, len(d.Thread))}
	for i := range d.Thread {
		j.Thread = append(j.Thread, ToMessageJSON(&d.Thread[i]))
	}
	j.Outbox = ToOutboxJSON(d.Outbox)
	return j
}

// ToOutboxJSON is null for a nil record.
func ToOutboxJSON(o *store.OutboxRecord) *OutboxJSON {
	if o == nil {
		return nil
	}
	return &OutboxJSON{ID: o.ID, Account: o.Account, From: o.From, MessageID: o.MessageID, Message: ToKeyJSON(o.Message),
		QueueID: OptStr(o.QueueID), InReplyTo: OptStr(o.InReplyTo), To: EmailsJSON(o.To), Subject: o.Subject, Body: OptStr(o.Body),
		Status: o.Status, Auto: o.Auto, Attempts: o.Attempts, Error: OptStr(o.Error), RawPruned: o.RawPruned,
		SendAt: OptTime(o.SendAt), SentAt: OptTime(o.SentAt), CreatedAt: o.CreatedAt, UpdatedAt: o.UpdatedAt}
}

func ToExplainJSON(tr *store.Trace, rec *store.MessageRecord) ExplainJSON {
	j := ExplainJSON{Trace: TraceJSON{TraceID: tr.TraceID, Message: ToKeyJSON(tr.Message), MessageID: tr.MessageID,
		Started: tr.Started, Steps: make([]StepJSON, 0, len(tr.Steps)), Decision: OptStr(tr.Decision),
		Reasons: Strs(tr.Reasons), Gates: ToGatesJSON(tr.Gates)}}
	for _, s := range tr.Steps {
		j.Trace.Steps = append(j.Trace.Steps, StepJSON{Name: s.Name, Start: s.Start, LatencyMS: s.LatencyMS, TokensIn: s.TokensIn,
			TokensOut: s.TokensOut, Model: OptStr(s.Model), Retries: s.Retries, Detail: OptStr(s.Detail), Error: OptStr(s.Error),
			Snapshot: ToSnapshotJSON(s.Snapshot)})
	}
	if rec != nil {
		m := ToMessageJSON(rec)
		j.Message = &m
	}
	return j
}

func ToStatusJSON(s *api.Status) StatusJSON {
	j := StatusJSON{Watcher: s.Watcher, Started: OptTime(s.Started), Accounts: make([]AccountStatusJSON, 0, len(s.Accounts)),
		AutoSentToday: s.AutoSentToday, AutoSendCap: s.AutoSendCap, Counts: map[string]int{},
		TokensToday: ToUsageJSON(s.TokensToday)}
	if s.PID != 0 {
		pid := s.PID
		j.PID = &pid
	}
	for _, a := range s.Accounts {
		aj := AccountStatusJSON{Name: a.Name, State: a.State, LastSync: OptTime(a.LastSync),
			Error: OptStr(a.Error), ErrorSince: OptTime(a.ErrorSince), CopiesMissing: a.CopiesMissing, CopyError: OptStr(a.CopyError),
			RetryAt: OptTime(a.RetryAt), LatencySamples: a.LatencySamples,
			ClaimMode: OptStr(a.ClaimMode), ClaimHolder: OptStr(a.ClaimHolder), ClaimNote: OptStr(a.ClaimNote),
			HeldElsewhere: a.HeldElsewhere, HandledElsewhere: a.HandledElsewhere}
		if a.LatencySamples > 0 {
			last, med := a.LatencyLast.Milliseconds(), a.LatencyMedian.Milliseconds()
			aj.LatencyLastMS, aj.LatencyMedianMS = &last, &med
		}
		j.Accounts = append(j.Accounts, aj)
	}
	for k, v := range s.Counts {
		j.Counts[string(k)] = v
	}
	return j
}

func ToContactJSON(account string, c *store.Contact) ContactJSON {
	j := ContactJSON{Account: account, Email: c.Email, Name: OptStr(c.Name), Known: c.Known, FirstSeen: OptTime(c.FirstSeen),
		LastSeen: OptTime(c.LastSeen), Inbound: c.Inbound, Outbound: c.Outbound, OwnerReplies: c.OwnerReplies,
		AutoReplies: c.AutoReplies, Summary: OptStr(c.Summary), SummaryAt: OptTime(c.SummaryAt), SinceSummary: c.SinceSummary,
		Notes: Strs(c.Notes), History: make([]HistoryJSON, 0, len(c.History))}
	for _, h := range c.History {
		j.History = append(j.History, HistoryJSON{Date: h.Date, Direction: h.Direction, Subject: h.Subject,
			Summary: OptStr(h.Summary), MessageID: OptStr(h.MessageID)})
	}
	return j
}

func ToContactsJSON(account string, cs []store.Contact) []ContactJSON {
	out := make([]ContactJSON, 0, len(cs))
	for i := range cs {
		out = append(out, ToContactJSON(account, &cs[i]))
	}
	return out
}

// FreeSlotJSON is one free interval (`calendar free --json`), in RFC 3339
// with the scheduling time zone's offset.
type FreeSlotJSON struct {
	Start string `json:"start"`
	End   string `json:"end"`
}

func ToFreeSlotJSON(s calendar.Interval) FreeSlotJSON {
	return FreeSlotJSON{Start: s.Start.Format(time.RFC3339), End: s.End.Format(time.RFC3339)}
}

func ToSnapshotJSON(s *store.StepSnapshot) *SnapshotJSON {
	if s == nil {
		return nil
	}
	return &SnapshotJSON{Input: s.Input, Output: s.Output}
}

// OptRFC3339 is t in RFC 3339 with its offset, nil when zero.
func OptRFC3339(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	v := t.Format(time.RFC3339)
	return &v
}

// JobDueAt is when a job is due next: a running job's lease end.
func JobDueAt(j *store.Job) time.Time {
	if j.State == store.JobRunning {
		return j.LeaseUntil
	}
	return j.Due
}

// ToDecisionJSON is one decision of `mailagent decisions`: the message,
// with the reply it sent when the agent answered on its own (AutoSent).
func ToDecisionJSON(rec *store.MessageRecord, reply *store.OutboxRecord) DecisionJSON {
	j := DecisionJSON{MessageJSON: ToMessageJSON(rec)}
	if AutoSent(rec) {
		j.Reply = ToOutboxJSON(reply)
	}
	return j
}

// AutoSent reports whether the agent answered rec on its own (the
// pipeline's auto_send decision).
func AutoSent(rec *store.MessageRecord) bool { return rec.Decision == agent.DecisionAutoSend }
