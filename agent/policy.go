package agent

import (
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

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
}

// DefaultNeverAuto is the default policy.never_auto list.
var DefaultNeverAuto = []string{"sensitive_legal_financial", "complaint", "sales_vendor", "unknown_ambiguous", "spam"}

// GateInput is everything the gates look at. All of it is computed by code;
// only Classification and Draft come from the model, and both are treated
// as untrusted.
type GateInput struct {
	Route          RouteInfo
	Classification *store.Classification
	ContactKnown   bool
	// SentToContactToday and SentToday are the persisted auto-send counts.
	SentToContactToday, SentToday int
	// Draft is the reply text; empty when no draft was written yet (triage),
	// in which case the output guard is reported as pending.
	Draft string
	// Allowed is the text the draft may quote numbers and links from: the
	// thread's messages and the owner's profile.
	Allowed string
	// AllowedAddresses are the email addresses the draft may name: the
	// thread's participants (From, Reply-To, To, Cc headers) and any in the
	// owner's profile. Addresses that merely appear in a message body do
	// not count: a hostile message can put any address in its text.
	AllowedAddresses []string
}

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

	switch {
	case in.ContactKnown:
		add(GateKnownContact, true, "the owner has written to this contact before")
	case p.AutoSendNewContacts:
		add(GateKnownContact, true, "new contact, allowed by policy.auto_send_new_contacts")
	default:
		add(GateKnownContact, false, "the owner has never written to this contact")
	}

	switch {
	case in.SentToContactToday >= p.MaxPerContactPerDay:
		add(GateCaps, false, "%d of %d auto-replies to this contact today", in.SentToContactToday, p.MaxPerContactPerDay)
	case in.SentToday >= p.MaxPerDay:
		add(GateCaps, false, "%d of %d auto-replies today", in.SentToday, p.MaxPerDay)
	default:
		add(GateCaps, true, "%d/%d to this contact, %d/%d in all today", in.SentToContactToday, p.MaxPerContactPerDay, in.SentToday, p.MaxPerDay)
	}

	if in.Draft == "" {
		add(GateOutput, false, "pending: no draft yet (checked when the reply is written)")
	} else if problems := GuardOutput(OutboundFields{Body: in.Draft}, Trusted{Text: in.Allowed, Addresses: in.AllowedAddresses}, p.MaxDraftChars); len(problems) > 0 {
		add(GateOutput, false, "%s", strings.Join(problems, "; "))
	} else {
		add(GateOutput, true, "no new address, phone number or link; length %d", utf8.RuneCountInString(in.Draft))
	}
	return out
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
