package root

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/mailagent/mailagent/internal/cmd/triage"
	"github.com/mailagent/mailagent/internal/cmdutil"
	"github.com/mailagent/mailagent/internal/iostreams"
)

// TestNewCmdTriageFlags: every flag lands in the Options runF gets, with
// the Factory's streams.
func TestNewCmdTriageFlags(t *testing.T) {
	t.Parallel()
	ios, _, _, _ := iostreams.Test()
	f := cmdutil.New(ios)
	var got *triage.TriageOptions
	cmd := triage.NewCmdTriage(f, func(_ context.Context, o *triage.TriageOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"--account", "work", "--mailbox", "Archive", "--since", "7d", "--unseen", "--limit", "50",
		"--dry-run", "--json", "--redo"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	want := triage.TriageOptions{IO: ios, Factory: f, Account: "work", Mailbox: "Archive", Since: "7d", Unseen: true, Limit: 50,
		DryRun: true, JSON: true, Redo: true}
	if got == nil || *got != want {
		t.Fatalf("runF got %+v, want %+v", got, want)
	}
}

// TestTriageBadWindowIsUsage: a negative --limit or an unreadable
// --since is exit 2 naming the flag, and nothing runs.
func TestTriageBadWindowIsUsage(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"--limit", "-1"}, {"--since", "last tuesday-ish"}} {
		ios, _, _, errOut := iostreams.Test()
		ran := false
		cmd := triage.NewCmdTriage(cmdutil.New(ios), func(context.Context, *triage.TriageOptions) error { ran = true; return nil })
		cmd.SetArgs(args)
		cmd.SilenceErrors, cmd.SilenceUsage = true, true
		err := cmd.Execute()
		if code := cmdutil.Report(errOut, err); code != cmdutil.ExitUsage || !strings.Contains(errOut.String(), args[0]) {
			t.Errorf("%v: exit %d, stderr %q; want %d naming %s", args, code, errOut.String(), cmdutil.ExitUsage, args[0])
		}
		if ran {
			t.Errorf("%v: the run started", args)
		}
	}
}

// TestTriageRunNeedsAConfiguration: without a configuration Run returns
// the Factory's usage error (exit 2) and prints nothing.
func TestTriageRunNeedsAConfiguration(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("MAILAGENT_CONFIG", "")
	ios, _, out, errOut := iostreams.Test()
	f := cmdutil.New(ios)
	f.ConfigPath = t.TempDir() + "/missing.toml"
	err := triage.Run(context.Background(), &triage.TriageOptions{IO: ios, Factory: f})
	ue, ok := cmdutil.AsUserError(err)
	if !ok || ue.Code != cmdutil.ExitUsage || errors.Is(err, cmdutil.ErrPartial) {
		t.Fatalf("got %v, want a usage error", err)
	}
	if out.Len()+errOut.Len() != 0 {
		t.Fatalf("printed %q %q", out.String(), errOut.String())
	}
}
