// Package watch is `mailagent watch`'s behaviour: the daemon over every
// chosen account (IDLE, or polling), the application service it serves
// on the state directory's socket while it owns the database, the
// digest scheduler, and the lines it prints on a terminal (what it
// watches, when it is idle, each reconnection and why). The command
// (internal/cmd/watch) reads the flags and calls Run; `mailagent demo`
// runs it too.
package watch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/imapsync"
	"github.com/mailagent/mailagent/internal/app/actions"
	"github.com/mailagent/mailagent/internal/app/api"
	"github.com/mailagent/mailagent/internal/app/apperr"
	"github.com/mailagent/mailagent/internal/app/digestmail"
	"github.com/mailagent/mailagent/internal/app/wire"
	"github.com/mailagent/mailagent/internal/config"
	"github.com/mailagent/mailagent/store"
)

// Options is one watcher.
type Options struct {
	Config   *config.Config
	Accounts []*config.Account
	// Env is the process's wiring: models, logins, clock, log.
	Env *wire.Env
	// Open opens the state database for writing (cmdutil.Factory.OpenStore).
	Open func() (*store.Store, error)
	// Once catches up on new mail, then returns.
	Once bool
	// AdviseReview says, when watching, how to stop and where the queue
	// is (not inside `mailagent demo`, whose state `mailagent review`
	// cannot see).
	AdviseReview bool
	// Progress, when not nil, receives the lines of a terminal (see
	// package doc); nil under a service manager or without a terminal.
	Progress io.Writer
}

// Run checks every account's secrets, waits for the state database
// (another watcher is an error with exit code 4; anything else holding
// it, a triage or an approval in its undo window, is waited for, said on
// Progress and in the log), and runs the daemon until ctx ends (nil: a
// clean stop, whatever was in flight is finished or resumable) or, with
// Once, until it has caught up.
func Run(ctx context.Context, o *Options) error {
	cfg, accounts, log := o.Config, o.Accounts, o.Env.Logger
	// A password source that fails (a password_cmd that exits non-zero,
	// hangs or prints nothing, an unset password_env) is a configuration
	// error: say so now, naming the key, rather than retry it forever.
	if err := checkSecrets(ctx, accounts); err != nil {
		return err
	}
	st, err := actions.WaitForStore(ctx, cfg.StateDir, o.Open, func(msg string) {
		log.Info("watch waits for the state database", "holder", msg)
		if o.Progress != nil {
			fmt.Fprintln(o.Progress, msg)
		}
	})
	if err != nil {
		if ctx.Err() != nil {
			log.Info("watch stopped before it started")
			return nil
		}
		return err
	}
	defer func() { _ = st.Close() }()
	if removeHolder, err := api.WriteHolder(cfg.StateDir, "watch"); err != nil {
		log.Warn("record the holder of the database", "err", err)
	} else {
		defer removeHolder() // before the store is closed
	}
	parts, err := wire.BuildAgent(ctx, o.Env, cfg, st, false)
	if err != nil {
		return err
	}
	defer parts.Mailer.Close()
	d := wire.NewDaemon(o.Env, cfg, st, parts, accounts)
	if ds, err := digestmail.NewScheduler(cfg, st, parts.Pipeline, o.Env.Now); err != nil {
		return err
	} else if ds != nil {
		d.Digest = ds
	}
	var progress *watchProgress
	if o.Progress != nil {
		progress = newWatchProgress(o.Progress, accounts)
		progress.hook(d)
	}
	releaseStartup(st, log)
	log.Info("watch starting", "accounts", len(accounts), "once", o.Once)
	if progress != nil {
		progress.start(accounts, o.Once, !o.Once && o.AdviseReview)
	}

	g, gctx := errgroup.WithContext(ctx)
	if !o.Once {
		broker := &api.Broker{}
		// Events reach API subscribers, and still wake the daemon's timer
		// of due sends and snoozes (wire.NewDaemon wired that).
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
			err := api.Serve(gctx, api.SocketPath(cfg.StateDir), local, log)
			if errors.Is(err, api.ErrWatcherRunning) {
				return &apperr.Error{Code: apperr.CodeLocked, Err: err}
			}
			return err
		})
	}
	g.Go(func() error { return d.Run(gctx, o.Once) })
	err = g.Wait()
	if ctx.Err() != nil {
		// SIGINT/SIGTERM: in-flight work is either finished or resumable.
		log.Info("watch stopped")
		if progress != nil {
			progress.printf("stopped")
		}
		return nil
	}
	var ae *apperr.Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ae):
		return err
	case errors.Is(err, imapsync.ErrAuth):
		return &apperr.Error{Code: apperr.CodeUnreachable, Err: err, Hint: "check the IMAP login with: mailagent doctor"}
	case errors.Is(err, store.ErrLocked):
		return err
	}
	return fmt.Errorf("watch: %w", err)
}

// releaseStartup hands back what the start-up scans (threads, recovery)
// leave behind: garbage and touched database pages, before settling in
// for days. watch mostly waits on IDLE, so it trades a little GC time for
// a smaller heap goal. An explicit GOGC leaves the collector to whoever
// set it: no percent of watch's own and no forced collection (a process
// that runs many watchers, as a test binary does, would otherwise collect
// its whole heap at each start); the database pages go back either way.
func releaseStartup(st *store.Store, log *slog.Logger) {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(50)
		debug.FreeOSMemory()
	}
	if err := st.ReleaseMemory(); err != nil {
		log.Warn("release start-up memory", "err", err)
	}
}

// checkSecrets resolves every account's IMAP and SMTP secrets once, so
// that a broken password source stops watch at start with exit 2 and the
// key to fix.
func checkSecrets(ctx context.Context, accounts []*config.Account) error {
	for _, acct := range accounts {
		if _, err := wire.IMAPOptions(ctx, acct); err != nil {
			return err
		}
		if _, err := wire.SMTPOptions(ctx, acct); err != nil {
			return err
		}
	}
	return nil
}
