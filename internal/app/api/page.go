package api

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"

	"github.com/mailagent/mailagent/store"
)

// Bounds a QueuePage request is brought within, whoever asks.
const (
	// MaxQueuePageBytes bounds QueuePageRequest.MaxBytes.
	MaxQueuePageBytes = 8 << 20
	// MaxQueuePageScan bounds QueuePageRequest.MaxScan.
	MaxQueuePageScan = 100000
)

// QueuePageRequest selects one page of the queue, newest first: the
// filter, the accounts allowed, the cursor and the bounds of
// store.QueuePageQuery.
type QueuePageRequest = store.QueuePageQuery

// QueuePager reads one page of the queue from the store (through the
// creation index: the page plus one entry, not the whole queue). It is
// not part of Service: Local and Client implement it; QueuePage falls back
// to a full read for any other Service.
type QueuePager interface {
	QueuePage(ctx context.Context, r QueuePageRequest) (*store.QueuePage, error)
}

// UsageRanger reports the token ledger over a range of days. It is not
// part of Service: Local and Client implement it.
type UsageRanger interface {
	// UsageRange returns the ledger days from..to inclusive (store.Day
	// strings; either may be "" for an open end), oldest first.
	UsageRange(ctx context.Context, from, to string) ([]store.UsageDay, error)
}

var (
	_ QueuePager  = (*Local)(nil)
	_ QueuePager  = (*Client)(nil)
	_ UsageRanger = (*Local)(nil)
	_ UsageRanger = (*Client)(nil)
)

func bounded(r QueuePageRequest) QueuePageRequest {
	r.MaxBytes = min(r.MaxBytes, MaxQueuePageBytes)
	r.MaxScan = min(r.MaxScan, MaxQueuePageScan)
	return r
}

// QueuePage implements QueuePager over the store.
func (l *Local) QueuePage(ctx context.Context, r QueuePageRequest) (*store.QueuePage, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return l.DB.QueuePage(bounded(r))
}

// QueuePage implements QueuePager over the socket: the watcher reads the
// page from its store.
func (c *Client) QueuePage(ctx context.Context, r QueuePageRequest) (*store.QueuePage, error) {
	var p store.QueuePage
	if err := c.call(ctx, http.MethodPost, "/v1/queue-page", nil, bounded(r), &p); err != nil {
		return nil, err
	}
	if p.Items == nil {
		p.Items = []store.QueueItem{}
	}
	return &p, nil
}

func (h *handler) queuePage(w http.ResponseWriter, r *http.Request) {
	var req QueuePageRequest
	if err := decode(w, r, &req); err != nil {
		h.fail(w, err)
		return
	}
	p, err := QueuePage(r.Context(), h.svc, req)
	h.reply(w, p, err)
}

// QueuePage returns one page of svc's queue: through QueuePager when svc
// has it (Local, Client), else cut from a full Queue read in the same
// order (creation time, then id, both descending). Either way the bounds
// of r are brought within MaxQueuePageBytes and MaxQueuePageScan.
func QueuePage(ctx context.Context, svc Service, r QueuePageRequest) (*store.QueuePage, error) {
	r = bounded(r)
	if p, ok := svc.(QueuePager); ok {
		return p.QueuePage(ctx, r)
	}
	items, err := svc.Queue(ctx, QueueFilter{Status: r.Status, Kind: r.Kind, Account: r.Account})
	if err != nil {
		return nil, err
	}
	items = slices.DeleteFunc(items, func(q store.QueueItem) bool {
		return len(r.Accounts) > 0 && !slices.Contains(r.Accounts, q.Account)
	})
	newer := func(a store.QueueItem, c store.QueueCursor) int {
		return cmp.Or(c.CreatedAt.Compare(a.CreatedAt), cmp.Compare(c.ID, a.ID))
	}
	slices.SortStableFunc(items, func(a, b store.QueueItem) int { return newer(a, store.CursorOf(&b)) })
	i := 0
	if !r.After.IsZero() {
		for i < len(items) && newer(items[i], r.After) <= 0 {
			i++
		}
	}
	limit := r.Limit
	if limit <= 0 {
		limit = store.DefaultQueuePageLimit
	}
	limit = min(limit, store.MaxQueuePageLimit)
	p := &store.QueuePage{Items: items[i:min(len(items), i+limit)], Examined: len(items), Loaded: len(items)}
	if i+limit < len(items) {
		p.Next = store.CursorOf(&p.Items[len(p.Items)-1])
	}
	return p, nil
}

// UsageRange implements UsageRanger over the store.
func (l *Local) UsageRange(ctx context.Context, from, to string) ([]store.UsageDay, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	days, err := l.DB.UsageRange(from, to)
	if days == nil && err == nil {
		days = []store.UsageDay{}
	}
	return days, err
}

// UsageRange implements UsageRanger over the socket.
func (c *Client) UsageRange(ctx context.Context, from, to string) ([]store.UsageDay, error) {
	var days []store.UsageDay
	if err := c.call(ctx, http.MethodGet, "/v1/usage", url.Values{"from": {from}, "to": {to}}, nil, &days); err != nil {
		return nil, err
	}
	return days, nil
}

func (h *handler) usageRange(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	days, err := UsageRange(r.Context(), h.svc, q.Get("from"), q.Get("to"))
	h.reply(w, days, err)
}

// UsageRange returns svc's token ledger from..to: through UsageRanger
// when svc has it (Local, Client); any other Service is an error wrapping
// ErrBadRequest, never a partial figure.
func UsageRange(ctx context.Context, svc Service, from, to string) ([]store.UsageDay, error) {
	u, ok := svc.(UsageRanger)
	if !ok {
		return nil, fmt.Errorf("usage %s..%s: %w: this service has no token ledger by day", from, to, ErrBadRequest)
	}
	return u.UsageRange(ctx, from, to)
}
