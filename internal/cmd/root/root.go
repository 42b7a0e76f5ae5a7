// Package root assembles mailagent's command tree and runs it: Main is
// the whole of the program's wiring (cmd/mailagent/main.go calls it). Each
// command group lives in its own package under internal/cmd and takes
// the Factory; application behaviour lives below, in internal/app.
package root

import (
	"context"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/mailagent/mailagent/internal/cmd/calendar"
	"github.com/mailagent/mailagent/internal/cmd/contacts"
	"github.com/mailagent/mailagent/internal/cmd/decisions"
	"github.com/mailagent/mailagent/internal/cmd/demo"
	"github.com/mailagent/mailagent/internal/cmd/digest"
	"github.com/mailagent/mailagent/internal/cmd/doctor"
	"github.com/mailagent/mailagent/internal/cmd/explain"
	"github.com/mailagent/mailagent/internal/cmd/followups"
	"github.com/mailagent/mailagent/internal/cmd/initcmd"
	"github.com/mailagent/mailagent/internal/cmd/mcp"
	"github.com/mailagent/mailagent/internal/cmd/memory"
	"github.com/mailagent/mailagent/internal/cmd/queue"
	"github.com/mailagent/mailagent/internal/cmd/replay"
	"github.com/mailagent/mailagent/internal/cmd/review"
	"github.com/mailagent/mailagent/internal/cmd/schedule"
	"github.com/mailagent/mailagent/internal/cmd/serve"
	"github.com/mailagent/mailagent/internal/cmd/status"
	"github.com/mailagent/mailagent/internal/cmd/triage"
	"github.com/mailagent/mailagent/internal/cmd/unsubscribe"
	"github.com/mailagent/mailagent/internal/cmd/version"
	"github.com/mailagent/mailagent/internal/cmd/watch"
	"github.com/mailagent/mailagent/internal/cmdutil"
	"github.com/mailagent/mailagent/internal/cmdutil/provider"
	"github.com/mailagent/mailagent/internal/iostreams"
)

// Wire returns the command groups that are not packages of internal/cmd
// yet (issue 27's move; nil once every group has moved). It may also set
// fields of f (a test's model or defence switch) before the tree is built.
type Wire func(f *cmdutil.Factory) []*cobra.Command

// NewFactory is the program's Factory over ios: cmdutil.New with the real
// model builder (provider.New). Only the composition root links the
// providers' SDKs: the commands' packages and their tests build over
// cmdutil.New alone.
func NewFactory(ios *iostreams.IOStreams) *cmdutil.Factory {
	f := cmdutil.New(ios)
	f.NewModel = provider.New
	return f
}

// Main runs the command line over ios and returns the process exit code.
// It builds the Factory (NewFactory), wires the application service into
// it (Service) and is the only place that prints the final error
// (cmdutil.Report).
func Main(args []string, ios *iostreams.IOStreams, wire Wire) int {
	f := NewFactory(ios)
	defer f.Close()
	defer provider.CloseIdle()
	f.Service = Service(f)
	var more []*cobra.Command
	if wire != nil {
		more = wire(f)
	}
	// --remote: the commands that talk to a watcher reach the one on
	// another host over ssh (cmdutil/remote.go).
	f.Service = f.RemoteService(f.Service)
	root := NewCmdRoot(f, more...)
	stop := cancelOnSignal(root)
	defer stop()
	return Run(context.Background(), f, root, args)
}

// cancelOnSignal makes SIGINT and SIGTERM cancel the context of the
// command root runs, from its PersistentPreRunE on, so the handlers (and
// the threads the runtime starts for them, about 0.5 ms of CPU) exist
// only for a command that does work: --help, `version` and the
// completion commands print and exit without them, and a Ctrl-C ends
// them the default way (issue 28's start-up). stop releases the
// handlers; it may be called whether or not they were installed.
func cancelOnSignal(root *cobra.Command) (stop func()) {
	release := func() {}
	pre := root.PersistentPreRunE
	root.PersistentPreRunE = func(cmd *cobra.Command, args []string) error {
		if interruptible(cmd) {
			ctx, cancel := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			release = cancel
			cmd.SetContext(ctx)
		}
		if pre == nil {
			return nil
		}
		return pre(cmd, args)
	}
	return func() { release() }
}

// uninterruptible are the top-level commands that only print: they run
// without the signal context (cancelOnSignal). cobra's help command is
// "help", its completion script commands live under "completion", and a
// shell asks for dynamic completion through cobra.ShellCompRequestCmd
// (bounded by completionTimeout).
var uninterruptible = map[string]bool{
	"version":                       true,
	"help":                          true,
	"completion":                    true,
	cobra.ShellCompRequestCmd:       true,
	cobra.ShellCompNoDescRequestCmd: true,
}

// interruptible reports whether cmd runs under the signal context: every
// command but those whose top-level command is uninterruptible.
func interruptible(cmd *cobra.Command) bool {
	top := cmd
	for top.HasParent() && top.Parent().HasParent() {
		top = top.Parent()
	}
	return !top.HasParent() || !uninterruptible[top.Name()]
}

// Run executes root with args and reports its error on f's stderr.
func Run(ctx context.Context, f *cmdutil.Factory, root *cobra.Command, args []string) int {
	root.SetArgs(args)
	root.SetIn(f.IOStreams.In)
	root.SetOut(f.IOStreams.Out)
	root.SetErr(f.IOStreams.ErrOut)
	return cmdutil.Report(f.IOStreams.ErrOut, root.ExecuteContext(ctx))
}

// NewCmdRoot is the `mailagent` command with every group: those of
// internal/cmd and more. It registers the global flags into f, shell
// completion, the examples, and the usage rules (cmdutil.UsageArgs)
// over the whole tree.
func NewCmdRoot(f *cmdutil.Factory, more ...*cobra.Command) *cobra.Command {
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
		Version:       cmdutil.Version(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	// --version prints what `mailagent version` prints.
	root.SetVersionTemplate("mailagent {{.Version}}\n")
	root.PersistentFlags().StringVar(&f.ConfigPath, "config", "", "config file (default $MAILAGENT_CONFIG, then $XDG_CONFIG_HOME/mailagent/config.toml)")
	root.PersistentFlags().StringVar(&f.StateDir, "state-dir", "", "state directory (default state_dir from the config, then $XDG_STATE_HOME/mailagent)")
	root.PersistentFlags().BoolVarP(&f.Verbose, "verbose", "v", false, "also log to stderr")
	root.PersistentFlags().StringVar(&f.Remote, "remote", "", "talk to the watcher on another host over ssh: ssh://[user@]host[:port] (default $MAILAGENT_REMOTE)")
	root.PersistentFlags().StringVar(&f.RemoteCommand, "remote-command", "", "the mailagent binary on the --remote host (default mailagent from its PATH)")
	// Commands that need this machine's database refuse --remote.
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error { return f.RefuseRemote(cmd) }
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return cmdutil.UsageErr("%v", err) })

	root.AddCommand(more...)
	root.AddCommand(
		triage.NewCmdTriage(f, nil),
		replay.NewCmdReplay(f, nil),
		watch.NewCmdWatch(f, nil),
		demo.NewCmdDemo(f, nil),
		version.NewCmdVersion(f, nil),
		mcp.NewCmdMCP(f, nil),
		explain.NewCmdExplain(f, nil),
		memory.NewCmdMemory(f, nil),
		contacts.NewCmdContacts(f, nil),
		schedule.NewCmdSchedule(f, nil),
		decisions.NewCmdDecisions(f, nil),
		status.NewCmdStatus(f, nil),
		calendar.NewCmdCalendar(f, nil),
		digest.NewCmdDigest(f, nil),
		unsubscribe.NewCmdUnsubscribe(f, nil),
		followups.NewCmdFollowups(f, nil),
		review.NewCmdReview(f, nil),
		queue.NewCmdQueue(f, nil),
		doctor.NewCmdDoctor(f, nil),
		initcmd.NewCmdInit(f, nil),
		serve.NewCmdServe(f, nil),
	)
	markLocalOnly(root)
	registerCompletions(root, f)
	cmdutil.UsageArgs(root)
	applyExamples(root)
	return root
}

// localOnly are the commands that work on this machine's database or mail
// servers: with --remote they fail with a usage error (RefuseRemote).
var localOnly = map[string]bool{"triage": true, "watch": true, "init": true, "doctor": true, "replay": true, "demo": true, "serve": true}

// markLocalOnly annotates root's local-only commands.
func markLocalOnly(root *cobra.Command) {
	for _, c := range root.Commands() {
		if localOnly[c.Name()] {
			if c.Annotations == nil {
				c.Annotations = map[string]string{}
			}
			c.Annotations[cmdutil.LocalOnlyAnnotation] = "true"
		}
	}
}
