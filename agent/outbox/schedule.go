package outbox

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	netmail "net/mail"
	"strings"
	"time"

	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/internal/netpolicy"
	"github.com/mailagent/mailagent/store"
)

// Cancel stops a scheduled send: a delayed auto-send (its draft is put in
// the queue) or an approval still in its undo window (its item goes back
// to pending, whole, in one transaction). id is the outbox record's id, or
// the queue item's id for an approval. Once the send has started it is too
// late, and the error wraps ErrNotActionable.
func (o *Outbox) Cancel(ctx context.Context, id string) error {
	outboxID := id
	if strings.HasPrefix(id, "q_") {
		outboxID = ApprovalID(id)
	}
	cur, err := o.Store.GetOutbox(outboxID)
	if err != nil {
		return fmt.Errorf("cancel %s: %w", id, err)
	}
	if cur.QueueID != "" {
		item, err := o.Store.CancelApproval(outboxID)
		if errors.Is(err, store.ErrConflict) {
			return o.tooLate(id, outboxID)
		}
		if err != nil {
			return fmt.Errorf("cancel %s: %w", id, err)
		}
		o.refundCap(cur) // an automatic follow-up stopped in its delay
		o.notify("queue_updated", item.ID, item.Account)
		return nil
	}
	ob, err := o.Store.TransitionOutbox(outboxID, []string{store.OutboxScheduled}, store.OutboxCancelled, nil)
	if errors.Is(err, store.ErrConflict) {
		return o.tooLate(id, outboxID)
	}
	if err != nil {
		return fmt.Errorf("cancel %s: %w", id, err)
	}
	o.refundCap(ob) // an auto-send stopped in policy.send_delay
	if ob.Kind != "" {
		// A mail of its own: cancelled is all; there is no draft to queue.
		o.notify("queue_updated", ob.ID, ob.Account)
		return nil
	}
	item := o.draftFromOutbox(ob, store.QueuePending, "auto-send cancelled by the owner")
	if err := o.Store.PutQueueItem(item); err != nil {
		return fmt.Errorf("cancel %s: queue the draft: %w", id, err)
	}
	o.notify("queue_added", item.ID, ob.Account)
	return nil
}

// tooLate is Cancel's answer for a send that is no longer scheduled.
func (o *Outbox) tooLate(id, outboxID string) error {
	if cur, err := o.Store.GetOutbox(outboxID); err == nil {
		return fmt.Errorf("%w: %s is %s, too late to cancel", ErrNotActionable, id, cur.Status)
	}
	return fmt.Errorf("%w: %s", ErrNotActionable, id)
}

// SendApproval waits out the undo window of the approved item queueID
// (when its reply is scheduled) and then sends it, for a process that has
// no due timer (an approval made with no watcher running). wait sleeps
// until the given time or returns ctx's error; when ctx ends first the
// approval is cancelled (the item goes back to pending) and the error
// wraps ErrApprovalCancelled. A send cancelled meanwhile by someone else
// is not sent. It returns the item as it ends up.
func (o *Outbox) SendApproval(ctx context.Context, queueID string, wait func(context.Context, time.Time) error) (*store.QueueItem, error) {
	obID := ApprovalID(queueID)
	ob, err := o.Store.GetOutbox(obID)
	if err != nil {
		return nil, fmt.Errorf("send %s: %w", queueID, err)
	}
	if ob.Status == store.OutboxScheduled {
		if err := wait(ctx, ob.SendAt); err != nil {
			if cerr := o.Cancel(context.WithoutCancel(ctx), obID); cerr != nil && !errors.Is(cerr, ErrNotActionable) {
				return nil, errors.Join(fmt.Errorf("send %s: %w", queueID, err), cerr)
			}
			return nil, fmt.Errorf("%w: %s: not sent; it is back in the queue", ErrApprovalCancelled, queueID)
		}
		if _, err := o.Store.TransitionOutbox(obID, []string{store.OutboxScheduled}, store.OutboxPending, nil); err != nil && !errors.Is(err, store.ErrConflict) {
			return nil, fmt.Errorf("send %s: %w", queueID, err)
		}
	}
	// Pending (just moved, or left by a temporary failure) is sent now;
	// anything else (cancelled, already sent) is left alone by Deliver.
	derr := o.Deliver(ctx, obID)
	item, err := o.Store.GetQueueItem(queueID)
	if err != nil {
		return nil, errors.Join(derr, err)
	}
	if derr == nil {
		derr = NotSent(item) // answered elsewhere: resolved, and nothing went out
	}
	return item, derr
}

// SendDue moves scheduled sends whose time has come to pending and sends
// them, retries pending sends whose wait (store.SendRetryAt) is over,
// and wakes snoozed items. The watcher calls it on a timer: with a store
// that has due indexes it reads only what is due, and once a day it
// prunes history. Errors other than a conflict are returned, joined.
func (o *Outbox) SendDue(ctx context.Context) error {
	now := o.now()
	ds, indexed := o.Store.(dueStore)
	listOutbox := func(status string, fn func(*store.OutboxRecord) error) error {
		if indexed {
			return ds.DueOutbox(status, now, fn)
		}
		return o.Store.ListOutbox(status, fn)
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
		if _, err := o.Store.TransitionOutbox(id, []string{store.OutboxScheduled}, store.OutboxPending, nil); err != nil {
			if !errors.Is(err, store.ErrConflict) { // a conflict: cancelled meanwhile
				errs = errors.Join(errs, err)
			}
			continue
		}
		errs = errors.Join(errs, o.Deliver(ctx, id))
	}
	// Sends that failed temporarily wait as long as they have been
	// failing (store.SendRetryAt).
	var retry []string
	if err := listOutbox(store.OutboxPending, func(r *store.OutboxRecord) error {
		if !store.SendRetryAt(r).After(now) {
			retry = append(retry, r.ID)
		}
		return nil
	}); err != nil {
		return errors.Join(errs, err)
	}
	for _, id := range retry {
		errs = errors.Join(errs, o.Deliver(ctx, id))
	}
	errs = errors.Join(errs, o.wakeSnoozed(now, ds, indexed))
	if indexed {
		if _, _, err := ds.PruneIfDue(now); err != nil {
			errs = errors.Join(errs, fmt.Errorf("prune: %w", err))
		}
	}
	return errs
}

// wakeSnoozed moves snoozed queue items whose time has come to pending.
func (o *Outbox) wakeSnoozed(now time.Time, ds dueStore, indexed bool) error {
	var wake []string
	collect := func(q *store.QueueItem) error {
		if !q.SnoozeUntil.After(now) {
			wake = append(wake, q.ID)
		}
		return nil
	}
	var errs error
	if indexed {
		errs = ds.DueQueue(store.QueueSnoozed, now, collect)
	} else {
		errs = o.Store.ListQueue(store.QueueSnoozed, collect)
	}
	for _, id := range wake {
		q, err := o.Store.TransitionQueueItem(id, []string{store.QueueSnoozed}, store.QueuePending, nil)
		switch {
		case err == nil:
			o.notify("queue_updated", id, q.Account)
		case !errors.Is(err, store.ErrConflict): // a conflict: acted on meanwhile
			errs = errors.Join(errs, err)
		}
	}
	return errs
}

// ErrRefused wraps every refusal of Schedule: the record must not be
// written, and nothing is sent.
var ErrRefused = errors.New("outbox: refused to schedule the mail")

// Schedule is the one door of a new outbox record: every outgoing mail
// (auto-replies, approvals, invitation answers, nudges, unsubscribe mail,
// digests) goes through it before the record is first written. It checks
// the record and sets its first status: pending, which Deliver sends at
// once, or with delay > 0 scheduled for now+delay (an auto-send's
// policy.send_delay, an approval's or an unsubscribe's undo window),
// which SendDue sends when it is due and Cancel can stop until then.
//
// It refuses (an error wrapping ErrRefused, and the record marked failed
// with the reason, so a caller that wrote it anyway sends nothing):
//   - a record with no recipient, or a recipient that is not a public
//     mail address (netpolicy.CheckMailAddress): address literals, local
//     names. The domain of ob.From (the account's own) and allowDomains
//     (the owner's other addresses' domains, policy.allow_domains) are
//     accepted whatever their form;
//   - an automatic mail (ob.Auto, or a record of its own Kind) whose
//     message lacks an Auto-Submitted header (RFC 3834): mail nobody
//     wrote by hand must say so, so that other robots do not answer it.
func Schedule(ob *store.OutboxRecord, now time.Time, delay time.Duration, allowDomains ...string) error {
	ob.Status, ob.SendAt = store.OutboxPending, time.Time{}
	if err := check(ob, allowDomains); err != nil {
		ob.Status, ob.Error = store.OutboxFailed, err.Error()
		return err
	}
	if delay > 0 {
		ob.Status, ob.SendAt = store.OutboxScheduled, now.Add(delay)
	}
	return nil
}

// check is Schedule's refusal rule.
func check(ob *store.OutboxRecord, allowDomains []string) error {
	if len(ob.To) == 0 {
		return fmt.Errorf("%w %s: it has no recipient", ErrRefused, ob.ID)
	}
	allowed := append([]string{netpolicy.MailDomain(ob.From)}, allowDomains...)
	for _, to := range ob.To {
		if err := netpolicy.CheckMailAddress(to, allowed); err != nil {
			return fmt.Errorf("%w %s: %w (add its domain to policy.allow_domains if it is yours)", ErrRefused, ob.ID, err)
		}
	}
	if ob.Auto || ob.Kind != "" {
		if _, err := netmail.ReadMessage(bytes.NewReader(ob.Raw)); err != nil {
			return fmt.Errorf("%w %s: its message does not parse: %w", ErrRefused, ob.ID, err)
		}
		if !mail.Parse(ob.Raw).AutoSubmitted() { // the one is-automatic rule
			return fmt.Errorf("%w %s: an automatic mail without an Auto-Submitted header", ErrRefused, ob.ID)
		}
	}
	return nil
}

// StandaloneID is the outbox record id of a mail of its own (not a
// reply): derived from its kind, account and ref (what it is about: the
// list message's key, the digest period), so that asking twice makes one
// record.
func StandaloneID(kind, account, ref string) string {
	h := sha256.Sum256([]byte(kind + "\x00" + account + "\x00" + ref))
	return "ob_" + kind + "_" + hex.EncodeToString(h[:8])
}

// SendWhenDue waits out the undo window of the scheduled record id (a
// mail of its own: an unsubscribe) and then sends it, for a process that
// has no due timer. wait sleeps until the given time or returns ctx's
// error; when ctx ends first the record is cancelled and the error wraps
// ErrApprovalCancelled. A record cancelled meanwhile is not sent. It
// returns the record as it ends up.
func (o *Outbox) SendWhenDue(ctx context.Context, id string, wait func(context.Context, time.Time) error) (*store.OutboxRecord, error) {
	ob, err := o.Store.GetOutbox(id)
	if err != nil {
		return nil, fmt.Errorf("send %s: %w", id, err)
	}
	if ob.Status == store.OutboxScheduled {
		if err := wait(ctx, ob.SendAt); err != nil {
			if cerr := o.Cancel(context.WithoutCancel(ctx), id); cerr != nil && !errors.Is(cerr, ErrNotActionable) {
				return nil, errors.Join(fmt.Errorf("send %s: %w", id, err), cerr)
			}
			return nil, fmt.Errorf("%w: %s: not sent", ErrApprovalCancelled, id)
		}
		if _, err := o.Store.TransitionOutbox(id, []string{store.OutboxScheduled}, store.OutboxPending, nil); err != nil && !errors.Is(err, store.ErrConflict) {
			return nil, fmt.Errorf("send %s: %w", id, err)
		}
	}
	derr := o.Deliver(ctx, id)
	cur, err := o.Store.GetOutbox(id)
	if err != nil {
		return nil, errors.Join(derr, err)
	}
	return cur, derr
}
