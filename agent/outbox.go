package agent

// The outbox protocol, in one place: how a reply is sent exactly once
// (Deliver: pending → sending → sent → appended, the Sent folder and the
// mailbox's "already answered" checked before SMTP), what a failure
// means (temporary: retried by SendDue with a backoff; after DATA:
// ambiguous, never re-sent blindly; permanent: back to the owner), the
// timer of due work (SendDue), cancelling a delayed send, and recovery
// after a crash (Recover).

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/store"
)

// TemporaryError marks a send failure that may succeed later.
type TemporaryError struct{ Err error }

func (e *TemporaryError) Error() string   { return e.Err.Error() }
func (e *TemporaryError) Unwrap() error   { return e.Err }
func (e *TemporaryError) Temporary() bool { return true }

// maybeDelivered reports a failure after the message was handed over and
// before the server confirmed it.
func maybeDelivered(err error) bool {
	var m interface{ MaybeDeliveredErr() bool }
	return errors.As(err, &m) && m.MaybeDeliveredErr()
}

func isTemporary(err error) bool {
	var t interface{ Temporary() bool }
	if errors.As(err, &t) {
		return t.Temporary()
	}
	return false
}

// ErrAmbiguousSend is recorded when a crash interrupted an SMTP
// transaction: the message may or may not have been delivered.
var ErrAmbiguousSend = errors.New("interrupted during the SMTP transaction: it may have been delivered, so it is not re-sent automatically")

// Deliver sends one outbox record exactly once:
//  1. pending → sending (one transaction: a second caller gets a conflict
//     and sends nothing);
//  2. the Sent folder is checked for the Message-ID, in case an earlier
//     attempt got through;
//  3. the SMTP transaction;
//  4. sending → sent, then APPEND to Sent and sent → appended.
//
// A record left in "sending" by a crash is never re-sent blindly: Recover
// looks for it in Sent and otherwise hands it to the owner.
func (p *Pipeline) Deliver(ctx context.Context, id string) error {
	a := p.Actor
	ob, err := a.Store.TransitionOutbox(id, []string{store.OutboxPending}, store.OutboxSending, func(r *store.OutboxRecord) error {
		r.Attempts++
		return nil
	})
	if errors.Is(err, store.ErrConflict) {
		return nil // another process is sending it, or it is done
	}
	if err != nil {
		return fmt.Errorf("outbox %s: %w", id, err)
	}
	if has, err := a.Mailer.SentHas(ctx, ob.Account, ob.MessageID); err == nil && has {
		return p.finishSent(ctx, ob, true)
	}
	if stop, err := p.checkAnswered(ctx, ob); stop {
		return err
	}
	sendErr := a.Mailer.Send(ctx, ob.Account, ob.From, ob.To, ob.Raw)
	if sendErr != nil && ctx.Err() != nil {
		// Stopping mid-transaction: the record stays "sending", and the
		// next start's Recover looks for it in Sent and otherwise hands it
		// to the owner. It may have been delivered, so it is not retried.
		return fmt.Errorf("send %s: %w", ob.MessageID, sendErr)
	}
	if sendErr != nil {
		to := store.OutboxFailed
		switch {
		case maybeDelivered(sendErr):
			sendErr = fmt.Errorf("%w: %w", ErrAmbiguousSend, sendErr)
		case isTemporary(sendErr):
			to = store.OutboxPending // retried by SendDue after a backoff
		}
		_, err := a.Store.TransitionOutbox(id, []string{store.OutboxSending}, to, func(r *store.OutboxRecord) error {
			r.Error = sendErr.Error()
			return nil
		})
		if err != nil {
			return errors.Join(sendErr, err)
		}
		if to == store.OutboxFailed {
			p.failQueueItem(ob, sendErr.Error())
		}
		a.notify(Event{Kind: "queue_updated", ID: ob.QueueID, Account: ob.Account})
		return fmt.Errorf("send %s: %w", ob.MessageID, sendErr)
	}
	return p.finishSent(ctx, ob, false)
}

// finishSent records a delivered message, appends the Sent copy (unless it
// is there already) and closes the queue item.
func (p *Pipeline) finishSent(ctx context.Context, ob *store.OutboxRecord, inSent bool) error {
	a := p.Actor
	ob, err := a.Store.TransitionOutbox(ob.ID, []string{store.OutboxSending}, store.OutboxSent, func(r *store.OutboxRecord) error {
		r.SentAt = p.now()
		r.Error = ""
		return nil
	})
	if err != nil {
		return fmt.Errorf("outbox %s: mark sent: %w", ob.ID, err)
	}
	p.afterSend(ob)
	p.markAnswered(ob)
	return p.appendSent(ctx, ob, inSent)
}

func (p *Pipeline) appendSent(ctx context.Context, ob *store.OutboxRecord, inSent bool) error {
	a := p.Actor
	if !inSent {
		if err := a.Mailer.AppendSent(ctx, ob.Account, ob.Raw); err != nil {
			// Delivered but not filed: Recover appends it later.
			return fmt.Errorf("append %s to Sent: %w", ob.MessageID, err)
		}
	}
	if _, err := a.Store.TransitionOutbox(ob.ID, []string{store.OutboxSent}, store.OutboxAppended, nil); err != nil && !errors.Is(err, store.ErrConflict) {
		return fmt.Errorf("outbox %s: mark appended: %w", ob.ID, err)
	}
	return nil
}

// draftCleanupTimeout bounds removing an IMAP draft after a send.
const draftCleanupTimeout = 30 * time.Second

// afterSend updates the queue item and the contact's memory.
func (p *Pipeline) afterSend(ob *store.OutboxRecord) {
	a := p.Actor
	if ob.QueueID != "" {
		item, err := a.Store.TransitionQueueItem(ob.QueueID, []string{store.QueueApproved, store.QueueFailed}, store.QueueSent, nil)
		if err == nil && item.IMAPDraftUID != 0 && a.Mailer != nil {
			// Not the caller's context: the reply is out, and the draft
			// should go even if the approving client has gone. Bounded,
			// so a stalled server cannot hold the account's connection.
			dctx, cancel := context.WithTimeout(context.Background(), draftCleanupTimeout)
			err := a.Mailer.DeleteDraft(dctx, item.Account, item.IMAPDraftUID)
			cancel()
			if err != nil {
				p.logger().Warn("delete IMAP draft", "queue", item.ID, "err", err)
			}
		}
	}
	now := p.now()
	for _, to := range ob.To {
		_, err := a.Store.UpdateContact(ob.Account, to, func(c *store.Contact) error {
			c.Outbound++
			if ob.Auto {
				// An automatic reply never makes an address known: knowing
				// someone comes only from mail the owner wrote or approved.
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
	a.notify(Event{Kind: "sent", ID: ob.ID, Account: ob.Account})
}

func (p *Pipeline) failQueueItem(ob *store.OutboxRecord, reason string) {
	if ob.QueueID == "" {
		// An auto-send that failed for good goes to the owner as a draft.
		item := withMessage(p.Actor.Store, draftFromOutbox(ob, store.QueueFailed, "auto-send failed: "+reason))
		item.Error = reason
		err := p.Actor.Store.PutQueueItem(item)
		if err != nil {
			p.logger().Error("queue a failed auto-send", "outbox", ob.ID, "err", err)
		}
		p.Actor.notify(Event{Kind: "queue_added", ID: QueueID(ob.Message), Account: ob.Account})
		return
	}
	_, err := p.Actor.Store.TransitionQueueItem(ob.QueueID, []string{store.QueueApproved}, store.QueueFailed, func(q *store.QueueItem) error {
		q.Error = reason
		return nil
	})
	if err != nil && !errors.Is(err, store.ErrConflict) {
		// The outbox record says failed and is shown to the owner either
		// way; the item's status is what could not be written.
		p.logger().Error("mark a failed approval", "queue", ob.QueueID, "err", err)
	}
}

// Cancel stops a scheduled send: a delayed auto-send (its draft is put in
// the queue) or an approval still in its undo window (policy.approval_delay;
// its item goes back to pending, whole). id is the outbox record's id, or
// the queue item's id for an approval. Once the send has started it is too
// late, and the error wraps ErrNotActionable.
func (p *Pipeline) Cancel(ctx context.Context, id string) error {
	a := p.Actor
	outboxID := id
	if strings.HasPrefix(id, "q_") {
		outboxID = ApprovalOutboxID(id)
	}
	cur, err := a.Store.GetOutbox(outboxID)
	if err != nil {
		return fmt.Errorf("cancel %s: %w", id, err)
	}
	if cur.QueueID != "" {
		item, err := a.Store.CancelApproval(outboxID)
		if errors.Is(err, store.ErrConflict) {
			return p.tooLate(id, outboxID)
		}
		if err != nil {
			return fmt.Errorf("cancel %s: %w", id, err)
		}
		a.notify(Event{Kind: "queue_updated", ID: item.ID, Account: item.Account})
		return nil
	}
	ob, err := a.Store.TransitionOutbox(outboxID, []string{store.OutboxScheduled}, store.OutboxCancelled, nil)
	if errors.Is(err, store.ErrConflict) {
		return p.tooLate(id, outboxID)
	}
	if err != nil {
		return fmt.Errorf("cancel %s: %w", id, err)
	}
	err = a.Store.PutQueueItem(withMessage(a.Store, draftFromOutbox(ob, store.QueuePending, "auto-send cancelled by the owner")))
	a.notify(Event{Kind: "queue_added", ID: QueueID(ob.Message), Account: ob.Account})
	return err
}

// tooLate is Cancel's answer for a send that is no longer scheduled.
func (p *Pipeline) tooLate(id, outboxID string) error {
	if cur, err := p.Actor.Store.GetOutbox(outboxID); err == nil {
		return fmt.Errorf("%w: %s is %s, too late to cancel", ErrNotActionable, id, cur.Status)
	}
	return fmt.Errorf("%w: %s", ErrNotActionable, id)
}

// SendApproval waits out the undo window of the approved item queueID
// (when its reply is scheduled) and then sends it, for a process that has
// no due timer (an approval made with no watcher running). wait sleeps
// until the given time or returns ctx's error; when ctx ends first the
// approval is cancelled (the item goes back to pending) and the error
// says so. A send cancelled meanwhile by someone else is not sent. It
// returns the item as it ends up.
func (p *Pipeline) SendApproval(ctx context.Context, queueID string, wait func(context.Context, time.Time) error) (*store.QueueItem, error) {
	a := p.Actor
	obID := ApprovalOutboxID(queueID)
	ob, err := a.Store.GetOutbox(obID)
	if err != nil {
		return nil, fmt.Errorf("send %s: %w", queueID, err)
	}
	if ob.Status == store.OutboxScheduled {
		if err := wait(ctx, ob.SendAt); err != nil {
			if cerr := p.Cancel(context.WithoutCancel(ctx), obID); cerr != nil && !errors.Is(cerr, ErrNotActionable) {
				return nil, errors.Join(fmt.Errorf("send %s: %w", queueID, err), cerr)
			}
			return nil, fmt.Errorf("%w: %s: not sent; it is back in the queue", ErrApprovalCancelled, queueID)
		}
		if _, err := a.Store.TransitionOutbox(obID, []string{store.OutboxScheduled}, store.OutboxPending, nil); err != nil && !errors.Is(err, store.ErrConflict) {
			return nil, fmt.Errorf("send %s: %w", queueID, err)
		}
	}
	// Pending (just moved, or left by a temporary failure) is sent now;
	// anything else (cancelled, already sent) is left alone by Deliver.
	derr := p.Deliver(ctx, obID)
	item, err := a.Store.GetQueueItem(queueID)
	if err != nil {
		return nil, errors.Join(derr, err)
	}
	return item, derr
}

// ErrApprovalCancelled is returned by SendApproval when the undo window
// ended with a cancellation.
var ErrApprovalCancelled = errors.New("approval cancelled")

// dueStore is what SendDue uses when the store has it (store.Store
// does): indexed queries that read only what is due, and the daily prune.
type dueStore interface {
	DueOutbox(status string, before time.Time, fn func(*store.OutboxRecord) error) error
	DueQueue(status string, before time.Time, fn func(*store.QueueItem) error) error
	PruneIfDue(now time.Time) (store.PruneReport, bool, error)
}

// SendDue moves scheduled sends whose time has come to pending and sends
// them, retries pending sends whose backoff is over, and wakes snoozed
// items. The watcher calls it on a timer: with a store that has due
// indexes it reads only what is due, and once a day it prunes history.
func (p *Pipeline) SendDue(ctx context.Context) error {
	a := p.Actor
	now := p.now()
	listOutbox := func(status string, fn func(*store.OutboxRecord) error) error {
		if ds, ok := a.Store.(dueStore); ok {
			return ds.DueOutbox(status, now, fn)
		}
		return a.Store.ListOutbox(status, fn)
	}
	listQueue := func(status string, fn func(*store.QueueItem) error) error {
		if ds, ok := a.Store.(dueStore); ok {
			return ds.DueQueue(status, now, fn)
		}
		return a.Store.ListQueue(status, fn)
	}
	var due []string
	if err := listOutbox(store.OutboxScheduled, func(r *store.OutboxRecord) error {
		if !r.SendAt.After(now) {
			due = append(due, r.ID)
		}
		return nil
	}); err != nil {
		return err
	}
	var errs error
	for _, id := range due {
		if _, err := a.Store.TransitionOutbox(id, []string{store.OutboxScheduled}, store.OutboxPending, nil); err != nil {
			if !errors.Is(err, store.ErrConflict) { // a conflict: cancelled meanwhile
				errs = errors.Join(errs, err)
			}
			continue
		}
		errs = errors.Join(errs, p.Deliver(ctx, id))
	}
	// Sends that failed temporarily wait longer after each attempt.
	var retry []string
	if err := listOutbox(store.OutboxPending, func(r *store.OutboxRecord) error {
		if !r.UpdatedAt.Add(store.RetryBackoff(r.Attempts)).After(now) {
			retry = append(retry, r.ID)
		}
		return nil
	}); err != nil {
		return errors.Join(errs, err)
	}
	for _, id := range retry {
		errs = errors.Join(errs, p.Deliver(ctx, id))
	}
	var wake []string
	if err := listQueue(store.QueueSnoozed, func(q *store.QueueItem) error {
		if !q.SnoozeUntil.After(now) {
			wake = append(wake, q.ID)
		}
		return nil
	}); err != nil {
		errs = errors.Join(errs, err)
	}
	for _, id := range wake {
		q, err := a.Store.TransitionQueueItem(id, []string{store.QueueSnoozed}, store.QueuePending, nil)
		switch {
		case err == nil:
			a.notify(Event{Kind: "queue_updated", ID: id, Account: q.Account})
		case !errors.Is(err, store.ErrConflict): // a conflict: acted on meanwhile
			errs = errors.Join(errs, err)
		}
	}
	if ds, ok := a.Store.(dueStore); ok {
		if _, _, err := ds.PruneIfDue(now); err != nil {
			errs = errors.Join(errs, fmt.Errorf("prune: %w", err))
		}
	}
	return errs
}

// Recover finishes what a crash interrupted in the outbox:
//   - pending (never reached SMTP, or failed temporarily): sent now, after
//     a look in Sent;
//   - sending (cut off mid-transaction): if Sent has its Message-ID it is
//     done; otherwise it is NOT re-sent, because it may have been
//     delivered: the owner is shown it and decides;
//   - sent but not yet in Sent: appended.
func (p *Pipeline) Recover(ctx context.Context) error {
	a := p.Actor
	// An approval cut off between two writes by an older version (approved,
	// no outbox record, nothing sent) goes back to the owner. Approvals
	// today write both in one transaction (store.ApproveQueueItem).
	if sa, ok := a.Store.(interface {
		StrandedApprovals(outboxID func(string) string) ([]*store.QueueItem, error)
	}); ok {
		stranded, err := sa.StrandedApprovals(ApprovalOutboxID)
		if err != nil {
			return fmt.Errorf("stranded approvals: %w", err)
		}
		for _, q := range stranded {
			_, err := a.Store.TransitionQueueItem(q.ID, []string{store.QueueApproved}, store.QueueFailed, func(q *store.QueueItem) error {
				q.Error = "the approval was interrupted before anything was sent; approve it again"
				return nil
			})
			if err != nil && !errors.Is(err, store.ErrConflict) {
				return fmt.Errorf("stranded approval %s: %w", q.ID, err)
			}
			a.notify(Event{Kind: "queue_updated", ID: q.ID, Account: q.Account})
		}
	}
	var pending, sending, sent []*store.OutboxRecord
	for status, dst := range map[string]*[]*store.OutboxRecord{store.OutboxPending: &pending, store.OutboxSending: &sending, store.OutboxSent: &sent} {
		if err := a.Store.ListOutbox(status, func(r *store.OutboxRecord) error {
			*dst = append(*dst, r)
			return nil
		}); err != nil {
			return fmt.Errorf("list outbox: %w", err)
		}
	}
	var errs error
	for _, ob := range sending {
		has, err := a.Mailer.SentHas(ctx, ob.Account, ob.MessageID)
		if err != nil {
			errs = errors.Join(errs, fmt.Errorf("recover %s: %w", ob.ID, err))
			continue
		}
		if has {
			errs = errors.Join(errs, p.finishSent(ctx, ob, true))
			continue
		}
		if _, err := a.Store.TransitionOutbox(ob.ID, []string{store.OutboxSending}, store.OutboxFailed, func(r *store.OutboxRecord) error {
			r.Error = ErrAmbiguousSend.Error()
			return nil
		}); err == nil {
			p.failQueueItem(ob, ErrAmbiguousSend.Error()+"; approve to send it again")
		}
	}
	for _, ob := range sent {
		has, err := a.Mailer.SentHas(ctx, ob.Account, ob.MessageID)
		if err != nil {
			errs = errors.Join(errs, err)
			continue
		}
		p.markAnswered(ob) // a crash may have come before it
		errs = errors.Join(errs, p.appendSent(ctx, ob, has))
	}
	for _, ob := range pending {
		errs = errors.Join(errs, p.Deliver(ctx, ob.ID))
	}
	return errs
}
