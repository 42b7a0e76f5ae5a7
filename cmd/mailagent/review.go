package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/internal/app/api"
	"github.com/mailagent/mailagent/internal/termsafe"
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
without one it opens the state database directly, for each operation
only, so that a watcher can start meanwhile. The status line follows the
watcher: "● watcher connected" while one runs, "○ no watcher: actions run
locally" within a second or two after it stops (approvals then send from
this process), and connected again, with the queue reloaded, when it is
back. While a triage (or an approval waiting out its undo window) holds
the database, it serves the same socket and the status line names it:
"● served by a triage (pid N)".

The detail view shows the recipients; an address you have never written
to is marked [new], and approving a send to it asks "y/N" first.

Keys follow vim/less/neomutt: j/k, gg/G, ctrl-d/ctrl-u, enter opens, q or
esc goes back (ctrl+c quits anywhere); a approve and send, e edit
($VISUAL/$EDITOR), r/n reject, R regenerate with an instruction, s snooze,
u unsnooze, t try again (needs attention), c cancel a pending send,
/ filter, tab or 1-5 switch views, ? help. The hint bar offers only what
applies to the selected item.

Every send you start here, an approved reply or an answered invitation
(A/D/T), waits policy.approval_delay (5s by default) before it goes: the
queue and the detail count it down and c cancels it, with or without a
watcher. With no watcher running the TUI sends it itself when the
countdown ends, so q then waits: "sending in 4s… (c cancel, q again to
quit and cancel)", and quits once it is sent; q again cancels it (nothing
is sent) and quits.

Every item opens to the same detail, whatever its state: recipients,
the thread, the classification and its rationale, every gate with its
reason, the draft or the text sent, and the message and trace ids that
mailagent explain takes. View 5 lists what the agent decided without
asking (archived, ignored, notified, answered on its own); so does
mailagent decisions.`,
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
	if !terminalAttached(f) {
		return &UserError{Code: ExitUsage, Err: errors.New("review needs a terminal (stdin and stdout are not both one)"),
			Hint: "for scripts: mailagent queue list, then mailagent queue show|approve|reject ID"}
	}
	// Fail early (bad config, a database held by another command); the
	// TUI then opens what it needs for each operation.
	svc, closeSvc, err := f.Service(ctx, false)
	if err != nil {
		return err
	}
	if err := closeSvc(); err != nil {
		return err
	}
	return runReview(ctx, f, svc, "")
}

// runReview opens the TUI; label, when set, names the model on the status
// line (the demo says it is not an AI). svc is used only when the
// configuration cannot be read again; otherwise every operation reaches
// the watcher, or the store when none runs, afresh (Factory.Service).
func runReview(ctx context.Context, f *Factory, svc api.Service, label string) error {
	editor := os.Getenv("VISUAL")
	if editor == "" {
		editor = os.Getenv("EDITOR")
	}
	ascii, noColor := tui.DetectPlain(os.Getenv)
	b := &serviceBackend{svc: svc, now: f.Now, label: label, log: f.Logger()}
	// An approval with no watcher running returns at once; the TUI counts
	// the undo window down and sends when it ends (SendApproved).
	f.deferApprovalSend = true
	if cfg, err := f.Config(); err == nil {
		b.open = f.Service
		b.sock = api.SocketPath(cfg.StateDir)
		b.f = f // unsubscribing reaches the mail server (review_followups.go)
	}
	return tui.Run(ctx, b, tui.Options{
		Editor: editor, ASCII: ascii, NoColor: noColor, Now: f.Now, Logger: f.Logger(),
	})
}

// serviceBackend adapts the api.Service (watcher socket or local store) to
// the TUI's Backend.
type serviceBackend struct {
	// svc serves every call when open is nil.
	svc api.Service
	// open, when set, is called for each operation: it reaches the
	// watcher when one answers and otherwise opens the store (with local
	// actions when asked), so that review follows a watcher that stops or
	// starts, and never holds the database a starting watcher needs.
	open func(ctx context.Context, withActions bool) (api.Service, func() error, error)
	// sock, when set, is the watcher's socket, followed for live events
	// whether or not a watcher runs yet (api.FollowEvents).
	sock  string
	now   func() time.Time
	label string
	log   *slog.Logger

	// storeMu serialises the operations that opened the store: bbolt's
	// file lock is per open, so two at once in this process would wait
	// for each other and fail.
	storeMu sync.Mutex
	// f, when set, is how unsubscribe reaches the mail server.
	f *Factory
	// learned holds, per queue id, what its approval taught (LastLearned).
	learned sync.Map
}

// use runs fn with a service (see open). An action is tried again once,
// on a fresh service, when the watcher refused the connection (nothing
// was sent); a watcher that went away in the middle of one is reported
// plainly, because its outcome is unknown.
func (b *serviceBackend) use(ctx context.Context, action string, fn func(api.Service) error) error {
	if b.open == nil {
		return b.explain(action, b.svc, fn(b.svc))
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
func (b *serviceBackend) once(ctx context.Context, withActions bool, fn func(api.Service) error) (api.Service, error) {
	b.storeMu.Lock()
	locked := true
	defer func() {
		if locked {
			b.storeMu.Unlock()
		}
	}()
	svc, closeSvc, err := b.open(ctx, withActions)
	if err != nil {
		return nil, err
	}
	if _, remote := svc.(*api.Client); remote {
		b.storeMu.Unlock() // the watcher serves calls concurrently
		locked = false
	}
	err = fn(svc)
	if cerr := closeSvc(); cerr != nil && b.log != nil {
		b.log.Warn("review: close service", "err", cerr)
	}
	return svc, err
}

// explain turns a transport failure of the watcher's socket into a
// message whose first words say what happened (the status line shows
// one line); the detail goes to the log.
func (b *serviceBackend) explain(action string, svc api.Service, err error) error {
	if err == nil {
		return nil
	}
	if _, ok := svc.(*api.Client); !ok {
		return err
	}
	var remote *api.Error
	if errors.As(err, &remote) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if b.log != nil {
		b.log.Warn("review: watcher call failed", "action", action, "err", err)
	}
	if action == "" {
		return fmt.Errorf("the watcher went away; it will be reloaded when it is back (%w)", err)
	}
	return fmt.Errorf("%s: the watcher went away mid-request, so the outcome is unknown: check the item before trying again (%w)", action, err)
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
	var out []tui.Item
	err := b.use(ctx, "", func(svc api.Service) error {
		var err error
		out, err = b.list(ctx, svc)
		return err
	})
	return out, err
}

func (b *serviceBackend) list(ctx context.Context, svc api.Service) ([]tui.Item, error) {
	qs, err := svc.Queue(ctx, api.QueueFilter{})
	if err != nil {
		return nil, err
	}
	known, err := recipientStatus(ctx, svc, qs)
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
	window := map[string]time.Time{}
	for i := range obs {
		if o := &obs[i]; o.QueueID != "" && o.Status == store.OutboxScheduled && o.ID == agent.ApprovalOutboxID(o.QueueID) {
			window[o.QueueID] = o.SendAt
		}
	}
	var out []tui.Item
	for i := range qs {
		it := queueToItem(&qs[i], known[qs[i].Account])
		if qs[i].Status == store.QueueApproved {
			it.SendAt = window[qs[i].ID]
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
	cutoff := b.now().Add(-sentWindow)
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

func (b *serviceBackend) Status(ctx context.Context) (tui.Status, error) {
	var s api.Status
	err := b.use(ctx, "", func(svc api.Service) error {
		var err error
		s, err = svc.Status(ctx)
		return err
	})
	if err != nil {
		return tui.Status{}, err
	}
	out := tui.Status{WatcherConnected: s.Watcher, AutoSentToday: s.AutoSentToday, AutoSendCap: s.AutoSendCap}
	if !s.Watcher && s.PID != 0 {
		// Through the socket of another holder of the database
		// (api.ServeHeld: a triage, an approval waiting out its window).
		stateDir := ""
		if b.sock != "" {
			stateDir = filepath.Dir(b.sock)
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
	if b.label != "" {
		out.Accounts = append(out.Accounts, tui.AccountState{Name: "model", State: b.label})
	}
	return out, nil
}

func (b *serviceBackend) Detail(ctx context.Context, id string) (tui.Item, error) {
	var it tui.Item
	err := b.use(ctx, "", func(svc api.Service) error {
		var err error
		it, err = b.detail(ctx, svc, id)
		return err
	})
	return it, err
}

func (b *serviceBackend) Approve(ctx context.Context, id, final string) error {
	return b.use(ctx, "approve", func(svc api.Service) error {
		item, err := svc.Approve(ctx, id, final)
		if item != nil {
			b.learned.Store(id, item.Learned) // memory.go: LastLearned
		}
		return err
	})
}

var _ tui.Forgetter = (*serviceBackend)(nil)

// ForgetLearned implements tui.Forgetter: it forgets the memory records
// an approval wrote (the TUI's L while "learned: …" shows), through
// api.Service.ForgetMemory like `mailagent memory forget`. A record that
// is already gone counts as forgotten; every other failure is returned,
// after the remaining ids were tried.
func (b *serviceBackend) ForgetLearned(ctx context.Context, ids []string) error {
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

func (b *serviceBackend) Reject(ctx context.Context, id, reason string) error {
	return b.use(ctx, "reject", func(svc api.Service) error { return svc.Reject(ctx, id, reason) })
}

func (b *serviceBackend) Edit(ctx context.Context, id, text string) error {
	return b.use(ctx, "edit", func(svc api.Service) error {
		_, err := svc.Edit(ctx, id, text)
		return err
	})
}

func (b *serviceBackend) Regenerate(ctx context.Context, id, instruction string) (tui.Item, error) {
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

func (b *serviceBackend) Snooze(ctx context.Context, id string, until time.Time) error {
	return b.use(ctx, "snooze", func(svc api.Service) error { return svc.Snooze(ctx, id, until) })
}

// Retry processes a needs_review message again; a failed send is approved
// again (the outbox re-sends the same Message-ID, never a second copy).
func (b *serviceBackend) Retry(ctx context.Context, id string) error {
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

func (b *serviceBackend) Cancel(ctx context.Context, id string) error {
	return b.use(ctx, "cancel", func(svc api.Service) error { return svc.Cancel(ctx, id) })
}

// Events turns the watcher's change notices into TUI item updates. With
// a socket it follows the watcher as it stops and starts: the channel
// stays open until ctx ends.
func (b *serviceBackend) Events(ctx context.Context) (<-chan tui.Event, error) {
	var in <-chan agent.Event
	if b.sock != "" {
		in = api.FollowEvents(ctx, b.sock)
	} else {
		var err error
		in, err = b.svc.Events(ctx)
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

func (b *serviceBackend) translate(ctx context.Context, ev agent.Event) []tui.Event {
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
		s.WatcherConnected = false
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
