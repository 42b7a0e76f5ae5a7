package wire

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/imapsync"
	"github.com/mailagent/mailagent/internal/app/apperr"
	"github.com/mailagent/mailagent/internal/app/replay"
	"github.com/mailagent/mailagent/internal/config"
	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/prompts"
)

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

// replayModels names the models a replay uses, for its settings: the
// classify model, and with drafts the draft model when it differs.
func replayModels(cfg *config.Config, drafts bool) string {
	c, d := cfg.LLM.ForTask(config.TaskClassify).Model, cfg.LLM.ForTask(config.TaskDraft).Model
	if drafts && d != c {
		return c + " + " + d
	}
	return c
}

// ReplaySetup is what ReplayRunner wires a replay from.
type ReplaySetup struct {
	Config *config.Config
	// Env is the process's wiring: the models, the logins, the clock.
	Env *Env
	// Store is the agent's store, read-only (triage.OpenStore as a dry
	// run).
	Store PipelineStore
	// Results is the replay's own database, opened by the caller.
	Results *replay.Results
	// Policy is the policy to replay under, mode "auto".
	Policy config.Policy
	// Drafts also drafts every reply (--drafts).
	Drafts bool
	// Fresh drops the earlier results (--fresh).
	Fresh  bool
	Logger *slog.Logger
}

// ReplayRunner wires a replay (internal/app/replay's Runner): it begins the results under these settings
// (other settings than the stored results' are a usage error that asks
// for Fresh), loads the threader from the store, builds the same models
// as watch and triage ([llm.classify] and [llm.draft] over [llm]) and a
// dry-run pipeline over them whose replies come from each account.
func ReplayRunner(ctx context.Context, s ReplaySetup) (*replay.Runner, error) {
	cfg := s.Config
	pol := PolicyFromConfig(s.Policy)
	if err := s.Results.Begin(replaySettings(pol, s.Drafts, replayModels(cfg, s.Drafts)), s.Fresh); err != nil {
		if errors.Is(err, replay.ErrSettingsChanged) {
			return nil, &apperr.Error{Code: apperr.CodeUsage, Err: err, Hint: "run again with --fresh to start over with these settings"}
		}
		return nil, err
	}
	threader, err := LoadThreader(s.Store)
	if err != nil {
		return nil, err
	}
	model, err := s.Env.ClassifyModel(ctx)
	if err != nil {
		return nil, err
	}
	draftModel := model
	if s.Drafts {
		if draftModel, err = s.Env.DraftModel(ctx, model); err != nil {
			return nil, err
		}
	}
	ps, err := prompts.Load(cfg.PromptsDir)
	if err != nil {
		return nil, apperr.Usage("prompts_dir: %v", err)
	}
	p := NewPipeline(s.Env, cfg, s.Store, &agent.LLMClassifier{Model: model, Prompts: ps}, threader)
	p.Policy = pol
	p.DryRun = true
	for _, a := range cfg.Accounts { // as watch drafts: replies come from the account
		acct := p.Accounts[a.Name]
		acct.From = mail.Address{Name: a.DisplayName, Email: a.Email}
		p.Accounts[a.Name] = acct
	}
	run := &replay.Runner{Pipeline: p, Results: s.Results, Concurrency: cfg.LLM.Concurrency,
		MaxMessageBytes: cfg.Sync.MaxMessageBytes, Logger: s.Logger}
	if s.Drafts {
		run.Drafter = &agent.LLMDrafter{Model: draftModel, Prompts: ps, MaxChars: cfg.Policy.MaxDraftChars}
		if cfg.OwnerProfileFile != "" {
			b, err := os.ReadFile(cfg.OwnerProfileFile)
			if err != nil {
				return nil, apperr.Usage("owner_profile_file: %v", err)
			}
			run.Profile = string(b)
		}
	}
	return run, nil
}

// ReplayAccount is the replay.Account of a configured account, dialled
// through env.
func ReplayAccount(env *Env, acct *config.Account) replay.Account {
	return replay.Account{Name: acct.Name, Mailbox: acct.Mailbox, SentMailbox: acct.SentMailbox,
		Owner: Owner(acct), Dial: func(ctx context.Context) (*imapsync.Client, error) { return env.DialIMAP(ctx, acct) }}
}
