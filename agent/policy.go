package agent

import (
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/mailagent/mailagent/agent/guard"
	"github.com/mailagent/mailagent/store"
)

// Decisions a message can end with.
const (
	DecisionAutoSend    = "auto_send"
	DecisionQueue       = "queue"
	DecisionNotify      = "notify"
	DecisionArchive     = "archive"
	DecisionIgnore      = "ignore"
	DecisionNeedsReview = "needs_review"
)

// Gate names, in the order they are evaluated and shown.
const (
	GateMode           = "mode"
	GateRoute          = "route"
	GateSenderAuth     = "sender_auth"
	GateRecipients     = "recipients"
	GateClassification = "classification"
	GateNeverAuto      = "never_auto"
	GateKnownContact   = "known_contact"
	GateCaps           = "caps"
	GateOutput         = "output_guard"
)

// Policy is the owner's auto-send policy. The zero value never auto-sends.
type Policy struct {
	Mode                string // "review" (never auto-send) or "auto"
	MinConfidence       float64
	NeverAuto           []string
	AutoSendNewContacts bool
	MaxPerContactPerDay int
	MaxPerDay           int
	SendDelay           time.Duration
	ReplyAll            bool
	MaxDraftChars       int
	// AutoSchedule lets a scheduling reply go out on its own when every
	// date and time in it came from the calendar (policy.auto_schedule).
	AutoSchedule bool
	// ApprovalDelay is the undo window of an approval
	// (policy.approval_delay): the approved reply waits this long,
	// scheduled and cancellable, before it is sent. 0 sends at once.
	ApprovalDelay time.Duration
	// AllowDomains are domains outgoing mail may go to even though they
	// are not public names (policy.allow_domains): see
	// netpolicy.CheckMailAddress. The accounts' own domains need no entry.
	AllowDomains []string
}

// DefaultNeverAuto is the default policy.never_auto list.
var DefaultNeverAuto = []string{"sensitive_legal_financial", "complaint", "sales_vendor", "unknown_ambiguous", "spam"}

// GateInput is everything the gates look at. All of it is computed by code;
// only Classification and Out come from the model, and both are treated
// as untrusted.
type GateInput struct {
	Route RouteInfo
	// AuthservID is the account's accounts.authserv_id ("" = not set).
	AuthservID string
	// Sender is who sent the message, as far as the owner's own server
	// vouches for it (AuthenticateSender).
	Sender store.SenderAuth
	// Recipients are the reply's final recipients (compose.Recipients),
	// with what the store knows about each. Every gate about "who" looks at
	// these, never at From.
	Recipients []Recipient
	// ReplyTo holds the message's Reply-To addresses, to name them when
	// they take the reply away from the authenticated sender.
	ReplyTo        []string
	Classification *store.Classification
	// SentToday is the persisted number of auto-sends today, all accounts.
	SentToday int
	// Out is the reply as it would leave; Out.Body is empty when no draft
	// was written yet (triage), and the output guard is then pending.
	Out guard.Fields
	// Trusted is what the reply may repeat: the owner's profile and the
	// owner's own mail in the thread, the owner's addresses and the final
	// recipients. Never the incoming mail.
	Trusted guard.Trusted
}

// Recipient is one final recipient of a reply.
type Recipient struct {
	Email string
	// Known: the owner wrote to this address, or approved mail to it.
	// mailagent's automatic replies never make an address known.
	Known bool
	// SentToday is the persisted number of auto-sends to it today.
	SentToday int
}

// AuthservIDFix is what a user must do when no authserv_id is configured.
const AuthservIDFix = "set accounts.authserv_id; `mailagent doctor` shows the id your server uses"

// EvaluateGates runs every gate and returns all results, passing or not, so
// that explain can show each one.
func EvaluateGates(p Policy, in GateInput) []store.GateResult {
	var out []store.GateResult
	add := func(gate string, pass bool, format string, args ...any) {
		out = append(out, store.GateResult{Gate: gate, Pass: pass, Reason: fmt.Sprintf(format, args...)})
	}

	if p.Mode == "auto" {
		add(GateMode, true, "policy.mode is auto")
	} else {
		add(GateMode, false, "policy.mode is %q: only \"auto\" sends without approval", p.Mode)
	}

	switch {
	case in.Route.ClaimsOwner:
		add(GateRoute, false, "%s", in.Route.Reason)
	case in.Route.Route != RouteExternal:
		add(GateRoute, false, "route is %s (%s): only external mail may be answered automatically", in.Route.Route, in.Route.Reason)
	default:
		add(GateRoute, true, "route is external and the mail is not automated")
	}

	id := in.Sender.Identity()
	switch {
	case strings.TrimSpace(in.AuthservID) == "":
		add(GateSenderAuth, false, "no authserv_id is configured, so no sender can be authenticated: %s", AuthservIDFix)
	case id == "":
		add(GateSenderAuth, false, "From %s is not authenticated: %s", orNone(in.Sender.Address), in.Sender.Reason)
	default:
		add(GateSenderAuth, true, "From %s is authenticated: %s", id, in.Sender.Reason)
	}

	rcpts := make([]string, len(in.Recipients))
	for i, r := range in.Recipients {
		rcpts[i] = r.Email
	}
	switch {
	case len(rcpts) == 0:
		add(GateRecipients, false, "no one to reply to")
	case id == "":
		add(GateRecipients, false, "an automatic reply goes only to an authenticated sender, and this one is not")
	case len(rcpts) == 1 && strings.EqualFold(rcpts[0], id):
		add(GateRecipients, true, "the reply goes to the authenticated sender %s only", id)
	default:
		var away []string
		for _, r := range in.ReplyTo {
			if !strings.EqualFold(r, id) && slices.ContainsFunc(rcpts, func(x string) bool { return strings.EqualFold(x, r) }) {
				away = append(away, r)
			}
		}
		switch {
		case len(away) > 0:
			add(GateRecipients, false, "Reply-To points to %s, not the authenticated sender %s", strings.Join(away, ", "), id)
		case len(rcpts) > 1:
			add(GateRecipients, false, "the reply would go to %d addresses (%s); an automatic reply goes only to the authenticated sender %s", len(rcpts), strings.Join(rcpts, ", "), id)
		default:
			add(GateRecipients, false, "the reply would go to %s, not the authenticated sender %s", rcpts[0], id)
		}
	}

	c := in.Classification
	if c == nil {
		add(GateClassification, false, "no valid classification")
		add(GateNeverAuto, false, "no valid classification")
	} else {
		var why []string
		if c.Action != "reply" {
			why = append(why, "action is "+c.Action+", not reply")
		}
		if c.Risk != "low" {
			why = append(why, "risk is "+c.Risk+", not low")
		}
		if c.RequiresApproval {
			why = append(why, "the model asked for approval")
		}
		if c.Confidence < p.MinConfidence {
			why = append(why, fmt.Sprintf("confidence %.2f is below %.2f", c.Confidence, p.MinConfidence))
		}
		if len(why) == 0 {
			add(GateClassification, true, "reply, low risk, no approval asked, confidence %.2f ≥ %.2f", c.Confidence, p.MinConfidence)
		} else {
			add(GateClassification, false, "%s", strings.Join(why, "; "))
		}
		var hit []string
		for _, in := range c.Intents {
			if slices.Contains(p.NeverAuto, in) {
				hit = append(hit, in)
			}
		}
		if len(hit) == 0 {
			add(GateNeverAuto, true, "no intent is in policy.never_auto")
		} else {
			add(GateNeverAuto, false, "intent %s is in policy.never_auto", strings.Join(hit, ", "))
		}
	}

	var unknown []string
	perRecipient, busiest := 0, ""
	for _, r := range in.Recipients {
		if !r.Known {
			unknown = append(unknown, r.Email)
		}
		if r.SentToday >= perRecipient {
			perRecipient, busiest = r.SentToday, r.Email
		}
	}
	switch {
	case len(in.Recipients) == 0:
		add(GateKnownContact, false, "no recipient")
	case len(unknown) == 0:
		add(GateKnownContact, true, "the owner has written to %s before", strings.Join(rcpts, ", "))
	case p.AutoSendNewContacts:
		add(GateKnownContact, true, "new contact %s, allowed by policy.auto_send_new_contacts", strings.Join(unknown, ", "))
	default:
		add(GateKnownContact, false, "the owner has never written to %s (mailagent's automatic replies do not count)", strings.Join(unknown, ", "))
	}

	switch {
	case perRecipient >= p.MaxPerContactPerDay:
		add(GateCaps, false, "%d of %d auto-replies to %s today", perRecipient, p.MaxPerContactPerDay, orNone(busiest))
	case in.SentToday >= p.MaxPerDay:
		add(GateCaps, false, "%d of %d auto-replies today", in.SentToday, p.MaxPerDay)
	default:
		add(GateCaps, true, "%d/%d to %s, %d/%d in all today", perRecipient, p.MaxPerContactPerDay, orNone(busiest), in.SentToday, p.MaxPerDay)
	}

	if in.Out.Body == "" {
		add(GateOutput, false, "pending: no draft yet (checked when the reply is written)")
	} else if problems := guard.Check(in.Out, in.Trusted, p.MaxDraftChars); len(problems) > 0 && !outputGuardOff.Load() {
		add(GateOutput, false, "%s", strings.Join(problems, "; "))
	} else {
		add(GateOutput, true, "no new address, phone number or link; length %d", utf8.RuneCountInString(in.Out.Body))
	}
	return out
}

// outputGuardOff switches the output guard's verdict off: the gate passes
// whatever guard.Check found. It exists only for the positive control of
// the adversarial tests whose draft the guard stops (a model obeying the
// mail or a tool); nothing in the product sets it. Never from a parallel
// test.
var outputGuardOff atomic.Bool

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// AllPass reports whether every gate passed.
func AllPass(gates []store.GateResult) bool {
	for _, g := range gates {
		if !g.Pass {
			return false
		}
	}
	return len(gates) > 0
}

// FailedReasons lists "gate: reason" for each failed gate.
func FailedReasons(gates []store.GateResult) []string {
	var out []string
	for _, g := range gates {
		if !g.Pass {
			out = append(out, g.Gate+": "+g.Reason)
		}
	}
	return out
}
