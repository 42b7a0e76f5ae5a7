package outbox

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/store"
)

// draftCleanupTimeout bounds removing an IMAP draft after a send.
const draftCleanupTimeout = 30 * time.Second

// markAnsweredTimeout bounds setting \Answered after a send.
const markAnsweredTimeout = 30 * time.Second

// CopyToSentFailed starts the error of a delivered reply whose copy to
// the Sent folder failed (it stays "sent" until a retry files it).
const CopyToSentFailed = "copy to the Sent folder failed: "

// ReasonAnswered prefixes every "already answered" reason.
const ReasonAnswered = "already answered"

// Deliver sends one outbox record exactly once:
//  1. pending → sending (one transaction: a second caller gets a conflict
//     and sends nothing);
//  2. the Sent folder is checked for the Message-ID, in case an earlier
//     attempt got through; then whether the original was answered
//     already (checkAnswered);
//  3. the SMTP transaction;
//  4. sending → sent, then APPEND to Sent and sent → appended.
//
// A record left in "sending" by a crash is never re-sent blindly: Recover
// looks for it in Sent, resends it when it provably never reached DATA
// (a StagedMailer, OutboxRecord.BeforeData), and otherwise hands it to
// the owner.
func (o *Outbox) Deliver(ctx context.Context, id string) error {
	if o.Mailer == nil {
		return fmt.Errorf("outbox %s: no mailer to send with", id)
	}
	staged, isStaged := o.Mailer.(StagedMailer)
	ob, err := o.Store.TransitionOutbox(id, []string{store.OutboxPending}, store.OutboxSending, func(r *store.OutboxRecord) error {
		r.Attempts++
		r.BeforeData = isStaged
		return nil
	})
	if errors.Is(err, store.ErrConflict) {
		return nil // another process is sending it, or it is done
	}
	if err != nil {
		return fmt.Errorf("outbox %s: %w", id, err)
	}
	if has, err := o.Mailer.SentHas(ctx, ob.Account, ob.MessageID); err == nil && has {
		return o.finishSent(ctx, ob, true)
	}
	if stop, err := o.checkAnswered(ctx, ob); stop {
		return err
	}
	var sendErr error
	if isStaged {
		sendErr = staged.SendStaged(ctx, ob.Account, ob.From, ob.To, ob.Raw, func() error {
			return o.reachData(ob.ID)
		})
	} else {
		sendErr = o.Mailer.Send(ctx, ob.Account, ob.From, ob.To, ob.Raw)
	}
	if sendErr != nil && ctx.Err() != nil {
		// Stopping mid-transaction: the record stays "sending", and the
		// next start's Recover looks for it in Sent and otherwise hands it
		// to the owner. It may have been delivered, so it is not retried.
		return fmt.Errorf("send %s: %w", ob.MessageID, sendErr)
	}
	if sendErr != nil {
		return o.fail(ob, sendErr)
	}
	return o.finishSent(ctx, ob, false)
}

// reachData records, durably and before SMTP DATA is issued, that the
// send is about to hand the message over: from now on a crash leaves a
// send that may have gone through.
func (o *Outbox) reachData(id string) error {
	if _, err := o.Store.TransitionOutbox(id, []string{store.OutboxSending}, store.OutboxSending, func(r *store.OutboxRecord) error {
		r.BeforeData = false
		return nil
	}); err != nil {
		return fmt.Errorf("outbox %s: record the start of DATA: %w", id, err)
	}
	return nil
}

// fail records a send that did not go through: back to pending when the
// error is temporary (SendDue retries it after a backoff), else failed and
// shown to the owner (ambiguous when it may have been delivered).
func (o *Outbox) fail(ob *store.OutboxRecord, sendErr error) error {
	to := store.OutboxFailed
	switch {
	case maybeDelivered(sendErr):
		sendErr = fmt.Errorf("%w: %w", ErrAmbiguousSend, sendErr)
	case isTemporary(sendErr):
		to = store.OutboxPending
	}
	_, err := o.Store.TransitionOutbox(ob.ID, []string{store.OutboxSending}, to, func(r *store.OutboxRecord) error {
		r.Error, r.BeforeData = sendErr.Error(), false
		if to == store.OutboxPending && r.FailingSince.IsZero() {
			r.FailingSince = o.now()
		}
		return nil
	})
	if err != nil {
		return errors.Join(sendErr, err)
	}
	if to == store.OutboxFailed {
		o.failQueueItem(ob, sendErr.Error())
	}
	o.notify("queue_updated", ob.QueueID, ob.Account)
	return fmt.Errorf("send %s: %w", ob.MessageID, sendErr)
}

// finishSent records a delivered message, appends the Sent copy (unless it
// is there already) and closes the queue item.
func (o *Outbox) finishSent(ctx context.Context, ob *store.OutboxRecord, inSent bool) error {
	ob, err := o.Store.TransitionOutbox(ob.ID, []string{store.OutboxSending}, store.OutboxSent, func(r *store.OutboxRecord) error {
		r.SentAt = o.now()
		r.Error, r.FailingSince, r.BeforeData = "", time.Time{}, false
		return nil
	})
	if err != nil {
		return fmt.Errorf("outbox %s: mark sent: %w", ob.ID, err)
	}
	o.afterSend(ob)
	o.markAnswered(ob)
	return o.appendSent(ctx, ob, inSent)
}

func (o *Outbox) appendSent(ctx context.Context, ob *store.OutboxRecord, inSent bool) error {
	if !inSent {
		if err := o.Mailer.AppendSent(ctx, ob.Account, ob.Raw); err != nil {
			// Delivered but not filed: Recover appends it later. The
			// record says so at once (status counts it), not only after
			// the next retry pass.
			aerr := fmt.Errorf("append %s to Sent: %w", ob.MessageID, err)
			if _, terr := o.Store.TransitionOutbox(ob.ID, []string{store.OutboxSent}, store.OutboxSent, func(r *store.OutboxRecord) error {
				r.Error = CopyToSentFailed + err.Error()
				return nil
			}); terr != nil && !errors.Is(terr, store.ErrConflict) {
				return errors.Join(aerr, terr)
			}
			return aerr
		}
	}
	if _, err := o.Store.TransitionOutbox(ob.ID, []string{store.OutboxSent}, store.OutboxAppended, func(r *store.OutboxRecord) error {
		r.Error = ""
		return nil
	}); err != nil && !errors.Is(err, store.ErrConflict) {
		return fmt.Errorf("outbox %s: mark appended: %w", ob.ID, err)
	}
	return nil
}

// afterSend closes the queue item (and removes its IMAP draft), then runs
// the Sent hook and tells listeners.
func (o *Outbox) afterSend(ob *store.OutboxRecord) {
	if ob.QueueID != "" {
		item, err := o.Store.TransitionQueueItem(ob.QueueID, []string{store.QueueApproved, store.QueueFailed}, store.QueueSent, nil)
		if err == nil && item.IMAPDraftUID != 0 && o.Mailer != nil {
			// Not the caller's context: the reply is out, and the draft
			// should go even if the approving client has gone. Bounded,
			// so a stalled server cannot hold the account's connection.
			dctx, cancel := context.WithTimeout(context.Background(), draftCleanupTimeout)
			err := o.Mailer.DeleteDraft(dctx, item.Account, item.IMAPDraftUID)
			cancel()
			if err != nil {
				o.logger().Warn("delete IMAP draft", "queue", item.ID, "err", err)
			}
		}
	}
	if o.Sent != nil {
		o.Sent(ob)
	}
	o.notify("sent", ob.ID, ob.Account)
}

// failQueueItem shows the owner a reply that failed for good: an auto-send
// becomes a draft in the queue, an approval's item goes to failed.
func (o *Outbox) failQueueItem(ob *store.OutboxRecord, reason string) {
	if ob.Kind != "" { // a mail of its own: the failed record is what the owner sees
		o.notify("queue_updated", ob.ID, ob.Account)
		return
	}
	if ob.QueueID == "" {
		item := o.draftFromOutbox(ob, store.QueueFailed, "auto-send failed: "+reason)
		item.Error = reason
		if err := o.Store.PutQueueItem(item); err != nil {
			o.logger().Error("queue a failed auto-send", "outbox", ob.ID, "err", err)
		}
		o.notify("queue_added", item.ID, ob.Account)
		return
	}
	_, err := o.Store.TransitionQueueItem(ob.QueueID, []string{store.QueueApproved}, store.QueueFailed, func(q *store.QueueItem) error {
		q.Error = reason
		return nil
	})
	if err != nil && !errors.Is(err, store.ErrConflict) {
		// The outbox record says failed and is shown to the owner either
		// way; the item's status is what could not be written.
		o.logger().Error("mark a failed approval", "queue", ob.QueueID, "err", err)
	}
}

// draftFromOutbox turns an auto-reply that will not go out (cancelled, or
// failed for good) back into a draft for the owner, completed with what
// the message record knows: the sender, thread, classification, gates and
// reasons, so the item back in the queue reads like any other. A record
// that cannot be read leaves the item with what the outbox record holds.
func (o *Outbox) draftFromOutbox(ob *store.OutboxRecord, status, reason string) *store.QueueItem {
	to := make([]mail.Address, len(ob.To))
	for i, x := range ob.To {
		to[i] = mail.Address{Email: x}
	}
	q := &store.QueueItem{
		ID: QueueID(ob.Message), Kind: store.KindDraft, Account: ob.Account, Message: ob.Message,
		MessageID: ob.InReplyTo, Subject: ob.Subject, To: to, Draft: ob.Body,
		Status: status, Reasons: []string{reason},
	}
	rec, err := o.Store.GetMessage(ob.Message)
	if err != nil {
		return q
	}
	q.From, q.ThreadID = rec.From, rec.ThreadID
	if q.MessageID == "" {
		q.MessageID = rec.MessageID
	}
	if rec.Classification != nil {
		c := *rec.Classification
		q.Classification = &c
	}
	q.Gates = append([]store.GateResult(nil), rec.Gates...)
	q.Reasons = append(append([]string(nil), rec.Reasons...), q.Reasons...)
	return q
}

// Answered reports whether original has been answered, with the reason.
// Evidence counts only when it is a reply to original addressed to
// original's reply party (store.AnswersTo): another outbox record for the
// same message, or naming its Message-ID and addressed to that party
// (sent, under way, or, when auto, possibly delivered before a crash: the
// owner approving a resend is their decision), or what the mailbox shows
// (Mailer.Answered). A reply to a stranger who borrowed original's
// Message-ID never answers it. skip is the outbox record asking (not
// counted against itself). An error means the answer is unknown.
func (o *Outbox) Answered(ctx context.Context, original *store.MessageRecord, skip string, auto bool) (bool, string, error) {
	if original == nil {
		return false, "", nil
	}
	if found, reason, err := o.answeredInOutbox(original, skip, auto); err != nil || found {
		return found, reason, err
	}
	if o.Mailer == nil {
		return false, "", nil
	}
	found, how, err := o.Mailer.Answered(ctx, original)
	if err != nil {
		return false, "", fmt.Errorf("ask the mailbox whether it was answered: %w", err)
	}
	if !found {
		return false, "", nil
	}
	return true, ReasonAnswered + " (" + how + ")", nil
}

// answeredInOutbox looks for another outbox record answering original:
// one for the same message key, or one whose In-Reply-To names its
// Message-ID and whose recipients are original's reply party (a UIDVALIDITY
// change gives the same mail a new key, and so a new outbox id).
func (o *Outbox) answeredInOutbox(original *store.MessageRecord, skip string, auto bool) (bool, string, error) {
	k := mail.IDKey(original.MessageID)
	if original.Synthesized {
		k = "" // a Message-ID the parser made up names nothing
	}
	statuses := []string{store.OutboxSending, store.OutboxSent, store.OutboxAppended}
	if auto {
		statuses = append(statuses, store.OutboxFailed)
	}
	reason := ""
	for _, st := range statuses {
		err := o.Store.ListOutbox(st, func(r *store.OutboxRecord) error {
			if reason != "" || r.ID == skip || (r.Account != original.Account && !answeredAnyAccountForTest.Load()) {
				return nil
			}
			same := r.Message == original.MessageKey && original.UID != 0
			names := mail.IDKey(r.InReplyTo) == k
			if answeredRawIDForTest.Load() {
				names = r.InReplyTo == original.MessageID
			}
			if !same && (k == "" || !names || !store.AnswersTo(r.To, original)) {
				return nil
			}
			switch {
			case r.Status == store.OutboxFailed && !strings.HasPrefix(r.Error, ErrAmbiguousSend.Error()):
				// Failed for good: it was not delivered.
			case r.Status == store.OutboxFailed || r.Status == store.OutboxSending:
				reason = fmt.Sprintf("%s (reply %s may have been delivered before a crash; the owner decides)", ReasonAnswered, r.ID)
			default:
				reason = fmt.Sprintf("%s (reply %s was sent)", ReasonAnswered, r.ID)
			}
			return nil
		})
		if err != nil {
			return false, "", fmt.Errorf("list outbox: %w", err)
		}
	}
	return reason != "", reason, nil
}

// Test-only switches of answeredInOutbox, each turning off one defence
// for the positive controls of its adversarial tests. No product code
// sets them; a test that sets one is never parallel and restores it
// before it returns.
var (
	// answeredAnyAccountForTest counts another account's replies too.
	answeredAnyAccountForTest atomic.Bool
	// answeredRawIDForTest compares In-Reply-To with original's
	// Message-ID as written instead of by mail.IDKey.
	answeredRawIDForTest atomic.Bool
)

// Original returns the message ob answers: its stored record, or, when
// there is none, a stand-in holding ob's account, key and In-Reply-To whose reply
// party is ob's first recipient and whose sender nobody authenticated (so
// only a reply to that same party, or \Answered at its own UID, shows it
// answered). An error other than not-found is returned.
func (o *Outbox) Original(ob *store.OutboxRecord) (*store.MessageRecord, error) {
	rec, err := o.Store.GetMessage(ob.Message)
	if err == nil {
		if rec.MessageID == "" && !rec.Synthesized {
			rec.MessageID = ob.InReplyTo
		}
		return rec, nil
	}
	if !errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("the message %s answers: %w", ob.ID, err)
	}
	stand := &store.MessageRecord{MessageKey: ob.Message, MessageID: ob.InReplyTo}
	stand.Account = ob.Account // a reply with no message of its own (a nudge) has no key
	if len(ob.To) > 0 {
		stand.From = mail.Address{Email: ob.To[0]}
	}
	return stand, nil
}

// checkAnswered runs in Deliver, with ob in "sending", right before SMTP.
// It returns stop=false when the reply may go. Otherwise nothing is sent:
//   - answered: ob is cancelled with the reason and its queue item
//     resolved (not an error: the message is handled);
//   - unknown (the mailbox could not be read): an automatic reply goes
//     back to pending and is retried later; an approval fails with the
//     error, for the owner to see. The error is returned.
func (o *Outbox) checkAnswered(ctx context.Context, ob *store.OutboxRecord) (stop bool, _ error) {
	original, err := o.Original(ob)
	found, reason := false, ""
	if err == nil {
		found, reason, err = o.Answered(ctx, original, ob.ID, ob.Auto)
	}
	if err != nil {
		to := store.OutboxFailed
		if ob.Auto {
			to = store.OutboxPending
		}
		msg := "nothing was sent: " + err.Error()
		if _, terr := o.Store.TransitionOutbox(ob.ID, []string{store.OutboxSending}, to, func(r *store.OutboxRecord) error {
			r.Error = msg
			return nil
		}); terr != nil {
			return true, errors.Join(err, terr)
		}
		if to == store.OutboxFailed && ob.QueueID != "" {
			o.failQueueItem(ob, msg+"; approve again")
			o.notify("queue_updated", ob.QueueID, ob.Account)
		}
		return true, fmt.Errorf("send %s: %w", ob.MessageID, err)
	}
	if !found {
		return false, nil
	}
	if _, err := o.Store.TransitionOutbox(ob.ID, []string{store.OutboxSending}, store.OutboxCancelled, func(r *store.OutboxRecord) error {
		r.Error = reason
		return nil
	}); err != nil {
		return true, fmt.Errorf("outbox %s: cancel: %w", ob.ID, err)
	}
	o.refundCap(ob) // counted when it was decided, never sent
	if ob.QueueID != "" {
		if err := o.resolve(ctx, ob.QueueID, reason+"; approving it sent nothing"); err != nil && !errors.Is(err, store.ErrConflict) {
			return true, fmt.Errorf("resolve %s: %w", ob.QueueID, err)
		}
	}
	o.logger().Info("not sent: "+reason, "account", ob.Account, "outbox", ob.ID)
	return true, nil
}

func (o *Outbox) resolve(ctx context.Context, id, reason string) error {
	if o.Resolve != nil {
		return o.Resolve(ctx, id, reason)
	}
	_, err := o.Store.TransitionQueueItem(id, []string{store.QueueApproved}, store.QueueResolved, func(q *store.QueueItem) error {
		q.Reasons = append(q.Reasons, reason)
		q.Error = ""
		return nil
	})
	if err == nil {
		o.notify("queue_updated", id, "")
	}
	return err
}

// markAnswered flags the original \Answered after a send, so the mailbox
// itself records the answer: only when ob was addressed to the original's
// reply party (store.AnswersTo; a reply to a stranger who borrowed the
// original's Message-ID answers nothing). A failure is logged: the reply
// in Sent (In-Reply-To) still records it.
func (o *Outbox) markAnswered(ob *store.OutboxRecord) {
	if o.Mailer == nil || (ob.InReplyTo == "" && ob.Message.UID == 0) {
		return
	}
	original, err := o.Original(ob)
	if err != nil {
		o.logger().Warn(`set \Answered on the original`, "account", ob.Account, "outbox", ob.ID, "err", err)
		return
	}
	if !store.AnswersTo(ob.To, original) {
		o.logger().Info(`not flagged \Answered: the reply was not addressed to the original's sender`, "account", ob.Account, "outbox", ob.ID)
		return
	}
	// Not the caller's context: the reply is out either way.
	ctx, cancel := context.WithTimeout(context.Background(), markAnsweredTimeout)
	defer cancel()
	mark := func(ctx context.Context, _ *store.OutboxRecord) error {
		return o.Mailer.MarkAnswered(ctx, original)
	}
	if o.MarkAnswered != nil {
		mark = o.MarkAnswered
	}
	if err := mark(ctx, ob); err != nil {
		o.logger().Warn(`set \Answered on the original`, "account", ob.Account, "outbox", ob.ID, "err", err)
	}
}

// capRefunder is the store's side of giving back a daily auto-send
// reservation (store.Store has it).
type capRefunder interface {
	RefundAutoSend(account, contact, day string) error
}

// refundCap gives back the daily auto-send cap that an automatic reply or
// follow-up (Auto, no Kind: counted by IncrAutoSend when it was decided)
// reserved, once ob was cancelled without being sent. It runs after the
// record's one transition to cancelled, so a reservation is refunded at
// most once. The day is the record's CreatedAt, the day it was counted
// on; mails of their own (a Kind) were never counted.
func (o *Outbox) refundCap(ob *store.OutboxRecord) {
	r, ok := o.Store.(capRefunder)
	if !ok || ob == nil || !ob.Auto || ob.Kind != "" || len(ob.To) != 1 {
		return
	}
	if err := r.RefundAutoSend(ob.Account, ob.To[0], store.Day(ob.CreatedAt)); err != nil {
		o.logger().Warn("auto-send cap not given back", "account", ob.Account, "outbox", ob.ID, "err", err)
	}
}
