package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/mailagent/mailagent/agent/outbox"
	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/prompts"
	"github.com/mailagent/mailagent/store"
)

// ErrNotActionable is returned when a queue item is in a state the action
// does not apply to (already sent, rejected, …).
var ErrNotActionable = outbox.ErrNotActionable

// open statuses: an item the owner can still act on (outbox.OpenStatuses).
var openStatuses = outbox.OpenStatuses

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
//
// An approval that sends nothing because the message was answered already
// (Deliver's check: a reply to its sender, \Answered on it) or the owner
// handled it returns the resolved item with an error wrapping ErrNotSent
// that says why: never a silent success.
//
// With a Policy.ApprovalDelay the reply is not sent here: its outbox
// record is scheduled that far ahead (the undo window) and the item stays
// approved; Cancel (with the item's or the record's id) takes it back to
// pending, and SendDue (or SendApproval) sends it once the time has come.
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
	if prev == nil || prev.Status == store.OutboxFailed || prev.Status == store.OutboxCancelled {
		// A cancelled record is an undone approval: nothing was sent.
		first := prev == nil || prev.Status == store.OutboxCancelled
		if done, err := p.handledByOwner(ctx, cur, first); err != nil || done != nil {
			if err == nil {
				err = outbox.NotSent(done)
			}
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
		InReplyTo: cur.MessageID, To: addrStrings(cur.To), Raw: raw,
		CreatedAt: p.now(), Message: cur.Message, Subject: cur.Subject, Body: body, Offer: cur.Offer,
	}
	if err := p.schedule(ob, ob.CreatedAt, p.Policy.ApprovalDelay); err != nil {
		p.recordItemError(cur.ID, err.Error())
		return nil, fmt.Errorf("approve %s: %w", id, err)
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
	learned := p.learnFromApproval(ctx, item) // learn.go: "learned: …"
	item.Learned = learned
	if ob.Status == store.OutboxScheduled {
		// The undo window: the due timer (or SendApproval) sends it.
		a.notify(Event{Kind: "scheduled", ID: obID, Account: cur.Account})
		return item, nil
	}
	if err := p.Deliver(ctx, obID); err != nil {
		return item, err
	}
	if q, err := a.Store.GetQueueItem(id); err == nil {
		item = q
		item.Learned = learned
	}
	// Answered meanwhile (Deliver's last check): resolved, nothing sent.
	return item, outbox.NotSent(item)
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
		if errors.Is(err, store.ErrConflict) {
			return nil, notActionable(item.ID, a.Store)
		}
		if err != nil {
			return nil, fmt.Errorf("approve %s: %w", item.ID, err)
		}
	}
	done, err := p.resolveItem(ctx, item.ID, openStatuses, reason+"; approving it sent nothing")
	if errors.Is(err, store.ErrConflict) {
		// The item changed since it was read: another approval won the
		// race, and its reply (under the item's Message-ID) is what Sent
		// showed. This one sent nothing and is told so, as when it loses
		// the approval's own transaction.
		return nil, notActionable(item.ID, a.Store)
	}
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
	p.learnFromReject(item) // learn.go
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

// Unsnooze returns a snoozed item to the queue now (pending, no wake
// time). An item that is not snoozed is an error wrapping
// ErrNotActionable.
func (p *Pipeline) Unsnooze(ctx context.Context, id string) error {
	item, err := p.Actor.Store.TransitionQueueItem(id, []string{store.QueueSnoozed}, store.QueuePending, func(q *store.QueueItem) error {
		q.SnoozeUntil = time.Time{}
		return nil
	})
	if errors.Is(err, store.ErrConflict) {
		return notActionable(id, p.Actor.Store)
	}
	if err != nil {
		return fmt.Errorf("unsnooze %s: %w", id, err)
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
	req.Memory = p.memoryFor(rec.Account, rec.SenderAuth.Identity(), req.Intents, true) // a queued item: the owner reads it
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
		var rec *store.MessageRecord
		if k := mail.IDKey(q.MessageID); k != "" && slices.ContainsFunc(mine, func(m *mail.Message) bool {
			return slices.ContainsFunc(m.InReplyTo, func(id string) bool { return mail.IDKey(id) == k })
		}) {
			rec = p.itemRecord(q) // read only for an item some reply names
		}
		for _, m := range mine {
			if isDraftCopy(q, m) {
				reason = reasonDraftSentByOwner
				break
			}
			if answersItem(q, rec, m, owner) {
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
