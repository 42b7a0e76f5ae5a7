package agent

import (
	"testing"

	"github.com/mailagent/mailagent/store"
)

// TestOrganizerVerified is the rule for where a REPLY may go.
func TestOrganizerVerified(t *testing.T) {
	owner := Owner{Addresses: []string{"ada@example.com"}}
	cases := []struct {
		organizer, identity string
		want                bool
	}{
		{"bob@example.org", "bob@example.org", true},
		{"bob@example.org", "BOB@example.org", true},
		{"dana@example.org", "calendar@example.org", false}, // a domain is shared by strangers: only the authenticated sender
		{"mallory@evil.example", "bob@example.org", false},
		{"bob@example.org", "", false},                // not authenticated
		{"ada@example.com", "ada@example.com", false}, // the owner's own
		{"", "bob@example.org", false},
		{"bob@example.org.evil.example", "bob@example.org", false},
	}
	for _, c := range cases {
		got, note := organizerVerified(c.organizer, c.identity, owner)
		if got != c.want || (!got && note == "") {
			t.Errorf("organizer %q, sender %q: %v (%q), want %v", c.organizer, c.identity, got, note, c.want)
		}
	}
}

// TestInvitationDecision: an invitation is never auto-sent, archived or
// ignored; needs_review stays as it is.
func TestInvitationDecision(t *testing.T) {
	for in, want := range map[string]string{
		DecisionAutoSend: DecisionQueue, DecisionQueue: DecisionQueue, DecisionNotify: DecisionNotify,
		DecisionArchive: DecisionNotify, DecisionIgnore: DecisionNotify, DecisionNeedsReview: DecisionNeedsReview,
	} {
		rec := &store.MessageRecord{Decision: in, Invitation: &store.Invitation{Method: "REQUEST"}}
		invitationDecision(rec)
		if rec.Decision != want {
			t.Errorf("%s → %s, want %s", in, rec.Decision, want)
		}
		plain := &store.MessageRecord{Decision: in}
		invitationDecision(plain)
		if plain.Decision != in {
			t.Errorf("without an invitation %s became %s", in, plain.Decision)
		}
	}
}
