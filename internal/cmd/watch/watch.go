// Package watch is `mailagent watch`: its flags, and whether it talks on
// the terminal. The watcher itself is internal/app/watch. Its tests are
// in internal/cmd/root (watch_test.go), whose test binary holds every
// command's tests.
package watch

import (
	"context"
	"os"

	"github.com/spf13/cobra"

	appwatch "github.com/mailagent/mailagent/internal/app/watch"
	"github.com/mailagent/mailagent/internal/cmdutil"
	"github.com/mailagent/mailagent/internal/iostreams"
	"github.com/mailagent/mailagent/store"
)

// WatchOptions are the flags of `mailagent watch`, and the Factory it
// runs over.
type WatchOptions struct {
	IO      *iostreams.IOStreams
	Factory *cmdutil.Factory

	Account string
	Once    bool
	// Demo: the watcher runs inside `mailagent demo`, whose state
	// `mailagent review` cannot see, so it does not advise it. No flag
	// sets it.
	Demo bool
}

// NewCmdWatch is `mailagent watch`; runF, when not nil, runs instead of
// Run (tests of the flag parsing).
func NewCmdWatch(f *cmdutil.Factory, runF func(context.Context, *WatchOptions) error) *cobra.Command {
	opts := &WatchOptions{IO: f.IOStreams, Factory: f}
	cmd := &cobra.Command{
		Use:   "watch",
		Short: "Watch the mailboxes (IDLE) and handle new mail as it arrives",
		Long: `watch keeps one IMAP IDLE connection per account (polling when the
server has no IDLE), triages each new message, and then acts: low-risk
replies that pass every safety gate are sent (policy.mode = "auto" only);
everything else waits in the review queue, and in your Drafts folder.

While watch runs it owns the state database and serves the other commands
(review, queue, contacts, explain, triage) on a unix socket in the state
directory. Started while another command holds the database (a triage,
an approval waiting out its undo window), it says so and starts when that
finishes; a second watcher exits 4.

On the very first start only mail from the last sync.initial_lookback is
handled. SIGINT or SIGTERM stops it cleanly (exit 0); anything in flight
is resumed on the next start.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return Run(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Account, "account", "", "only this account (default: all)")
	cmd.Flags().BoolVar(&opts.Once, "once", false, "catch up on new mail, then exit (for cron and scripts)")
	return cmd
}

// Run watches the accounts opts selects (appwatch.Run) until ctx ends or,
// with Once, until it has caught up.
func Run(ctx context.Context, opts *WatchOptions) error {
	f := opts.Factory
	cfg, err := f.Config()
	if err != nil {
		return err
	}
	accounts, err := cmdutil.PickAccounts(cfg, opts.Account)
	if err != nil {
		return err
	}
	o := &appwatch.Options{Config: cfg, Accounts: accounts, Env: f.WireEnv(cfg),
		Open: func() (*store.Store, error) { return f.OpenStore(false) }, Once: opts.Once, AdviseReview: !opts.Demo}
	if ProgressWanted(opts.IO) {
		o.Progress = opts.IO.ErrOut
	}
	return appwatch.Run(ctx, o)
}

// ProgressWanted reports whether watch should talk on stderr: a terminal
// (not TERM=dumb) and no service manager (systemd's INVOCATION_ID,
// launchd's LAUNCHD): under one the log file has it all, and the journal
// only gets errors.
func ProgressWanted(ios *iostreams.IOStreams) bool {
	if os.Getenv("INVOCATION_ID") != "" || os.Getenv("LAUNCHD") != "" {
		return false
	}
	return ios.ProgressEnabled()
}
