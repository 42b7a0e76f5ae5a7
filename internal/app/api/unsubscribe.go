package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/store"
)

// OwnMailer sends a mail of its own (an unsubscribe, a digest) through
// the outbox: agent.Pipeline.SendOwnMail. It is not part of Service:
// Local and Client implement it, and a consumer asserts it. A Raw message
// (the digest's) crosses the socket as it is: the socket is the owner's
// alone, and outbox.Schedule checks every record whoever built it (public
// recipients; Auto-Submitted); SMTP sends to OwnMail.To only.
type OwnMailer interface {
	SendOwnMail(ctx context.Context, m agent.OwnMail) (*store.OutboxRecord, error)
}

var (
	_ OwnMailer = (*Local)(nil)
	_ OwnMailer = (*Client)(nil)
)

// SendOwnMail implements OwnMailer through the Local's Actions (the
// pipeline); without them the error wraps ErrNoActions. A refusal
// (agent.ErrMailRefused: a non-public address, …) wraps ErrBadRequest.
func (l *Local) SendOwnMail(ctx context.Context, m agent.OwnMail) (*store.OutboxRecord, error) {
	a, err := l.actions("send mail")
	if err != nil {
		return nil, err
	}
	s, ok := a.(OwnMailer)
	if !ok {
		return nil, fmt.Errorf("send mail: %w", ErrNoActions)
	}
	ob, err := s.SendOwnMail(ctx, m)
	if errors.Is(err, agent.ErrMailRefused) {
		return nil, fmt.Errorf("%w: %w", ErrBadRequest, err)
	}
	return ob, err
}

// SendOwnMail implements OwnMailer over the socket.
func (c *Client) SendOwnMail(ctx context.Context, m agent.OwnMail) (*store.OutboxRecord, error) {
	var ob store.OutboxRecord
	if err := c.call(ctx, http.MethodPost, "/v1/own-mail", nil, m, &ob); err != nil {
		return nil, err
	}
	return &ob, nil
}

func (h *handler) sendOwnMail(w http.ResponseWriter, r *http.Request) {
	var m agent.OwnMail
	if err := decode(w, r, &m); err != nil {
		h.fail(w, err)
		return
	}
	s, ok := h.svc.(OwnMailer)
	if !ok {
		h.fail(w, fmt.Errorf("send mail: %w", ErrNoActions))
		return
	}
	ctx, cancel := h.actionContext(r)
	defer cancel()
	ob, err := s.SendOwnMail(ctx, m)
	h.reply(w, ob, err)
}

// RecordUnsubscribe implements Service: it keeps the record of an
// unsubscribe request (made by the command, after the owner confirmed).
func (l *Local) RecordUnsubscribe(ctx context.Context, u store.Unsubscribe) error {
	if u.Account == "" || u.Method == "" {
		return fmt.Errorf("record unsubscribe: %w: account and method are required", ErrBadRequest)
	}
	return l.DB.PutUnsubscribe(&u)
}

// RecordUnsubscribe implements Service.
func (c *Client) RecordUnsubscribe(ctx context.Context, u store.Unsubscribe) error {
	return c.call(ctx, http.MethodPost, "/v1/unsubscribes", nil, u, nil)
}

func (h *handler) recordUnsubscribe(w http.ResponseWriter, r *http.Request) {
	var u store.Unsubscribe
	if err := decode(w, r, &u); err != nil {
		h.fail(w, err)
		return
	}
	h.reply(w, nil, h.svc.RecordUnsubscribe(r.Context(), u))
}
