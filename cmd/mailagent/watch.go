package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sync/errgroup"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/imapsync"
	"github.com/mailagent/mailagent/internal/app/actions"
	"github.com/mailagent/mailagent/internal/app/api"
	"github.com/mailagent/mailagent/internal/cmdutil"
	"github.com/mailagent/mailagent/internal/config"
	"github.com/mailagent/mailagent/store"
)

// WatchOptions are the flags of `mailagent watch`.
type WatchOptions struct {
	Account string
	Once    bool
	// demo: the watcher runs inside `mailagent demo`, whose state
	// `mailagent review` cannot see, so it does not advise it.
	demo bool
	// isTTY replaces the terminal check of stderr (tests); nil asks the
	// real stderr.
	isTTY func() bool
}

func newWatchCmd(f *Factory, runF func(context.Context, *WatchOptions) error) *cobra.Command {
	opts := &WatchOptions{}
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
			return watchRun(cmd.Context(), f, opts)
		},
	}
	cmd.Flags().StringVar(&opts.Account, "account", "", "only this account (default: all)")
	cmd.Flags().BoolVar(&opts.Once, "once", false, "catch up on new mail, then exit (for cron and scripts)")
	return cmd
}

func watchRun(ctx context.Context, f *Factory, opts *WatchOptions) error {
	cfg, accounts, err := configAccounts(f, opts.Account)
	if err != nil {
		return err
	}
	// A password source that fails (a password_cmd that exits non-zero,
	// hangs or prints nothing, an unset password_env) is a configuration
	// error: say so now, naming the key, rather than retry it forever.
	if err := checkSecrets(ctx, accounts); err != nil {
		return err
	}
	// Another watcher is exit 4; anything else that holds the database
	// (a triage, an approval in its undo window) is waited for, said
	// once on a terminal and in the log.
	tty := progressWanted(f.Stderr, opts.isTTY)
	st, err := actions.WaitForStore(ctx, cfg.StateDir, func() (*store.Store, error) { return f.OpenStore(false) }, func(msg string) {
		f.Logger().Info("watch waits for the state database", "holder", msg)
		if tty {
			fmt.Fprintln(f.Stderr, msg)
		}
	})
	if err != nil {
		if ctx.Err() != nil {
			f.Logger().Info("watch stopped before it started")
			return nil
		}
		return err
	}
	defer func() { _ = st.Close() }()
	if removeHolder, err := api.WriteHolder(cfg.StateDir, "watch"); err != nil {
		f.Logger().Warn("record the holder of the database", "err", err)
	} else {
		defer removeHolder() // before the store is closed
	}
	parts, err := buildAgent(ctx, f, cfg, st, false)
	if err != nil {
		return err
	}
	defer parts.Mailer.Close()
	d := newDaemon(f, cfg, st, parts, accounts)
	if ds, err := newDigestScheduler(f, cfg, st, parts.Pipeline); err != nil {
		return err
	} else if ds != nil {
		d.Digest = ds
	}
	var progress *watchProgress
	if tty {
		progress = newWatchProgress(f.Stderr, accounts)
		progress.hook(d)
	}
	// The start-up scans (threads, recovery) leave garbage and touched
	// database pages behind; hand them back before settling in for days.
	// watch mostly waits on IDLE, so it trades a little GC time for a
	// smaller heap goal (GOGC overrides this).
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(50)
	}
	debug.FreeOSMemory()
	if err := st.ReleaseMemory(); err != nil {
		f.Logger().Warn("release start-up memory", "err", err)
	}
	f.Logger().Info("watch starting", "accounts", len(accounts), "once", opts.Once)
	if progress != nil {
		progress.start(accounts, opts.Once, !opts.Once && !opts.demo)
	}

	g, gctx := errgroup.WithContext(ctx)
	if !opts.Once {
		broker := &api.Broker{}
		// Events reach API subscribers, and still wake the daemon's timer
		// of due sends and snoozes (newDaemon wired that).
		parts.Pipeline.Actor.Notify = func(e agent.Event) {
			broker.Publish(e)
			d.Notify(e)
		}
		if parts.Pipeline.Followups != nil {
			parts.Pipeline.Followups.Notify = agent.EventsTo(parts.Pipeline.Actor.Notify)
		}
		started := time.Now()
		local := &api.Local{
			DB: st, Actions: actions.Local{Pipeline: parts.Pipeline, Daemon: d}, Broker: broker, Tracker: parts.Pipeline.Followups,
			AutoSendCap: cfg.Policy.MaxAutoPerDay,
			StatusFunc: func(context.Context) api.Status {
				s := api.Status{Watcher: true, PID: os.Getpid(), Started: started}
				s.Accounts = d.Statuses()
				return s
			},
		}
		g.Go(func() error {
			err := api.Serve(gctx, api.SocketPath(cfg.StateDir), local, f.Logger())
			if errors.Is(err, api.ErrWatcherRunning) {
				return &UserError{Code: ExitLocked, Err: err}
			}
			return err
		})
	}
	g.Go(func() error { return d.Run(gctx, opts.Once) })
	err = g.Wait()
	if ctx.Err() != nil {
		// SIGINT/SIGTERM: in-flight work is either finished or resumable.
		f.Logger().Info("watch stopped")
		if progress != nil {
			progress.printf("stopped")
		}
		return nil
	}
	if _, ok := cmdutil.AsUserError(err); ok {
		return err
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, imapsync.ErrAuth):
		return unreachable(err, "check the IMAP login with: mailagent doctor")
	case errors.Is(err, store.ErrLocked):
		return err
	}
	return fmt.Errorf("watch: %w", err)
}

// checkSecrets resolves every account's IMAP and SMTP secrets once, so
// that a broken password source stops watch at start with exit 2 and the
// key to fix.
func checkSecrets(ctx context.Context, accounts []*config.Account) error {
	for _, acct := range accounts {
		if _, err := IMAPOptions(ctx, acct); err != nil {
			return err
		}
		if _, err := SMTPOptions(ctx, acct); err != nil {
			return err
		}
	}
	return nil
}
