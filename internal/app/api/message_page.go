package api

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/mailagent/mailagent/store"
)

// Bounds a MessagePage request is brought within, whoever asks.
const (
	// MaxMessagePageBytes bounds MessagePageRequest.MaxBytes.
	MaxMessagePageBytes = 8 << 20
	// MaxMessagePageScan bounds MessagePageRequest.MaxScan.
	MaxMessagePageScan = 100000
)

// MessagePageRequest selects one page of stored messages, newest stored
// first: the filters, the accounts allowed, the cursor and the bounds of
// store.MessagePageQuery.
type MessagePageRequest = store.MessagePageQuery

// MessagePager reads one page of messages from the store (through the
// message creation index: at most the request's scan budget of entries,
// and only the records returned). It is not part of Service: Local and
// Client implement it; MessagePage falls back to a full read for any
// other Service.
type MessagePager interface {
	MessagePage(ctx context.Context, r MessagePageRequest) (*store.MessagePage, error)
}

var (
	_ MessagePager = (*Local)(nil)
	_ MessagePager = (*Client)(nil)
)

func boundedMessages(r MessagePageRequest) MessagePageRequest {
	r.MaxBytes = min(r.MaxBytes, MaxMessagePageBytes)
	r.MaxScan = min(r.MaxScan, MaxMessagePageScan)
	return r
}

// MessagePage implements MessagePager over the store.
func (l *Local) MessagePage(ctx context.Context, r MessagePageRequest) (*store.MessagePage, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return l.DB.MessagePage(boundedMessages(r))
}

// MessagePage implements MessagePager over the socket: the watcher reads
// the page from its store.
func (c *Client) MessagePage(ctx context.Context, r MessagePageRequest) (*store.MessagePage, error) {
	var p store.MessagePage
	if err := c.call(ctx, http.MethodPost, "/v1/message-page", nil, boundedMessages(r), &p); err != nil {
		return nil, err
	}
	if p.Messages == nil {
		p.Messages = []store.MessageRecord{}
	}
	return &p, nil
}

func (h *handler) messagePage(w http.ResponseWriter, r *http.Request) {
	var req MessagePageRequest
	if err := decode(w, r, &req); err != nil {
		h.fail(w, err)
		return
	}
	p, err := MessagePage(r.Context(), h.svc, req)
	h.reply(w, p, err)
}

// MessagePage returns one page of svc's stored messages: through
// MessagePager when svc has it (Local, Client), else cut from a full read
// of its store in the same order (stored time, then key, both
// descending). Either way the bounds of r are brought within
// MaxMessagePageBytes and MaxMessagePageScan, and a cursor whose key
// could not be a message's is an error wrapping ErrBadRequest.
func MessagePage(ctx context.Context, svc Service, r MessagePageRequest) (*store.MessagePage, error) {
	r = boundedMessages(r)
	if k := r.After.Key; k != nil && (k.Account == "" || k.Mailbox == "" || strings.ContainsRune(k.Account+k.Mailbox, 0)) {
		return nil, fmt.Errorf("message page: %w: the cursor names no message", ErrBadRequest)
	}
	if p, ok := svc.(MessagePager); ok {
		return p.MessagePage(ctx, r)
	}
	st := svc.Store()
	if st == nil {
		return nil, fmt.Errorf("message page: %w", ErrNoActions)
	}
	var recs []store.MessageRecord
	err := st.ListMessages(store.MessageFilter{Account: r.Account}, func(m *store.MessageRecord) error {
		if r.Match(m) && (r.After.IsZero() || store.MessageCursorOf(m).Compare(r.After) > 0) {
			recs = append(recs, *m)
		}
		return ctx.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("message page: %w", err)
	}
	slices.SortFunc(recs, func(a, b store.MessageRecord) int {
		return store.MessageCursorOf(&a).Compare(store.MessageCursorOf(&b))
	})
	limit := r.Limit
	if limit <= 0 {
		limit = store.DefaultMessagePageLimit
	}
	limit = min(limit, store.MaxMessagePageLimit)
	p := &store.MessagePage{Messages: recs[:min(len(recs), limit)], Examined: len(recs), Loaded: len(recs)}
	if len(recs) > limit {
		p.Next = store.MessageCursorOf(&p.Messages[len(p.Messages)-1])
	}
	return p, nil
}
