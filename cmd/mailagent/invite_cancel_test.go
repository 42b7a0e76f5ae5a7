package main

import (
	"strings"
	"testing"

	"github.com/mailagent/mailagent/internal/app/review"
	"github.com/mailagent/mailagent/store"
)

// TestInvitationLinesCancelled: the detail of a CANCEL, and of an
// invitation cancelled or superseded since, says what happened and
// offers no answer (rsvp would refuse); an open REQUEST still does.
func TestInvitationLinesCancelled(t *testing.T) {
	t.Parallel()
	cases := []struct {
		inv        store.Invitation
		want       string
		answerable bool
	}{
		{store.Invitation{Method: "REQUEST", Summary: "Planning", Organizer: "bob@example.org"}, "invitation REQUEST: Planning", true},
		{store.Invitation{Method: "CANCEL", Summary: "Planning", Organizer: "bob@example.org", Applied: "q_1: the event mailagent wrote was removed from your calendar"},
			"applied: q_1: the event mailagent wrote was removed from your calendar", false},
		{store.Invitation{Method: "REQUEST", Summary: "Planning", Organizer: "bob@example.org", RSVP: "ACCEPTED", Status: store.InvitationCancelled,
			StatusNote: "cancelled by the organizer (message <c@x>, SEQUENCE 2)"}, "cancelled: cancelled by the organizer (message <c@x>, SEQUENCE 2)", false},
		{store.Invitation{Method: "REQUEST", Summary: "Planning", Organizer: "bob@example.org", Status: store.InvitationSuperseded,
			StatusNote: "replaced by the update in message <u@x> (SEQUENCE 3)\r\n\x1b[2J"}, "superseded: replaced by the update in message <u@x> (SEQUENCE 3)", false},
	}
	for _, c := range cases {
		lines := strings.Join(review.InvitationLines("q_1", &c.inv), "\n")
		if !strings.Contains(lines, c.want) {
			t.Errorf("%s %s: want %q in\n%s", c.inv.Method, c.inv.Status, c.want, lines)
		}
		if got := strings.Contains(lines, "answer with"); got != c.answerable {
			t.Errorf("%s %s: offers an answer %v, want %v\n%s", c.inv.Method, c.inv.Status, got, c.answerable, lines)
		}
		if strings.ContainsAny(lines, "\r\x1b") {
			t.Errorf("control characters shown: %q", lines)
		}
	}
}
