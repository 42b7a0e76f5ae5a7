package agent

import (
	"context"
	"errors"
	"fmt"
	"mime"
	"strings"
	"time"

	"github.com/mailagent/mailagent/agent/outbox"
	"github.com/mailagent/mailagent/internal/compose"
	"github.com/mailagent/mailagent/store"
)

// Mails of their own: outgoing mail that answers no message (an
// unsubscribe, a digest, an unattended nudge). They go through the outbox
// like every reply (outbox.Schedule's address and Auto-Submitted rules,
// one record, Deliver's exactly-once protocol), under an id derived from
// what they are about, and never touch a contact's memory, a queue item
// or a message's \Answered flag: their record names no message (no
// Message key, no In-Reply-To), so Deliver's "already answered" check and
// its \Answered flag have nothing to act on.

// ErrMailRefused: a mail of its own was not accepted; nothing was queued
// to be sent. The error says why.
var ErrMailRefused = errors.New("mail refused")

// OwnMail is a mail of its own to send through the outbox.
type OwnMail struct {
	// Kind is store.OutboxKindUnsubscribe, …Digest or …Nudge.
	Kind    string
	Account string
	// Ref is what the mail is about (the list message's key, the digest
	// period): with Kind, Account and To it makes the outbox id, so asking
	// twice makes one record.
	Ref     string
	To      string
	Subject string
	// Body is plain text; Raw, when set, is the whole message instead
	// (From, To and Auto-Submitted are the builder's responsibility then).
	Body string
	Raw  []byte
	// Delay holds the mail, cancellable (outbox.Outbox.Cancel), before it
	// goes. An unsubscribe ignores it: it is the owner's action, and waits
	// out the owner's undo window, policy.approval_delay, like an
	// approval.
	Delay time.Duration
}

// SendOwnMail creates the outbox record of m (outbox.Schedule: a public
// recipient, Auto-Submitted: auto-generated) and, with no delay, sends it
// at once; with a delay it is scheduled and the due timer (or
// SendWhenDue) sends it. A record for the same mail that is already under
// way or sent is returned as it is: exactly once. A cancelled or failed
// one is replaced by a new attempt. A refusal wraps ErrMailRefused and
// outbox.ErrRefused, and nothing is written.
func (p *Pipeline) SendOwnMail(ctx context.Context, m OwnMail) (*store.OutboxRecord, error) {
	a := p.Actor
	acct, ok := p.Accounts[m.Account]
	if !ok {
		return nil, fmt.Errorf("%s mail: %w: unknown account %q", m.Kind, ErrMailRefused, m.Account)
	}
	if m.Kind == "" || strings.ContainsAny(m.To+m.Subject, "\r\n") {
		return nil, fmt.Errorf("%s mail: %w: no kind, or a line break in the address or subject", m.Kind, ErrMailRefused)
	}
	id := outbox.StandaloneID(m.Kind, m.Account, m.Ref+"\x00"+strings.ToLower(m.To))
	prev, err := a.Store.GetOutbox(id)
	switch {
	case err == nil && prev.Status != store.OutboxCancelled && prev.Status != store.OutboxFailed:
		return prev, nil
	case err != nil && !errors.Is(err, store.ErrNotFound):
		return nil, fmt.Errorf("%s mail: %w", m.Kind, err)
	}
	now := p.now()
	from := acct.From.Email
	raw, msgID := m.Raw, ""
	if raw == nil {
		msgID = compose.NewMessageID(from[strings.LastIndexByte(from, '@')+1:])
		raw = ownMailRaw(from, m, msgID, now)
	} else {
		msgID = headerMessageID(raw)
	}
	ob := &store.OutboxRecord{ID: id, Kind: m.Kind, Account: m.Account, From: from, MessageID: msgID,
		Subject: m.Subject, Body: m.Body, To: []string{m.To}, Raw: raw, Auto: true, CreatedAt: now}
	delay := m.Delay
	if m.Kind == store.OutboxKindUnsubscribe {
		delay = p.Policy.ApprovalDelay
	}
	if err := p.schedule(ob, now, delay); err != nil {
		return nil, fmt.Errorf("%s mail: %w: %w", m.Kind, ErrMailRefused, err)
	}
	if err := a.Store.PutOutbox(ob); err != nil {
		return nil, fmt.Errorf("%s mail: %w", m.Kind, err)
	}
	if ob.Status == store.OutboxScheduled {
		a.notify(Event{Kind: "scheduled", ID: ob.ID, Account: ob.Account})
		return ob, nil
	}
	derr := p.Deliver(ctx, ob.ID)
	if cur, err := a.Store.GetOutbox(ob.ID); err == nil {
		ob = cur
	}
	return ob, derr
}

// SendWhenDue waits out the undo window of a scheduled mail of its own
// and sends it, for a process with no due timer
// (outbox.Outbox.SendWhenDue); an interrupted wait cancels it.
func (p *Pipeline) SendWhenDue(ctx context.Context, id string, wait func(context.Context, time.Time) error) (*store.OutboxRecord, error) {
	return p.outbox().SendWhenDue(ctx, id, wait)
}

// ownMailRaw is the message of a mail of its own: mailagent's loop-guard
// header, Auto-Submitted: auto-generated (RFC 3834: no robot answers it),
// a plain-text body.
func ownMailRaw(from string, m OwnMail, msgID string, now time.Time) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "From: <%s>\r\nTo: <%s>\r\nSubject: %s\r\nDate: %s\r\nMessage-ID: <%s>\r\nAuto-Submitted: auto-generated\r\n%s: %s\r\n",
		from, m.To, mime.QEncoding.Encode("utf-8", m.Subject), now.Format(time.RFC1123Z), msgID, TraceHeader, m.Kind)
	b.WriteString("MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: 8bit\r\n\r\n")
	b.WriteString(strings.ReplaceAll(strings.ReplaceAll(m.Body, "\r\n", "\n"), "\n", "\r\n"))
	b.WriteString("\r\n")
	return []byte(b.String())
}

// headerMessageID is the Message-ID of raw, without brackets ("" when
// none).
func headerMessageID(raw []byte) string {
	head, _, _ := strings.Cut(strings.ReplaceAll(string(raw), "\r\n", "\n"), "\n\n")
	for _, l := range strings.Split(head, "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.EqualFold(strings.TrimSpace(k), "Message-ID") {
			return strings.Trim(strings.TrimSpace(v), "<>")
		}
	}
	return ""
}
