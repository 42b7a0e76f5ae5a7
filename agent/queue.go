package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/mailagent/mailagent/internal/compose"
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
func (p *Pipeline) Approve(ctx context.Context, id, final string) (*store.QueueItem, error) {
	a := p.Actor
	item, err := a.Store.TransitionQueueItem(id, openStatuses, store.QueueApproved, func(q *store.QueueItem) error {
		if q.Kind != store.KindDraft {
			return fmt.Errorf("%w: %s is a %s, not a draft", ErrNotActionable, q.ID, q.Kind)
		}
		if final != "" {
			q.Final = final
		}
		q.Error = ""
		return nil
	})
	if errors.Is(err, store.ErrConflict) {
		return nil, notActionable(id, a.Store)
	}
	if err != nil {
		return nil, fmt.Errorf("approve %s: %w", id, err)
	}
	obID := ApprovalOutboxID(item.ID)
	if ob, err := a.Store.GetOutbox(obID); err == nil {
		// Approved before and the send failed: send again. When the owner
		// changed the text since, the reply is composed anew.
		if ob.Status == store.OutboxFailed {
			body := item.Final
			if body == "" {
				body = item.Draft
			}
			var raw []byte
			var msgID string
			if body != ob.Body {
				if raw, msgID, body, err = p.buildApproved(item); err != nil {
					p.failItem(item.ID, err.Error())
					return item, err
				}
			}
			_, err := a.Store.TransitionOutbox(obID, []string{store.OutboxFailed}, store.OutboxPending, func(r *store.OutboxRecord) error {
				if raw != nil {
					r.Raw, r.MessageID, r.Body = raw, msgID, body
				}
				r.Error = ""
				return nil
			})
			if err != nil && !errors.Is(err, store.ErrConflict) {
				return item, err
			}
		}
	} else {
		raw, msgID, body, err := p.buildApproved(item)
		if err != nil {
			p.failItem(item.ID, err.Error())
			return item, err
		}
		acct := p.Accounts[item.Account]
		if err := a.Store.PutOutbox(&store.OutboxRecord{
			ID: obID, Account: item.Account, From: acct.From.Email, MessageID: msgID, QueueID: item.ID,
			InReplyTo: item.MessageID, To: addrStrings(item.To), Raw: raw, Status: store.OutboxPending,
			CreatedAt: p.now(), Message: item.Message, Subject: item.Subject, Body: body,
		}); err != nil {
			return item, fmt.Errorf("outbox for %s: %w", id, err)
		}
	}
	if err := p.Deliver(ctx, obID); err != nil {
		return item, err
	}
	if q, err := a.Store.GetQueueItem(id); err == nil {
		item = q
	}
	return item, nil
}

// buildApproved composes the reply for an approved item. Recipients are
// the item's, which code chose from the original message.
func (p *Pipeline) buildApproved(item *store.QueueItem) (raw []byte, msgID, body string, err error) {
	acct := p.Accounts[item.Account]
	body = item.Final
	if body == "" {
		body = item.Draft
	}
	r := compose.Reply{From: acct.From, Subject: item.Subject, Body: body, Date: p.now(),
		ExtraHeaders: map[string]string{TraceHeader: item.ID}}
	if rec, err := p.Store.GetMessage(item.Message); err == nil {
		parent, err := compose.NewReply(recordMessage(rec), acct.From, acct.Owner.Addresses, p.Policy.ReplyAll)
		if err == nil {
			parent.Body, parent.Date, parent.ExtraHeaders = r.Body, r.Date, r.ExtraHeaders
			r = parent
		}
	}
	// The queued recipients win: they were fixed when the item was made.
	r.To, r.Cc = item.To, nil
	if len(r.To) == 0 {
		return nil, "", "", errors.New("the item has no recipient")
	}
	raw, msgID, err = compose.Build(r)
	return raw, msgID, body, err
}

func (p *Pipeline) failItem(id, reason string) {
	_, _ = p.Actor.Store.TransitionQueueItem(id, []string{store.QueueApproved}, store.QueueFailed, func(q *store.QueueItem) error {
		q.Error = reason
		return nil
	})
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

func (p *Pipeline) dropIMAPDraft(ctx context.Context, item *store.QueueItem) {
	if item.IMAPDraftUID == 0 || p.Actor.Mailer == nil {
		return
	}
	if err := p.Actor.Mailer.DeleteDraft(ctx, item.Account, item.IMAPDraftUID); err != nil {
		p.logger().Warn("delete IMAP draft", "queue", item.ID, "err", err)
	}
}

// Edit stores the owner's text as Final; the model's Draft is kept.
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

// Regenerate asks the drafter again, with the owner's instruction.
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
	var contact *store.Contact
	if c, err := a.Store.GetContact(rec.Account, rec.From.Email); err == nil {
		contact = c
	}
	req := DraftRequest{Owner: prompts.Owner{Name: acct.Owner.Name, Email: first(acct.Owner.Addresses)},
		Profile: a.Profile, Contact: contact, Thread: p.threadContext(rec), From: formatAddress(rec.From),
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
		errs = errors.Join(errs, p.appendSent(ctx, ob, has))
	}
	for _, ob := range pending {
		errs = errors.Join(errs, p.Deliver(ctx, ob.ID))
	}
	return errs
}

// OwnerReplied resolves open queue items that the owner answered from
// their own mail client: sent is a message read from the Sent folder.
func (p *Pipeline) OwnerReplied(ctx context.Context, account string, sent *mail.Message) error {
	a := p.Actor
	parents := append(slices.Clone(sent.InReplyTo), sent.References...)
	if len(parents) == 0 {
		return nil
	}
	keys := map[string]bool{}
	for _, id := range parents {
		keys[mail.IDKey(id)] = true
	}
	if sent.HeaderValue(TraceHeader) != "" {
		return nil // our own send, already accounted for
	}
	var hits []*store.QueueItem
	if err := a.Store.ListQueue("", func(q *store.QueueItem) error {
		if q.Account == account && slices.Contains(openStatuses, q.Status) && keys[mail.IDKey(q.MessageID)] {
			hits = append(hits, q)
		}
		return nil
	}); err != nil {
		return err
	}
	for _, q := range hits {
		item, err := a.Store.TransitionQueueItem(q.ID, openStatuses, store.QueueResolved, func(q *store.QueueItem) error {
			q.Reasons = append(q.Reasons, "the owner replied from their mail client")
			return nil
		})
		if err != nil {
			continue
		}
		p.dropIMAPDraft(ctx, item)
		a.notify(Event{Kind: "queue_updated", ID: item.ID, Account: item.Account})
	}
	return nil
}
