package api

import (
	"context"
	"fmt"
	"net/http"

	"github.com/mailagent/mailagent/store"
)

// Inviter answers calendar invitations: the optional side of Actions (and
// of a Service) behind `mailagent queue rsvp`. agent.Pipeline implements
// it.
type Inviter interface {
	// RSVP answers the invitation of a queue item: answer is accept,
	// decline or tentative.
	RSVP(ctx context.Context, id, answer string) (*store.QueueItem, error)
}

// RSVP implements Inviter by delegating to Actions.
func (l *Local) RSVP(ctx context.Context, id, answer string) (*store.QueueItem, error) {
	if err := emptyID("rsvp", id); err != nil {
		return nil, err
	}
	a, err := l.actions("rsvp " + id)
	if err != nil {
		return nil, err
	}
	inv, ok := a.(Inviter)
	if !ok {
		return nil, fmt.Errorf("rsvp %s: %w", id, ErrNoActions)
	}
	return onlyItem(inv.RSVP(ctx, id, answer))
}

type rsvpReq struct {
	Answer string `json:"answer"`
}

// RSVP implements Inviter.
func (c *Client) RSVP(ctx context.Context, id, answer string) (*store.QueueItem, error) {
	if err := emptyID("rsvp", id); err != nil {
		return nil, err
	}
	var q store.QueueItem
	if err := c.call(ctx, http.MethodPost, queuePath(id, "rsvp"), nil, rsvpReq{Answer: answer}, &q); err != nil {
		return nil, err
	}
	return &q, nil
}

func (h *handler) rsvp(w http.ResponseWriter, r *http.Request) {
	var req rsvpReq
	if err := decode(w, r, &req); err != nil {
		h.fail(w, err)
		return
	}
	inv, ok := h.svc.(Inviter)
	if !ok {
		h.fail(w, fmt.Errorf("rsvp: %w", ErrNoActions))
		return
	}
	ctx, cancel := h.actionContext(r)
	defer cancel()
	item, err := inv.RSVP(ctx, r.PathValue("id"), req.Answer)
	h.reply(w, item, err)
}
