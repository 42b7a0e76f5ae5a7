package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/store"
)

// Every sentinel an error matches in the watcher it matches again on the
// client side of the socket, alone or several at once, however deeply
// wrapped; an error that matches none keeps its message and nothing else.
func TestWireErrorKeepsEverySentinel(t *testing.T) {
	t.Parallel()
	sentinels := []error{ErrNoActions, ErrBadRequest, agent.ErrNotActionable, agent.ErrAmbiguousSend, agent.ErrModelOutput,
		store.ErrNotFound, store.ErrConflict, store.ErrLocked, store.ErrCorrupt, context.Canceled, context.DeadlineExceeded, agent.ErrNotSent}
	tests := []struct {
		name string
		err  error
	}{
		{"plain", errors.New("boom")},
		{"ambiguous send", fmt.Errorf("send <x@y>: %w: %w", agent.ErrAmbiguousSend, errors.New("connection lost"))},
		{"model output", fmt.Errorf("regenerate q1: %w: body: empty", agent.ErrModelOutput)},
		{"corrupt", fmt.Errorf("open: %w", store.ErrCorrupt)},
		{"two at once", fmt.Errorf("approve q1: %w (%w)", agent.ErrNotActionable, store.ErrConflict)},
		{"joined", errors.Join(store.ErrNotFound, fmt.Errorf("x: %w", agent.ErrAmbiguousSend))},
		{"temporary", &agent.TemporaryError{Err: fmt.Errorf("451: %w", store.ErrLocked)}},
	}
	for _, s := range sentinels {
		tests = append(tests, struct {
			name string
			err  error
		}{s.Error(), fmt.Errorf("op: %w", s)})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			we, status := wireError(tt.err)
			data, err := json.Marshal(errorBody{Error: we})
			if err != nil {
				t.Fatal(err)
			}
			var eb errorBody
			if err := json.Unmarshal(data, &eb); err != nil {
				t.Fatal(err)
			}
			got := error(eb.Error)
			if got.Error() != tt.err.Error() {
				t.Errorf("message: got %q, want %q", got, tt.err)
			}
			for _, s := range sentinels {
				if errors.Is(got, s) != errors.Is(tt.err, s) {
					t.Errorf("errors.Is(%v): got %v over the wire, %v in the watcher", s, errors.Is(got, s), errors.Is(tt.err, s))
				}
			}
			if isTemporary(got) != isTemporary(tt.err) {
				t.Errorf("temporary: got %v, want %v", isTemporary(got), isTemporary(tt.err))
			}
			if we.Code == CodeInternal && status != http.StatusInternalServerError {
				t.Errorf("status of an internal error: got %d", status)
			}
			// A relayed error keeps its codes.
			again, _ := wireError(fmt.Errorf("relay: %w", got))
			for _, s := range sentinels {
				if errors.Is(again, s) != errors.Is(tt.err, s) {
					t.Errorf("relayed errors.Is(%v): got %v, want %v", s, errors.Is(again, s), errors.Is(tt.err, s))
				}
			}
		})
	}
}
