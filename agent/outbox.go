package agent

// The outbox protocol lives in agent/outbox; these are the pipeline's
// doors to it, wired to the pipeline's store, mailer, clock, logger and
// events, and to the agent's own side effects of a send (contact memory)
// and of an answer found elsewhere (resolving the queue item).

import (
	"context"
	"slices"
	"time"

	"github.com/mailagent/mailagent/agent/outbox"
	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/internal/netpolicy"
	"github.com/mailagent/mailagent/store"
)

// TemporaryError marks a send failure that may succeed later.
type TemporaryError = outbox.TemporaryError

// ErrAmbiguousSend is recorded when a crash interrupted an SMTP
// transaction: the message may or may not have been delivered.
var ErrAmbiguousSend = outbox.ErrAmbiguousSend

// ErrApprovalCancelled is returned by SendApproval when the undo window
// ended with a cancellation.
var ErrApprovalCancelled = outbox.ErrApprovalCancelled

// ErrNotSent is returned, with the resolved item, by an approval that sent
// nothing because the message had been answered already or the owner had
// sent the draft themselves (outbox.ErrNotSent).
var ErrNotSent = outbox.ErrNotSent

// outbox returns the send protocol over the pipeline's actor.
func (p *Pipeline) outbox() *outbox.Outbox {
	a := p.Actor
	o := &outbox.Outbox{
		Store:  a.Store,
		Now:    p.now,
		Logger: p.logger(),
		Notify: func(kind, id, account string) { a.notify(Event{Kind: kind, ID: id, Account: account}) },
		Sent:   func(ob *store.OutboxRecord) { p.rememberSent(ob); p.invitations().Sent(ob); p.scheduleSent(ob) }, // agent/invite, schedule_event.go
		Resolve: func(ctx context.Context, id, reason string) error {
			_, err := p.resolveItem(ctx, id, []string{store.QueueApproved}, reason)
			return err
		},
	}
	if a.Mailer != nil { // a nil Mailer stays a nil interface
		o.Mailer = a.Mailer
		o.MarkAnswered = p.markAnswered // delegated_answered.go
	}
	return o
}

// schedule checks a new outbox record and sets its first status
// (outbox.Schedule) with the domains the owner configured for its
// account: the owner's own addresses' domains and policy.allow_domains.
// An error means the record must not be written.
func (p *Pipeline) schedule(ob *store.OutboxRecord, now time.Time, delay time.Duration) error {
	return outbox.Schedule(ob, now, delay, p.allowDomains(ob.Account)...)
}

// allowDomains are the domains mail may go to whatever their form
// (netpolicy.CheckMailAddress): those of the account's own and owner
// addresses, and policy.allow_domains.
func (p *Pipeline) allowDomains(account string) []string {
	out := slices.Clone(p.Policy.AllowDomains)
	if acct, ok := p.Accounts[account]; ok {
		for _, a := range append([]string{acct.From.Email}, acct.Owner.Addresses...) {
			if d := netpolicy.MailDomain(a); d != "" {
				out = append(out, d)
			}
		}
	}
	return out
}

// Deliver sends one outbox record exactly once (outbox.Outbox.Deliver).
func (p *Pipeline) Deliver(ctx context.Context, id string) error {
	return p.outbox().Deliver(ctx, id)
}

// Cancel stops a scheduled send: a delayed auto-send or an approval in its
// undo window (outbox.Outbox.Cancel). Too late wraps ErrNotActionable.
// Cancelling an approval also takes back what the approval taught (see
// unlearnApproval): the undo window undoes the whole approval.
func (p *Pipeline) Cancel(ctx context.Context, id string) error {
	if err := p.outbox().Cancel(ctx, id); err != nil {
		return err
	}
	p.unlearnApproval(id)
	return nil
}

// SendApproval waits out the undo window of an approved item and sends it,
// for a process with no due timer (outbox.Outbox.SendApproval).
func (p *Pipeline) SendApproval(ctx context.Context, queueID string, wait func(context.Context, time.Time) error) (*store.QueueItem, error) {
	return p.outbox().SendApproval(ctx, queueID, wait)
}

// SendDue sends what is due, retries what waited out its backoff and
// wakes snoozed items (outbox.Outbox.SendDue); the watcher's timer.
func (p *Pipeline) SendDue(ctx context.Context) error {
	return p.outbox().SendDue(ctx)
}

// Recover finishes what a crash interrupted in the outbox
// (outbox.Outbox.Recover).
func (p *Pipeline) Recover(ctx context.Context) error {
	return p.outbox().Recover(ctx)
}

// rememberSent adds a delivered reply to each recipient's memory. An
// automatic reply never makes an address known: knowing someone comes
// only from mail the owner wrote or approved.
func (p *Pipeline) rememberSent(ob *store.OutboxRecord) {
	if ob.Kind != "" {
		return // a mail of its own (unsubscribe, digest) is no exchange with a contact
	}
	now := p.now()
	for _, to := range ob.To {
		_, err := p.Actor.Store.UpdateContact(ob.Account, to, func(c *store.Contact) error {
			c.Outbound++
			if ob.Auto {
				c.AutoReplies++
			} else {
				c.OwnerReplies++
				c.Known = true
			}
			c.LastSeen = now
			c.History = append(c.History, store.HistoryEntry{Date: now, Direction: "out", Subject: mail.ReplySubject(ob.Subject), Summary: oneLine(ob.Body, 120)})
			c.SinceSummary++
			return nil
		})
		if err != nil {
			p.logger().Warn("update contact", "err", err)
		}
	}
}
