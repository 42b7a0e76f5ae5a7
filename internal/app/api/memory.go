package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"

	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/store"
)

// MemoryFilter selects memory records for Service.Memory; zero fields
// match everything.
type MemoryFilter struct {
	Account string `json:"account,omitempty"`
	Contact string `json:"contact,omitempty"`
	Kind    string `json:"kind,omitempty"`
}

func badMemory(err error) error {
	if errors.Is(err, store.ErrBadMemory) {
		return fmt.Errorf("%w: %w", ErrBadRequest, err)
	}
	return err
}

// Memory implements Service.
func (l *Local) Memory(ctx context.Context, f MemoryFilter) ([]store.MemoryRecord, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var recs []store.MemoryRecord
	if f.Kind != store.MemoryExample {
		var err error
		if recs, err = l.DB.ListMemory(store.MemoryFilter{Account: f.Account, Contact: f.Contact, Kind: f.Kind}); err != nil {
			return nil, err
		}
	}
	if f.Kind != "" && f.Kind != store.MemoryExample {
		return recs, nil
	}
	// The examples (the owner's replies from Sent, approved drafts) are
	// what drafts learn from too: the owner sees them here, oldest first
	// among the records, and forgets them the same way.
	exs, err := l.DB.ListExamples(f.Account)
	if err != nil {
		return nil, err
	}
	contact := mail.AddrKey(f.Contact)
	for i := range exs {
		if contact == "" || mail.AddrKey(exs[i].Contact) == contact {
			recs = append(recs, exs[i].AsMemory())
		}
	}
	slices.SortStableFunc(recs, func(a, b store.MemoryRecord) int { return a.Created.Compare(b.Created) })
	if recs == nil {
		recs = []store.MemoryRecord{}
	}
	return recs, nil
}

// MemoryRecord implements Service.
func (l *Local) MemoryRecord(ctx context.Context, id string) (*store.MemoryRecord, error) {
	if err := emptyID("memory record", id); err != nil {
		return nil, err
	}
	if store.IsExampleID(id) {
		e, err := l.DB.GetExample(id)
		if err != nil {
			return nil, err
		}
		r := e.AsMemory()
		return &r, nil
	}
	return l.DB.GetMemory(id)
}

// AddMemory implements Service: the record's source is always "manual"
// (the owner typed it), whatever r says.
func (l *Local) AddMemory(ctx context.Context, r store.MemoryRecord) (*store.MemoryRecord, error) {
	r.ID, r.Source, r.Created = "", store.SourceManual, l.now().UTC()
	out, err := l.DB.AddMemory(&r)
	return out, badMemory(err)
}

// EditMemory implements Service.
func (l *Local) EditMemory(ctx context.Context, id, text string) (*store.MemoryRecord, error) {
	if err := emptyID("memory record", id); err != nil {
		return nil, err
	}
	if store.IsExampleID(id) {
		e, err := l.DB.EditExample(id, text)
		if err != nil {
			return nil, badMemory(err)
		}
		r := e.AsMemory()
		return &r, nil
	}
	out, err := l.DB.UpdateMemory(id, func(r *store.MemoryRecord) error {
		r.Text = text
		return nil
	})
	return out, badMemory(err)
}

// ForgetMemory implements Service.
func (l *Local) ForgetMemory(ctx context.Context, id string) error {
	if err := emptyID("memory record", id); err != nil {
		return err
	}
	if store.IsExampleID(id) {
		return l.DB.ForgetExample(id)
	}
	return l.DB.ForgetMemory(id)
}

// Memory implements Service.
func (c *Client) Memory(ctx context.Context, f MemoryFilter) ([]store.MemoryRecord, error) {
	var out []store.MemoryRecord
	q := url.Values{"account": {f.Account}, "contact": {f.Contact}, "kind": {f.Kind}}
	if err := c.call(ctx, http.MethodGet, "/v1/memory", q, nil, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// MemoryRecord implements Service.
func (c *Client) MemoryRecord(ctx context.Context, id string) (*store.MemoryRecord, error) {
	if err := emptyID("memory record", id); err != nil {
		return nil, err
	}
	var r store.MemoryRecord
	if err := c.call(ctx, http.MethodGet, "/v1/memory/"+url.PathEscape(id), nil, nil, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// AddMemory implements Service.
func (c *Client) AddMemory(ctx context.Context, r store.MemoryRecord) (*store.MemoryRecord, error) {
	var out store.MemoryRecord
	if err := c.call(ctx, http.MethodPost, "/v1/memory", nil, r, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// EditMemory implements Service.
func (c *Client) EditMemory(ctx context.Context, id, text string) (*store.MemoryRecord, error) {
	if err := emptyID("memory record", id); err != nil {
		return nil, err
	}
	var out store.MemoryRecord
	if err := c.call(ctx, http.MethodPost, "/v1/memory/"+url.PathEscape(id)+"/edit", nil, noteReq{Note: text}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ForgetMemory implements Service.
func (c *Client) ForgetMemory(ctx context.Context, id string) error {
	if err := emptyID("memory record", id); err != nil {
		return err
	}
	return c.call(ctx, http.MethodDelete, "/v1/memory/"+url.PathEscape(id), nil, nil, nil)
}

func (h *handler) memoryRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /v1/memory", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		recs, err := h.svc.Memory(r.Context(), MemoryFilter{Account: q.Get("account"), Contact: q.Get("contact"), Kind: q.Get("kind")})
		h.reply(w, recs, err)
	})
	mux.HandleFunc("GET /v1/memory/{id}", func(w http.ResponseWriter, r *http.Request) {
		rec, err := h.svc.MemoryRecord(r.Context(), r.PathValue("id"))
		h.reply(w, rec, err)
	})
	mux.HandleFunc("POST /v1/memory", func(w http.ResponseWriter, r *http.Request) {
		var req store.MemoryRecord
		if err := decode(w, r, &req); err != nil {
			h.fail(w, err)
			return
		}
		rec, err := h.svc.AddMemory(r.Context(), req)
		h.reply(w, rec, err)
	})
	mux.HandleFunc("POST /v1/memory/{id}/edit", func(w http.ResponseWriter, r *http.Request) {
		var req noteReq
		if err := decode(w, r, &req); err != nil {
			h.fail(w, err)
			return
		}
		rec, err := h.svc.EditMemory(r.Context(), r.PathValue("id"), req.Note)
		h.reply(w, rec, err)
	})
	mux.HandleFunc("DELETE /v1/memory/{id}", func(w http.ResponseWriter, r *http.Request) {
		h.reply(w, nil, h.svc.ForgetMemory(r.Context(), r.PathValue("id")))
	})
}
