package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/prompts"
	"github.com/mailagent/mailagent/store"
)

// ErrNotActionable is returned when a queue item is in a state the action
// does not apply to (already sent, rejected, …).
var ErrNotActionable = errors.New("queue item is not in a state this action applies to")

// open statuses: an item the owner can still act on.
var openStatuses = []string{store.QueuePending, store.QueueSnoozed, store.QueueFailed}

func notActionable(id string, st ActStore) error {
	if q, err := st.GetQueueItem(id); err == nil {
		return fmt.Errorf("%w: %s is %s", ErrNotActionable, id, q.Status)
	}
	return fmt.Errorf("%w: %s", ErrNotActionable, id)
}

// Approve sends a queued draft (final, when non-empty, replaces the text)
// through the outbox. Human approval skips the auto-send gates, but the
// recipients are still the ones code chose when the item was queued. Two
// approvals of the same item send once: the status change is atomic.
//
// The reply goes out under the item's one Message-ID (DraftMessageID), the
// one its Drafts-folder copy carries. Before the first send the Sent folder
// is read: when the owner already sent that copy, or replied to the
// message, from their own client, the item is resolved and nothing is
// sent. When the Sent folder cannot be read the item fails with the
// reason, and nothing is sent.
func (p *Pipeline) Approve(ctx context.Context, id, final string) (*store.QueueItem, error) {
	a := p.Actor
	cur, err := a.Store.GetQueueItem(id)
	if err != nil {
		return nil, fmt.Errorf("approve %s: %w", id, err)
	}
	if cur.Kind != store.KindDraft {
		return nil, fmt.Errorf("%w: %s is a %s, not a draft", ErrNotActionable, cur.ID, cur.Kind)
	}
	if !slices.Contains(openStatuses, cur.Status) {
		return nil, notActionable(id, a.Store)
	}
	if final != "" {
		cur.Final = final
	}
	if cur.DraftMessageID == "" {
		cur.DraftMessageID = p.newDraftMessageID(cur.Account)
	}
	obID := ApprovalOutboxID(cur.ID)
	prev, err := a.Store.GetOutbox(obID)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("approve %s: %w", id, err)
	}
	if prev == nil || prev.Status == store.OutboxFailed {
		if done, err := p.handledByOwner(ctx, cur, prev == nil); err != nil || done != nil {
			return done, err
		}
	}
	raw, msgID, body, err := p.buildApproved(cur)
	if err != nil {
		p.recordItemError(cur.ID, "could not build the reply: "+err.Error())
		return nil, fmt.Errorf("approve %s: %w", id, err)
	}
	ob := &store.OutboxRecord{
		ID: obID, Account: cur.Account, From: p.Accounts[cur.Account].From.Email, MessageID: msgID, QueueID: cur.ID,
		InReplyTo: cur.MessageID, To: addrStrings(cur.To), Raw: raw, Status: store.OutboxPending,
		CreatedAt: p.now(), Message: cur.Message, Subject: cur.Subject, Body: body,
	}
	// The item is approved and its outbox record written in one
	// transaction: a crash or a failed write leaves both or neither, never
	// an approved item with nothing to send. A change to the item since it
	// was read (an edit, a second approval) is a conflict.
	item, _, err := a.Store.ApproveQueueItem(id, openStatuses, func(q *store.QueueItem) error {
		if !q.UpdatedAt.Equal(cur.UpdatedAt) {
			return fmt.Errorf("%s changed while it was being approved: %w", id, store.ErrConflict)
		}
		q.Final, q.DraftMessageID, q.Error = cur.Final, cur.DraftMessageID, ""
		return nil
	}, ob)
	if errors.Is(err, store.ErrConflict) {
		return nil, notActionable(id, a.Store)
	}
	if err != nil {
		return nil, fmt.Errorf("approve %s: %w", id, err)
	}
	if err := p.Deliver(ctx, obID); err != nil {
		return item, err
	}
	if q, err := a.Store.GetQueueItem(id); err == nil {
		item = q
	}
	return item, nil
}

// failOpenItem marks an open item failed with the reason (it stays
// actionable: failed is an open status).
func (p *Pipeline) failOpenItem(id, reason string) {
	_, err := p.Actor.Store.TransitionQueueItem(id, openStatuses, store.QueueFailed, func(q *store.QueueItem) error {
		q.Error = reason
		return nil
	})
	if err != nil {
		p.logger().Warn("fail queue item", "queue", id, "err", err)
	}
}

// recordItemError notes a problem on an open item without closing it.
func (p *Pipeline) recordItemError(id, reason string) {
	cur, err := p.Actor.Store.GetQueueItem(id)
	if err == nil && slices.Contains(openStatuses, cur.Status) {
		_, err = p.Actor.Store.TransitionQueueItem(id, []string{cur.Status}, cur.Status, func(q *store.QueueItem) error {
			q.Error = reason
			return nil
		})
	}
	if err != nil {
		p.logger().Warn("record queue item error", "queue", id, "err", err)
	}
}

// handledByOwner looks in the Sent folder, before an approved item is
// sent, for the owner having handled it from their own client: its Drafts
// copy (by Message-ID; only before the first send, since later our own
// attempt may be there and Deliver reconciles that), or their own reply.
// When found the item is resolved (and a failed outbox record cancelled)
// and returned. An error reading Sent fails the item: sending without
// looking could answer twice.
func (p *Pipeline) handledByOwner(ctx context.Context, item *store.QueueItem, firstSend bool) (*store.QueueItem, error) {
	a := p.Actor
	if a.Mailer == nil {
		return nil, nil
	}
	reason := ""
	if firstSend {
		has, err := a.Mailer.SentHas(ctx, item.Account, item.DraftMessageID)
		if err != nil {
			return nil, p.sentUnreadable(item, err)
		}
		if has {
			reason = reasonDraftSentByOwner
		}
	}
	if reason == "" {
		found, err := p.ownerAnsweredInSent(ctx, item)
		if err != nil {
			return nil, p.sentUnreadable(item, err)
		}
		if found {
			reason = reasonOwnerReplied
		}
	}
	if reason == "" {
		return nil, nil
	}
	if !firstSend {
		_, err := a.Store.TransitionOutbox(ApprovalOutboxID(item.ID), []string{store.OutboxFailed}, store.OutboxCancelled, func(r *store.OutboxRecord) error {
			r.Error = reason
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("approve %s: %w", item.ID, err)
		}
	}
	done, err := p.resolveItem(ctx, item.ID, openStatuses, reason+"; approving it sent nothing")
	if err != nil {
		return nil, fmt.Errorf("approve %s: %w", item.ID, err)
	}
	return done, nil
}

func (p *Pipeline) sentUnreadable(item *store.QueueItem, err error) error {
	p.failOpenItem(item.ID, "nothing was sent: could not read the Sent folder to check that the owner had not replied already ("+err.Error()+"); approve again")
	return fmt.Errorf("approve %s: nothing was sent: read the Sent folder: %w", item.ID, err)
}

// buildApproved composes the reply for an approved item, under the item's
// Message-ID. Recipients are the item's, which code chose from the
// original message.
func (p *Pipeline) buildApproved(item *store.QueueItem) (raw []byte, msgID, body string, err error) {
	body = itemBody(item)
	raw, msgID, err = composeItem(p.itemReply(item), item, body, map[string]string{TraceHeader: item.ID})
	return raw, msgID, body, err
}

// Reject closes an item without sending, keeping the reason.
func (p *Pipeline) Reject(ctx context.Context, id, reason string) error {
	item, err := p.Actor.Store.TransitionQueueItem(id, openStatuses, store.QueueRejected, func(q *store.QueueItem) error {
		q.RejectReason = reason
		return nil
	})
	if errors.Is(err, store.ErrConflict) {
		return notActionable(id, p.Actor.Store)
	}
	if err != nil {
		return fmt.Errorf("reject %s: %w", id, err)
	}
	p.dropIMAPDraft(ctx, item)
	p.Actor.notify(Event{Kind: "queue_updated", ID: id, Account: item.Account})
	return nil
}

// Edit stores the owner's text as Final; the model's Draft is kept. The
// Drafts-folder copy, if any, is replaced by one with the new text.
func (p *Pipeline) Edit(ctx context.Context, id, text string) (*store.QueueItem, error) {
	item, err := p.Actor.Store.TransitionQueueItem(id, openStatuses, store.QueuePending, func(q *store.QueueItem) error {
		if q.Kind != store.KindDraft {
			return fmt.Errorf("%w: %s is a %s, not a draft", ErrNotActionable, q.ID, q.Kind)
		}
		q.Final = text
		return nil
	})
	if errors.Is(err, store.ErrConflict) {
		return nil, notActionable(id, p.Actor.Store)
	}
	if err != nil {
		return nil, fmt.Errorf("edit %s: %w", id, err)
	}
	item = p.replaceIMAPDraft(ctx, item)
	p.Actor.notify(Event{Kind: "queue_updated", ID: id, Account: item.Account})
	return item, nil
}

// Snooze hides an item until the given time.
func (p *Pipeline) Snooze(ctx context.Context, id string, until time.Time) error {
	item, err := p.Actor.Store.TransitionQueueItem(id, openStatuses, store.QueueSnoozed, func(q *store.QueueItem) error {
		q.SnoozeUntil = until
		return nil
	})
	if errors.Is(err, store.ErrConflict) {
		return notActionable(id, p.Actor.Store)
	}
	if err != nil {
		return fmt.Errorf("snooze %s: %w", id, err)
	}
	p.Actor.notify(Event{Kind: "queue_updated", ID: id, Account: item.Account})
	return nil
}

// Regenerate asks the drafter again, with the owner's instruction. The
// Drafts-folder copy, if any, is replaced by one with the new text.
func (p *Pipeline) Regenerate(ctx context.Context, id, instruction string) (*store.QueueItem, error) {
	a := p.Actor
	item, err := a.Store.GetQueueItem(id)
	if err != nil {
		return nil, fmt.Errorf("regenerate %s: %w", id, err)
	}
	if item.Kind != store.KindDraft || !slices.Contains(openStatuses, item.Status) {
		return nil, notActionable(id, a.Store)
	}
	rec, err := p.Store.GetMessage(item.Message)
	if err != nil {
		return nil, fmt.Errorf("regenerate %s: message: %w", id, err)
	}
	acct := p.Accounts[item.Account]
	// The same rule as the first draft: an unauthenticated sender's
	// prompt gets no one's memory and not the owner's profile.
	profile := a.Profile
	if rec.SenderAuth.Identity() == "" {
		profile = ""
	}
	req := DraftRequest{Owner: prompts.Owner{Name: acct.Owner.Name, Email: first(acct.Owner.Addresses)},
		Profile: profile, Contact: p.contactFor(rec), Thread: p.threadContext(rec), From: formatAddress(rec.From),
		Subject: rec.Subject, Body: rec.Excerpt, Instruction: instruction}
	if rec.Classification != nil {
		req.Intents = rec.Classification.Intents
	}
	d, _, err := a.Drafter.Draft(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("regenerate %s: %w", id, err)
	}
	item, err = a.Store.TransitionQueueItem(id, openStatuses, store.QueuePending, func(q *store.QueueItem) error {
		q.Draft, q.Final = d.Body, ""
		return nil
	})
	if errors.Is(err, store.ErrConflict) {
		return nil, notActionable(id, a.Store)
	}
	if err != nil {
		return nil, err
	}
	item = p.replaceIMAPDraft(ctx, item)
	a.notify(Event{Kind: "queue_updated", ID: id, Account: item.Account})
	return item, nil
}

// Cancel stops a delayed auto-send and puts its draft in the queue.
func (p *Pipeline) Cancel(ctx context.Context, outboxID string) error {
	a := p.Actor
	ob, err := a.Store.TransitionOutbox(outboxID, []string{store.OutboxScheduled}, store.OutboxCancelled, nil)
	if errors.Is(err, store.ErrConflict) {
		if cur, gerr := a.Store.GetOutbox(outboxID); gerr == nil {
			return fmt.Errorf("%w: %s is %s, too late to cancel", ErrNotActionable, outboxID, cur.Status)
		}
		return fmt.Errorf("%w: %s", ErrNotActionable, outboxID)
	}
	if err != nil {
		return fmt.Errorf("cancel %s: %w", outboxID, err)
	}
	err = a.Store.PutQueueItem(draftFromOutbox(ob, store.QueuePending, "auto-send cancelled by the owner"))
	a.notify(Event{Kind: "queue_added", ID: QueueID(ob.Message), Account: ob.Account})
	return err
}

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
			continue // cancelled meanwhile
		}
		errs = errors.Join(errs, p.Deliver(ctx, id))
	}
	// Sends that failed temporarily wait longer after each attempt.
	var retry []string
	if err := listOutbox(store.OutboxPending, func(r *store.OutboxRecord) error {
		if !r.UpdatedAt.Add(sendRetryBackoff(r.Attempts)).After(now) {
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
	_ = listQueue(store.QueueSnoozed, func(q *store.QueueItem) error {
		if !q.SnoozeUntil.After(now) {
			wake = append(wake, q.ID)
		}
		return nil
	})
	for _, id := range wake {
		if q, err := a.Store.TransitionQueueItem(id, []string{store.QueueSnoozed}, store.QueuePending, nil); err == nil {
			a.notify(Event{Kind: "queue_updated", ID: id, Account: q.Account})
		}
	}
	if ds, ok := a.Store.(dueStore); ok {
		if _, _, err := ds.PruneIfDue(now); err != nil {
			errs = errors.Join(errs, fmt.Errorf("prune: %w", err))
		}
	}
	return errs
}

// sendRetryBackoff is the wait before retrying a send that failed
// temporarily attempts times: 1 minute, doubling, at most an hour.
func sendRetryBackoff(attempts int) time.Duration {
	d := time.Minute
	for i := 1; i < attempts && d < time.Hour; i++ {
		d *= 2
	}
	return min(d, time.Hour)
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

// OwnerReplied resolves the open queue items that the owner handled from
// their own mail client; sent are messages the owner sent, read from the
// Sent folder. The caller leaves out mail mailagent sent itself. An item is
// resolved only by
//   - its own Drafts copy (the message carries the item's DraftMessageID),
//     or
//   - a reply to its message: In-Reply-To names the item's message AND the
//     reply went (To or Cc) to the item's correspondent.
//
// A References chain alone never resolves an item: an owner reply in one
// thread must not close another correspondent's item.
func (p *Pipeline) OwnerReplied(ctx context.Context, account string, sent ...*mail.Message) error {
	a := p.Actor
	var mine []*mail.Message
	for _, m := range sent {
		if m != nil && m.HeaderValue(TraceHeader) == "" && !IsAutomatic(m) {
			mine = append(mine, m)
		}
	}
	if len(mine) == 0 {
		return nil
	}
	var open []*store.QueueItem
	if err := a.Store.ListQueue("", func(q *store.QueueItem) error {
		if q.Account == account && slices.Contains(openStatuses, q.Status) {
			open = append(open, q)
		}
		return nil
	}); err != nil {
		return err
	}
	owner := p.Accounts[account].Owner
	for _, q := range open {
		reason := ""
		for _, m := range mine {
			if isDraftCopy(q, m) {
				reason = reasonDraftSentByOwner
				break
			}
			if answersItem(q, m, owner) {
				reason = reasonOwnerReplied
				break
			}
		}
		if reason == "" {
			continue
		}
		if _, err := p.resolveItem(ctx, q.ID, openStatuses, reason); err != nil && !errors.Is(err, store.ErrConflict) {
			return err
		}
	}
	return nil
}
