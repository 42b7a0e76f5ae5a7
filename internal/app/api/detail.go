package api

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/store"
)

// Detail is everything known about one item, whatever its kind and
// state: a queue item (queued, approved, sent, rejected, snoozed,
// failed), a reply the agent sent or scheduled on its own (an outbox
// record), or a message decided without a queue item (archived, ignored).
// explain, `queue show` and the review TUI's detail view read it, so they
// show the same facts.
type Detail struct {
	// Item is the queue item, nil when none exists (an auto-send, an
	// archived message).
	Item *store.QueueItem `json:"item"`
	// Outbox is the reply's outbox record (without Raw), nil when none.
	Outbox *store.OutboxRecord `json:"outbox"`
	// Trace and Message are what explain shows; nil when not kept.
	Trace   *store.Trace         `json:"trace"`
	Message *store.MessageRecord `json:"message"`
	// Thread holds the thread's messages, oldest first (at least the
	// message itself when its record exists).
	Thread []store.MessageRecord `json:"thread"`
}

// LoadDetail assembles the Detail of ref from svc: a queue id (q_…), an
// outbox id (ob_…), a trace id or a Message-ID. It uses only Service
// methods, so it answers the same over the store and over the socket. An
// id that names nothing is an error wrapping store.ErrNotFound.
func LoadDetail(ctx context.Context, svc Service, ref string) (*Detail, error) {
	if err := emptyID("detail", ref); err != nil {
		return nil, err
	}
	d := &Detail{Thread: []store.MessageRecord{}}
	switch {
	case strings.HasPrefix(ref, "q_"):
		qd, err := svc.QueueItem(ctx, ref)
		if err != nil {
			return nil, err
		}
		d.Item, d.Outbox, d.Thread = &qd.Item, qd.Outbox, qd.Thread
	case strings.HasPrefix(ref, "ob_"):
		ob, err := findOutbox(ctx, svc, ref)
		if err != nil {
			return nil, err
		}
		d.Outbox = ob
	}
	e, err := svc.Explain(ctx, ref)
	switch {
	case err == nil:
		d.Trace, d.Message = e.Trace, e.Message
	case errors.Is(err, store.ErrNotFound) && (d.Item != nil || d.Outbox != nil):
		// An item whose trace was pruned still has its own facts.
	default:
		return nil, err
	}
	if d.Message == nil && d.Item != nil {
		for i := range d.Thread {
			if d.Thread[i].MessageKey == d.Item.Message {
				d.Message = &d.Thread[i]
			}
		}
	}
	if m := d.Message; m != nil {
		if d.Item == nil {
			// A cancelled or failed auto-send became a queue item; an
			// approved draft's outbox record names its item.
			id := agent.QueueID(m.MessageKey)
			if d.Outbox != nil && d.Outbox.QueueID != "" {
				id = d.Outbox.QueueID
			}
			switch qd, err := svc.QueueItem(ctx, id); {
			case err == nil:
				d.Item, d.Thread = &qd.Item, qd.Thread
				if d.Outbox == nil {
					d.Outbox = qd.Outbox
				}
			case !errors.Is(err, store.ErrNotFound):
				return nil, err
			}
		}
		if d.Outbox == nil {
			switch ob, err := findOutbox(ctx, svc, agent.OutboxID(m.MessageKey)); {
			case err == nil:
				d.Outbox = ob
			case !errors.Is(err, store.ErrNotFound):
				return nil, err
			}
		}
		if len(d.Thread) == 0 {
			d.Thread = append(d.Thread, *m)
		}
	}
	return d, nil
}

// findOutbox returns the outbox record id, or an error wrapping
// store.ErrNotFound.
func findOutbox(ctx context.Context, svc Service, id string) (*store.OutboxRecord, error) {
	obs, err := svc.Outbox(ctx, "")
	if err != nil {
		return nil, err
	}
	for i := range obs {
		if obs[i].ID == id {
			return &obs[i], nil
		}
	}
	return nil, fmt.Errorf("outbox record %s: %w", id, store.ErrNotFound)
}

// Decisions the agent takes without asking the owner. DecidedWithoutAsking
// lists the messages that ended in one of them.
var decidedAlone = []string{agent.DecisionArchive, agent.DecisionIgnore, agent.DecisionNotify, agent.DecisionAutoSend}

// DecidedWithoutAsking lists the messages the agent archived, ignored,
// notified about or answered on its own since the given time (when it
// decided, whatever the mail's Date), newest first, so that nothing it
// does happens out of sight.
// Messages only triaged (triage decides but never acts) are left out.
func DecidedWithoutAsking(ctx context.Context, svc Service, since time.Time) ([]store.MessageRecord, error) {
	out := []store.MessageRecord{}
	err := EachDecidedWithoutAsking(ctx, svc, since, func(r *store.MessageRecord) error {
		out = append(out, *r)
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(out, func(a, b store.MessageRecord) int {
		if c := b.UpdatedAt.Compare(a.UpdatedAt); c != 0 {
			return c
		}
		return strings.Compare(b.TraceID, a.TraceID)
	})
	return out, nil
}

// DecidedWithoutAskingQuery selects, for MessagePage, the messages
// DecidedWithoutAsking lists (without its order: a page is newest stored
// first).
func DecidedWithoutAskingQuery(since time.Time) MessagePageRequest {
	return MessagePageRequest{State: store.StateDone, Decisions: slices.Clone(decidedAlone), Acted: true, UpdatedSince: since}
}

// EachDecidedWithoutAsking calls fn for each message DecidedWithoutAsking
// lists, in the store's order, as the records stream past (through the
// socket too): a caller that keeps only a page holds only a page.
func EachDecidedWithoutAsking(ctx context.Context, svc Service, since time.Time, fn func(*store.MessageRecord) error) error {
	st := svc.Store()
	if c, ok := svc.(*Client); ok {
		st = c.StoreContext(ctx)
	}
	if st == nil {
		return fmt.Errorf("decided: %w", ErrNoActions)
	}
	err := st.ListMessages(store.MessageFilter{State: store.StateDone}, func(r *store.MessageRecord) error {
		if slices.Contains(decidedAlone, r.Decision) && !r.TriageOnly && !r.UpdatedAt.Before(since) {
			if err := fn(r); err != nil {
				return err
			}
		}
		return ctx.Err()
	})
	if err != nil {
		return fmt.Errorf("decided: %w", err)
	}
	return nil
}
