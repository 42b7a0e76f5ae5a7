package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/imapsync"
	"github.com/mailagent/mailagent/internal/app/wire"
	"github.com/mailagent/mailagent/internal/cmdutil"
	"github.com/mailagent/mailagent/internal/config"
	"github.com/mailagent/mailagent/internal/llm"
	"github.com/mailagent/mailagent/internal/termsafe"
	"github.com/mailagent/mailagent/store"
)

// triageBatch is how many triaged messages go in one store commit.
const triageBatch = 256

// batchGC sets the garbage collector for a batch run (triage, replay)
// and returns what restores it. The live heap of one is small (the
// threader, the records held for the next commit), so the collector runs
// when the heap is triageGOGC % above it, not 100 %: that saves about a
// third of triage's CPU at 400 (some 35 MB more at peak) and a tenth more
// at 800 (some 80 MB more; BENCHMARKS.md, section 2). A soft memory limit
// makes the collector work harder before the heap passes batchMemLimit,
// whatever the mailbox's size. An explicit GOGC or GOMEMLIMIT wins.
func batchGC() (restore func()) {
	restore = func() {}
	if os.Getenv("GOGC") == "" {
		old := debug.SetGCPercent(triageGOGC)
		restore = func() { debug.SetGCPercent(old) }
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		old := debug.SetMemoryLimit(batchMemLimit)
		prev := restore
		restore = func() { debug.SetMemoryLimit(old); prev() }
	}
	return restore
}

const (
	// triageGOGC is the garbage collector's target percentage during a
	// batch run.
	triageGOGC = 800
	// batchMemLimit is the soft memory limit of a batch run.
	batchMemLimit = 1 << 30
)

// TriageOptions are the flags of `mailagent triage`.
type TriageOptions struct {
	Account string
	Mailbox string
	Since   string
	Unseen  bool
	Limit   int
	DryRun  bool
	JSON    bool
	Redo    bool
}

func newTriageCmd(f *Factory, runF func(context.Context, *TriageOptions) error) *cobra.Command {
	opts := &TriageOptions{}
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
			if err := checkWindow(opts.Limit, opts.Since); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return triageRun(cmd.Context(), f, opts)
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

// parseSince is cmdutil.ParseSince (digest and triage use it).
func parseSince(s string, now time.Time) (time.Time, error) { return cmdutil.ParseSince(s, now) }

func toTriageJSON(rec *store.MessageRecord, usage llm.Usage, skipped bool) TriageJSON {
	return TriageJSON{MessageJSON: toMessageJSON(rec), TokensIn: usage.PromptTokens, TokensOut: usage.OutputTokens, Skipped: skipped}
}

// triageSummary counts outcomes for the closing table.
type triageSummary struct {
	mu        sync.Mutex
	total     int
	skipped   int
	routes    map[string]int
	intents   map[string]int
	actions   map[string]int
	decisions map[string]int
	usage     llm.Usage
	noModel   int
}

func newTriageSummary() *triageSummary {
	return &triageSummary{routes: map[string]int{}, intents: map[string]int{}, actions: map[string]int{}, decisions: map[string]int{}}
}

func (s *triageSummary) add(rec *store.MessageRecord, usage llm.Usage, skipped bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.total++
	if skipped {
		s.skipped++
	}
	s.routes[rec.Route]++
	s.decisions[rec.Decision]++
	if c := rec.Classification; c != nil {
		s.actions[c.Action]++
		for _, in := range c.Intents {
			s.intents[in]++
		}
	} else if rec.State != store.StateNeedsReview {
		s.noModel++
	}
	s.usage = s.usage.Add(usage)
}

func (s *triageSummary) print(w io.Writer, wall time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var tb table
	tb.row("triaged", fmt.Sprintf("%s (%d already done, skipped) in %s", plural(s.total, "message"), s.skipped, wall.Round(time.Millisecond)))
	for _, sec := range []struct {
		name string
		m    map[string]int
	}{{"route", s.routes}, {"intent", s.intents}, {"action", s.actions}, {"decision", s.decisions}} {
		tb.row(sec.name, formatCounts(sec.m))
	}
	tb.row("tokens", fmt.Sprintf("%d in, %d out (%s never reached the model)", s.usage.PromptTokens, s.usage.OutputTokens, plural(s.noModel, "message")))
	_ = tb.write(w)
}

func formatCounts(m map[string]int) string {
	if len(m) == 0 {
		return "-"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if m[keys[i]] != m[keys[j]] {
			return m[keys[i]] > m[keys[j]]
		}
		return keys[i] < keys[j]
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		name := termsafe.Line(k) // intents and actions come from the model
		if name == "" {
			name = "(none)"
		}
		parts[i] = fmt.Sprintf("%s %d", name, m[k])
	}
	return strings.Join(parts, ", ")
}

func triageRun(ctx context.Context, f *Factory, opts *TriageOptions) (err error) {
	start := time.Now()
	defer batchGC()()
	cfg, accounts, err := configAccounts(f, opts.Account)
	if err != nil {
		return err
	}
	since, _ := parseSince(opts.Since, f.Now())

	st, closeStore, err := openPipelineStore(ctx, f, opts.DryRun)
	if err != nil {
		return err
	}
	// Outcomes are committed triageBatch at a time (see store.Batch):
	// triage is simply run again after a crash, so nothing is lost that
	// a rerun does not redo.
	var batch *store.Batch
	if db, ok := st.(*store.Store); ok && !opts.DryRun {
		batch = store.NewBatch(db, triageBatch)
		st = batch
	}
	defer func() {
		// The store is written without an fsync per commit; closing it
		// syncs, and a failure there means results may not be on disk.
		var ferr error
		if batch != nil {
			ferr = batch.Flush() // also after an error or an interrupt
		}
		if cerr := errors.Join(ferr, closeStore()); cerr != nil && err == nil {
			err = fmt.Errorf("save triage results: %w", cerr)
		}
	}()
	p, _, _, err := wire.ClassifyingPipeline(ctx, wireEnv(f, cfg), cfg, st, false)
	if err != nil {
		return err
	}
	p.DryRun = opts.DryRun

	sum := newTriageSummary()
	var needsReview bool
	for _, acct := range accounts {
		if err := learnSentContacts(ctx, acct, st, f.Now()); err != nil {
			fmt.Fprintf(f.Stderr, "warning: known contacts not read from Sent: %v\n", err)
		}
		nr, err := triageAccount(ctx, f, cfg, acct, p, opts, since, sum)
		if err != nil {
			return err
		}
		needsReview = needsReview || nr
	}
	sum.print(f.Stderr, time.Since(start))
	if needsReview {
		return errPartial
	}
	return nil
}

// configAccounts is the preamble of the commands that work on accounts:
// the configuration, and the accounts --account picks (all when name is
// empty; an unknown name is a usage error).
// checkWindow checks the --limit and --since flags that triage and replay
// share: a usage error (exit 2) names the flag.
func checkWindow(limit int, since string) error {
	if limit < 0 {
		return usageErr("--limit must be 0 (no limit) or more, got %d", limit)
	}
	if _, err := parseSince(since, time.Now()); err != nil {
		return usageErr("--since: %v", err)
	}
	return nil
}

func configAccounts(f *Factory, name string) (*config.Config, []*config.Account, error) {
	cfg, err := f.Config()
	if err != nil {
		return nil, nil, err
	}
	accounts, err := cmdutil.PickAccounts(cfg, name)
	return cfg, accounts, err
}

func triageAccount(ctx context.Context, f *Factory, cfg *config.Config, acct *config.Account, p *agent.Pipeline,
	opts *TriageOptions, since time.Time, sum *triageSummary) (needsReview bool, err error) {
	mailbox := opts.Mailbox
	if mailbox == "" {
		mailbox = acct.Mailbox
	}
	c, err := DialIMAP(ctx, acct)
	if err != nil {
		return false, err
	}
	defer func() { _ = c.Close() }()
	// Read-only EXAMINE: triage never changes the mailbox.
	if _, err := c.Select(ctx, mailbox, true); err != nil {
		return false, unreachable(fmt.Errorf("account %s: %w", acct.Name, err), "check the mailbox name with: mailagent doctor")
	}
	uids, err := c.Search(ctx, imapsync.Criteria{Since: since, Unseen: opts.Unseen})
	if err != nil {
		return false, fmt.Errorf("account %s: %w", acct.Name, err)
	}
	if opts.Limit > 0 && len(uids) > opts.Limit {
		uids = uids[len(uids)-opts.Limit:]
	}
	f.Logger().Info("triage", "account", acct.Name, "mailbox", mailbox, "messages", len(uids))

	var bar *progressbar.ProgressBar
	if IsTTY(f.Stderr) && len(uids) > 0 {
		bar = newMessageBar(f.Stderr, len(uids), acct.Name+" "+mailbox)
	}

	if !skipPrethread {
		if err := prethread(ctx, c, uids, p); err != nil {
			return false, fmt.Errorf("account %s: %w", acct.Name, err)
		}
	}

	conc := cfg.LLM.Concurrency
	if conc <= 0 {
		conc = 4
	}
	var outMu sync.Mutex
	enc := json.NewEncoder(f.Stdout)
	var nr bool
	fetch := func(ctx context.Context, send func(imapsync.RawMessage) error) error {
		// Prefetch: the next messages come in while the workers handle
		// these (send only queues; nothing else uses c meanwhile).
		return c.Fetch(ctx, uids, imapsync.FetchOptions{MaxMessageBytes: cfg.Sync.MaxMessageBytes, Prefetch: true}, send)
	}
	work := func(ctx context.Context, m imapsync.RawMessage) error {
		out, err := p.Triage(ctx, agent.Input{
			Key:       store.MessageKey{Account: acct.Name, Mailbox: mailbox, UIDValidity: m.UIDValidity, UID: m.UID},
			Raw:       m.Raw,
			Truncated: m.Truncated,
		}, opts.Redo)
		if err != nil {
			return fmt.Errorf("uid %d: %w", m.UID, err)
		}
		sum.add(out.Record, out.Usage, out.Skipped)
		outMu.Lock()
		defer outMu.Unlock()
		if out.Record.State == store.StateNeedsReview {
			nr = true
		}
		if bar != nil {
			_ = bar.Add(1)
		}
		if opts.JSON {
			if err := enc.Encode(toTriageJSON(out.Record, out.Usage, out.Skipped)); err != nil {
				return fmt.Errorf("write json: %w", err)
			}
		}
		return nil
	}
	err = agent.RunPool(ctx, conc, fetch, work)
	if bar != nil {
		_ = bar.Finish()
	}
	if err != nil {
		if ctx.Err() != nil {
			return nr, ctx.Err()
		}
		if errors.Is(err, store.ErrLocked) {
			return nr, err
		}
		return nr, fmt.Errorf("account %s: %w", acct.Name, err)
	}
	return nr, nil
}
