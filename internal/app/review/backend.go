// Package review is the review TUI's backend: it implements tui.Backend
// and its optional interfaces (details, followups, unsubscribe, RSVP,
// forgetting what an approval taught, cancelling and sending in the undo
// window) over api.Service, the same service the command line and the
// MCP server use: the watcher's socket when one runs, else the state
// database with this process's local actions (internal/app/actions).
// Who an item is from and what it answers is the store's identity
// layer's decision, made before an item reaches this package: the
// backend only carries the service's records to the TUI's types.
package review

import (
	"context"
	"errors"
	"fmt"
	"github.com/charmbracelet/x/ansi"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/internal/app/actions"
	"github.com/mailagent/mailagent/internal/app/api"
	appunsub "github.com/mailagent/mailagent/internal/app/unsubscribe"
	"github.com/mailagent/mailagent/internal/termsafe"
	"github.com/mailagent/mailagent/store"
	"github.com/mailagent/mailagent/tui"
)

// Backend adapts the api.Service (watcher socket or local store) to the
// TUI's Backend. Its exported fields are set before first use and not
// changed after; its methods are safe for concurrent use.
type Backend struct {
	// Svc serves every call when Open is nil.
	Svc api.Service
	// Open, when set, is called for each operation: it reaches the
	// watcher when one answers and otherwise opens the store (with local
	// actions when asked), so that review follows a watcher that stops or
	// starts, and never holds the database a starting watcher needs.
	Open func(ctx context.Context, withActions bool) (api.Service, func() error, error)
	// Sock, when set, is the watcher's socket, followed for live events
	// whether or not a watcher runs yet (api.FollowEvents).
	Sock string
	// Now is the clock (required).
	Now func() time.Time
	// Label, when set, names the model on the status line (the demo says
	// it is not an AI).
	Label string
	// Remote, when set, is the ssh address of the watcher (review
	// --remote): the status line names it, and says the connection is
	// lost rather than that actions run locally.
	Remote string
	// Log receives what the status line cannot show; nil logs nothing.
	Log *slog.Logger
	// UnsubscribeEnv, when set, is how unsubscribing reaches the mail
	// server; nil refuses it (review without a configuration).
	UnsubscribeEnv *appunsub.Env

	// storeMu serialises the operations that opened the store: bbolt's
	// file lock is per open, so two at once in this process would wait
	// for each other and fail.
	storeMu sync.Mutex
	// learned holds, per queue id, what its approval taught (LastLearned).
	learned sync.Map
}

// use runs fn with a service (see open). An action is tried again once,
// on a fresh service, when the watcher refused the connection (nothing
// was sent); a watcher that went away in the middle of one is reported
// plainly, because its outcome is unknown.
func (b *Backend) use(ctx context.Context, action string, fn func(api.Service) error) error {
	if b.Open == nil {
		actions.Defer(b.Svc)
		return b.explain(action, b.Svc, fn(b.Svc))
	}
	for attempt := 0; ; attempt++ {
		svc, err := b.once(ctx, action != "", fn)
		if attempt == 0 && errors.Is(err, api.ErrNoWatcher) && ctx.Err() == nil {
			continue // refused before anything was sent: the store now
		}
		return b.explain(action, svc, err)
	}
}

// once opens a service, runs fn and closes it; storeMu is held while the
// store is open.
func (b *Backend) once(ctx context.Context, withActions bool, fn func(api.Service) error) (api.Service, error) {
	b.storeMu.Lock()
	locked := true
	defer func() {
		if locked {
			b.storeMu.Unlock()
		}
	}()
	svc, closeSvc, err := b.Open(ctx, withActions)
	if err != nil {
		return nil, err
	}
	// An approval with no watcher running returns at once; the TUI counts
	// the undo window down and sends when it ends (SendApproved).
	actions.Defer(svc)
	if _, remote := svc.(*api.Client); remote {
		b.storeMu.Unlock() // the watcher serves calls concurrently
		locked = false
	}
	err = fn(svc)
	if cerr := closeSvc(); cerr != nil && b.Log != nil {
		b.Log.Warn("review: close service", "err", cerr)
	}
	return svc, err
}

// explain turns a transport failure of the watcher's socket into a
// message whose first words say what happened (the status line shows
// one line); the detail goes to the log.
func (b *Backend) explain(action string, svc api.Service, err error) error {
	if err == nil {
		return nil
	}
	if _, ok := svc.(*api.Client); !ok {
		return err
	}
	var remote *api.Error
	var lost *api.LostError // says itself what state the item is in
	if errors.As(err, &remote) || errors.As(err, &lost) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if b.Log != nil {
		b.Log.Warn("review: watcher call failed", "action", action, "err", err)
	}
	if action == "" {
		return fmt.Errorf("the watcher went away; it will be reloaded when it is back (%w)", err)
	}
	return fmt.Errorf("%s: the watcher went away mid-request, so the outcome is unknown: check the item before trying again (%w)", action, err)
}

var (
	_ tui.Backend  = (*Backend)(nil)
	_ tui.Detailer = (*Backend)(nil)
)

// needsReviewPrefix marks list ids that name a message (by trace id)
// rather than a queue item.
const needsReviewPrefix = "msg:"

// sentWindow is how far back "sent by the agent" looks.
const sentWindow = 7 * 24 * time.Hour

// Sendable reports whether approving (or retrying) q can still send it,
// so its recipients need the new-address check.
func Sendable(q *store.QueueItem) bool {
	if q.Kind != store.KindDraft {
		return false
	}
	switch q.Status {
	case store.QueuePending, store.QueueSnoozed, store.QueueFailed:
		return true
	}
	return false
}

// RecipientStatus asks the service which recipients of the sendable items
// the owner has written to: one call per account. The map is keyed by
// account, then address.
func RecipientStatus(ctx context.Context, svc api.Service, qs []store.QueueItem) (map[string]map[string]bool, error) {
	byAccount := map[string][]string{}
	for i := range qs {
		if q := &qs[i]; Sendable(q) {
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

func (b *Backend) List(ctx context.Context) ([]tui.Item, error) {
	var out []tui.Item
	err := b.use(ctx, "", func(svc api.Service) error {
		var err error
		out, err = b.list(ctx, svc)
		return err
	})
	return out, err
}

func (b *Backend) list(ctx context.Context, svc api.Service) ([]tui.Item, error) {
	qs, err := svc.Queue(ctx, api.QueueFilter{})
	if err != nil {
		return nil, err
	}
	known, err := RecipientStatus(ctx, svc, qs)
	if err != nil {
		return nil, err
	}
	obs, err := svc.Outbox(ctx, "")
	if err != nil {
		return nil, err
	}
	// The undo window of every send the owner started (an approval, an
	// RSVP: one outbox record under the item's approval id), so the
	// countdown and c survive a reload.
	// Its record's version counts in the item's (tui.Item.Updated), as
	// in the detail.
	approval := map[string]*store.OutboxRecord{}
	for i := range obs {
		if o := &obs[i]; o.QueueID != "" && o.ID == agent.ApprovalOutboxID(o.QueueID) {
			approval[o.QueueID] = o
		}
	}
	var out []tui.Item
	for i := range qs {
		it := queueToItem(&qs[i], known[qs[i].Account])
		if o := approval[qs[i].ID]; o != nil {
			it.Updated = later(it.Updated, o.UpdatedAt)
			if qs[i].Status == store.QueueApproved && o.Status == store.OutboxScheduled {
				it.SendAt = o.SendAt
			}
		}
		out = append(out, it)
	}
	recs, err := svc.NeedsReview(ctx)
	if err != nil {
		return nil, err
	}
	for i := range recs {
		out = append(out, recordToItem(&recs[i]))
	}
	cutoff := b.Now().Add(-sentWindow)
	for i := range obs {
		if o := &obs[i]; o.Auto && o.Status != store.OutboxCancelled && o.CreatedAt.After(cutoff) {
			out = append(out, outboxToItem(o))
		}
	}
	decided, err := b.decided(ctx, svc)
	if err != nil {
		return nil, err
	}
	return append(out, decided...), nil
}

func (b *Backend) Status(ctx context.Context) (tui.Status, error) {
	var s api.Status
	err := b.use(ctx, "", func(svc api.Service) error {
		var err error
		s, err = svc.Status(ctx)
		return err
	})
	if err != nil {
		return tui.Status{}, err
	}
	out := tui.Status{WatcherConnected: s.Watcher, AutoSentToday: s.AutoSentToday, AutoSendCap: s.AutoSendCap, Remote: b.Remote}
	if !s.Watcher && s.PID != 0 {
		// Through the socket of another holder of the database
		// (api.ServeHeld: a triage, an approval waiting out its window).
		stateDir := ""
		if b.Sock != "" {
			stateDir = filepath.Dir(b.Sock)
		}
		out.Holder = api.HolderName(stateDir, s.PID)
	}
	for _, a := range s.Accounts {
		state := a.State
		if a.Error != "" {
			state += " (" + a.Error + ")"
		}
		out.Accounts = append(out.Accounts, tui.AccountState{Name: a.Name, State: state})
	}
	if b.Label != "" {
		out.Accounts = append(out.Accounts, tui.AccountState{Name: "model", State: b.Label})
	}
	return out, nil
}

func (b *Backend) Detail(ctx context.Context, id string) (tui.Item, error) {
	var it tui.Item
	err := b.use(ctx, "", func(svc api.Service) error {
		var err error
		it, err = b.detail(ctx, svc, id)
		return err
	})
	return it, err
}

func (b *Backend) Approve(ctx context.Context, id, final string) error {
	return b.use(ctx, "approve", func(svc api.Service) error {
		item, err := svc.Approve(ctx, id, final)
		if item != nil {
			b.learned.Store(id, item.Learned) // memory.go: LastLearned
		}
		return err
	})
}

var _ tui.Forgetter = (*Backend)(nil)

// ForgetLearned implements tui.Forgetter: it forgets the memory records
// an approval wrote (the TUI's L while "learned: …" shows), through
// api.Service.ForgetMemory like `mailagent memory forget`. A record that
// is already gone counts as forgotten; every other failure is returned,
// after the remaining ids were tried.
func (b *Backend) ForgetLearned(ctx context.Context, ids []string) error {
	return b.use(ctx, "forget", func(svc api.Service) error {
		var errs []error
		for _, id := range ids {
			if err := svc.ForgetMemory(ctx, id); err != nil && !errors.Is(err, store.ErrNotFound) {
				errs = append(errs, fmt.Errorf("forget %s: %w", termsafe.Line(id), err))
			}
		}
		return errors.Join(errs...)
	})
}

func (b *Backend) Reject(ctx context.Context, id, reason string) error {
	return b.use(ctx, "reject", func(svc api.Service) error { return svc.Reject(ctx, id, reason) })
}

func (b *Backend) Edit(ctx context.Context, id, text string) error {
	return b.use(ctx, "edit", func(svc api.Service) error {
		_, err := svc.Edit(ctx, id, text)
		return err
	})
}

func (b *Backend) Regenerate(ctx context.Context, id, instruction string) (tui.Item, error) {
	var it tui.Item
	err := b.use(ctx, "regenerate", func(svc api.Service) error {
		q, err := svc.Regenerate(ctx, id, instruction)
		if err != nil {
			return err
		}
		it, err = b.detail(ctx, svc, q.ID)
		return err
	})
	return it, err
}

func (b *Backend) Snooze(ctx context.Context, id string, until time.Time) error {
	return b.use(ctx, "snooze", func(svc api.Service) error { return svc.Snooze(ctx, id, until) })
}

// Retry processes a needs_review message again; a failed send is approved
// again (the outbox re-sends the same Message-ID, never a second copy).
func (b *Backend) Retry(ctx context.Context, id string) error {
	return b.use(ctx, "retry", func(svc api.Service) error {
		if strings.HasPrefix(id, needsReviewPrefix) {
			e, err := svc.Explain(ctx, strings.TrimPrefix(id, needsReviewPrefix))
			if err != nil {
				return err
			}
			return svc.Retry(ctx, e.Trace.Message)
		}
		d, err := svc.QueueItem(ctx, id)
		if err != nil {
			return err
		}
		if d.Item.Kind == store.KindDraft && d.Item.Status == store.QueueFailed {
			_, err := svc.Approve(ctx, id, "")
			return err
		}
		return svc.Retry(ctx, d.Item.Message)
	})
}

func (b *Backend) Cancel(ctx context.Context, id string) error {
	return b.use(ctx, "cancel", func(svc api.Service) error { return svc.Cancel(ctx, id) })
}

// Events turns the watcher's change notices into TUI item updates. With
// a socket it follows the watcher as it stops and starts: the channel
// stays open until ctx ends.
func (b *Backend) Events(ctx context.Context) (<-chan tui.Event, error) {
	var in <-chan agent.Event
	if b.Sock != "" {
		in = api.FollowEvents(ctx, b.Sock)
	} else {
		var err error
		in, err = b.Svc.Events(ctx)
		if err != nil || in == nil {
			return nil, err
		}
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

func (b *Backend) translate(ctx context.Context, ev agent.Event) []tui.Event {
	var out []tui.Event
	switch ev.Kind {
	case api.EventWatcherBack, api.EventReset:
		// What happened meanwhile is not in the stream: load it all.
		return []tui.Event{{Kind: tui.EventReload}}
	case api.EventWatcherGone:
		// Say so now, whatever the store answers.
		s, err := b.Status(ctx)
		if err != nil {
			s = tui.Status{}
		}
		s.WatcherConnected, s.Remote = false, b.Remote
		return []tui.Event{{Kind: tui.EventStatus, Status: &s}}
	case "queue_added", "queue_updated":
		if it, err := b.Detail(ctx, ev.ID); err == nil {
			kind := tui.EventItemUpdated
			if ev.Kind == "queue_added" {
				kind = tui.EventItemAdded
			}
			out = append(out, tui.Event{Kind: kind, Item: &it})
		}
	case "sent", "scheduled":
		var o *store.OutboxRecord
		err := b.use(ctx, "", func(svc api.Service) error {
			var err error
			o, err = findOutbox(ctx, svc, ev.ID)
			return err
		})
		if err == nil {
			if o.Auto {
				if it, err := b.Detail(ctx, o.ID); err == nil {
					out = append(out, tui.Event{Kind: tui.EventItemUpdated, Item: &it})
				}
			}
			if o.QueueID != "" {
				if q, err := b.Detail(ctx, o.QueueID); err == nil {
					out = append(out, tui.Event{Kind: tui.EventItemUpdated, Item: &q})
				}
			}
		}
	case "needs_review":
		var e *api.Explain
		err := b.use(ctx, "", func(svc api.Service) error {
			var err error
			e, err = svc.Explain(ctx, ev.ID)
			return err
		})
		if err == nil && e.Message != nil {
			it := recordToItem(e.Message)
			out = append(out, tui.Event{Kind: tui.EventItemAdded, Item: &it})
		}
	}
	if s, err := b.Status(ctx); err == nil {
		out = append(out, tui.Event{Kind: tui.EventStatus, Status: &s})
	}
	return out
}

var _ tui.Learner = (*Backend)(nil)

// LastLearned implements tui.Learner: the records the approval of id
// wrote, once, each with its id (what ForgetLearned and `mailagent memory
// forget` take).
func (b *Backend) LastLearned(id string) []tui.Learned {
	v, ok := b.learned.LoadAndDelete(id)
	if !ok {
		return nil
	}
	var out []tui.Learned
	for _, l := range v.([]store.Learned) {
		out = append(out, tui.Learned{ID: termsafe.Line(l.ID), Text: truncate(termsafe.Line(l.Text), 80)})
	}
	return out
}

// truncate cuts s to at most n display cells, ending in "…" when cut.
func truncate(s string, n int) string {
	if ansi.StringWidth(s) <= n {
		return s
	}
	return ansi.Truncate(s, n, "…")
}
