package agent

import (
	"slices"
	"strings"
	"testing"

	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/store"
)

func sentParse(raw string) *mail.Message {
	return mail.Parse([]byte(strings.ReplaceAll(raw, "\n", "\r\n")))
}

// Route's automated route and the Sent rules judge one header the same
// way: the is-automatic rule has one home (mail.Message.AutoSubmitted).
func TestAutomaticOneRuleForRouteAndSent(t *testing.T) {
	t.Parallel()
	owner := Owner{Addresses: []string{"ada@example.com"}}
	for _, tt := range []struct {
		value string
		auto  bool
	}{
		{"no", false}, {"No", false}, {"no (RFC 3834 comment)", false}, {"no; x=y", false},
		{"auto-replied", true}, {"auto-generated", true}, {"auto-notified", true}, {"Auto-Replied (vacation)", true},
	} {
		in := sentParse("From: Bob <bob@example.org>\nTo: ada@example.com\nSubject: s\nAuto-Submitted: " + tt.value + "\n\nhello\n")
		routed := Route(in, owner, false, nil).Route == RouteAutomated
		out := sentParse("From: ada@example.com\nTo: bob@example.org\nSubject: s\nAuto-Submitted: " + tt.value + "\n\nhello\n")
		learned := len(KnownFromSent(out, owner, nil)) > 0
		if IsAutomatic(in) != tt.auto || routed != tt.auto || learned == tt.auto {
			t.Errorf("Auto-Submitted: %s: IsAutomatic %v, routed automated %v, learned from Sent %v; want automatic %v everywhere",
				tt.value, IsAutomatic(in), routed, learned, tt.auto)
		}
	}
}

func TestKnownFromSent(t *testing.T) {
	t.Parallel()
	owner := Owner{Addresses: []string{"ada@example.com", "Ada@Example.ORG"}}
	ours := func(id string) bool { return mail.IDKey(id) == "auto-1@example.com" }
	tests := []struct {
		name, raw string
		want      []string
	}{
		{"owner's own mail, To Cc Bcc, owner and duplicates left out",
			"From: Ada <ADA@example.com>\nTo: Bob <Bob@Example.org>, ada@example.org\nCc: <dora@example.org>, bob@example.org\nBcc: Hidden <hidden@example.net>\nMessage-ID: <w@example.com>\n\nhi\n",
			[]string{"bob@example.org", "dora@example.org", "hidden@example.net"}},
		{"from an alias", "From: ada@EXAMPLE.org\nTo: carl@example.net\n\nhi\n", []string{"carl@example.net"}},
		{"Auto-Submitted: no (comment) is the owner's", "From: ada@example.com\nTo: eve@example.net\nAuto-Submitted: no (typed by hand)\n\nhi\n", []string{"eve@example.net"}},
		{"auto-replied", "From: ada@example.com\nTo: s1@example.net\nAuto-Submitted: auto-replied\n\nout of office\n", nil},
		{"mailagent's trace", "From: ada@example.com\nTo: s2@example.net\nX-Mailagent-Trace: tr_1\n\nok\n", nil},
		{"mailagent's auto-send by Message-ID", "From: ada@example.com\nTo: s3@example.net\nMessage-ID: <AUTO-1@example.com>\n\nok\n", nil},
		{"not the owner's", "From: Mallory <mallory@evil.example>\nTo: s4@example.net\n\nx\n", nil},
		{"owner's address as display name", "From: \"ada@example.com\" <mallory@evil.example>\nTo: s5@example.net\n\nx\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := KnownFromSent(sentParse(tt.raw), owner, ours); !slices.Equal(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// The positive control of the Sent-learning attacks: with the identity
// checks off, an automatic owner message does make its recipient known.
func TestKnownFromSentCheckOff(t *testing.T) {
	owner := Owner{Addresses: []string{"ada@example.com"}}
	m := sentParse("From: ada@example.com\nTo: stranger@example.net\nAuto-Submitted: auto-replied\n\nout of office\n")
	if got := KnownFromSent(m, owner, nil); got != nil {
		t.Fatalf("defence on: got %q, want nothing", got)
	}
	restore := store.SwitchOffIdentityForTest()
	defer restore()
	if got := KnownFromSent(m, owner, nil); !slices.Equal(got, []string{"stranger@example.net"}) {
		t.Fatalf("defence off: got %q, want the stranger (the control must land)", got)
	}
}

// Owner routing has one home: whatever the spelling of the owner's
// address, Owner.IsOwner, Route (from Sent), the Sent rules and the
// sender authentication of Sent mail agree; a display name that reads
// like the owner's address is not the owner anywhere.
func TestOwnerOneRuleEverySpelling(t *testing.T) {
	t.Parallel()
	owner := Owner{Addresses: []string{"Ada@Example.com"}}
	for _, tt := range []struct {
		from  string
		owner bool
	}{
		{"ada@example.com", true}, {"ADA@EXAMPLE.COM", true}, {"Ada Lovelace <ada@Example.COM>", true},
		{"\"ada@example.com\" <mallory@evil.example>", false}, {"ada@example.com.evil.example", false},
	} {
		m := sentParse("From: " + tt.from + "\nTo: bob@example.org\nSubject: s\nMessage-ID: <o@example.com>\n\nhello\n")
		isOwner := owner.IsOwner(m.From.Email)
		routed := Route(m, owner, true, nil).Route == RouteOwner
		wrote := OwnerWrote(m, owner, nil)
		auth := senderAuthOf(m, owner, true).Method == store.AuthSentFolder
		if isOwner != tt.owner || routed != tt.owner || wrote != tt.owner || auth != tt.owner {
			t.Errorf("From %s: IsOwner %v, routed owner %v, OwnerWrote %v, Sent-folder auth %v; want %v everywhere",
				tt.from, isOwner, routed, wrote, auth, tt.owner)
		}
	}
}
