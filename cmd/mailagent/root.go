package main

import (
	"context"
	"io"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/mailagent/mailagent/internal/cmdutil"
)

// Main runs the command line and returns the process exit code. It is the
// only place that prints the final error.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	f := newFactory(stdin, stdout, stderr)
	defer f.Close()
	root := newRootCmd(f)
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	return cmdutil.Report(stderr, root.ExecuteContext(ctx))
}

func newRootCmd(f *Factory) *cobra.Command {
	root := &cobra.Command{
		Use:   "mailagent",
		Short: "A terminal-first email triage agent for any IMAP mailbox",
		Long: `mailagent reads an IMAP mailbox, classifies each message with a
schema-checked model call, answers low-risk mail itself behind deterministic
safety gates, and queues everything else as drafts for you to review.

The model is assumed compromised: code, not the model, decides who receives
mail, whether a send happens at all, and what the model gets to see.`,
		Example: `  mailagent demo                # try it: no account, no key, no network
  mailagent init                # write a configuration, then run doctor
  mailagent watch               # run the agent
  mailagent review              # approve, edit or reject its drafts`,
		Version:       versionString(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	// --version prints what `mailagent version` prints.
	root.SetVersionTemplate("mailagent {{.Version}}\n")
	root.PersistentFlags().StringVar(&f.ConfigPath, "config", "", "config file (default $MAILAGENT_CONFIG, then $XDG_CONFIG_HOME/mailagent/config.toml)")
	root.PersistentFlags().StringVar(&f.StateDir, "state-dir", "", "state directory (default state_dir from the config, then $XDG_STATE_HOME/mailagent)")
	root.PersistentFlags().BoolVarP(&f.Verbose, "verbose", "v", false, "also log to stderr")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageErr("%v", err) })

	root.AddCommand(
		newTriageCmd(f, nil),
		newReplayCmd(f, nil),
		newDigestCmd(f, nil),
		newExplainCmd(f, nil),
		newWatchCmd(f, nil),
		newDoctorCmd(f, nil),
		newQueueCmd(f, nil),
		newDecisionsCmd(f, nil),
		newContactsCmd(f, nil),
		newFollowupsCmd(f, nil),
		newScheduleCmd(f, nil),
		newCalendarCmd(f, nil),
		newUnsubscribeCmd(f, nil),
		newMemoryCmd(f, nil),
		newStatusCmd(f, nil),
		newMCPCmd(f, nil),
		newReviewCmd(f, nil),
		newDemoCmd(f, nil),
		newInitCmd(f, nil),
		newVersionCmd(f),
		newManCmd(),
	)
	registerCompletions(root, f)
	cmdutil.UsageArgs(root)
	applyExamples(root)
	return root
}
