package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/store"
)

// Proposer queues a reply proposed from outside mailagent (an MCP client)
// as a pending draft: agent.Pipeline.Propose. It is not part of Service:
// Local and Client implement it, and a consumer asserts it.
type Proposer interface {
	Propose(ctx context.Context, k store.MessageKey, text, source string) (*store.QueueItem, error)
}

var (
	_ Proposer = (*Local)(nil)
	_ Proposer = (*Client)(nil)
)

type proposeReq struct {
	Message store.MessageKey `json:"message"`
	Text    string           `json:"text"`
	Source  string           `json:"source"`
}

// Propose implements Proposer through the Local's Actions (the pipeline);
// without them (a store opened read-only, no watcher) the error wraps
// ErrNoActions. A refusal (agent.ErrProposalRefused) wraps ErrBadRequest.
func (l *Local) Propose(ctx context.Context, k store.MessageKey, text, source string) (*store.QueueItem, error) {
	a, err := l.actions("propose")
	if err != nil {
		return nil, err
	}
	p, ok := a.(Proposer)
	if !ok {
		return nil, fmt.Errorf("propose: %w", ErrNoActions)
	}
	q, err := p.Propose(ctx, k, text, source)
	if errors.Is(err, agent.ErrProposalRefused) {
		return nil, fmt.Errorf("%w: %w", ErrBadRequest, err)
	}
	return q, err
}

// Propose implements Proposer over the socket.
func (c *Client) Propose(ctx context.Context, k store.MessageKey, text, source string) (*store.QueueItem, error) {
	var q store.QueueItem
	if err := c.call(ctx, http.MethodPost, "/v1/propose", nil, proposeReq{Message: k, Text: text, Source: source}, &q); err != nil {
		return nil, err
	}
	return &q, nil
}

func (h *handler) propose(w http.ResponseWriter, r *http.Request) {
	var req proposeReq
	if err := decode(w, r, &req); err != nil {
		h.fail(w, err)
		return
	}
	p, ok := h.svc.(Proposer)
	if !ok {
		h.fail(w, fmt.Errorf("propose: %w", ErrNoActions))
		return
	}
	ctx, cancel := h.actionContext(r)
	defer cancel()
	item, err := p.Propose(ctx, req.Message, req.Text, req.Source)
	h.reply(w, item, err)
}
