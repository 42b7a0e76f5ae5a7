package root

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mailagent/mailagent/internal/app/api"
	"github.com/mailagent/mailagent/internal/cmd/followups"
	"github.com/mailagent/mailagent/internal/cmdutil"
	"github.com/mailagent/mailagent/internal/iostreams"
)

func TestNewCmdFollowupsFlags(t *testing.T) {
	t.Parallel()
	ios, _, _, _ := iostreams.Test()
	var got *followups.FollowupsOptions
	cmd := followups.NewCmdFollowups(cmdutil.New(ios), func(_ context.Context, o *followups.FollowupsOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"snooze", "fu_1", "--for", "2d", "--account", "work"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if got == nil || got.Action != "snooze" || got.ID != "fu_1" || got.For != "2d" || got.Account != "work" {
		t.Fatalf("runF got %+v, want snooze fu_1 --for 2d --account work", got)
	}
}

// TestBadFlagsAreUsageErrorsBeforeAnyService: a bad --state, --since or
// --for exits 2 and opens nothing.
func TestBadFlagsAreUsageErrorsBeforeAnyService(t *testing.T) {
	t.Parallel()
	for _, opts := range []*followups.FollowupsOptions{
		{Action: "list", State: "someday"},
		{Action: "list", State: "open", Since: "soon"},
		{Action: "list", State: "open", Recent: "-3d"},
		{Action: "snooze", ID: "fu_1", For: "0h"},
	} {
		ios, _, _, _ := iostreams.Test()
		f := cmdutil.New(ios)
		f.Now = func() time.Time { return time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC) }
		opened := false
		f.Service = func(context.Context, bool) (api.Service, func() error, error) {
			opened = true
			return nil, nil, errors.New("unused")
		}
		err := followups.Run(context.Background(), f, opts)
		if ue, ok := cmdutil.AsUserError(err); !ok || ue.Code != cmdutil.ExitUsage || opened {
			t.Errorf("%+v: got %v (service opened %v), want a usage error and no service", opts, err, opened)
		}
	}
}
