// Package triage is `mailagent triage`: its flags, and the summary it
// prints. The run itself (internal/app/triage) is the pipeline over the
// mail already in a mailbox. Its tests are in internal/cmd/root
// (triage_test.go), whose test binary holds every command's tests.
package triage

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	apptriage "github.com/mailagent/mailagent/internal/app/triage"
	"github.com/mailagent/mailagent/internal/cmdutil"
	"github.com/mailagent/mailagent/internal/config"
	"github.com/mailagent/mailagent/internal/iostreams"
)

// TriageOptions are the flags of `mailagent triage`, and the Factory it
// runs over.
type TriageOptions struct {
	IO      *iostreams.IOStreams
	Factory *cmdutil.Factory

	Account string
	Mailbox string
	Since   string
	Unseen  bool
	Limit   int
	DryRun  bool
	JSON    bool
	Redo    bool
}

// NewCmdTriage is `mailagent triage`; runF, when not nil, runs instead of
// Run (tests of the flag parsing).
func NewCmdTriage(f *cmdutil.Factory, runF func(context.Context, *TriageOptions) error) *cobra.Command {
	opts := &TriageOptions{IO: f.IOStreams, Factory: f}
	cmd := &cobra.Command{
		Use:   "triage",
		Short: "Classify existing mail in a batch (never sends, never changes the mailbox)",
		Long: `triage fetches messages (with BODY.PEEK, so nothing is marked read),
routes, classifies and decides what would be done with each, and stores the
result. It never sends mail and never changes the mailbox.

While another process holds the state database (a triage, an approval
waiting out its undo window) triage says so and waits for it; through a
running watcher it works at once. A dry run works on a private copy of
the database, so it never keeps a watcher from starting.

Exit codes: 0 all done; 2 bad flags or config; 3 a server could not be
reached; 5 finished, but some messages need review (see their reasons
with --json or mailagent explain).`,
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
	fl.StringVar(&opts.Mailbox, "mailbox", "", "mailbox to read (default: the account's mailbox)")
	fl.StringVar(&opts.Since, "since", "", "only mail since a duration ago (7d, 36h, 2w) or a date (2026-01-02)")
	fl.BoolVar(&opts.Unseen, "unseen", false, "only messages without \\Seen")
	fl.IntVar(&opts.Limit, "limit", 0, "at most N messages, the newest (0 = no limit)")
	fl.BoolVar(&opts.DryRun, "dry-run", false, "write nothing anywhere: no IMAP change, no store write")
	fl.BoolVar(&opts.JSON, "json", false, "one JSON object per message on stdout; progress and summary on stderr")
	fl.BoolVar(&opts.Redo, "redo", false, "triage again messages that were already triaged")
	return cmd
}

// Run triages the mail opts selects (apptriage.Run), prints the summary
// on stderr, and returns cmdutil.ErrPartial (exit 5) when some message
// needs review.
func Run(ctx context.Context, opts *TriageOptions) error {
	f := opts.Factory
	cfg, err := f.Config()
	if err != nil {
		return err
	}
	accounts, err := cmdutil.PickAccounts(cfg, opts.Account)
	if err != nil {
		return err
	}
	since, _ := cmdutil.ParseSince(opts.Since, f.Now())
	sum, err := apptriage.Run(ctx, &apptriage.Options{
		Store:    StoreEnv(f, cfg),
		Accounts: accounts, Mailbox: opts.Mailbox, Since: since, Unseen: opts.Unseen, Limit: opts.Limit,
		DryRun: opts.DryRun, JSON: opts.JSON, Redo: opts.Redo,
		Progress:     opts.IO.ProgressEnabled(),
		PrethreadOff: f.PrethreadOff,
		Stdout:       opts.IO.Out, Stderr: opts.IO.ErrOut, Now: f.Now,
	})
	if err != nil {
		return err
	}
	printSummary(opts.IO, sum)
	if sum.NeedsReview {
		return cmdutil.ErrPartial
	}
	return nil
}

// StoreEnv is how f opens the state database of cfg (f's configuration)
// for triage and replay (apptriage.OpenStore).
func StoreEnv(f *cmdutil.Factory, cfg *config.Config) apptriage.StoreEnv {
	return apptriage.StoreEnv{Config: cfg, DB: cmdutil.DBPath(cfg), Stderr: f.IOStreams.ErrOut, Logger: f.Logger(),
		Open: f.OpenStoreWith, OpenSnapshot: f.OpenSnapshotStore, Env: f.WireEnv(cfg)}
}

// printSummary is the closing table, on stderr.
func printSummary(ios *iostreams.IOStreams, s *apptriage.Summary) {
	var tb cmdutil.Table
	tb.Row("triaged", fmt.Sprintf("%s (%d already done, skipped) in %s", cmdutil.Plural(s.Total, "message"), s.Skipped, s.Wall.Round(time.Millisecond)))
	for _, sec := range []struct {
		name string
		m    map[string]int
	}{{"route", s.Routes}, {"intent", s.Intents}, {"action", s.Actions}, {"decision", s.Decisions}} {
		tb.Row(sec.name, apptriage.FormatCounts(sec.m))
	}
	tb.Row("tokens", fmt.Sprintf("%d in, %d out (%s never reached the model)", s.Usage.PromptTokens, s.Usage.OutputTokens, cmdutil.Plural(s.NoModel, "message")))
	_ = tb.Write(ios.ErrOut)
}
