package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/store"
)

// "Already answered" rests on what survives the loss of local state: the
// mailbox. Before any reply goes out (Deliver, for auto-sends and
// approvals alike) and before a message is drafted at all (draftAndAct),
// the pipeline asks
//
//   - the mailbox (Mailer.Answered): does the Sent folder hold a reply to
//     the original's Message-ID (In-Reply-To or References), from
//     mailagent or from the owner's own client, or does the original
//     carry \Answered?
//   - the outbox: is another reply to the same Message-ID under way, sent,
//     or (for an automatic reply) possibly delivered before a crash? This
//     covers a UIDVALIDITY change, which gives the same mail a new key and
//     so a new outbox id.
//
// A yes means nothing is sent. After every send the original is flagged
// \Answered (Mailer.MarkAnswered), so a lost, truncated or replaced
// state database, or a new laptop, finds the answer on the server.

// reasonAnswered prefixes every "already answered" reason.
const reasonAnswered = "already answered"

// markAnsweredTimeout bounds setting \Answered after a send.
const markAnsweredTimeout = 30 * time.Second

// answered reports whether the message with key and messageID has been
// answered, with the reason. skip is the outbox record asking (not counted
// against itself); auto says whether the reply in question is automatic:
// only then does a reply that may have been delivered before a crash count
// (the owner approving a resend of it is their decision). An error means
// the answer is unknown.
func (p *Pipeline) answered(ctx context.Context, account string, key store.MessageKey, messageID, skip string, auto bool) (bool, string, error) {
	if found, reason, err := p.answeredInOutbox(account, messageID, skip, auto); err != nil || found {
		return found, reason, err
	}
	if p.Actor == nil || p.Actor.Mailer == nil {
		return false, "", nil
	}
	found, how, err := p.Actor.Mailer.Answered(ctx, account, key, messageID)
	if err != nil {
		return false, "", fmt.Errorf("ask the mailbox whether it was answered: %w", err)
	}
	if !found {
		return false, "", nil
	}
	return true, reasonAnswered + " (" + how + ")", nil
}

// answeredInOutbox looks for another outbox record answering messageID.
func (p *Pipeline) answeredInOutbox(account, messageID, skip string, auto bool) (bool, string, error) {
	k := mail.IDKey(messageID)
	if k == "" {
		return false, "", nil
	}
	statuses := []string{store.OutboxSending, store.OutboxSent, store.OutboxAppended}
	if auto {
		statuses = append(statuses, store.OutboxFailed)
	}
	reason := ""
	for _, st := range statuses {
		err := p.Actor.Store.ListOutbox(st, func(r *store.OutboxRecord) error {
			if reason != "" || r.ID == skip || r.Account != account || mail.IDKey(r.InReplyTo) != k {
				return nil
			}
			switch {
			case r.Status == store.OutboxFailed && !strings.HasPrefix(r.Error, ErrAmbiguousSend.Error()):
				// Failed for good: it was not delivered.
			case r.Status == store.OutboxFailed || r.Status == store.OutboxSending:
				reason = fmt.Sprintf("%s (reply %s may have been delivered before a crash; the owner decides)", reasonAnswered, r.ID)
			default:
				reason = fmt.Sprintf("%s (reply %s was sent)", reasonAnswered, r.ID)
			}
			return nil
		})
		if err != nil {
			return false, "", fmt.Errorf("list outbox: %w", err)
		}
	}
	return reason != "", reason, nil
}

// skipAnswered is the act-time check: a message already answered is not
// drafted. An error is only logged: Deliver asks again before any send
// (and sends nothing when it cannot tell), and a queued draft is checked
// again on approval.
func (p *Pipeline) skipAnswered(ctx context.Context, rec *store.MessageRecord, tr *tracer) (bool, error) {
	if rec.Synthesized {
		return false, nil
	}
	done := tr.step("answered")
	found, reason, err := p.answered(ctx, rec.Account, rec.MessageKey, rec.MessageID, "", true)
	done(store.Step{Detail: reason}, err)
	if err != nil {
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		p.logger().Warn("could not tell whether the message was answered; checked again before sending", "account", rec.Account, "err", err)
		return false, nil
	}
	if !found {
		return false, nil
	}
	rec.Decision, rec.Reasons = DecisionIgnore, []string{reason}
	return true, nil
}

// checkAnswered runs in Deliver, with ob in "sending", right before SMTP.
// It returns stop=false when the reply may go. Otherwise nothing is sent:
//   - answered: ob is cancelled with the reason and its queue item
//     resolved (not an error: the message is handled);
//   - unknown (the mailbox could not be read): an automatic reply goes
//     back to pending and is retried later; an approval fails with the
//     error, for the owner to see. The error is returned.
func (p *Pipeline) checkAnswered(ctx context.Context, ob *store.OutboxRecord) (stop bool, _ error) {
	a := p.Actor
	found, reason, err := p.answered(ctx, ob.Account, ob.Message, ob.InReplyTo, ob.ID, ob.Auto)
	if err != nil {
		to := store.OutboxFailed
		if ob.Auto {
			to = store.OutboxPending
		}
		msg := "nothing was sent: " + err.Error()
		if _, terr := a.Store.TransitionOutbox(ob.ID, []string{store.OutboxSending}, to, func(r *store.OutboxRecord) error {
			r.Error = msg
			return nil
		}); terr != nil {
			return true, errors.Join(err, terr)
		}
		if to == store.OutboxFailed && ob.QueueID != "" {
			p.failQueueItem(ob, msg+"; approve again")
			a.notify(Event{Kind: "queue_updated", ID: ob.QueueID, Account: ob.Account})
		}
		return true, fmt.Errorf("send %s: %w", ob.MessageID, err)
	}
	if !found {
		return false, nil
	}
	if _, err := a.Store.TransitionOutbox(ob.ID, []string{store.OutboxSending}, store.OutboxCancelled, func(r *store.OutboxRecord) error {
		r.Error = reason
		return nil
	}); err != nil {
		return true, fmt.Errorf("outbox %s: cancel: %w", ob.ID, err)
	}
	if ob.QueueID != "" {
		if _, err := p.resolveItem(ctx, ob.QueueID, []string{store.QueueApproved}, reason+"; approving it sent nothing"); err != nil && !errors.Is(err, store.ErrConflict) {
			return true, fmt.Errorf("resolve %s: %w", ob.QueueID, err)
		}
	}
	p.logger().Info("not sent: "+reason, "account", ob.Account, "outbox", ob.ID)
	return true, nil
}

// markAnswered flags the original \Answered after a send, so the mailbox
// itself records the answer. A failure is logged: the reply in Sent
// (In-Reply-To) still records it.
func (p *Pipeline) markAnswered(ob *store.OutboxRecord) {
	if p.Actor.Mailer == nil || (ob.InReplyTo == "" && ob.Message.UID == 0) {
		return
	}
	// Not the caller's context: the reply is out either way.
	ctx, cancel := context.WithTimeout(context.Background(), markAnsweredTimeout)
	defer cancel()
	if err := p.Actor.Mailer.MarkAnswered(ctx, ob.Account, ob.Message, ob.InReplyTo); err != nil {
		p.logger().Warn(`set \Answered on the original`, "account", ob.Account, "outbox", ob.ID, "err", err)
	}
}
