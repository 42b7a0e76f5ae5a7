package replay

import (
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/internal/mail"
)

// Truth is what the owner did with one incoming message, as the mailbox
// shows it.
type Truth struct {
	// Replied: a message of the owner's in Sent answers it (In-Reply-To or
	// References names its Message-ID) and goes to its sender (From or
	// Reply-To).
	Replied bool `json:"replied"`
	// ReplyAt is the date of the first such reply; Latency the time from
	// the message's date to it (0 when either date is missing or the reply
	// is dated earlier).
	ReplyAt time.Time     `json:"reply_at,omitzero"`
	Latency time.Duration `json:"latency"`
	// ReplyText is the reply's clean text (quotes and signature split off).
	ReplyText string `json:"reply_text,omitempty"`
	Answered  bool   `json:"answered"` // \Answered on the original
	Flagged   bool   `json:"flagged"`
	Seen      bool   `json:"seen"`
	Deleted   bool   `json:"deleted"`  // \Deleted, or found in the trash folder
	Archived  bool   `json:"archived"` // found in the archive folder
}

// SentReply is one message of the owner's from the Sent folder.
type SentReply struct {
	Date      time.Time
	To        []string // the people it was addressed to, by mail.AddrKey (agent.KnownFromSent)
	InReplyTo []string
	Refs      []string
	Text      string
}

// SentIndex answers "did the owner reply to this message" and "had the
// owner written to this address before this date" from the Sent folder.
type SentIndex struct {
	byParent map[string][]int
	replies  []SentReply
	firstTo  map[string]time.Time
}

// NewSentIndex indexes the owner's sent messages: only mail the owner
// wrote counts (agent.OwnerWrote; a message in Sent from someone else, a
// copy of a forwarded message or a misfiled one, is skipped, and so are
// automatic replies and mail mailagent wrote, whose text is not ground
// truth about what the owner would have done), and its recipients are
// those agent.KnownFromSent names, the same as triage and watch learn.
func NewSentIndex(msgs []*mail.Message, owner agent.Owner) *SentIndex {
	ix := &SentIndex{byParent: map[string][]int{}, firstTo: map[string]time.Time{}}
	for _, m := range msgs {
		everyone := sentFromAnyoneOff.Load()
		if !everyone && !agent.OwnerWrote(m, owner, nil) {
			continue
		}
		r := SentReply{Date: m.Date, InReplyTo: m.InReplyTo, Refs: m.References, Text: m.CleanText}
		r.To = agent.KnownFromSent(m, owner, nil)
		if everyone {
			r.To = nil
			for _, a := range append(slices.Clone(m.To), m.Cc...) {
				r.To = append(r.To, mail.AddrKey(a.Email))
			}
		}
		for _, e := range r.To {
			if t, ok := ix.firstTo[e]; !ok || m.Date.Before(t) {
				ix.firstTo[e] = m.Date
			}
		}
		i := len(ix.replies)
		ix.replies = append(ix.replies, r)
		seen := map[string]bool{}
		for _, id := range append(slices.Clone(m.InReplyTo), m.References...) {
			k := mail.IDKey(id)
			if k == "" || seen[k] {
				continue
			}
			seen[k] = true
			ix.byParent[k] = append(ix.byParent[k], i)
		}
	}
	return ix
}

// The defences of the ground truth, switched off only by the positive
// control of TestTruthIgnoresSpoofedAndMisaddressedReplies (package
// replay); nothing in the product sets them. Never from a parallel test.
//
// sentFromAnyoneOff makes NewSentIndex take every message in Sent as the
// owner's (agent.OwnerWrote is not asked: a stranger's From counts), with
// its To and Cc as the people it went to. toSenderOff makes ReplyTo take
// a reply whatever its recipients.
var sentFromAnyoneOff, toSenderOff atomic.Bool

// Len is how many of the owner's messages the index holds.
func (ix *SentIndex) Len() int { return len(ix.replies) }

// ReplyTo returns the owner's earliest reply to the message messageID
// that went to one of senders (its From and Reply-To addresses).
func (ix *SentIndex) ReplyTo(messageID string, senders []string) (SentReply, bool) {
	var best SentReply
	found := false
	k := mail.IDKey(messageID)
	if k == "" {
		return best, false
	}
	for _, i := range ix.byParent[k] {
		r := ix.replies[i]
		if !toSenderOff.Load() && !slices.ContainsFunc(r.To, func(to string) bool {
			return slices.ContainsFunc(senders, func(s string) bool { return mail.SameAddr(s, to) })
		}) {
			continue
		}
		if !found || r.Date.Before(best.Date) {
			best, found = r, true
		}
	}
	return best, found
}

// KnownBefore reports whether the owner wrote to addr before t (a zero t
// counts every message).
func (ix *SentIndex) KnownBefore(addr string, t time.Time) bool {
	first, ok := ix.firstTo[mail.AddrKey(addr)]
	return ok && (t.IsZero() || first.Before(t))
}

// TruthFor builds the ground truth of one incoming message m, read from
// a mailbox with the given flags; archived and trashed say which folder
// it was read from.
func TruthFor(ix *SentIndex, m *mail.Message, flags []string, archived, trashed bool) Truth {
	t := Truth{Archived: archived, Deleted: trashed}
	for _, f := range flags {
		switch strings.ToLower(f) {
		case `\answered`:
			t.Answered = true
		case `\flagged`:
			t.Flagged = true
		case `\seen`:
			t.Seen = true
		case `\deleted`:
			t.Deleted = true
		}
	}
	senders := []string{m.From.Email}
	for _, a := range m.ReplyTo {
		senders = append(senders, a.Email)
	}
	if r, ok := ix.ReplyTo(m.MessageID, senders); ok {
		t.Replied, t.ReplyAt, t.ReplyText = true, r.Date, r.Text
		if !m.Date.IsZero() && !r.Date.IsZero() && r.Date.After(m.Date) {
			t.Latency = r.Date.Sub(m.Date)
		}
	}
	return t
}
