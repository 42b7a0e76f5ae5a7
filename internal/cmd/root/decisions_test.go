package root

import (
	"context"
	"errors"
	"testing"

	"github.com/mailagent/mailagent/internal/app/api"
	"github.com/mailagent/mailagent/internal/cmd/decisions"
	"github.com/mailagent/mailagent/internal/cmdutil"
	"github.com/mailagent/mailagent/internal/iostreams"
)

func TestNewCmdDecisionsFlags(t *testing.T) {
	t.Parallel()
	ios, _, _, _ := iostreams.Test()
	var got *decisions.DecisionsOptions
	cmd := decisions.NewCmdDecisions(cmdutil.New(ios), func(_ context.Context, o *decisions.DecisionsOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"--since", "12h", "--json"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if got == nil || got.Since != "12h" || !got.JSON || got.IO != ios {
		t.Fatalf("runF got %+v, want --since 12h --json over the factory's streams", got)
	}
}

// TestDecisionsBadSinceIsAUsageErrorBeforeAnyService: a bad --since
// exits 2 and opens nothing.
func TestDecisionsBadSinceIsAUsageErrorBeforeAnyService(t *testing.T) {
	t.Parallel()
	ios, _, _, _ := iostreams.Test()
	opened := false
	opts := &decisions.DecisionsOptions{IO: ios, Since: "soon",
		Service: func(context.Context, bool) (api.Service, func() error, error) {
			opened = true
			return nil, nil, errors.New("unused")
		}}
	err := decisions.Run(context.Background(), opts)
	var ue *cmdutil.UserError
	if !errors.As(err, &ue) || ue.Code != cmdutil.ExitUsage || opened {
		t.Fatalf("got %v (service opened %v), want a usage error and no service", err, opened)
	}
}
