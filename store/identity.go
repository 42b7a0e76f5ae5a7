package store

import (
	"sync/atomic"

	"github.com/mailagent/mailagent/internal/mail"
)

// The identity layer: the one place that says who a message is from and
// which messages a reference may mean. Every header a sender writes can be
// a lie (From, Reply-To, Message-ID, References, In-Reply-To, a calendar
// UID), so:
//
//   - A message's correspondent is the address the owner's own server
//     authenticated (SenderAuth), never the From text.
//   - A reference written in one message (In-Reply-To, References, a
//     thread id, a calendar UID, an id an MCP client passes) resolves only
//     to messages of the same authenticated correspondent, or to the
//     owner's own mail addressed to that correspondent.
//   - Evidence that a message was answered is a reply that names it AND is
//     addressed to its correspondent.
//
// Every decision that writes state about a correspondent (answered and
// resolved, follow-up state, known contact, memory, queue resolution, the
// recipient of a proposal, calendar writes, \Answered) asks these
// functions; none decides identity on its own.

// identityOff switches the correspondent checks off. It exists only so
// that adversarial tests can show each attack landing without the defence
// (their positive control); nothing in the product sets it.
var identityOff atomic.Bool

// SwitchOffIdentityForTest turns the correspondent checks of this layer
// off until the returned function is called. Only adversarial tests'
// positive controls call it, and never from a parallel test.
func SwitchOffIdentityForTest() (restore func()) {
	identityOff.Store(true)
	return func() { identityOff.Store(false) }
}

// IdentityChecksOff reports whether a test switched the checks off.
func IdentityChecksOff() bool { return identityOff.Load() }

// Correspondent returns the address key of whom r is from as the owner's
// server vouched for it, or "" when nothing authenticated the sender.
func (r *MessageRecord) Correspondent() string {
	if r == nil {
		return ""
	}
	return mail.AddrKey(r.SenderAuth.Identity())
}

// FromOwner reports whether r is the owner's own mail: routed owner (the
// owner's address, authenticated or read from Sent) or self (mailagent's).
// Route is decided by agent.Route, which never trusts an unauthenticated
// owner address.
func (r *MessageRecord) FromOwner() bool {
	return r != nil && (r.Route == "owner" || r.Route == "self")
}

// ReplyParty returns the address key a reply to r must be addressed to
// for it to count as an answer to r: the authenticated correspondent, or,
// for mail nobody authenticated, the From address (such mail is never
// auto-answered; the owner's reply to it goes there).
func (r *MessageRecord) ReplyParty() string {
	if r == nil {
		return ""
	}
	if c := r.Correspondent(); c != "" {
		return c
	}
	return mail.AddrKey(r.From.Email)
}

// Recipients returns the address keys of r's To and Cc.
func (r *MessageRecord) Recipients() []string {
	if r == nil {
		return nil
	}
	out := make([]string, 0, len(r.To)+len(r.Cc))
	for _, a := range r.To {
		out = append(out, mail.AddrKey(a.Email))
	}
	for _, a := range r.Cc {
		out = append(out, mail.AddrKey(a.Email))
	}
	return out
}

// AddressedTo reports whether recipients (addresses in any spelling)
// include party. An empty party is never addressed.
func AddressedTo(recipients []string, party string) bool {
	party = mail.AddrKey(party)
	if party == "" {
		return false
	}
	if identityOff.Load() {
		return true
	}
	for _, r := range recipients {
		if mail.AddrKey(r) == party {
			return true
		}
	}
	return false
}

// AnswersTo reports whether a reply with the given recipients, which
// names original (by In-Reply-To or References: the caller checked that),
// is evidence that original was answered: it must be addressed to
// original's ReplyParty, or, when the correspondent authenticated, to an
// address in original's Reply-To (an authenticated sender chose it).
func AnswersTo(recipients []string, original *MessageRecord) bool {
	if original == nil {
		return false
	}
	if AddressedTo(recipients, original.ReplyParty()) {
		return true
	}
	if original.Correspondent() == "" {
		return false
	}
	for _, a := range original.ReplyTo {
		if AddressedTo(recipients, a.Email) {
			return true
		}
	}
	return false
}

// MayResolve reports whether a reference written in from (In-Reply-To,
// References, a thread id, a calendar UID) may resolve to the stored
// message to. It may when both have the same authenticated correspondent;
// when to is the owner's own mail and from's correspondent was among its
// recipients; and when from is the owner's own mail (the owner may refer
// to anything in their mailbox). Mail nobody authenticated resolves to
// nothing: its references are text a stranger may have chosen.
func MayResolve(from, to *MessageRecord) bool {
	if from == nil || to == nil {
		return false
	}
	if identityOff.Load() {
		return true
	}
	if from.FromOwner() {
		return true
	}
	c := from.Correspondent()
	if c == "" {
		return false
	}
	if to.FromOwner() {
		return AddressedTo(to.Recipients(), c)
	}
	return to.Correspondent() == c
}

// SameCorrespondent reports whether a and b, two messages of one account
// that carry the same Message-ID, may be taken for one message (a
// duplicate, or the one a \Answered flag found by Message-ID belongs to):
// both are the owner's own mail, or both were authenticated as the same
// correspondent. A Message-ID is text the sender chose: a stranger who
// reuses or predicts a contact's never makes the contact's mail a copy of
// theirs. Mail nobody authenticated is the same as nothing.
func SameCorrespondent(a, b *MessageRecord) bool {
	if a == nil || b == nil || a.Account != b.Account {
		return false
	}
	if identityOff.Load() {
		return true
	}
	if a.FromOwner() || b.FromOwner() {
		return a.FromOwner() && b.FromOwner()
	}
	c := a.Correspondent()
	return c != "" && c == b.Correspondent()
}

// ThreadCorrespondent says whom a thread is with. msgs are the thread's
// messages oldest first (ThreadMessages). The thread's correspondent is
// set by the first message that names one: an authenticated message not
// the owner's (its Correspondent), or the owner's own message (its first
// recipient). It returns that message, the anchor, and the
// correspondent's address key; nil and "" when no message names one
// (only unauthenticated mail). A message m of the thread belongs to the
// thread's correspondent when MayResolve(m, anchor): mail from the same
// authenticated sender, or from the one the owner wrote to. Anyone else
// (a stranger who joined by References or by subject) does not.
func ThreadCorrespondent(msgs []*MessageRecord) (anchor *MessageRecord, correspondent string) {
	for _, m := range msgs {
		switch {
		case m == nil:
		case m.FromOwner():
			if r := m.Recipients(); len(r) > 0 && r[0] != "" {
				return m, r[0]
			}
		case m.Correspondent() != "":
			return m, m.Correspondent()
		}
	}
	return nil, ""
}

// External reports whether r is mail from outside: routed external by
// agent.Route (not the owner's or mailagent's own, not automated). Reply
// tracking opens and closes followups only on such mail; who it is from
// is still Correspondent, never the From text.
func (r *MessageRecord) External() bool { return r != nil && r.Route == "external" }

// AuthenticatedAs reports whether the owner's server authenticated r as
// from addr: r's Correspondent is addr's mail.AddrKey. An empty addr, or
// mail nothing authenticated, is never anyone. A rule that checks a
// message is from one given correspondent (a delegated original found by
// its Message-ID, say) asks it rather than comparing Correspondent itself,
// so that SwitchOffIdentityForTest switches that check off too.
func AuthenticatedAs(r *MessageRecord, addr string) bool {
	key := mail.AddrKey(addr)
	if r == nil || key == "" {
		return false
	}
	if identityOff.Load() {
		return true
	}
	return r.Correspondent() == key
}
