package api

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/mailagent/mailagent/internal/mail"
)

type (
	threadInputsReq struct {
		Since time.Time `json:"since,omitzero"`
		Limit int       `json:"limit,omitempty"`
	}
	threadInputLine struct {
		Input *mail.ThreadInput `json:"input,omitempty"`
		Error *Error            `json:"error,omitempty"`
		Done  bool              `json:"done,omitempty"`
	}
)

// ThreadInputs streams the threading headers of the newest limit messages
// stored since since (store.Store.ThreadInputs), oldest first: only the
// window the caller rebuilds its threader from, in a compact form, never
// the whole database. There is no overall deadline, which a large window
// would outlast: StoreTimeout bounds each wait for the next input from
// the watcher (the time fn takes is not counted).
func (s *remoteStore) ThreadInputs(since time.Time, limit int, fn func(mail.ThreadInput) error) error {
	d := s.c.StoreTimeout
	if d <= 0 {
		d = DefaultStoreTimeout
	}
	base := s.ctx
	if base == nil {
		base = context.Background()
	}
	// No overall deadline: a watchdog cancels the stream when a page
	// takes longer than d.
	sctx, scancel := context.WithCancel(base)
	defer scancel()
	watchdog := time.AfterFunc(d, scancel)
	defer watchdog.Stop()
	body := threadInputsReq{Since: since, Limit: limit}
	return readNDJSON[mail.ThreadInput, threadInputLine](sctx, s.c, "/v1/store/thread-inputs", body, func(in mail.ThreadInput) error {
		// The watchdog times the watcher, not the caller's work.
		watchdog.Stop()
		err := fn(in)
		watchdog.Reset(d)
		return err
	}, func(err error) error {
		if sctx.Err() != nil {
			err = fmt.Errorf("the watcher sent nothing for %v: %w", d, sctx.Err())
		}
		return fmt.Errorf("watcher %s: thread inputs: stream cut short: %w", s.c.path, err)
	})
}

// threadInputsSource is a store that can list thread inputs.
type threadInputsSource interface {
	ThreadInputs(since time.Time, limit int, fn func(mail.ThreadInput) error) error
}

// storeThreadInputs streams ThreadInputs as JSON lines: {"input":…} per
// message, then {"done":true} or {"error":…}.
func (h *handler) storeThreadInputs(w http.ResponseWriter, r *http.Request) {
	var req threadInputsReq
	if err := decode(w, r, &req); err != nil {
		h.fail(w, err)
		return
	}
	st, ok := h.remote(w)
	if !ok {
		return
	}
	src, ok := st.(threadInputsSource)
	if !ok {
		h.fail(w, fmt.Errorf("this watcher's store lists no thread inputs: %w", ErrNoActions))
		return
	}
	streamNDJSON(w, r, func(emit func(threadInputLine) error) error {
		return src.ThreadInputs(req.Since, req.Limit, func(in mail.ThreadInput) error {
			return emit(threadInputLine{Input: &in})
		})
	})
}
