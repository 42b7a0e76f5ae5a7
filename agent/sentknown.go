package agent

import (
	"time"

	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/store"
)

// SentLookback is how far back the Sent folder is read for the people the
// owner writes to, when nothing was read before: watch's first Sent scan,
// triage's Sent learning and replay (before the period it replays). The
// one default; daemon.Daemon.SentLookback may set another for watch.
const SentLookback = 365 * 24 * time.Hour

// SentBodyWindow is how recent the owner's own Sent mail must be for its
// body to be read; older mail counts by its headers alone. The bodies
// teach drafts the owner's voice (store.ExamplesPerContact, the newest,
// per recipient) and start reply tracking (whose nudges come days after,
// never months), while the headers make the recipients known: a year of
// Sent costs a year of headers and 90 days of bodies (issue 28's
// million-message mailbox read 33 MB of the owner's bodies for the year).
// watch reads the headers before its first decisions and the bodies once
// it is idle (internal/app/daemon's body pass, from a checkpoint of its
// own). A contact last written to before the window has no example of
// the owner's voice until the owner writes to them again.
const SentBodyWindow = 90 * 24 * time.Hour

// SentFetchBytes caps each Sent-folder message read for learning: the
// headers and the owner's own words are what count.
const SentFetchBytes = 256 << 10

// SentAutomatically reports whether m, a message read from the owner's
// Sent folder, was sent automatically: it declares itself automatic
// (IsAutomatic: a vacation reply, mailagent's auto-reply), or autoByUs
// (when not nil) says its Message-ID is one of mailagent's automatic
// sends, so that an auto-reply whose headers a client rewrote still is.
// Automatic mail makes no one known and asks nothing of reply tracking.
//
// The identity switch of adversarial tests (store.SwitchOffIdentityForTest)
// turns this check off, for their positive control.
func SentAutomatically(m *mail.Message, autoByUs func(messageID string) bool) bool {
	if m == nil || store.IdentityChecksOff() {
		return false
	}
	return IsAutomatic(m) || (autoByUs != nil && !m.Synthesized && autoByUs(m.MessageID))
}

// OwnerWrote reports whether m, a message read from the owner's Sent
// folder, is mail the owner wrote themselves: From is one of o's
// addresses, and m is neither machine-sent (IsMachineSent: automatic, or
// mailagent's TraceHeader; a reply the owner approved was counted when
// mailagent sent it) nor one of mailagent's auto-sends by its Message-ID
// (SentAutomatically).
func OwnerWrote(m *mail.Message, o Owner, autoByUs func(messageID string) bool) bool {
	if m == nil || !o.IsOwner(m.From.Email) {
		return false
	}
	return store.IdentityChecksOff() || (!IsMachineSent(m) && !SentAutomatically(m, autoByUs))
}

// KnownFromSent is the one rule for what a message in the owner's Sent
// folder teaches the known-contact gate: it returns the address keys
// (mail.AddrKey) of the people m makes known contacts, deduplicated, in
// order (To, Cc, then Bcc), the owner's own addresses left out, when the
// owner wrote m (OwnerWrote); nil for any other message.
//
// triage (internal/app/sentlearn), watch (internal/app/daemon) and replay
// (internal/app/replay) all ask it; none decides on its own.
func KnownFromSent(m *mail.Message, o Owner, autoByUs func(messageID string) bool) []string {
	if !OwnerWrote(m, o, autoByUs) {
		return nil
	}
	var out []string
	seen := map[string]bool{}
	add := func(addr string) {
		k := mail.AddrKey(addr)
		if k == "" || seen[k] || o.IsOwner(k) {
			return
		}
		seen[k] = true
		out = append(out, k)
	}
	for _, a := range m.To {
		add(a.Email)
	}
	for _, a := range m.Cc {
		add(a.Email)
	}
	for _, a := range mail.ParseAddresses(m.HeaderValue("Bcc")) {
		add(a.Email)
	}
	return out
}
