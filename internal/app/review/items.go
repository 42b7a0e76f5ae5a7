package review

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/internal/app/actions"
	"github.com/mailagent/mailagent/internal/app/api"
	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/store"
	"github.com/mailagent/mailagent/tui"
)

// The review TUI's items are built here from the api's records. The
// detail of any item, whatever its kind and state, comes from one place,
// api.LoadDetail (what explain and `queue show` read too), so a reply the
// agent sent on its own shows the same recipients, thread,
// classification, gates and ids as a queued draft.

// queueToItem converts a queue item; known says which recipients the
// owner has written to (nil: not looked up, none marked new).
func queueToItem(q *store.QueueItem, known map[string]bool) tui.Item {
	it := tui.Item{
		ID: q.ID, Kind: q.Kind, Account: q.Account, Received: q.Written(), From: tuiAddr(q.From),
		Subject: q.Subject, Draft: q.Draft, Final: q.Final, Status: q.Status, Error: q.Error,
		Reasons: q.Reasons, SnoozeUntil: q.SnoozeUntil, MessageID: q.MessageID, QueueID: q.ID,
		Updated: q.UpdatedAt,
	}
	for _, a := range q.To {
		ta := tuiAddr(a)
		if known != nil {
			ta.New = !known[a.Email]
		}
		it.To = append(it.To, ta)
	}
	if c := q.Classification; c != nil {
		it.Intents, it.Risk, it.Confidence, it.Summary, it.Comments = c.Intents, c.Risk, c.Confidence, c.Summary, c.Comments
	}
	if it.Summary == "" && len(q.Reasons) > 0 {
		it.Summary = strings.Join(q.Reasons, "; ")
	}
	it.Reasons = append(InvitationLines(q.ID, q.Invitation), it.Reasons...) // queue_rsvp.go: the invitation in the detail
	// review_invite.go: the TUI's A, D and T answer it.
	it.Invitation = invitationTitle(q.Invitation)
	it.Gates = tuiGates(q.Gates)
	if Sendable(q) {
		for _, g := range RiskyGates(q) {
			it.Warnings = append(it.Warnings, g.Gate+": "+g.Reason)
		}
	}
	if q.Status == store.QueueSent || q.Status == store.QueueResolved {
		it.Status = tui.StatusSent
	}
	return it
}

// later returns the later of a and b. An item's version (tui.Item.Updated)
// is the latest UpdatedAt of the records it is built from; a detail reads
// at least the records the list reads for the same item (an approved
// item's outbox record, api.LoadDetail), so a detail is never older than
// a list of the same state.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func tuiAddr(a mail.Address) tui.Address { return tui.Address{Name: a.Name, Email: a.Email} }

func tuiAddrs(as []mail.Address) []tui.Address {
	var out []tui.Address
	for _, a := range as {
		out = append(out, tuiAddr(a))
	}
	return out
}

func tuiGates(gs []store.GateResult) []tui.Gate {
	var out []tui.Gate
	for _, g := range gs {
		out = append(out, tui.Gate{Name: g.Gate, Pass: g.Pass, Reason: g.Reason})
	}
	return out
}

// outboxToItem converts a reply the agent sent (or will send) on its own.
// Its From is left to the detail: the record knows only the account's
// own address, which is not whose mail it answers.
func outboxToItem(o *store.OutboxRecord) tui.Item {
	it := tui.Item{ID: o.ID, Kind: tui.KindSent, Account: o.Account, Received: o.CreatedAt,
		Subject: o.Subject, Draft: o.Body, SendAt: o.SendAt, Error: o.Error, OutboxID: o.ID,
		Decision: agent.DecisionAutoSend, Updated: o.UpdatedAt}
	if !o.SentAt.IsZero() && o.SendAt.IsZero() {
		it.SendAt = o.SentAt
	}
	for _, a := range o.To {
		it.To = append(it.To, tui.Address{Email: a})
	}
	switch o.Status {
	case store.OutboxScheduled, store.OutboxPending, store.OutboxSending:
		it.Status = tui.StatusSending
	case store.OutboxFailed:
		it.Status = tui.StatusFailed
	default:
		it.Status = tui.StatusSent
	}
	return it
}

// recordToItem converts a message that needs review.
func recordToItem(r *store.MessageRecord) tui.Item {
	it := tui.Item{ID: needsReviewPrefix + r.TraceID, Kind: tui.KindNeedsReview, Account: r.Account, Received: r.Written(),
		From: tuiAddr(r.From), Subject: r.Subject, Status: tui.StatusPending, Error: r.Error, Updated: r.UpdatedAt,
		Thread: []tui.ThreadMessage{{From: tuiAddr(r.From), Date: r.Date, Subject: r.Subject, Text: r.Excerpt}}}
	if len(r.Reasons) > 0 {
		it.Summary = strings.Join(r.Reasons, "; ")
	}
	fillFromMessage(&it, r)
	return it
}

// decidedToItem converts a message the agent decided on without asking
// (archive, ignore, notify, auto_send).
func decidedToItem(r *store.MessageRecord) tui.Item {
	it := tui.Item{ID: needsReviewPrefix + r.TraceID, Kind: tui.KindDecided, Account: r.Account, Received: r.Written(),
		From: tuiAddr(r.From), Subject: r.Subject, Status: tui.StatusDone, Updated: r.UpdatedAt,
		Thread: []tui.ThreadMessage{{From: tuiAddr(r.From), Date: r.Date, Subject: r.Subject, Text: r.Excerpt}}}
	fillFromMessage(&it, r)
	return it
}

// fillFromMessage completes an item with what the message record knows,
// keeping what the item has already.
func fillFromMessage(it *tui.Item, r *store.MessageRecord) {
	if it.From.Email == "" && it.From.Name == "" {
		it.From = tuiAddr(r.From)
	}
	if it.Cc == nil {
		it.Cc = tuiAddrs(r.Cc)
	}
	if c := r.Classification; c != nil && len(it.Intents) == 0 && it.Risk == "" {
		it.Intents, it.Risk, it.Confidence, it.Comments = c.Intents, c.Risk, c.Confidence, c.Comments
		if it.Summary == "" {
			it.Summary = c.Summary
		}
	}
	if it.Decision == "" || it.Decision == agent.DecisionAutoSend && r.Decision != "" {
		it.Decision = r.Decision
	}
	if len(it.Reasons) == 0 {
		it.Reasons = r.Reasons
	}
	if len(it.Gates) == 0 {
		it.Gates = tuiGates(r.Gates)
	}
	if it.MessageID == "" {
		it.MessageID = r.MessageID
	}
	if it.TraceID == "" {
		it.TraceID = r.TraceID
	}
}

// detailToItem builds the item id names (a queue id, an outbox id, or
// needsReviewPrefix and a trace id) from its Detail.
func detailToItem(id string, d *api.Detail, known map[string]bool) (tui.Item, error) {
	var it tui.Item
	switch {
	case strings.HasPrefix(id, needsReviewPrefix):
		if d.Message == nil {
			return tui.Item{}, fmt.Errorf("detail %s: the message record is gone: %w", id, store.ErrNotFound)
		}
		if d.Message.State == store.StateNeedsReview {
			it = recordToItem(d.Message)
		} else {
			it = decidedToItem(d.Message)
		}
		if d.Outbox != nil && it.Draft == "" {
			it.Draft = d.Outbox.Body // what the agent sent on its own
		}
	case d.Outbox != nil && d.Outbox.ID == id:
		it = outboxToItem(d.Outbox)
	case d.Item != nil:
		it = queueToItem(d.Item, known)
		if ob := d.Outbox; ob != nil && d.Item.Status == store.QueueApproved && ob.Status == store.OutboxScheduled {
			it.SendAt = ob.SendAt // the undo window of the approval
		}
	default:
		return tui.Item{}, fmt.Errorf("detail %s: %w", id, store.ErrNotFound)
	}
	it.ID = id
	if d.Item != nil {
		it.QueueID = d.Item.ID
		it.Updated = later(it.Updated, d.Item.UpdatedAt)
	}
	if d.Outbox != nil {
		it.OutboxID = d.Outbox.ID
		it.Updated = later(it.Updated, d.Outbox.UpdatedAt)
	}
	if m := d.Message; m != nil {
		fillFromMessage(&it, m)
		it.Updated = later(it.Updated, m.UpdatedAt)
	}
	if t := d.Trace; t != nil {
		it.TraceID = t.TraceID
		if it.Decision == "" {
			it.Decision = t.Decision
		}
		if len(it.Gates) == 0 {
			it.Gates = tuiGates(t.Gates)
		}
		for _, s := range t.Steps {
			if s.Snapshot != nil {
				it.Steps = append(it.Steps, tui.StepSnapshot{Name: s.Name, Input: s.Snapshot.Input, Output: s.Snapshot.Output})
			}
		}
	}
	if len(d.Thread) > 0 {
		it.Thread = nil
		for _, m := range d.Thread {
			it.Thread = append(it.Thread, tui.ThreadMessage{From: tuiAddr(m.From), Date: m.Date, Subject: m.Subject, Text: m.Excerpt})
		}
	}
	return it, nil
}

func (b *Backend) detail(ctx context.Context, svc api.Service, id string) (tui.Item, error) {
	d, err := api.LoadDetail(ctx, svc, strings.TrimPrefix(id, needsReviewPrefix))
	if err != nil {
		return tui.Item{}, fmt.Errorf("detail %s: %w", id, err)
	}
	var known map[string]bool
	if d.Item != nil && !strings.HasPrefix(id, needsReviewPrefix) {
		k, err := RecipientStatus(ctx, svc, []store.QueueItem{*d.Item})
		if err != nil {
			return tui.Item{}, err
		}
		known = k[d.Item.Account]
	}
	return detailToItem(id, d, known)
}

// decided lists what the agent decided without asking in the last
// sentWindow. A watcher too old to serve the store leaves the view empty
// rather than failing the whole list.
func (b *Backend) decided(ctx context.Context, svc api.Service) ([]tui.Item, error) {
	recs, err := api.DecidedWithoutAsking(ctx, svc, b.Now().Add(-sentWindow))
	if errors.Is(err, api.ErrNoActions) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := make([]tui.Item, 0, len(recs))
	for i := range recs {
		out = append(out, decidedToItem(&recs[i]))
	}
	return out, nil
}

func findOutbox(ctx context.Context, svc api.Service, id string) (*store.OutboxRecord, error) {
	obs, err := svc.Outbox(ctx, "")
	if err != nil {
		return nil, err
	}
	for i := range obs {
		if obs[i].ID == id {
			return &obs[i], nil
		}
	}
	return nil, store.ErrNotFound
}

// Unsnooze returns a snoozed item to the queue now (tui.Unsnoozer).
func (b *Backend) Unsnooze(ctx context.Context, id string) error {
	return b.use(ctx, "unsnooze", func(svc api.Service) error { return svc.Unsnooze(ctx, id) })
}

// approvalSender is what SendApproved needs from local actions.
type approvalSender interface {
	SendApproval(ctx context.Context, queueID string, wait func(context.Context, time.Time) error) (*store.QueueItem, error)
}

// SendApproved sends an approved reply whose undo window has ended
// (tui.ApprovalSender). With a watcher running it does nothing: the
// watcher's due timer sends it. Without one, review's approvals do not
// wait out the window (actions.Defer, in use), so this is what sends.
func (b *Backend) SendApproved(ctx context.Context, id string) error {
	return b.use(ctx, "send", func(svc api.Service) error {
		l, ok := svc.(*api.Local)
		if !ok {
			return nil
		}
		s, ok := l.Actions.(approvalSender)
		if !ok {
			return fmt.Errorf("send %s: %w", id, api.ErrNoActions)
		}
		_, err := s.SendApproval(ctx, id, waitUntil)
		return err
	})
}

// waitUntil sleeps until at or until ctx ends (actions.WaitUndo without a
// notice: the TUI counts down itself).
func waitUntil(ctx context.Context, at time.Time) error {
	return actions.WaitUndo(ctx, nil, "", "", at, nil)
}

var (
	_ tui.Unsnoozer      = (*Backend)(nil)
	_ tui.ApprovalSender = (*Backend)(nil)
)
