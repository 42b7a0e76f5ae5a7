package daemon

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/internal/compose"
	"github.com/mailagent/mailagent/store"
)

// draftCopyFailed starts the queue item error the actor records when a
// draft could not be saved to the Drafts folder (agent.Actor.enqueue).
const draftCopyFailed = "could not save the draft to the Drafts folder: "

// copySettle is how long a delivered reply is left to its own APPEND to
// Sent before the timer files it: the approval that sent it may still be
// appending.
const copySettle = time.Minute

// retryCopies files the IMAP copies that failed earlier (a Sent folder
// that could not be found or was full, a server that refused the APPEND):
// replies delivered but not yet in Sent (outbox "sent"), and queued
// drafts whose copy to the Drafts folder failed. It runs on the retry
// timer, so a copy is made once the cause is fixed (a folder created, a
// config corrected) without a restart. It returns how many copies are
// still missing per account, with the last error.
func (d *Daemon) retryCopies(ctx context.Context) map[string]copyState {
	out := map[string]copyState{}
	fail := func(account string, err error) {
		s := out[account]
		s.missing++
		s.err = err
		out[account] = s
	}
	var sent []*store.OutboxRecord
	if err := d.Store.ListOutbox(store.OutboxSent, func(r *store.OutboxRecord) error {
		sent = append(sent, r)
		return nil
	}); err != nil {
		d.log().Error("list replies not yet in Sent", "err", err)
	}
	for _, ob := range sent {
		if ctx.Err() != nil {
			return out
		}
		if d.now().Sub(ob.SentAt) < copySettle {
			continue
		}
		if err := d.fileSent(ctx, ob); err != nil {
			d.log().Warn("copy a sent reply to Sent", "account", ob.Account, "message_id", ob.MessageID, "err", err)
			fail(ob.Account, fmt.Errorf("copy of a sent reply to the Sent folder: %w", err))
		}
	}
	var drafts []*store.QueueItem
	if err := d.Store.ListQueue(store.QueuePending, func(q *store.QueueItem) error {
		if q.Kind == store.KindDraft && q.IMAPDraftUID == 0 && strings.HasPrefix(q.Error, draftCopyFailed) {
			drafts = append(drafts, q)
		}
		return nil
	}); err != nil {
		d.log().Error("list drafts not yet in Drafts", "err", err)
	}
	for _, q := range drafts {
		if ctx.Err() != nil {
			return out
		}
		if err := d.fileDraft(ctx, q); err != nil {
			d.log().Warn("copy a draft to Drafts", "account", q.Account, "item", q.ID, "err", err)
			fail(q.Account, fmt.Errorf("copy of a draft to the Drafts folder: %w", err))
		}
	}
	return out
}

// copyState is what retryCopies leaves undone for one account.
type copyState struct {
	missing int
	err     error
}

func (d *Daemon) fileSent(ctx context.Context, ob *store.OutboxRecord) error {
	has, err := d.Mailer.SentHas(ctx, ob.Account, ob.MessageID)
	if err != nil {
		return err
	}
	if !has {
		if err := d.Mailer.AppendSent(ctx, ob.Account, ob.Raw); err != nil {
			return err
		}
	}
	_, err = d.Store.TransitionOutbox(ob.ID, []string{store.OutboxSent}, store.OutboxAppended, nil)
	if errors.Is(err, store.ErrConflict) {
		return nil // filed meanwhile
	}
	return err
}

// fileDraft builds the draft again from the queue item and its message
// (as the actor built it: the queued recipients, the reply headers of the
// parent, the trace header) and saves it to Drafts.
func (d *Daemon) fileDraft(ctx context.Context, q *store.QueueItem) error {
	acct, ok := d.Pipeline.Accounts[q.Account]
	if !ok || !acct.DraftsToIMAP {
		return nil
	}
	rec, err := d.Store.GetMessage(q.Message)
	if err != nil {
		return fmt.Errorf("message of %s: %w", q.ID, err)
	}
	body := q.Final
	if body == "" {
		body = q.Draft
	}
	r := compose.Reply{From: acct.From, To: q.To, Subject: rec.Subject, Body: body,
		ParentReferences: rec.References, ParentInReplyTo: rec.InReplyTo,
		ExtraHeaders: map[string]string{agent.TraceHeader: rec.TraceID}}
	if !rec.Synthesized {
		r.ParentMessageID = rec.MessageID
	}
	raw, _, err := compose.Build(r)
	if err != nil {
		return fmt.Errorf("build the draft of %s: %w", q.ID, err)
	}
	uid, err := d.Mailer.AppendDraft(ctx, q.Account, raw)
	if err != nil {
		return err
	}
	_, err = d.Store.TransitionQueueItem(q.ID, []string{store.QueuePending}, store.QueuePending, func(it *store.QueueItem) error {
		if it.IMAPDraftUID != 0 {
			return nil
		}
		it.IMAPDraftUID = uid
		if strings.HasPrefix(it.Error, draftCopyFailed) {
			it.Error = ""
		}
		return nil
	})
	if errors.Is(err, store.ErrConflict) {
		// Approved or rejected meanwhile: the draft is not wanted.
		return d.Mailer.DeleteDraft(ctx, q.Account, uid)
	}
	return err
}
