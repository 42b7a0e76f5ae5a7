package root

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mailagent/mailagent/internal/app/api"
	"github.com/mailagent/mailagent/internal/cmd/status"
	"github.com/mailagent/mailagent/internal/cmdutil"
	"github.com/mailagent/mailagent/internal/config"
	"github.com/mailagent/mailagent/internal/iostreams"
	"github.com/mailagent/mailagent/store"
)

func TestMeanLatency(t *testing.T) {
	t.Parallel()
	for ms, want := range map[int64]string{0: "under 1ms", 7: "7ms", 1500: "1.5s"} {
		if got := status.MeanLatency(store.UsageDay{ModelCalls: 1, LatencyMS: ms}); got != want {
			t.Errorf("mean of %dms: %q, want %q", ms, got, want)
		}
	}
	if got := status.MeanLatency(store.UsageDay{}); got != "-" {
		t.Errorf("no calls: %q, want -", got)
	}
}

// TestNewCmdStatusFlags: --json reaches the options, and the options
// carry the factory's streams; an argument is refused.
func TestNewCmdStatusFlags(t *testing.T) {
	t.Parallel()
	ios, _, _, _ := iostreams.Test()
	f := cmdutil.New(ios)
	var got *status.StatusOptions
	cmd := status.NewCmdStatus(f, func(_ context.Context, o *status.StatusOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"--json"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if got == nil || !got.JSON || got.IO != ios {
		t.Fatalf("runF got %+v, want JSON and the factory's streams", got)
	}
}

// TestStatusRunWithoutWatcher: with no watcher, every configured account
// says it is not watched, and a service error is returned as is.
func TestStatusRunWithoutWatcher(t *testing.T) {
	t.Parallel()
	ios, _, out, _ := iostreams.Test()
	opts := &status.StatusOptions{IO: ios, Now: time.Now,
		Config: func() (*config.Config, error) {
			return &config.Config{Accounts: []config.Account{{Name: "work"}}}, nil
		},
		Service: func(context.Context, bool) (api.Service, func() error, error) {
			return nil, nil, errors.New("no state")
		},
	}
	if err := status.Run(context.Background(), opts); err == nil || err.Error() != "no state" {
		t.Fatalf("got %v, want the service's error", err)
	}
	if out.Len() != 0 {
		t.Fatalf("printed %q before failing", out.String())
	}
}
