package api

import (
	"context"
	"fmt"
	"net/http"

	"github.com/mailagent/mailagent/store"
)

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
