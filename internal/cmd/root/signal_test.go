package root

import (
	"context"
	"errors"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/mailagent/mailagent/internal/cmdutil"
	"github.com/mailagent/mailagent/internal/iostreams"
)

// TestSignalContextOnlyForCommandsThatWork: a command that does work runs
// under a context that SIGINT and SIGTERM cancel; --help's neighbours
// that only print (version, help, the completion script and the shell's
// dynamic completion request) run under one without it, so they start
// no signal handling (issue 28's start-up). The tree is NewCmdRoot's,
// each command's body swapped for one that records its context.
func TestSignalContextOnlyForCommandsThatWork(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		args     []string
		target   []string // the command whose context is recorded
		complete bool     // record through its ValidArgsFunction
		signal   bool
	}{
		{"version", []string{"version"}, []string{"version"}, false, false},
		{"help", []string{"help", "queue"}, []string{"help"}, false, false},
		{"completion script", []string{"completion", "bash"}, []string{"completion", "bash"}, false, false},
		{"dynamic completion", []string{cobra.ShellCompRequestCmd, "queue", "show", ""}, []string{"queue", "show"}, true, false},
		{"triage", []string{"triage"}, []string{"triage"}, false, true},
		{"queue list", []string{"queue", "list"}, []string{"queue", "list"}, false, true},
		{"watch", []string{"watch"}, []string{"watch"}, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ios, _, _, errOut := iostreams.Test()
			f := NewFactory(ios)
			defer f.Close()
			root := NewCmdRoot(f)
			stop := cancelOnSignal(root)
			defer stop()
			cmd, _, err := root.Find(tt.target)
			if err != nil || cmd.Name() != tt.target[len(tt.target)-1] {
				t.Fatalf("no command %v in the tree: %v", tt.target, err)
			}
			var got context.Context
			record := func(c *cobra.Command) { got = c.Context() }
			if tt.complete {
				cmd.ValidArgsFunction = func(c *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
					record(c)
					return nil, cobra.ShellCompDirectiveNoFileComp
				}
			} else {
				cmd.Run = nil
				cmd.RunE = func(c *cobra.Command, _ []string) error { record(c); return nil }
			}
			root.SetArgs(tt.args)
			root.SetOut(ios.Out)
			root.SetErr(ios.ErrOut)
			if code := cmdutil.Report(ios.ErrOut, root.ExecuteContext(context.Background())); code != cmdutil.ExitOK {
				t.Fatalf("exit %d, want 0; stderr %q", code, errOut.String())
			}
			if got == nil {
				t.Fatalf("%v did not run", tt.target)
			}
			// context.Background's Done is nil; a signal context's is not.
			if hasSignal := got.Done() != nil; hasSignal != tt.signal {
				t.Errorf("%v runs with a signal context: %v, want %v", tt.args, hasSignal, tt.signal)
			}
		})
	}
}

// TestMainCancelsOnSIGINT: through Main, a running command's context
// ends when the process gets SIGINT (a Ctrl-C), and the signal is caught
// rather than ending the process.
func TestMainCancelsOnSIGINT(t *testing.T) {
	// sequential: it sends SIGINT to the test process, which cancels
	// every other Main that a parallel test would be running.
	ios, _, _, errOut := iostreams.Test()
	errTimeout := errors.New("no cancellation within 10 s of SIGINT")
	code := Main([]string{"wired"}, ios, func(*cmdutil.Factory) []*cobra.Command {
		return []*cobra.Command{{Use: "wired", Short: "waits for a signal", RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if ctx.Done() == nil {
				return errors.New("the command has no signal context")
			}
			if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
				return err
			}
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(10 * time.Second):
				return errTimeout
			}
		}}}
	})
	if code != cmdutil.ExitOK {
		t.Fatalf("exit %d, want 0; stderr %q", code, errOut.String())
	}
}

// TestOnlyTheRootHasPersistentHooks: cobra runs only the nearest
// PersistentPreRun(E), so a command with its own would run without the
// root's (the signal context of cancelOnSignal, the --remote refusal).
// The control: a command given one is found.
func TestOnlyTheRootHasPersistentHooks(t *testing.T) {
	t.Parallel()
	ios, _, _, _ := iostreams.Test()
	f := NewFactory(ios)
	defer f.Close()
	root := NewCmdRoot(f)
	var walk func(c *cobra.Command) []string
	walk = func(c *cobra.Command) (own []string) {
		for _, sub := range c.Commands() {
			if sub.PersistentPreRun != nil || sub.PersistentPreRunE != nil {
				own = append(own, sub.CommandPath())
			}
			own = append(own, walk(sub)...)
		}
		return own
	}
	if own := walk(root); len(own) != 0 {
		t.Errorf("commands with a PersistentPreRun of their own (the root's would not run for them): %v", own)
	}
	queue, _, err := root.Find([]string{"queue", "list"})
	if err != nil {
		t.Fatal(err)
	}
	queue.PersistentPreRunE = func(*cobra.Command, []string) error { return nil }
	if own := walk(root); len(own) != 1 || own[0] != "mailagent queue list" {
		t.Errorf("a command given its own hook: found %v", own)
	}
}
