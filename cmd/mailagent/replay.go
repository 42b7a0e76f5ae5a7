package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
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

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/imapsync"
	"github.com/mailagent/mailagent/internal/app/replay"
	"github.com/mailagent/mailagent/internal/app/view"
	"github.com/mailagent/mailagent/internal/app/wire"
	"github.com/mailagent/mailagent/internal/cmdutil"
	"github.com/mailagent/mailagent/internal/config"
	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/internal/termsafe"
	"github.com/mailagent/mailagent/prompts"
	"github.com/mailagent/mailagent/store"
)

// ReplayOptions are the flags of `mailagent replay`.
type ReplayOptions struct {
	Account string
	Since   string
	Limit   int
	Drafts  bool
	Policy  string
	JSON    bool
	HTML    string
	Fresh   bool
}

func newReplayCmd(f *Factory, runF func(context.Context, *ReplayOptions) error) *cobra.Command {
	opts := &ReplayOptions{}
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
			if err := checkWindow(opts.Limit, opts.Since); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return replayRun(cmd.Context(), f, opts)
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

// replayPolicy is the configured policy with the keys of file (a [policy]
// table, or the keys at the top level) replacing it, and mode "auto": a
// replay asks what auto mode would have done.
func replayPolicy(base config.Policy, file string) (config.Policy, error) {
	p := base
	if file != "" {
		var top map[string]any
		if _, err := toml.DecodeFile(file, &top); err != nil {
			return p, usageErr("--policy %s: %v", file, err)
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
			return p, usageErr("--policy %s: %v", file, err)
		}
		for _, k := range md.Undecoded() {
			if !wrapped || (len(k) > 1 && k[0] == "policy") {
				return p, usageErr("--policy %s: unknown key %s", file, k)
			}
		}
		if p.MinConfidence < 0 || p.MinConfidence > 1 {
			return p, usageErr("--policy %s: min_confidence %.2f is not between 0 and 1", file, p.MinConfidence)
		}
	}
	p.Mode = "auto"
	return p, nil
}

// replayResultsVersion is the shape of a stored result: 2 records the
// arrival time and the would-be recipient the caps simulation counts by,
// so results of version 1 (which lack them) need --fresh.
const replayResultsVersion = 2

// replaySettings fingerprints what makes results comparable.
func replaySettings(pol agent.Policy, drafts bool, model string) string {
	b, _ := json.Marshal(pol)
	h := sha256.Sum256(b)
	return fmt.Sprintf("model=%s drafts=%t policy=%s results=v%d", model, drafts, hex.EncodeToString(h[:6]), replayResultsVersion)
}

func replayRun(ctx context.Context, f *Factory, opts *ReplayOptions) (err error) {
	start := time.Now()
	defer batchGC()()
	cfg, err := f.Config()
	if err != nil {
		return err
	}
	accounts, err := cmdutil.PickAccounts(cfg, opts.Account)
	if err != nil {
		return err
	}
	since, _ := parseSince(opts.Since, f.Now())
	cpol, err := replayPolicy(cfg.Policy, opts.Policy)
	if err != nil {
		return err
	}
	pol := wire.PolicyFromConfig(cpol)

	// The agent's store, read-only (or a watcher's through its socket):
	// the same opening as triage --dry-run.
	st, closeStore, err := openPipelineStore(ctx, f, true)
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
	if err := res.Begin(replaySettings(pol, opts.Drafts, replayModels(cfg, opts.Drafts)), opts.Fresh); err != nil {
		if errors.Is(err, replay.ErrSettingsChanged) {
			return &UserError{Code: ExitUsage, Err: err, Hint: "run again with --fresh to start over with these settings"}
		}
		return err
	}
	threader, err := wire.LoadThreader(st)
	if err != nil {
		return err
	}
	// The same models as watch and triage: [llm.classify] and [llm.draft]
	// over [llm].
	model, err := f.NewModel(ctx, taskConfig(cfg, config.TaskClassify))
	if err != nil {
		return err
	}
	draftModel := model
	if opts.Drafts {
		if draftModel, err = f.draftModel(ctx, cfg, model); err != nil {
			return err
		}
	}
	ps, err := prompts.Load(cfg.PromptsDir)
	if err != nil {
		return usageErr("prompts_dir: %v", err)
	}
	p := wire.NewPipeline(wireEnv(f, cfg), cfg, st, &agent.LLMClassifier{Model: model, Prompts: ps}, threader)
	p.Policy = pol
	p.DryRun = true
	for _, a := range cfg.Accounts { // as watch drafts: replies come from the account
		acct := p.Accounts[a.Name]
		acct.From = mail.Address{Name: a.DisplayName, Email: a.Email}
		p.Accounts[a.Name] = acct
	}
	run := &replay.Runner{Pipeline: p, Results: res, Concurrency: cfg.LLM.Concurrency,
		MaxMessageBytes: cfg.Sync.MaxMessageBytes, Logger: f.Logger()}
	if opts.Drafts {
		run.Drafter = &agent.LLMDrafter{Model: draftModel, Prompts: ps, MaxChars: cfg.Policy.MaxDraftChars}
		if cfg.OwnerProfileFile != "" {
			b, err := os.ReadFile(cfg.OwnerProfileFile)
			if err != nil {
				return usageErr("owner_profile_file: %v", err)
			}
			run.Profile = string(b)
		}
	}
	var (
		barMu sync.Mutex
		bar   *progressbar.ProgressBar
	)
	if IsTTY(f.Stderr) {
		run.OnStart = func(account, mailbox string, todo int) {
			barMu.Lock()
			defer barMu.Unlock()
			if bar != nil {
				_ = bar.Finish()
				bar = nil
			}
			if todo > 0 {
				bar = progressbar.NewOptions(todo, progressbar.OptionSetWriter(f.Stderr),
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
		a := replay.Account{Name: acct.Name, Mailbox: acct.Mailbox, SentMailbox: acct.SentMailbox,
			Owner: wire.Owner(acct), Dial: func(ctx context.Context) (*imapsync.Client, error) { return DialIMAP(ctx, acct) }}
		ks, err := run.Run(ctx, a, since, opts.Limit)
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
				fmt.Fprintf(f.Stderr, "replay interrupted; %d results are kept in %s: run the same command again to continue\n",
					done, filepath.Join(cfg.StateDir, "replay.db"))
				return ctx.Err()
			}
			if _, ok := cmdutil.AsUserError(err); ok || errors.Is(err, store.ErrLocked) {
				return err
			}
			return unreachable(err, "check the account with: mailagent doctor")
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
	// Priced at the classify model's list price: every message is
	// classified, and drafts (--drafts) are the smaller share.
	sum := replay.NewSummary(replay.Score(results, pol), cfg.LLM.ForTask(config.TaskClassify).Model)
	sum.MinConfidence, sum.WithDrafts = pol.MinConfidence, opts.Drafts
	sum.Elapsed, sum.TotalElapsed, sum.Generated = elapsed, total, f.Now()
	if opts.HTML != "" {
		if err := writeReplayHTML(opts.HTML, sum); err != nil {
			return err
		}
	}
	if opts.JSON {
		enc := json.NewEncoder(f.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(toReplayJSON(sum)); err != nil {
			return fmt.Errorf("write json: %w", err)
		}
		return nil
	}
	var tb table
	for _, r := range sum.Rows() {
		tb.row(r[0], r[1])
	}
	if err := tb.write(f.Stdout); err != nil {
		return err
	}
	fmt.Fprintln(f.Stdout)
	if err := sum.WriteUnwanted(f.Stdout, 10); err != nil {
		return err
	}
	fmt.Fprintln(f.Stdout)
	return sum.WriteThresholds(f.Stdout, IsTTY(f.Stdout))
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

func optRatio(r float64) *float64 {
	if r < 0 {
		return nil
	}
	return &r
}

func toReplayJSON(s replay.Summary) ReplayJSON {
	var j ReplayJSON
	j.Messages, j.Incoming, j.NeedsReview = s.Messages, s.Incoming, s.NeedsReview
	j.Decisions = map[string]int{}
	for k, v := range s.Decisions {
		j.Decisions[k] = v
	}
	j.Owner.Replied, j.Owner.Flagged, j.Owner.Unread, j.Owner.Deleted, j.Owner.Archived = s.Replied, s.Flagged, s.Unread, s.Deleted, s.Archived
	if s.Replied > 0 {
		v := s.MedianLatency.Seconds()
		j.Owner.MedianReplySeconds = &v
	}
	nr := s.NeedsReply
	j.NeedsReply.TruePositive, j.NeedsReply.FalsePositive, j.NeedsReply.FalseNegative, j.NeedsReply.TrueNegative = nr.TP, nr.FP, nr.FN, nr.TN
	j.NeedsReply.Precision, j.NeedsReply.Recall = optRatio(nr.Precision), optRatio(nr.Recall)
	a := s.Auto
	j.AutoSends.MinConfidence, j.AutoSends.Total, j.AutoSends.OwnerAlsoAnswered, j.AutoSends.NeverAnswered = s.MinConfidence, a.Total, a.AlsoAnswered, a.NeverAnswered
	j.AutoSends.Unwanted = a.NeverAnswered
	j.AutoSends.CapLimited, j.AutoSends.MaxPerContactPerDay, j.AutoSends.MaxPerDay = a.CapLimited, s.MaxPerContactPerDay, s.MaxPerDay
	if a.Compared {
		n := a.AnsweredDifferently
		j.AutoSends.AnsweredVeryDifferently = &n
	}
	d := s.Report.Drafts
	j.Drafts.Enabled, j.Drafts.Compared, j.Drafts.Measure, j.Drafts.VeryDifferentBelow = s.WithDrafts, d.Compared, d.Measure, replay.VeryDifferent
	if d.Compared > 0 {
		mean, med := d.Mean, d.Median
		j.Drafts.MeanSimilarity, j.Drafts.MedianSimilarity = &mean, &med
	}
	j.Thresholds = make([]ReplayThresholdJSON, len(s.Thresholds))
	for i, r := range s.Thresholds {
		j.Thresholds[i] = ReplayThresholdJSON{MinConfidence: r.MinConfidence, AutoSends: r.AutoSends, Unwanted: r.Unwanted, CapLimited: r.CapLimited}
	}
	j.Unwanted = toAutoSendsJSON(s.Unwanted)
	if a.Compared {
		j.VeryDifferent = toAutoSendsJSON(s.VeryDifferent)
	}
	j.Cost = view.ToCostJSON(int64(s.Calls), s.TokensIn, s.TokensOut, s.Model, s.USD, s.PriceKnown)
	j.ElapsedSeconds, j.TotalElapsedSeconds = s.Elapsed.Seconds(), s.TotalElapsed.Seconds()
	return j
}

// toAutoSendsJSON lists auto-sends for replay --json (never null).
func toAutoSendsJSON(items []replay.AutoSent) []ReplayAutoSendJSON {
	out := make([]ReplayAutoSendJSON, 0, len(items))
	for _, u := range items {
		uj := ReplayAutoSendJSON{Message: toKeyJSON(u.Key), From: u.From, Subject: u.Subject, Date: u.Date, Confidence: u.Confidence}
		if u.Similarity >= 0 {
			sim := u.Similarity
			uj.Similarity = &sim
		}
		out = append(out, uj)
	}
	return out
}

// replayModels names the models a replay uses, for its settings: the
// classify model, and with drafts the draft model when it differs.
func replayModels(cfg *config.Config, drafts bool) string {
	c, d := cfg.LLM.ForTask(config.TaskClassify).Model, cfg.LLM.ForTask(config.TaskDraft).Model
	if drafts && d != c {
		return c + " + " + d
	}
	return c
}
