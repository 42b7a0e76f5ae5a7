package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/internal/api"
	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/store"
	"github.com/mailagent/mailagent/tui"
)

// ReviewOptions are the flags of `mailagent review`.
type ReviewOptions struct{}

func newReviewCmd(f *Factory, runF func(context.Context, *ReviewOptions) error) *cobra.Command {
	opts := &ReviewOptions{}
	return &cobra.Command{
		Use:   "review",
		Short: "The approval queue: read, edit, approve or reject drafts (TUI)",
		Long: `review opens the approval queue in the terminal. With a watcher running
it connects to it and shows new drafts, auto-sends and resolutions live;
without one it opens the state database directly.

The detail view shows the recipients; an address you have never written
to is marked [new], and approving a send to it asks "y/N" first.

Keys: a/y approve and send, e edit ($VISUAL/$EDITOR), r/n reject, g
regenerate with an instruction, s snooze, / filter, tab or 1-4 switch
views, enter open, esc back, ? help, q quit.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return reviewRun(cmd.Context(), f, opts)
		},
	}
}

func reviewRun(ctx context.Context, f *Factory, _ *ReviewOptions) error {
	svc, closeSvc, err := f.Service(ctx, true)
	if err != nil {
		return err
	}
	defer func() { _ = closeSvc() }()
	return runReview(ctx, f, svc, "")
}

// runReview opens the TUI; label, when set, names the model on the status
// line (the demo says it is not an AI).
func runReview(ctx context.Context, f *Factory, svc api.Service, label string) error {
	editor := os.Getenv("VISUAL")
	if editor == "" {
		editor = os.Getenv("EDITOR")
	}
	ascii, noColor := tui.DetectPlain(os.Getenv)
	return tui.Run(ctx, &serviceBackend{svc: svc, now: f.Now, label: label}, tui.Options{
		Editor: editor, ASCII: ascii, NoColor: noColor, Now: f.Now, Logger: f.Logger(),
	})
}

// serviceBackend adapts the api.Service (watcher socket or local store) to
// the TUI's Backend.
type serviceBackend struct {
	svc   api.Service
	now   func() time.Time
	label string
}

var (
	_ tui.Backend  = (*serviceBackend)(nil)
	_ tui.Detailer = (*serviceBackend)(nil)
)

// needsReviewPrefix marks list ids that name a message (by trace id)
// rather than a queue item.
const needsReviewPrefix = "msg:"

// sentWindow is how far back "sent by the agent" looks.
const sentWindow = 7 * 24 * time.Hour

// queueToItem converts a queue item; known says which recipients the
// owner has written to (nil: not looked up, none marked new).
func queueToItem(q *store.QueueItem, known map[string]bool) tui.Item {
	it := tui.Item{
		ID: q.ID, Kind: q.Kind, Account: q.Account, Received: q.CreatedAt, From: tuiAddr(q.From),
		Subject: q.Subject, Draft: q.Draft, Final: q.Final, Status: q.Status, Error: q.Error,
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
	for _, g := range q.Gates {
		it.Gates = append(it.Gates, tui.Gate{Name: g.Gate, Pass: g.Pass, Reason: g.Reason})
	}
	if q.Status == store.QueueSent || q.Status == store.QueueResolved {
		it.Status = tui.StatusSent
	}
	return it
}

func tuiAddr(a mail.Address) tui.Address { return tui.Address{Name: a.Name, Email: a.Email} }

func outboxToItem(o *store.OutboxRecord) tui.Item {
	it := tui.Item{ID: o.ID, Kind: tui.KindSent, Account: o.Account, Received: o.CreatedAt,
		From: tui.Address{Email: o.From}, Subject: o.Subject, Draft: o.Body, SendAt: o.SendAt, Error: o.Error}
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

func recordToItem(r *store.MessageRecord) tui.Item {
	it := tui.Item{ID: needsReviewPrefix + r.TraceID, Kind: tui.KindNeedsReview, Account: r.Account, Received: r.CreatedAt,
		From: tuiAddr(r.From), Subject: r.Subject, Status: tui.StatusPending, Error: r.Error,
		Thread: []tui.ThreadMessage{{From: tuiAddr(r.From), Date: r.Date, Subject: r.Subject, Text: r.Excerpt}}}
	if len(r.Reasons) > 0 {
		it.Summary = strings.Join(r.Reasons, "; ")
	}
	return it
}

// sendable reports whether approving (or retrying) q can still send it,
// so its recipients need the new-address check.
func sendable(q *store.QueueItem) bool {
	if q.Kind != store.KindDraft {
		return false
	}
	switch q.Status {
	case store.QueuePending, store.QueueSnoozed, store.QueueFailed:
		return true
	}
	return false
}

// recipientStatus asks the service which recipients of the sendable items
// the owner has written to: one call per account. The map is keyed by
// account, then address.
func recipientStatus(ctx context.Context, svc api.Service, qs []store.QueueItem) (map[string]map[string]bool, error) {
	byAccount := map[string][]string{}
	for i := range qs {
		if q := &qs[i]; sendable(q) {
			for _, a := range q.To {
				byAccount[q.Account] = append(byAccount[q.Account], a.Email)
			}
		}
	}
	out := make(map[string]map[string]bool, len(byAccount))
	for account, addrs := range byAccount {
		m, err := svc.RecipientStatus(ctx, account, addrs)
		if err != nil {
			return nil, fmt.Errorf("recipients of %s: %w", account, err)
		}
		out[account] = m
	}
	return out, nil
}

func (b *serviceBackend) List(ctx context.Context) ([]tui.Item, error) {
	qs, err := b.svc.Queue(ctx, api.QueueFilter{})
	if err != nil {
		return nil, err
	}
	known, err := recipientStatus(ctx, b.svc, qs)
	if err != nil {
		return nil, err
	}
	var out []tui.Item
	for i := range qs {
		out = append(out, queueToItem(&qs[i], known[qs[i].Account]))
	}
	recs, err := b.svc.NeedsReview(ctx)
	if err != nil {
		return nil, err
	}
	for i := range recs {
		out = append(out, recordToItem(&recs[i]))
	}
	obs, err := b.svc.Outbox(ctx, "")
	if err != nil {
		return nil, err
	}
	cutoff := b.now().Add(-sentWindow)
	for i := range obs {
		if o := &obs[i]; o.Auto && o.Status != store.OutboxCancelled && o.CreatedAt.After(cutoff) {
			out = append(out, outboxToItem(o))
		}
	}
	return out, nil
}

func (b *serviceBackend) Status(ctx context.Context) (tui.Status, error) {
	s, err := b.svc.Status(ctx)
	if err != nil {
		return tui.Status{}, err
	}
	out := tui.Status{WatcherConnected: s.Watcher, AutoSentToday: s.AutoSentToday, AutoSendCap: s.AutoSendCap}
	for _, a := range s.Accounts {
		state := a.State
		if a.Error != "" {
			state += " (" + a.Error + ")"
		}
		out.Accounts = append(out.Accounts, tui.AccountState{Name: a.Name, State: state})
	}
	if b.label != "" {
		out.Accounts = append(out.Accounts, tui.AccountState{Name: "model", State: b.label})
	}
	return out, nil
}

func (b *serviceBackend) Detail(ctx context.Context, id string) (tui.Item, error) {
	if strings.HasPrefix(id, needsReviewPrefix) {
		e, err := b.svc.Explain(ctx, strings.TrimPrefix(id, needsReviewPrefix))
		if err != nil || e.Message == nil {
			return tui.Item{}, fmt.Errorf("detail %s: %w", id, err)
		}
		return recordToItem(e.Message), nil
	}
	d, err := b.svc.QueueItem(ctx, id)
	if err != nil {
		if o, oerr := b.findOutbox(ctx, id); oerr == nil {
			return outboxToItem(o), nil
		}
		return tui.Item{}, err
	}
	known, err := recipientStatus(ctx, b.svc, []store.QueueItem{d.Item})
	if err != nil {
		return tui.Item{}, err
	}
	it := queueToItem(&d.Item, known[d.Item.Account])
	for _, m := range d.Thread {
		it.Thread = append(it.Thread, tui.ThreadMessage{From: tuiAddr(m.From), Date: m.Date, Subject: m.Subject, Text: m.Excerpt})
	}
	return it, nil
}

func (b *serviceBackend) findOutbox(ctx context.Context, id string) (*store.OutboxRecord, error) {
	obs, err := b.svc.Outbox(ctx, "")
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

func (b *serviceBackend) Approve(ctx context.Context, id, final string) error {
	_, err := b.svc.Approve(ctx, id, final)
	return err
}

func (b *serviceBackend) Reject(ctx context.Context, id, reason string) error {
	return b.svc.Reject(ctx, id, reason)
}

func (b *serviceBackend) Edit(ctx context.Context, id, text string) error {
	_, err := b.svc.Edit(ctx, id, text)
	return err
}

func (b *serviceBackend) Regenerate(ctx context.Context, id, instruction string) (tui.Item, error) {
	q, err := b.svc.Regenerate(ctx, id, instruction)
	if err != nil {
		return tui.Item{}, err
	}
	return b.Detail(ctx, q.ID)
}

func (b *serviceBackend) Snooze(ctx context.Context, id string, until time.Time) error {
	return b.svc.Snooze(ctx, id, until)
}

// Retry processes a needs_review message again; a failed send is approved
// again (the outbox re-sends the same Message-ID, never a second copy).
func (b *serviceBackend) Retry(ctx context.Context, id string) error {
	if strings.HasPrefix(id, needsReviewPrefix) {
		e, err := b.svc.Explain(ctx, strings.TrimPrefix(id, needsReviewPrefix))
		if err != nil {
			return err
		}
		return b.svc.Retry(ctx, e.Trace.Message)
	}
	d, err := b.svc.QueueItem(ctx, id)
	if err != nil {
		return err
	}
	if d.Item.Kind == store.KindDraft && d.Item.Status == store.QueueFailed {
		_, err := b.svc.Approve(ctx, id, "")
		return err
	}
	return b.svc.Retry(ctx, d.Item.Message)
}

func (b *serviceBackend) Cancel(ctx context.Context, id string) error { return b.svc.Cancel(ctx, id) }

// Events turns the watcher's change notices into TUI item updates.
func (b *serviceBackend) Events(ctx context.Context) (<-chan tui.Event, error) {
	in, err := b.svc.Events(ctx)
	if err != nil || in == nil {
		return nil, err
	}
	out := make(chan tui.Event, 16)
	go func() {
		defer close(out)
		send := func(ev tui.Event) bool {
			select {
			case out <- ev:
				return true
			case <-ctx.Done():
				return false
			}
		}
		for ev := range in {
			for _, tev := range b.translate(ctx, ev) {
				if !send(tev) {
					return
				}
			}
		}
	}()
	return out, nil
}

func (b *serviceBackend) translate(ctx context.Context, ev agent.Event) []tui.Event {
	var out []tui.Event
	switch ev.Kind {
	case "queue_added", "queue_updated":
		if it, err := b.Detail(ctx, ev.ID); err == nil {
			kind := tui.EventItemUpdated
			if ev.Kind == "queue_added" {
				kind = tui.EventItemAdded
			}
			out = append(out, tui.Event{Kind: kind, Item: &it})
		}
	case "sent", "scheduled":
		if o, err := b.findOutbox(ctx, ev.ID); err == nil {
			it := outboxToItem(o)
			out = append(out, tui.Event{Kind: tui.EventItemUpdated, Item: &it})
			if o.QueueID != "" {
				if q, err := b.Detail(ctx, o.QueueID); err == nil {
					out = append(out, tui.Event{Kind: tui.EventItemUpdated, Item: &q})
				}
			}
		}
	case "needs_review":
		if e, err := b.svc.Explain(ctx, ev.ID); err == nil && e.Message != nil {
			it := recordToItem(e.Message)
			out = append(out, tui.Event{Kind: tui.EventItemAdded, Item: &it})
		}
	}
	if s, err := b.Status(ctx); err == nil {
		out = append(out, tui.Event{Kind: tui.EventStatus, Status: &s})
	}
	return out
}
