package store

import (
	"testing"

	"github.com/mailagent/mailagent/internal/mail"
)

func authed(addr string) *SenderAuth {
	return &SenderAuth{Authenticated: true, Address: addr, Method: AuthDMARC}
}

func TestMayResolve(t *testing.T) {
	contact := &MessageRecord{Route: "external", From: mail.Address{Email: "Ann@Example.org"}, SenderAuth: authed("ann@example.org")}
	contact2 := &MessageRecord{Route: "external", From: mail.Address{Email: "ann@example.org"}, SenderAuth: authed("ANN@example.org")}
	stranger := &MessageRecord{Route: "external", From: mail.Address{Email: "eve@evil.test"}, SenderAuth: authed("eve@evil.test")}
	spoof := &MessageRecord{Route: "external", From: mail.Address{Email: "ann@example.org"}, SenderAuth: &SenderAuth{Address: "ann@example.org"}}
	ownerToAnn := &MessageRecord{Route: "owner", From: mail.Address{Email: "me@home.test"}, To: []mail.Address{{Email: "<Ann@example.org>"}}}
	cases := []struct {
		name     string
		from, to *MessageRecord
		want     bool
	}{
		{"same correspondent, other spelling", contact2, contact, true},
		{"stranger to contact", stranger, contact, false},
		{"spoofed contact to contact", spoof, contact, false},
		{"contact to spoof", contact, spoof, false},
		{"contact to the owner's mail addressed to them", contact, ownerToAnn, true},
		{"stranger to the owner's mail addressed to the contact", stranger, ownerToAnn, false},
		{"owner to anything", ownerToAnn, stranger, true},
		{"nil", nil, contact, false},
	}
	for _, c := range cases {
		if got := MayResolve(c.from, c.to); got != c.want {
			t.Errorf("%s: MayResolve = %v, want %v", c.name, got, c.want)
		}
	}
	// Positive control: with the checks off, the stranger's reference lands.
	restore := SwitchOffIdentityForTest()
	landed := MayResolve(stranger, contact)
	restore()
	if !landed {
		t.Error("positive control: with identity checks off the stranger's reference should resolve")
	}
}

func TestAnswersTo(t *testing.T) {
	t.Parallel()
	contact := &MessageRecord{Route: "external", From: mail.Address{Email: "ann@example.org"}, SenderAuth: authed("ann@example.org"),
		ReplyTo: []mail.Address{{Email: "ann.work@example.org"}}}
	unauth := &MessageRecord{Route: "external", From: mail.Address{Email: "bob@example.net"}, ReplyTo: []mail.Address{{Email: "eve@evil.test"}}}
	cases := []struct {
		name string
		rcpt []string
		orig *MessageRecord
		want bool
	}{
		{"to the correspondent", []string{"x@y.z", "ANN@example.org"}, contact, true},
		{"to the authenticated Reply-To", []string{"ann.work@example.org"}, contact, true},
		{"to a stranger", []string{"eve@evil.test"}, contact, false},
		{"nobody", nil, contact, false},
		{"unauthenticated: to From", []string{"bob@example.net"}, unauth, true},
		{"unauthenticated: Reply-To does not count", []string{"eve@evil.test"}, unauth, false},
	}
	for _, c := range cases {
		if got := AnswersTo(c.rcpt, c.orig); got != c.want {
			t.Errorf("%s: AnswersTo = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestSameCorrespondent(t *testing.T) {
	ann := &MessageRecord{MessageKey: MessageKey{Account: "a"}, Route: "external", From: mail.Address{Email: "ann@example.org"}, SenderAuth: authed("ann@example.org")}
	ann2 := &MessageRecord{MessageKey: MessageKey{Account: "a", UID: 9}, Route: "external", From: mail.Address{Email: "Ann <ANN@example.org>"}, SenderAuth: authed("ANN@Example.org")}
	annOther := &MessageRecord{MessageKey: MessageKey{Account: "b"}, Route: "external", SenderAuth: authed("ann@example.org")}
	eve := &MessageRecord{MessageKey: MessageKey{Account: "a"}, Route: "external", From: mail.Address{Email: "eve@evil.test"}, SenderAuth: authed("eve@evil.test")}
	spoof := &MessageRecord{MessageKey: MessageKey{Account: "a"}, Route: "external", From: mail.Address{Email: "ann@example.org"}, SenderAuth: &SenderAuth{Address: "ann@example.org"}}
	owner := &MessageRecord{MessageKey: MessageKey{Account: "a"}, Route: "owner", SenderAuth: authed("me@home.test")}
	owner2 := &MessageRecord{MessageKey: MessageKey{Account: "a"}, Route: "self"}
	cases := []struct {
		name string
		a, b *MessageRecord
		want bool
	}{
		{"same correspondent, other spelling", ann, ann2, true},
		{"stranger reusing the contact's id", ann, eve, false},
		{"spoofed contact", ann, spoof, false},
		{"both unauthenticated", spoof, spoof, false},
		{"another account", ann, annOther, false},
		{"owner and owner", owner, owner2, true},
		{"owner and contact", owner, ann, false},
		{"nil", nil, ann, false},
	}
	for _, c := range cases {
		if got := SameCorrespondent(c.a, c.b); got != c.want {
			t.Errorf("%s: SameCorrespondent = %v, want %v", c.name, got, c.want)
		}
	}
	restore := SwitchOffIdentityForTest()
	landed := SameCorrespondent(ann, eve)
	restore()
	if !landed {
		t.Error("positive control: with identity checks off the stranger's message should pass for the contact's")
	}
}

func TestThreadCorrespondent(t *testing.T) {
	t.Parallel()
	ann := &MessageRecord{Route: "external", From: mail.Address{Email: "ann@example.org"}, SenderAuth: authed("ann@example.org")}
	eve := &MessageRecord{Route: "external", From: mail.Address{Email: "eve@evil.test"}, SenderAuth: authed("eve@evil.test")}
	spoof := &MessageRecord{Route: "external", From: mail.Address{Email: "ann@example.org"}, SenderAuth: &SenderAuth{Address: "ann@example.org"}}
	ownerToAnn := &MessageRecord{Route: "owner", From: mail.Address{Email: "me@home.test"}, To: []mail.Address{{Email: "Ann@example.org"}}}
	cases := []struct {
		name       string
		msgs       []*MessageRecord
		wantAnchor *MessageRecord
		want       string
	}{
		{"first authenticated sender", []*MessageRecord{spoof, ann, eve}, ann, "ann@example.org"},
		{"the owner wrote first", []*MessageRecord{ownerToAnn, eve, ann}, ownerToAnn, "ann@example.org"},
		{"a stranger who joined later", []*MessageRecord{ann, eve}, ann, "ann@example.org"},
		{"unauthenticated only", []*MessageRecord{spoof}, nil, ""},
		{"empty", nil, nil, ""},
	}
	for _, c := range cases {
		anchor, got := ThreadCorrespondent(c.msgs)
		if anchor != c.wantAnchor || got != c.want {
			t.Errorf("%s: ThreadCorrespondent = %p %q, want %p %q", c.name, anchor, got, c.wantAnchor, c.want)
		}
	}
	// Who belongs to the thread: MayResolve(m, anchor).
	anchor, _ := ThreadCorrespondent([]*MessageRecord{ownerToAnn, eve, ann})
	if !MayResolve(ann, anchor) || MayResolve(eve, anchor) || MayResolve(spoof, anchor) {
		t.Error("only Ann's authenticated mail belongs to the thread the owner opened with her")
	}
}

func TestExternal(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		rec  *MessageRecord
		want bool
	}{
		{"external", &MessageRecord{Route: "external"}, true},
		{"owner", &MessageRecord{Route: "owner"}, false},
		{"self", &MessageRecord{Route: "self"}, false},
		{"automated", &MessageRecord{Route: "automated"}, false},
		{"not routed", &MessageRecord{}, false},
		{"nil", nil, false},
	}
	for _, c := range cases {
		if got := c.rec.External(); got != c.want {
			t.Errorf("%s: External() = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestAuthenticatedAs(t *testing.T) {
	ann := &MessageRecord{Route: "external", From: mail.Address{Email: "ann@example.org"}, SenderAuth: authed("ann@example.org")}
	spoof := &MessageRecord{Route: "external", From: mail.Address{Email: "ann@example.org"}, SenderAuth: &SenderAuth{Address: "ann@example.org"}}
	cases := []struct {
		name string
		r    *MessageRecord
		addr string
		want bool
	}{
		{"authenticated, other spelling", ann, "ANN@Example.org", true},
		{"someone else", ann, "eve@evil.test", false},
		{"From text alone (spoofed)", spoof, "ann@example.org", false},
		{"no address", ann, "", false},
		{"nil", nil, "ann@example.org", false},
	}
	for _, c := range cases {
		if got := AuthenticatedAs(c.r, c.addr); got != c.want {
			t.Errorf("%s: AuthenticatedAs = %v, want %v", c.name, got, c.want)
		}
	}
	// Positive control: with the checks off, a stranger's address passes.
	restore := SwitchOffIdentityForTest()
	landed := AuthenticatedAs(ann, "eve@evil.test")
	restore()
	if !landed {
		t.Error("positive control: with identity checks off the stranger should pass as ann")
	}
}
