// Package triage is `mailagent triage`'s behaviour: the pipeline run in a
// batch over the mail already in a mailbox (read-only: EXAMINE and
// BODY.PEEK), after the known contacts are learnt from Sent and the
// threader is given every message's threading headers first (prethread),
// with its outcomes committed in batches and counted for the closing
// summary. It also opens the state database the way triage and replay
// share (OpenStore) and sets the collector for a batch run (BatchGC).
// The command (internal/cmd/triage) only reads flags and calls Run.
package triage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/imapsync"
	"github.com/mailagent/mailagent/internal/app/apperr"
	"github.com/mailagent/mailagent/internal/app/view"
	"github.com/mailagent/mailagent/internal/app/wire"
	"github.com/mailagent/mailagent/internal/config"
	"github.com/mailagent/mailagent/internal/llm"
	"github.com/mailagent/mailagent/internal/termsafe"
	"github.com/mailagent/mailagent/store"
)

// triageBatch is how many triaged messages go in one store commit.
const triageBatch = 256

// Options is one triage run.
type Options struct {
	// Store opens the state database (OpenStore); its Config, Logger and
	// Env are the run's too.
	Store    StoreEnv
	Accounts []*config.Account
	Mailbox  string    // "" = each account's mailbox
	Since    time.Time // zero = all
	Unseen   bool
	Limit    int // at most the newest Limit messages per account; 0 = all
	DryRun   bool
	JSON     bool // one view.TriageJSON per message on Stdout
	Redo     bool
	// Progress shows a progress bar on Stderr (a terminal).
	Progress bool
	// PrethreadOff switches prethreading off: only for the positive
	// control of the test that attacks it (cmdutil.Factory.PrethreadOff).
	PrethreadOff bool
	Stdout       io.Writer
	Stderr       io.Writer
	Now          func() time.Time
}

// Run triages every account of o and returns what it did. The results
// stored so far are flushed and synced whatever happens (an error, an
// interrupt); a failure to save them is the run's error.
func Run(ctx context.Context, o *Options) (sum *Summary, err error) {
	start := time.Now()
	defer BatchGC()()
	cfg := o.Store.Config
	st, closeStore, err := OpenStore(ctx, o.Store, o.DryRun)
	if err != nil {
		return nil, err
	}
	// Outcomes are committed triageBatch at a time (see store.Batch):
	// triage is simply run again after a crash, so nothing is lost that
	// a rerun does not redo.
	var batch *store.Batch
	if db, ok := st.(*store.Store); ok && !o.DryRun {
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
			sum, err = nil, fmt.Errorf("save triage results: %w", cerr)
		}
	}()
	p, _, _, err := wire.ClassifyingPipeline(ctx, o.Store.Env, cfg, st, false)
	if err != nil {
		return nil, err
	}
	p.DryRun = o.DryRun

	sum = newSummary()
	for _, acct := range o.Accounts {
		learned := learnSentBeside(ctx, o, acct, st)
		nr, err := account(ctx, o, cfg, acct, p, sum, learned)
		learned() // the learning ends before the next account or the return
		if err != nil {
			return nil, err
		}
		sum.NeedsReview = sum.NeedsReview || nr
	}
	sum.Wall = time.Since(start)
	return sum, nil
}

func toTriageJSON(rec *store.MessageRecord, usage llm.Usage, skipped bool) view.TriageJSON {
	return view.TriageJSON{MessageJSON: view.ToMessageJSON(rec), TokensIn: usage.PromptTokens, TokensOut: usage.OutputTokens, Skipped: skipped}
}

// Summary counts the outcomes of a run, for the closing table.
type Summary struct {
	mu      sync.Mutex
	Total   int // messages triaged
	Skipped int // of which already done, skipped
	// Routes, Intents, Actions and Decisions count the messages by each
	// (an intent or action is the model's word: sanitise it to print).
	Routes    map[string]int
	Intents   map[string]int
	Actions   map[string]int
	Decisions map[string]int
	Usage     llm.Usage
	NoModel   int // messages that never reached the model
	// NeedsReview: some message needs review (exit 5).
	NeedsReview bool
	Wall        time.Duration
}

func newSummary() *Summary {
	return &Summary{Routes: map[string]int{}, Intents: map[string]int{}, Actions: map[string]int{}, Decisions: map[string]int{}}
}

func (s *Summary) add(rec *store.MessageRecord, usage llm.Usage, skipped bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Total++
	if skipped {
		s.Skipped++
	}
	s.Routes[rec.Route]++
	s.Decisions[rec.Decision]++
	if c := rec.Classification; c != nil {
		s.Actions[c.Action]++
		for _, in := range c.Intents {
			s.Intents[in]++
		}
	} else if rec.State != store.StateNeedsReview {
		s.NoModel++
	}
	s.Usage = s.Usage.Add(usage)
}

// FormatCounts is one line of counts, the most frequent first (ties by
// name), each name sanitised and "(none)" for an empty one; "-" when m
// is empty.
func FormatCounts(m map[string]int) string {
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

// learnSentBeside starts learning acct's known contacts from its Sent
// folder (learnSentContacts, on its own connection) beside the rest of
// the account's start: the dial, the search and prethreading need no
// contact. The returned wait ends it: it blocks until the learning is
// done, says on o.Stderr when it failed (the triage goes on without
// them), and returns at once when called again. It must be called before
// the first message is classified, and always, so the goroutine ends.
func learnSentBeside(ctx context.Context, o *Options, acct *config.Account, st any) (wait func()) {
	done := make(chan error, 1)
	go func() { done <- learnSentContacts(ctx, o.Store.Env, acct, st, o.Now()) }()
	return sync.OnceFunc(func() {
		if err := <-done; err != nil {
			fmt.Fprintf(o.Stderr, "warning: known contacts not read from Sent: %v\n", err)
		}
	})
}

// account triages acct's messages. learned is learnSentBeside's wait:
// the workers start once the Sent folder is read.
func account(ctx context.Context, o *Options, cfg *config.Config, acct *config.Account, p *agent.Pipeline,
	sum *Summary, learned func()) (needsReview bool, err error) {
	mailbox := o.Mailbox
	if mailbox == "" {
		mailbox = acct.Mailbox
	}
	c, err := o.Store.Env.DialIMAP(ctx, acct)
	if err != nil {
		return false, err
	}
	defer func() { _ = c.Close() }()
	// Read-only EXAMINE: triage never changes the mailbox.
	if _, err := c.Select(ctx, mailbox, true); err != nil {
		return false, &apperr.Error{Code: apperr.CodeUnreachable, Err: fmt.Errorf("account %s: %w", acct.Name, err),
			Hint: "check the mailbox name with: mailagent doctor"}
	}
	uids, err := c.Search(ctx, imapsync.Criteria{Since: o.Since, Unseen: o.Unseen})
	if err != nil {
		return false, fmt.Errorf("account %s: %w", acct.Name, err)
	}
	if o.Limit > 0 && len(uids) > o.Limit {
		uids = uids[len(uids)-o.Limit:]
	}
	o.Store.Logger.Info("triage", "account", acct.Name, "mailbox", mailbox, "messages", len(uids))

	var bar *progressbar.ProgressBar
	if o.Progress && len(uids) > 0 {
		bar = newMessageBar(o.Stderr, len(uids), acct.Name+" "+mailbox)
	}

	if !o.PrethreadOff {
		if err := prethread(ctx, c, uids, p); err != nil {
			return false, fmt.Errorf("account %s: %w", acct.Name, err)
		}
	}

	learned() // the known-contact gate needs the owner's correspondents
	conc := cfg.LLM.Concurrency
	if conc <= 0 {
		conc = 4
	}
	var outMu sync.Mutex
	enc := json.NewEncoder(o.Stdout)
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
		}, o.Redo)
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
		if o.JSON {
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

// newMessageBar is the progress bar of a pass over n messages (triage):
// a count of messages and a rate in msg/s, never bytes or "it/s". It is
// cleared when done, so the summary line stands alone.
func newMessageBar(w io.Writer, n int, desc string) *progressbar.ProgressBar {
	return progressbar.NewOptions(n, progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription(termsafe.Line(desc)), progressbar.OptionShowCount(),
		progressbar.OptionShowIts(), progressbar.OptionSetItsString("msg"),
		progressbar.OptionClearOnFinish(), progressbar.OptionThrottle(100*time.Millisecond))
}
