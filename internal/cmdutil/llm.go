package cmdutil

import (
	"context"
	"errors"
	"fmt"

	"github.com/mailagent/mailagent/internal/config"
	"github.com/mailagent/mailagent/internal/llm"
)

// ModelKey resolves the API key of the model l names. Gemini needs one;
// an OpenAI-compatible server may not (local servers need none), so there
// no key source means an empty key, but a configured source that does not
// resolve is an error, not a silent "no key". The error is a *UserError
// (ExitUsage) whose hint names the fix. It is the one rule for the key of
// a model the Factory builds: cmdutil/provider.New and the Factory's
// default NewModel both ask it.
func ModelKey(ctx context.Context, l config.LLM) (config.Secret, error) {
	if l.Provider == config.ProviderOpenAI {
		if !l.HasKeySource() {
			return config.Secret{}, nil
		}
		s, err := l.ResolveAPIKey(ctx)
		if err != nil {
			return config.Secret{}, &UserError{Code: ExitUsage, Err: fmt.Errorf("llm api key: %w", err),
				Hint: "set the variable named by llm.api_key_env or fix llm.api_key_cmd; a local server (Ollama, llama.cpp, vLLM, LM Studio) needs neither: remove both"}
		}
		return s, nil
	}
	s, err := l.ResolveAPIKey(ctx)
	if err != nil {
		return config.Secret{}, &UserError{Code: ExitUsage, Err: fmt.Errorf("llm api key: %w", err),
			Hint: "set the variable named by llm.api_key_env (default GEMINI_API_KEY) or llm.api_key_cmd"}
	}
	return s, nil
}

// ErrNoModelProvider is what the default NewModel of New's Factory
// returns once the key resolved: this Factory was not given the real
// model builder (internal/cmd/root's NewFactory gives it).
var ErrNoModelProvider = errors.New("no model provider in this build: the composition root (internal/cmd/root) sets Factory.NewModel")

// noModelProvider is Factory.NewModel as New leaves it: it checks the key
// as the real builder does, so a missing key reports the same way (the
// doctor's "model: api key" check), then fails with ErrNoModelProvider.
// The real builder (cmdutil/provider) links the providers' SDKs, which
// the commands' own tests have no use for.
func noModelProvider(ctx context.Context, cfg *config.Config) (llm.Model, error) {
	if _, err := ModelKey(ctx, cfg.LLM); err != nil {
		return nil, err
	}
	return nil, ErrNoModelProvider
}

// TaskConfig returns cfg with [llm] replaced by the effective settings of
// task ([llm.classify] or [llm.draft] over [llm]).
func TaskConfig(cfg *config.Config, task string) *config.Config {
	c := *cfg
	c.LLM = cfg.LLM.ForTask(task)
	return &c
}

// DraftModel builds the draft model next to classify, the classify
// model: when both tasks resolve to the same settings they share it, and
// so one rate limit.
func (f *Factory) DraftModel(ctx context.Context, cfg *config.Config, classify llm.Model) (llm.Model, error) {
	cc, dc := TaskConfig(cfg, config.TaskClassify), TaskConfig(cfg, config.TaskDraft)
	if cc.LLM == dc.LLM {
		return classify, nil
	}
	return f.NewModel(ctx, dc)
}
