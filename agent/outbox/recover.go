package outbox

import (
	"context"
	"errors"
	"fmt"

	"github.com/mailagent/mailagent/store"
)

// Recover finishes what a crash interrupted in the outbox:
//   - an approval an older version left approved with no record (nothing
//     sent) goes back to the owner, failed;
//   - pending (never reached SMTP, or failed temporarily): sent now, after
//     a look in Sent;
//   - sending (cut off mid-transaction): if Sent has its Message-ID it is
//     done; if the transaction provably never reached SMTP DATA
//     (OutboxRecord.BeforeData, a StagedMailer), nothing was delivered and
//     it is pending again and sent now, like any pending record (the
//     attempt it was counts; FailingSince is kept, so its retries still
//     follow how long it has been failing); otherwise it is NOT re-sent,
//     because it may have been delivered: the owner is shown it and
//     decides;
//   - sent but not yet in Sent: appended.
func (o *Outbox) Recover(ctx context.Context) error {
	if err := o.recoverStranded(); err != nil {
		return err
	}
	var pending, sending, sent []*store.OutboxRecord
	for status, dst := range map[string]*[]*store.OutboxRecord{store.OutboxPending: &pending, store.OutboxSending: &sending, store.OutboxSent: &sent} {
		if err := o.Store.ListOutbox(status, func(r *store.OutboxRecord) error {
			*dst = append(*dst, r)
			return nil
		}); err != nil {
			return fmt.Errorf("list outbox: %w", err)
		}
	}
	if o.Mailer == nil && len(pending)+len(sending)+len(sent) > 0 {
		return errors.New("recover the outbox: no mailer to finish the sends with")
	}
	var errs error
	for _, ob := range sending {
		has, err := o.Mailer.SentHas(ctx, ob.Account, ob.MessageID)
		if err != nil {
			errs = errors.Join(errs, fmt.Errorf("recover %s: %w", ob.ID, err))
			continue
		}
		if has {
			errs = errors.Join(errs, o.finishSent(ctx, ob, true))
			continue
		}
		if ob.BeforeData {
			_, err := o.Store.TransitionOutbox(ob.ID, []string{store.OutboxSending}, store.OutboxPending, func(r *store.OutboxRecord) error {
				if !r.BeforeData { // changed since the list: decide again next time
					return store.ErrConflict
				}
				r.BeforeData = false
				r.Error = "interrupted before SMTP DATA: nothing was delivered, sent again"
				return nil
			})
			switch {
			case err == nil:
				pending = append(pending, ob)
			case !errors.Is(err, store.ErrConflict):
				errs = errors.Join(errs, fmt.Errorf("recover %s: %w", ob.ID, err))
			}
			continue
		}
		_, err = o.Store.TransitionOutbox(ob.ID, []string{store.OutboxSending}, store.OutboxFailed, func(r *store.OutboxRecord) error {
			r.Error = ErrAmbiguousSend.Error()
			return nil
		})
		switch {
		case err == nil:
			o.failQueueItem(ob, ErrAmbiguousSend.Error()+"; approve to send it again")
		case !errors.Is(err, store.ErrConflict): // a conflict: another process moved it
			errs = errors.Join(errs, fmt.Errorf("recover %s: %w", ob.ID, err))
		}
	}
	for _, ob := range sent {
		has, err := o.Mailer.SentHas(ctx, ob.Account, ob.MessageID)
		if err != nil {
			errs = errors.Join(errs, err)
			continue
		}
		o.markAnswered(ob) // a crash may have come before it
		errs = errors.Join(errs, o.appendSent(ctx, ob, has))
	}
	for _, ob := range pending {
		errs = errors.Join(errs, o.Deliver(ctx, ob.ID))
	}
	return errs
}

// recoverStranded hands back approvals cut off between two writes by an
// older version (approved, no outbox record, nothing sent). Approvals
// today write both in one transaction (store.ApproveQueueItem).
func (o *Outbox) recoverStranded() error {
	sa, ok := o.Store.(strandedStore)
	if !ok {
		return nil
	}
	stranded, err := sa.StrandedApprovals(ApprovalID)
	if err != nil {
		return fmt.Errorf("stranded approvals: %w", err)
	}
	for _, q := range stranded {
		_, err := o.Store.TransitionQueueItem(q.ID, []string{store.QueueApproved}, store.QueueFailed, func(q *store.QueueItem) error {
			q.Error = "the approval was interrupted before anything was sent; approve it again"
			return nil
		})
		if err != nil && !errors.Is(err, store.ErrConflict) {
			return fmt.Errorf("stranded approval %s: %w", q.ID, err)
		}
		o.notify("queue_updated", q.ID, q.Account)
	}
	return nil
}
