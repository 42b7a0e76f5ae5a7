package owner

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/store"
)

// Forwards "as attachment" (Thunderbird's default, Outlook, Apple Mail's
// option): the owner's mail carries the original as a message/rfc822
// part, parsed by internal/mail into Message.Forwards. Each attached
// message becomes a forwarded original like an inline forward's, with its
// own Message-ID, References and Date, so the delegated reply threads on
// it. What it says about itself (From, Reply-To, Authentication-Results)
// is the original sender's text: the reply goes to its From, chosen here
// by code under the inline forward's rules (never the owner, never the
// agent, never Reply-To, Cc or anything the text asks for).

// MaxDelegations is how many delegated drafts one forward of many makes:
// one per distinct thread. A mail forwarding more threads makes none and
// asks the owner, in the queue, to forward them separately.
const MaxDelegations = 3

// forwardedFrom is the forwarded original an attached message is.
func forwardedFrom(f mail.Forward) Forwarded {
	m := f.Message
	fw := Forwarded{From: m.From, Subject: m.Subject, MessageID: m.MessageID, InReplyTo: m.InReplyTo,
		References: m.References, ReplyTo: m.ReplyTo, Date: m.Date, Part: f.Part, Attached: true}
	if m.Synthesized {
		fw.MessageID = "" // no id to thread on: the Host's Queue makes one of its own
	}
	fw.Body = renderForwardBody(m, 0)
	if f.Broken {
		fw.Problems = f.Problems
	}
	return fw
}

// renderForwardBody is an attached message's clean text, followed by the
// messages attached to it (a forward of a forward) as inline blocks.
func renderForwardBody(m *mail.Message, depth int) string {
	var b strings.Builder
	b.WriteString(cmp.Or(m.CleanText, m.Text))
	for _, f := range m.Forwards {
		if depth >= mail.MaxForwardDepth {
			break
		}
		in := f.Message
		fmt.Fprintf(&b, "\n\n---------- Forwarded message ---------\nFrom: %s\nDate: %s\nSubject: %s\n\n%s",
			formatAddress(in.From), in.Date.Format(time.RFC1123Z), in.Subject, renderForwardBody(in, depth+1))
	}
	return strings.TrimSpace(b.String())
}

// delegations are the forwarded originals an owner message delegates,
// one per distinct thread, and notes on what could not be delegated.
// fwds are the message's attached messages; without any, an inline
// forward in body is read as before.
func (c *Channel) delegations(rec *store.MessageRecord, body string, fwds []mail.Forward) (dels []Forwarded, notes []string) {
	ownAddress := func(e string) bool {
		return c.Accounts.IsOwner(rec.Account, e) || c.Accounts.IsAgentAddress(rec.Account, e)
	}
	if len(fwds) == 0 {
		if forwardSubject().MatchString(rec.Subject) || forwardedBlock(body) != "" {
			if fw := parseForwarded(body); fw.From.Email != "" && !ownAddress(fw.From.Email) {
				dels = append(dels, fw)
			}
		}
		return dels, nil
	}
	for _, f := range fwds {
		fw := forwardedFrom(f)
		switch {
		case fw.From.Email == "":
			notes = append(notes, fmt.Sprintf("the forwarded message in %s could not be read (%s): nothing was drafted for it; it is still in your mailbox",
				f.Part, strings.Join(fw.Problems, "; ")))
		case ownAddress(fw.From.Email):
			notes = append(notes, fmt.Sprintf("the forwarded message in %s is from your own address %s: there is no one to reply to", f.Part, fw.From.Email))
		default:
			dels = append(dels, fw)
		}
	}
	return latestPerThread(dels), notes
}

// latestPerThread keeps, of forwarded originals sharing a thread (one's
// Message-ID, In-Reply-To or References names an id of another's), the
// latest by Date (the later one attached on a tie), in attachment order.
func latestPerThread(dels []Forwarded) []Forwarded {
	group := make([]int, len(dels))
	ids := make([][]string, len(dels))
	for i, d := range dels {
		group[i] = i
		for _, id := range slices.Concat([]string{d.MessageID}, d.InReplyTo, d.References) {
			if k := mail.IDKey(id); k != "" {
				ids[i] = append(ids[i], k)
			}
		}
	}
	find := func(i int) int {
		for group[i] != i {
			i = group[i]
		}
		return i
	}
	for i := range dels {
		for j := range i {
			if slices.ContainsFunc(ids[i], func(k string) bool { return slices.Contains(ids[j], k) }) {
				group[find(i)] = find(j)
			}
		}
	}
	best := map[int]int{}
	var order []int
	for i, d := range dels {
		g := find(i)
		b, ok := best[g]
		if !ok {
			order = append(order, g)
		}
		if !ok || !d.Date.Before(dels[b].Date) {
			best[g] = i
		}
	}
	out := make([]Forwarded, 0, len(order))
	for _, g := range order {
		out = append(out, dels[best[g]])
	}
	return out
}

// loopText is what the owner loop reads of a delegating message: the
// owner's note, and, for an attached forward (not in the note's text),
// the forwarded original as an inline block.
func loopText(body string, fw Forwarded) string {
	if !fw.Attached {
		return body
	}
	return fmt.Sprintf("%s\n\n---------- Forwarded message (attached) ---------\nFrom: %s\nSubject: %s\n\n%s",
		body, formatAddress(fw.From), fw.Subject, fw.Body)
}

// DelegateNotes are the queue item's reasons about a forwarded original
// that the owner should weigh before approving.
func DelegateNotes(fw Forwarded) []string {
	var out []string
	for _, pr := range fw.Problems {
		out = append(out, "the forwarded message was damaged ("+pr+"): check the draft against the original")
	}
	for _, r := range fw.ReplyTo {
		if !mail.SameAddr(r.Email, fw.From.Email) {
			out = append(out, fmt.Sprintf("the forwarded message asks for replies to %s (Reply-To); this draft goes to its sender %s", r.Email, fw.From.Email))
			break
		}
	}
	return out
}

// DelegatedKey is the record key of the i-th forwarded original of the
// owner message rec (the first keeps the key inline forwards have).
func DelegatedKey(rec *store.MessageRecord, i int) store.MessageKey {
	box := DelegatedMailbox
	if i > 0 {
		box = fmt.Sprintf("%s/%d", DelegatedMailbox, i+1)
	}
	return store.MessageKey{Account: rec.Account, Mailbox: box, UIDValidity: rec.UIDValidity, UID: rec.UID}
}

// IsDelegated reports whether k is the record of a delegated original
// (DelegatedMailbox): it is in no real mailbox, so there is nothing to
// select, flag, label or move on the server.
func IsDelegated(k store.MessageKey) bool {
	return k.Mailbox == DelegatedMailbox || strings.HasPrefix(k.Mailbox, DelegatedMailbox+"/")
}

// TooManyDelegations is the queue note for a forward of more threads than
// MaxDelegations: nothing is drafted, the owner picks.
func TooManyDelegations(dels []Forwarded) []string {
	out := []string{fmt.Sprintf("you forwarded %d separate conversations; the agent drafts at most %d replies from one mail, so it drafted none: forward the ones to answer one at a time", len(dels), MaxDelegations)}
	for _, d := range dels {
		out = append(out, fmt.Sprintf("forwarded: %s: %s", formatAddress(d.From), oneLine(d.Subject, 120)))
	}
	return out
}

// oneLine collapses s to one line of at most n runes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
