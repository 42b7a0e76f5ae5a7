package root

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/mailagent/mailagent/internal/app/api"
	"github.com/mailagent/mailagent/internal/cmd/review"
	"github.com/mailagent/mailagent/internal/cmdutil"
	"github.com/mailagent/mailagent/internal/iostreams"
)

// TestReviewNeedsATerminal: without a terminal on stdin and stdout review
// is a usage error that points at the queue commands, before any service
// opens; with one it opens the service first (its error is the command's).
func TestReviewNeedsATerminal(t *testing.T) {
	t.Parallel()
	for _, tty := range []bool{false, true} {
		ios, _, _, _ := iostreams.Test()
		ios.SetStdinTTY(tty)
		ios.SetStdoutTTY(tty)
		f := cmdutil.New(ios)
		opened := false
		held := errors.New("database held")
		f.Service = func(context.Context, bool) (api.Service, func() error, error) {
			opened = true
			return nil, nil, held
		}
		err := review.Run(context.Background(), f, &review.ReviewOptions{})
		if !tty {
			if ue, ok := cmdutil.AsUserError(err); !ok || ue.Code != cmdutil.ExitUsage || !strings.Contains(ue.Hint, "mailagent queue list") || opened {
				t.Errorf("no terminal: got %v (service opened %v), want a usage error naming queue list and no service", err, opened)
			}
			continue
		}
		if !errors.Is(err, held) || !opened {
			t.Errorf("terminal: got %v (service opened %v), want the service's error", err, opened)
		}
	}
}
