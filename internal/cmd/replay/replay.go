// Package replay is `mailagent replay`: its flags, the --policy file, the
// progress bar and the report. The run and its scores are
// internal/app/replay's.
// Its tests are in internal/cmd/root (replay_test.go), whose test binary
// holds every command's tests.
package replay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/mailagent/mailagent/internal/app/replay"
	apptriage "github.com/mailagent/mailagent/internal/app/triage"
	"github.com/mailagent/mailagent/internal/app/view"
	"github.com/mailagent/mailagent/internal/app/wire"
	"github.com/mailagent/mailagent/internal/cmd/triage"
	"github.com/mailagent/mailagent/internal/cmdutil"
	"github.com/mailagent/mailagent/internal/config"
	"github.com/mailagent/mailagent/internal/iostreams"
	"github.com/mailagent/mailagent/internal/termsafe"
	"github.com/mailagent/mailagent/store"
)

// ReplayOptions are the flags of `mailagent replay`.
type ReplayOptions struct {
	IO      *iostreams.IOStreams
	Factory *cmdutil.Factory

	Account string
	Since   string
	Limit   int
	Drafts  bool
	Policy  string
	JSON    bool
	HTML    string
	Fresh   bool
}

// NewCmdReplay is `mailagent replay`; runF, when not nil, runs instead
// of Run (tests of the flag parsing).
func NewCmdReplay(f *cmdutil.Factory, runF func(context.Context, *ReplayOptions) error) *cobra.Command {
	opts := &ReplayOptions{IO: f.IOStreams, Factory: f}
	cmd := &cobra.Command{
		Use:   "replay",
		Short: "Score the agent against what you actually did with past mail (read-only)",
		Long: `replay takes past mail through the agent's real triage path (and with
--drafts its drafter), as if policy.mode were "auto", and compares what it
would have done with what you did: your replies in the Sent folder
(matched by In-Reply-To/References and recipient), how fast, and the
flags of each message.

It never changes the mailbox (EXAMINE, BODY.PEEK) or the agent's state
database (read-only); its own results go to <state_dir>/replay.db, so an
interrupted replay continues where it stopped. A replay with other
settings (policy, --drafts, model) needs --fresh.

Scores: precision and recall of "needs a reply" against your replies; the
would-be auto-sends split into those you also answered, answered very
differently (--drafts) or never answered (unwanted: the number that
matters); draft similarity (token-set Jaccard, see the README); cost and
time; and a threshold table of auto-sends and unwanted ones for
min_confidence 0.50 to 0.95.

The daily caps (policy.max_per_contact_per_day, max_per_day) are
simulated day by day over the replayed mail in arrival order, as the
agent would have counted its sends then: an auto-send beyond them counts
as a queue item, and the report says how many. A contact counts as known
only if you had written to them before the message arrived.

Exit codes: 0 done; 2 bad flags or config; 3 a server could not be
reached.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := cmdutil.CheckWindow(opts.Limit, opts.Since); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return Run(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Account, "account", "", "only this account (default: all)")
	fl.StringVar(&opts.Since, "since", "90d", "mail since a duration ago (90d, 2w) or a date (2026-01-02)")
	fl.IntVar(&opts.Limit, "limit", 0, "at most N messages per mailbox, the newest (0 = no limit)")
	fl.BoolVar(&opts.Drafts, "drafts", false, "also draft each reply and compare it with yours (one more model call per reply)")
	fl.StringVar(&opts.Policy, "policy", "", "TOML file whose [policy] keys replace the configured ones for this replay")
	fl.BoolVar(&opts.JSON, "json", false, "the report as one JSON object on stdout")
	fl.StringVar(&opts.HTML, "html", "", "also write a self-contained HTML report to this file")
	fl.BoolVar(&opts.Fresh, "fresh", false, "drop earlier replay results and start over")
	return cmd
}

// PolicyOf is the configured policy with the keys of file (a [policy]
// table, or the keys at the top level) replacing it, and mode "auto": a
// replay asks what auto mode would have done.
func PolicyOf(base config.Policy, file string) (config.Policy, error) {
	p := base
	if file != "" {
		var top map[string]any
		if _, err := toml.DecodeFile(file, &top); err != nil {
			return p, cmdutil.UsageErr("--policy %s: %v", file, err)
		}
		var md toml.MetaData
		var err error
		_, wrapped := top["policy"]
		if wrapped {
			// A [policy] table: the rest of the file (a whole config.toml,
			// say) is not replay's business.
			wrap := struct {
				Policy *config.Policy `toml:"policy"`
			}{&p}
			md, err = toml.DecodeFile(file, &wrap)
		} else {
			md, err = toml.DecodeFile(file, &p)
		}
		if err != nil {
			return p, cmdutil.UsageErr("--policy %s: %v", file, err)
		}
		for _, k := range md.Undecoded() {
			if !wrapped || (len(k) > 1 && k[0] == "policy") {
				return p, cmdutil.UsageErr("--policy %s: unknown key %s", file, k)
			}
		}
		if p.MinConfidence < 0 || p.MinConfidence > 1 {
			return p, cmdutil.UsageErr("--policy %s: min_confidence %.2f is not between 0 and 1", file, p.MinConfidence)
		}
	}
	p.Mode = "auto"
	return p, nil
}

// Run replays the mail opts selects and prints the report (a table, or
// --json; and --html).
func Run(ctx context.Context, opts *ReplayOptions) (err error) {
	f, ios := opts.Factory, opts.IO
	start := time.Now()
	defer apptriage.BatchGC()()
	cfg, err := f.Config()
	if err != nil {
		return err
	}
	accounts, err := cmdutil.PickAccounts(cfg, opts.Account)
	if err != nil {
		return err
	}
	since, _ := cmdutil.ParseSince(opts.Since, f.Now())
	cpol, err := PolicyOf(cfg.Policy, opts.Policy)
	if err != nil {
		return err
	}

	// The agent's store, read-only (or a watcher's through its socket):
	// the same opening as triage --dry-run.
	senv := triage.StoreEnv(f, cfg)
	st, closeStore, err := apptriage.OpenStore(ctx, senv, true)
	if err != nil {
		return err
	}
	defer func() { _ = closeStore() }()
	res, err := replay.OpenResults(filepath.Join(cfg.StateDir, "replay.db"))
	if err != nil {
		return err
	}
	defer func() {
		if cerr := res.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	run, err := wire.ReplayRunner(ctx, wire.ReplaySetup{Config: cfg, Env: senv.Env, Store: st, Results: res,
		Policy: cpol, Drafts: opts.Drafts, Fresh: opts.Fresh, Logger: f.Logger()})
	if err != nil {
		return err
	}
	var (
		barMu sync.Mutex
		bar   *progressbar.ProgressBar
	)
	if ios.ProgressEnabled() {
		run.OnStart = func(account, mailbox string, todo int) {
			barMu.Lock()
			defer barMu.Unlock()
			if bar != nil {
				_ = bar.Finish()
				bar = nil
			}
			if todo > 0 {
				bar = progressbar.NewOptions(todo, progressbar.OptionSetWriter(ios.ErrOut),
					progressbar.OptionSetDescription(termsafe.Line(account+" "+mailbox)), progressbar.OptionShowCount(),
					progressbar.OptionShowIts(), progressbar.OptionClearOnFinish(), progressbar.OptionThrottle(100*time.Millisecond))
			}
		}
		run.OnDone = func() {
			barMu.Lock()
			defer barMu.Unlock()
			if bar != nil {
				_ = bar.Add(1)
			}
		}
	}
	var keys []store.MessageKey
	for _, acct := range accounts {
		ks, err := run.Run(ctx, wire.ReplayAccount(senv.Env, acct), since, opts.Limit)
		keys = append(keys, ks...)
		if err != nil {
			barMu.Lock()
			if bar != nil {
				_ = bar.Finish()
			}
			barMu.Unlock()
			if _, aerr := res.AddElapsed(time.Since(start)); aerr != nil {
				f.Logger().Warn("replay elapsed", "err", aerr)
			}
			if ctx.Err() != nil {
				done, _ := res.Len()
				fmt.Fprintf(ios.ErrOut, "replay interrupted; %d results are kept in %s: run the same command again to continue\n",
					done, filepath.Join(cfg.StateDir, "replay.db"))
				return ctx.Err()
			}
			if _, ok := cmdutil.AsUserError(err); ok || errors.Is(err, store.ErrLocked) {
				return err
			}
			return cmdutil.Unreachable(err, "check the account with: mailagent doctor")
		}
	}
	barMu.Lock()
	if bar != nil {
		_ = bar.Finish()
	}
	barMu.Unlock()
	results, err := res.Load(keys)
	if err != nil {
		return err
	}
	elapsed := time.Since(start)
	total, err := res.AddElapsed(elapsed)
	if err != nil {
		return fmt.Errorf("replay results: %w", err)
	}
	sum := run.ScoreRun(results, cfg)
	sum.Elapsed, sum.TotalElapsed, sum.Generated = elapsed, total, f.Now()
	if opts.HTML != "" {
		if err := writeReplayHTML(opts.HTML, sum); err != nil {
			return err
		}
	}
	if opts.JSON {
		enc := json.NewEncoder(ios.Out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(view.ToReplayJSON(sum)); err != nil {
			return fmt.Errorf("write json: %w", err)
		}
		return nil
	}
	var tb cmdutil.Table
	for _, r := range sum.Rows() {
		tb.Row(r[0], r[1])
	}
	if err := tb.Write(ios.Out); err != nil {
		return err
	}
	fmt.Fprintln(ios.Out)
	if err := sum.WriteUnwanted(ios.Out, 10); err != nil {
		return err
	}
	fmt.Fprintln(ios.Out)
	return sum.WriteThresholds(ios.Out, ios.ColorEnabled())
}

func writeReplayHTML(path string, sum replay.Summary) error {
	var b strings.Builder
	if err := sum.WriteHTML(&b); err != nil {
		return fmt.Errorf("html report: %w", err)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		return fmt.Errorf("html report: %w", err)
	}
	return nil
}
