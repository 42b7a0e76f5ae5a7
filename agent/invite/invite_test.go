package invite

import (
	"testing"

	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/store"
)

// TestOrganizerVerified is the rule for where a REPLY may go.
func TestOrganizerVerified(t *testing.T) {
	t.Parallel()
	isOwner := func(a string) bool { return mail.SameAddr(a, "ada@example.com") }
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
		rec := &store.MessageRecord{SenderAuth: &store.SenderAuth{Authenticated: c.identity != "", Address: c.identity}}
		got, note := organizerVerified(c.organizer, rec, isOwner)
		if got != c.want || (!got && note == "") {
			t.Errorf("organizer %q, sender %q: %v (%q), want %v", c.organizer, c.identity, got, note, c.want)
		}
	}
}
