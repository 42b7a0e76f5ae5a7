package digest

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/mailagent/mailagent/internal/llm"
	"github.com/mailagent/mailagent/internal/termsafe"
	"github.com/mailagent/mailagent/store"
)

// Text writes r as plain text. Every string that came from mail or the
// model is cleaned with termsafe.Line (no escape sequences, control or
// bidi characters), so the text is safe on a terminal and in a mail body.
func Text(w io.Writer, r *Report) error {
	var b strings.Builder
	fmt.Fprintf(&b, "mailagent digest, %s to %s\n\n", r.Since.Format("2006-01-02 15:04"), r.Until.Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(&b, "Sent on its own (%d):\n", len(r.AutoSent))
	for _, s := range r.AutoSent {
		fmt.Fprintf(&b, "  %s  to %s: %s\n", s.SentAt.Format("01-02 15:04"), addrs(s.To), termsafe.Line(s.Subject))
	}
	if len(r.Scheduled) > 0 {
		fmt.Fprintf(&b, "Scheduled, not sent yet (%d):\n", len(r.Scheduled))
		for _, s := range r.Scheduled {
			fmt.Fprintf(&b, "  at %s  to %s: %s\n", s.SentAt.Format("01-02 15:04"), addrs(s.To), termsafe.Line(s.Subject))
		}
	}
	n := 0
	for _, q := range r.Waiting {
		if q.New {
			n++
		}
	}
	fmt.Fprintf(&b, "\nWaiting for you (%d, %d new):\n", len(r.Waiting), n)
	for _, q := range r.Waiting {
		mark := " "
		if q.New {
			mark = "*"
		}
		fmt.Fprintf(&b, " %s %s  %-6s %s: %s\n", mark, termsafe.Line(q.ID), q.Kind, termsafe.Address(q.From.Name, q.From.Email), termsafe.Line(q.Subject))
	}
	fmt.Fprintf(&b, "\nNeeds review (%d):\n", len(r.NeedsReview))
	for _, m := range r.NeedsReview {
		fmt.Fprintf(&b, "  %s: %s (%s)\n", termsafe.Address(m.From.Name, m.From.Email), termsafe.Line(m.Subject), termsafe.Line(m.Error))
	}
	if len(r.FollowupsDue) > 0 {
		fmt.Fprintf(&b, "\nFollow-ups due (%d):\n", len(r.FollowupsDue))
		for _, d := range r.FollowupsDue {
			what := "you owe a reply to"
			if d.State == store.FollowupAwaitingReply {
				what = "waiting for a reply from"
			}
			fmt.Fprintf(&b, "  %s  since %s, %s %s: %s\n", termsafe.Line(d.ID), d.Deadline.Format("01-02 15:04"), what, addrs(d.Correspondents), termsafe.Line(d.Subject))
		}
	}
	fmt.Fprintf(&b, "\nHandled without you (%d messages processed):\n", r.Processed)
	fmt.Fprintf(&b, "  archived: %s\n", counts(r.Archived))
	fmt.Fprintf(&b, "  ignored:  %s\n", counts(r.Ignored))
	cost := "cost unknown (no list price for model " + termsafe.Line(r.Model) + ")"
	if r.PriceKnown {
		cost = fmt.Sprintf("about $%.4f at %s list price (as of %s)", r.USD, termsafe.Line(r.Model), llm.PricesAsOf)
	}
	fmt.Fprintf(&b, "\nModel: %d calls, %d tokens in, %d out; %s\n", r.Usage.Calls, r.Usage.TokensIn, r.Usage.TokensOut, cost)
	_, err := io.WriteString(w, b.String())
	return err
}

func addrs(as []string) string {
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = termsafe.Address("", a)
	}
	return strings.Join(out, ", ")
}

func counts(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	keys := slices.Sorted(maps.Keys(m))
	slices.SortStableFunc(keys, func(a, b string) int { return m[b] - m[a] })
	parts := make([]string, len(keys))
	for i, k := range keys {
		name := termsafe.Line(k)
		if name == "" {
			name = "(none)"
		}
		parts[i] = fmt.Sprintf("%s %d", name, m[k])
	}
	return strings.Join(parts, ", ")
}

// Subject is the digest mail's subject: counts only, nothing from mail.
func Subject(r *Report) string {
	return fmt.Sprintf("mailagent digest: %d sent, %d waiting, %d need review", len(r.AutoSent), len(r.Waiting), len(r.NeedsReview))
}

// periodFormat is how a period is written in the store and the header.
const periodFormat = "2006-01-02T15:04"

// PeriodKey names the period starting at t.
func PeriodKey(t time.Time) string { return t.Format(periodFormat) }
