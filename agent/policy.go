package agent

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"mvdan.cc/xurls/v2"

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
	} else if problems := GuardOutput(in.Draft, in.Allowed, in.AllowedAddresses, p.MaxDraftChars); len(problems) > 0 {
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

// Patterns for the output guard. These are hand-written because no
// maintained Go library extracts phone numbers from free text; URLs use
// xurls, which is.
var (
	emailRE = regexp.MustCompile(`(?i)[a-z0-9._%+\-]+@[a-z0-9.\-]+\.[a-z]{2,}`)
	phoneRE = regexp.MustCompile(`\+?\(?\d[\d\s().\-/]{5,}\d`)
	urlRE   = xurls.Relaxed()
)

// GuardOutput lists why a draft may not be sent automatically: an email
// address not in addrs, a phone number or URL that does not occur in
// allowed, or a length out of bounds. An empty result means the draft
// passes.
func GuardOutput(draft, allowed string, addrs []string, maxChars int) []string {
	var problems []string
	n := utf8.RuneCountInString(strings.TrimSpace(draft))
	if n == 0 {
		problems = append(problems, "the draft is empty")
	}
	if maxChars > 0 && n > maxChars {
		problems = append(problems, fmt.Sprintf("the draft has %d characters, at most %d", n, maxChars))
	}
	lowerAllowed := strings.ToLower(allowed)
	for _, e := range uniq(emailRE.FindAllString(draft, -1)) {
		if !slices.ContainsFunc(addrs, func(a string) bool { return strings.EqualFold(a, e) }) {
			problems = append(problems, "names address "+e+" that is not a participant of the thread or in the profile")
		}
	}
	for _, u := range uniq(urlRE.FindAllString(draft, -1)) {
		if emailRE.MatchString(u) && !strings.Contains(u, "/") {
			continue // an address, already checked
		}
		if !strings.Contains(lowerAllowed, strings.ToLower(strings.TrimRight(u, ".,;:!?)"))) {
			problems = append(problems, "links to "+u+" that is not in the thread or profile")
		}
	}
	allowedDigits := digitRuns(allowed)
	for _, ph := range uniq(phoneRE.FindAllString(draft, -1)) {
		d := onlyDigits(ph)
		if len(d) < 7 || isDateOrTime(ph) {
			continue
		}
		if !slices.ContainsFunc(allowedDigits, func(a string) bool { return strings.Contains(a, d) }) {
			problems = append(problems, "names phone number "+strings.TrimSpace(ph)+" that is not in the thread or profile")
		}
	}
	return problems
}

// isDateOrTime skips things like 2026-01-02 or 12/03/2026 that look like
// numbers to the phone pattern.
var dateRE = regexp.MustCompile(`^\s*\d{1,4}[-/.]\d{1,2}[-/.]\d{1,4}\s*$`)

func isDateOrTime(s string) bool { return dateRE.MatchString(s) }

func digitRuns(s string) []string {
	var out []string
	for _, m := range phoneRE.FindAllString(s, -1) {
		out = append(out, onlyDigits(m))
	}
	return out
}

func onlyDigits(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r >= '0' && r <= '9' {
			b.WriteRune(r)
		}
	}
	return b.String()
}

func uniq(xs []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range xs {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}
