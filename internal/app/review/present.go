package review

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/internal/calendar"
	"github.com/mailagent/mailagent/internal/termsafe"
	"github.com/mailagent/mailagent/store"
)

// What the review TUI and `mailagent queue` show alike of an item: its
// risky gates (the approval's second question) and its invitation.

// RiskyGates returns the failed gates of q that should make a person think
// twice before sending: a sender that is not authenticated, a route that
// claims to be the owner or is automated, recipients that are not the
// sender, a sensitive intent, a draft the output guard flagged, and a
// classification of high risk. The gates that every queued draft may fail
// (policy.mode is review, the daily caps, an unknown contact, which the
// new-address check covers, a model that merely asked for approval) do
// not ask.
func RiskyGates(q *store.QueueItem) []store.GateResult {
	var out []store.GateResult
	for _, g := range q.Gates {
		if g.Pass {
			continue
		}
		switch g.Gate {
		case agent.GateRoute, agent.GateSenderAuth, agent.GateRecipients, agent.GateNeverAuto, agent.GateOutput:
			out = append(out, g)
		case agent.GateClassification:
			if c := q.Classification; c == nil || c.Risk == "high" {
				out = append(out, g)
			}
		}
	}
	return out
}

// InvitationLines are the invitation's lines as the review TUI shows them
// (with the item's reasons): what PrintInvitation prints, without the
// indentation.
func InvitationLines(id string, inv *store.Invitation) []string {
	if inv == nil {
		return nil
	}
	var b strings.Builder
	PrintInvitation(&b, inv)
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	for i := range lines {
		lines[i] = strings.TrimSpace(lines[i])
	}
	if inv.Method != calendar.MethodRequest || (inv.Status != "" && inv.Status != store.InvitationUIDConflict) {
		return lines // a CANCEL, a COUNTER, or one cancelled or superseded: nothing to answer
	}
	how := "answer with: mailagent queue rsvp " + id + " accept|decline|tentative"
	if invitationTitle(inv) != "" { // invite.go: the TUI's keys
		how = "answer with A (accept), D (decline) or T (tentative), or: mailagent queue rsvp " + id + " accept|decline|tentative"
	}
	lines = append(lines, how)
	return lines
}

// PrintInvitation is the invitation block of `queue show`.
func PrintInvitation(w io.Writer, inv *store.Invitation) {
	if inv == nil {
		return
	}
	line := termsafe.Line
	fmt.Fprintf(w, "invitation %s: %s\n", line(inv.Method), line(inv.Summary))
	org := inv.Organizer
	if inv.OrganizerCN != "" {
		org = inv.OrganizerCN + " <" + inv.Organizer + ">"
	}
	verified := "verified"
	if !inv.OrganizerVerified {
		verified = "NOT verified: " + inv.OrganizerNote
	}
	fmt.Fprintf(w, "  organizer %s (%s)\n", line(org), line(verified))
	if !inv.Start.IsZero() {
		zone := inv.TZID
		if zone == "" {
			zone = "UTC"
		}
		loc, err := time.LoadLocation(zone)
		if err != nil {
			loc = time.UTC
		}
		fmt.Fprintf(w, "  when %s – %s (%s)\n", inv.Start.In(loc).Format("Mon 02 Jan 2006 15:04 MST"), inv.End.In(loc).Format("15:04 MST"), line(zone))
	}
	rec := "no"
	switch {
	case inv.RecurrenceID != "":
		rec = "one occurrence of a series (RECURRENCE-ID " + inv.RecurrenceID + ")"
	case inv.Recurring:
		rec = "yes"
	}
	fmt.Fprintf(w, "  recurring %s\n", line(rec))
	switch {
	case inv.ConflictError != "":
		fmt.Fprintf(w, "  conflicts unknown: %s\n", line(inv.ConflictError))
	case len(inv.Conflicts) == 0:
		fmt.Fprintln(w, "  conflicts none")
	default:
		for _, c := range inv.Conflicts {
			fmt.Fprintf(w, "  conflict %s – %s\n", c.Start.Format(time.RFC3339), c.End.Format(time.RFC3339))
		}
	}
	if inv.RSVP != "" {
		fmt.Fprintf(w, "  answered %s\n", line(inv.RSVP))
	}
	if inv.Status != "" {
		fmt.Fprintf(w, "  %s: %s\n", line(inv.Status), line(inv.StatusNote))
	}
	if inv.Applied != "" {
		fmt.Fprintf(w, "  applied: %s\n", line(inv.Applied))
	}
}
