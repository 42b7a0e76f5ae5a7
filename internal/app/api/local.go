package api

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/agent/followup"
	"github.com/mailagent/mailagent/agent/outbox"
	"github.com/mailagent/mailagent/store"
)

// Local implements Service over an open store. The zero value is not
// usable: DB must be set.
type Local struct {
	// DB is the open database.
	DB *store.Store
	// Actions carries out approve, reject, …; nil makes those calls return
	// an error wrapping ErrNoActions.
	Actions Actions
	// StatusFunc, when set, fills the live part of Status (Watcher, PID,
	// Started, Accounts, AutoSendCap); Local adds the database counters.
	StatusFunc func(context.Context) Status
	// Broker, when set, is the source of Events.
	Broker *Broker
	// AutoSendCap is reported in Status when StatusFunc leaves it zero.
	AutoSendCap int
	// Now is the clock for "today"; nil means time.Now.
	Now func() time.Time
	// Tracker is the watcher's reply tracker (nil: followup actions use
	// one over DB).
	Tracker *followup.Tracker
}

var _ Service = (*Local)(nil)

func (l *Local) now() time.Time {
	if l.Now != nil {
		return l.Now()
	}
	return time.Now()
}

// Status implements Service.
func (l *Local) Status(ctx context.Context) (Status, error) {
	var s Status
	if l.StatusFunc != nil {
		s = l.StatusFunc(ctx)
	}
	if s.AutoSendCap == 0 {
		s.AutoSendCap = l.AutoSendCap
	}
	counts, err := l.DB.CountByState()
	if err != nil {
		return Status{}, fmt.Errorf("status: %w", err)
	}
	s.Counts = counts
	day := store.Day(l.now())
	if s.TokensToday, err = l.DB.Usage(day); err != nil {
		return Status{}, fmt.Errorf("status: %w", err)
	}
	if _, s.AutoSentToday, err = l.DB.AutoSendCounts("", "", day); err != nil {
		return Status{}, fmt.Errorf("status: %w", err)
	}
	if err := l.copiesMissing(s.Accounts); err != nil {
		return Status{}, fmt.Errorf("status: %w", err)
	}
	return s, nil
}

// copiesMissing counts, per account, the IMAP copies that failed as the
// store records them now (drafts whose Drafts copy failed, replies sent
// but not filed in Sent), so that a failure shows in status at once
// rather than after the watcher's next retry pass.
func (l *Local) copiesMissing(accounts []AccountStatus) error {
	if len(accounts) == 0 {
		return nil
	}
	missing, last := map[string]int{}, map[string]string{}
	err := l.DB.ListQueue(store.QueuePending, func(q *store.QueueItem) error {
		if why := agent.DraftCopyFailure(q); why != "" {
			missing[q.Account]++
			last[q.Account] = why
		}
		return nil
	})
	if err != nil {
		return err
	}
	err = l.DB.ListOutbox(store.OutboxSent, func(r *store.OutboxRecord) error {
		if strings.HasPrefix(r.Error, outbox.CopyToSentFailed) {
			missing[r.Account]++
			last[r.Account] = r.Error
		}
		return nil
	})
	if err != nil {
		return err
	}
	for i := range accounts {
		a := &accounts[i]
		if n := missing[a.Name]; n > a.CopiesMissing {
			a.CopiesMissing, a.CopyError = n, last[a.Name]
		}
	}
	return nil
}

// Queue implements Service.
func (l *Local) Queue(ctx context.Context, f QueueFilter) ([]store.QueueItem, error) {
	out := []store.QueueItem{}
	// The store's creation index walked page by page (QueuePage's
	// iterator): newest first, then id, already in order.
	err := l.DB.EachQueueItem(store.QueuePageQuery{Status: f.Status, Kind: f.Kind, Account: f.Account}, func(q *store.QueueItem) error {
		out = append(out, *q)
		return ctx.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("list queue: %w", err)
	}
	return out, nil
}

// QueueItem implements Service.
func (l *Local) QueueItem(ctx context.Context, id string) (*QueueDetail, error) {
	if err := emptyID("queue item", id); err != nil {
		return nil, err
	}
	q, err := l.DB.GetQueueItem(id)
	if err != nil {
		return nil, err
	}
	d := &QueueDetail{Item: *q, Thread: []store.MessageRecord{}}
	if q.ThreadID != "" {
		recs, err := l.DB.ThreadMessages(q.ThreadID, 0)
		if err != nil {
			return nil, fmt.Errorf("queue item %s: %w", id, err)
		}
		for _, r := range recs {
			d.Thread = append(d.Thread, *r)
		}
	} else if r, err := l.DB.GetMessage(q.Message); err == nil {
		d.Thread = append(d.Thread, *r)
	} else if !errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("queue item %s: %w", id, err)
	}
	// An approved draft's outbox id is agent.ApprovalOutboxID; an auto-send's
	// (which a cancel turns into an item) derives from the message key.
	for _, obID := range []string{agent.ApprovalOutboxID(q.ID), agent.OutboxID(q.Message)} {
		ob, err := l.DB.GetOutbox(obID)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("queue item %s: %w", id, err)
		}
		ob.Raw = nil
		d.Outbox = ob
		break
	}
	return d, nil
}

// emptyID is the error for an operation on the empty id, which no item or
// record has. Local and Client both check it first (over the socket the
// empty id would not even make a route), so the error is the same.
func emptyID(op, id string) error {
	if id != "" {
		return nil
	}
	return fmt.Errorf("%s: %w: the id is empty", op, ErrBadRequest)
}

func (l *Local) actions(op string) (Actions, error) {
	if l.Actions == nil {
		return nil, fmt.Errorf("%s: %w", op, ErrNoActions)
	}
	return l.Actions, nil
}

// onlyItem returns q without err, or err without an item, as a Client
// does: the socket carries one or the other. (The pipeline returns the
// item with an error when a reply went out but its copy to Sent failed;
// QueueItem shows that state.)
func onlyItem(q *store.QueueItem, err error) (*store.QueueItem, error) {
	if err != nil {
		return nil, err
	}
	return q, nil
}

// Approve implements Service by delegating to Actions.
func (l *Local) Approve(ctx context.Context, id, final string) (*store.QueueItem, error) {
	if err := emptyID("approve", id); err != nil {
		return nil, err
	}
	a, err := l.actions("approve " + id)
	if err != nil {
		return nil, err
	}
	return onlyItem(a.Approve(ctx, id, final))
}

// Reject implements Service by delegating to Actions.
func (l *Local) Reject(ctx context.Context, id, reason string) error {
	if err := emptyID("reject", id); err != nil {
		return err
	}
	a, err := l.actions("reject " + id)
	if err != nil {
		return err
	}
	return a.Reject(ctx, id, reason)
}

// Edit implements Service by delegating to Actions.
func (l *Local) Edit(ctx context.Context, id, text string) (*store.QueueItem, error) {
	if err := emptyID("edit", id); err != nil {
		return nil, err
	}
	a, err := l.actions("edit " + id)
	if err != nil {
		return nil, err
	}
	return onlyItem(a.Edit(ctx, id, text))
}

// Snooze implements Service by delegating to Actions. A time that is not
// in the future is an error wrapping ErrBadRequest: the item would wake at
// once, which is not what the owner asked for.
func (l *Local) Snooze(ctx context.Context, id string, until time.Time) error {
	if err := emptyID("snooze", id); err != nil {
		return err
	}
	a, err := l.actions("snooze " + id)
	if err != nil {
		return err
	}
	if !until.After(l.now()) {
		return fmt.Errorf("snooze %s: %w: the time to wake it is not in the future", id, ErrBadRequest)
	}
	return a.Snooze(ctx, id, until)
}

// Unsnooze implements Service by delegating to Actions.
func (l *Local) Unsnooze(ctx context.Context, id string) error {
	if err := emptyID("unsnooze", id); err != nil {
		return err
	}
	a, err := l.actions("unsnooze " + id)
	if err != nil {
		return err
	}
	return a.Unsnooze(ctx, id)
}

// Regenerate implements Service by delegating to Actions.
func (l *Local) Regenerate(ctx context.Context, id, instruction string) (*store.QueueItem, error) {
	if err := emptyID("regenerate", id); err != nil {
		return nil, err
	}
	a, err := l.actions("regenerate " + id)
	if err != nil {
		return nil, err
	}
	return onlyItem(a.Regenerate(ctx, id, instruction))
}

// Cancel implements Service by delegating to Actions.
func (l *Local) Cancel(ctx context.Context, outboxID string) error {
	if err := emptyID("cancel", outboxID); err != nil {
		return err
	}
	a, err := l.actions("cancel " + outboxID)
	if err != nil {
		return err
	}
	return a.Cancel(ctx, outboxID)
}

// Retry implements Service by delegating to Actions. A message the store
// has no record of is an error wrapping store.ErrNotFound (there is
// nothing to retry), whatever the mail server still holds.
func (l *Local) Retry(ctx context.Context, key store.MessageKey) error {
	a, err := l.actions("retry " + key.String())
	if err != nil {
		return err
	}
	if _, err := l.DB.GetMessage(key); err != nil {
		return fmt.Errorf("retry %s: %w", key, err)
	}
	return a.Retry(ctx, key)
}

// Outbox implements Service.
func (l *Local) Outbox(ctx context.Context, status string) ([]store.OutboxRecord, error) {
	out := []store.OutboxRecord{}
	err := l.DB.ListOutbox(status, func(r *store.OutboxRecord) error {
		r.Raw = nil
		out = append(out, *r)
		return ctx.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("list outbox: %w", err)
	}
	slices.SortStableFunc(out, func(a, b store.OutboxRecord) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return cmp.Compare(b.ID, a.ID)
	})
	return out, nil
}

// NeedsReview implements Service.
func (l *Local) NeedsReview(ctx context.Context) ([]store.MessageRecord, error) {
	out := []store.MessageRecord{}
	err := l.DB.ListMessages(store.MessageFilter{State: store.StateNeedsReview}, func(r *store.MessageRecord) error {
		out = append(out, *r)
		return ctx.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("list needs review: %w", err)
	}
	slices.SortStableFunc(out, func(a, b store.MessageRecord) int {
		return b.UpdatedAt.Compare(a.UpdatedAt)
	})
	return out, nil
}

// Contacts implements Service.
func (l *Local) Contacts(ctx context.Context, account string) ([]store.Contact, error) {
	out := []store.Contact{}
	err := l.DB.ListContacts(account, func(c *store.Contact) error {
		out = append(out, *c)
		return ctx.Err()
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ContactNames implements Service.
func (l *Local) ContactNames(ctx context.Context, account, prefix string, limit int) ([]store.ContactName, error) {
	if limit < 0 || limit > MaxContactNames {
		return nil, fmt.Errorf("%w: limit must be 0 to %d", ErrBadRequest, MaxContactNames)
	}
	return l.DB.ContactNames(account, prefix, limit)
}

// MaxContactNames bounds one ContactNames call.
const MaxContactNames = 1000

// Contact implements Service.
func (l *Local) Contact(ctx context.Context, account, email string) (*store.Contact, error) {
	return l.DB.GetContact(account, email)
}

// RecipientStatus implements Service.
func (l *Local) RecipientStatus(ctx context.Context, account string, addrs []string) (map[string]bool, error) {
	out := make(map[string]bool, len(addrs))
	for _, a := range addrs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		c, err := l.DB.GetContact(account, a)
		switch {
		case errors.Is(err, store.ErrNotFound):
			out[a] = false
		case err != nil:
			return nil, fmt.Errorf("recipient status: %w", err)
		default:
			out[a] = c.Known
		}
	}
	return out, nil
}

// NoteContact implements Service: the note is a manual fact record about
// the contact (see AddMemory), listed, edited and forgotten on its own.
func (l *Local) NoteContact(ctx context.Context, account, email, note string) error {
	if strings.TrimSpace(note) == "" {
		return fmt.Errorf("%w: empty note", ErrBadRequest)
	}
	_, err := l.AddMemory(ctx, store.MemoryRecord{Account: account, Kind: store.MemoryFact, Contact: email, Text: note})
	return err
}

// ForgetContact implements Service.
func (l *Local) ForgetContact(ctx context.Context, account, email string) error {
	return l.DB.ForgetContact(account, email)
}

// Explain implements Service.
func (l *Local) Explain(ctx context.Context, ref string) (*Explain, error) {
	t, err := l.DB.ResolveTrace("", ref)
	if err != nil {
		return nil, fmt.Errorf("explain %q: %w", ref, err)
	}
	if err := l.DB.LoadSnapshots(t); err != nil {
		return nil, fmt.Errorf("explain %q: %w", ref, err)
	}
	e := &Explain{Trace: t}
	switch m, err := l.DB.GetMessage(t.Message); {
	case err == nil:
		e.Message = m
	case !errors.Is(err, store.ErrNotFound):
		return nil, fmt.Errorf("explain %q: %w", ref, err)
	}
	return e, nil
}

// Events implements Service: a subscription to the Broker, or a nil
// channel when there is none.
func (l *Local) Events(ctx context.Context) (<-chan agent.Event, error) {
	if l.Broker == nil {
		return nil, nil
	}
	return l.Broker.Subscribe(ctx), nil
}

// Store implements Service: the *store.Store itself.
func (l *Local) Store() RemoteStore { return l.DB }
