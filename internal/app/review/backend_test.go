package review

import (
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/mailagent/mailagent/internal/app/api"
)

// TestReviewExplainsLostWatcher: a watcher that goes away in the middle
// of an action is reported by what it means, first, not by a transport
// error cut off on the status line.
func TestReviewExplainsLostWatcher(t *testing.T) {
	t.Parallel()
	b := &Backend{Log: slog.New(slog.DiscardHandler)}
	transport := errors.New("watcher /a/very/long/state/dir/mailagent.sock: Post \"http://mailagent/v1/queue/q1/approve\": EOF")
	err := b.explain("approve", new(api.Client), transport)
	if err == nil || !strings.HasPrefix(err.Error(), "approve: the watcher went away mid-request, so the outcome is unknown") || !errors.Is(err, transport) {
		t.Errorf("got %v, want a plain first sentence wrapping the transport error", err)
	}
	// Errors the watcher answered with, and errors of the local store,
	// are kept as they are.
	remote := &api.Error{Code: api.CodeInternal, Message: "boom"}
	if got := b.explain("approve", new(api.Client), remote); got != error(remote) {
		t.Errorf("remote error: got %v, want it unchanged", got)
	}
	if got := b.explain("approve", &api.Local{}, transport); got != transport {
		t.Errorf("local error: got %v, want it unchanged", got)
	}
	if b.explain("approve", new(api.Client), nil) != nil {
		t.Error("nil error: want nil")
	}
}
