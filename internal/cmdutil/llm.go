package cmdutil

import (
	"context"
	"fmt"

	"github.com/mailagent/mailagent/internal/config"
	"github.com/mailagent/mailagent/internal/llm"
	"github.com/mailagent/mailagent/internal/llm/gemini"
	"github.com/mailagent/mailagent/internal/llm/openai"
)

// NewModel builds the model cfg.LLM names (provider gemini or openai),
// wrapped in the same rate limit and retries whatever the provider.
func NewModel(ctx context.Context, cfg *config.Config) (llm.Model, error) {
	if cfg.LLM.Provider == config.ProviderOpenAI {
		return newOpenAIModel(ctx, cfg)
	}
	return newGeminiModel(ctx, cfg)
}

// newOpenAIModel builds an OpenAI-compatible model. The API key is
// optional (local servers need none), but a configured source that does
// not resolve is an error, not a silent "no key".
func newOpenAIModel(ctx context.Context, cfg *config.Config) (llm.Model, error) {
	l := cfg.LLM
	var key string
	if l.HasKeySource() {
		s, err := l.ResolveAPIKey(ctx)
		if err != nil {
			return nil, &UserError{Code: ExitUsage, Err: fmt.Errorf("llm api key: %w", err),
				Hint: "set the variable named by llm.api_key_env or fix llm.api_key_cmd; a local server (Ollama, llama.cpp, vLLM, LM Studio) needs neither: remove both"}
		}
		key = s.Reveal()
	}
	m, err := openai.New(openai.Config{
		APIKey: key, Model: l.Model, BaseURL: l.BaseURL, CallTimeout: l.Timeout.D(),
		StructuredOutput: llm.StructuredOutput(l.StructuredOutput),
	})
	if err != nil {
		return nil, fmt.Errorf("openai client: %w", err)
	}
	return llm.WithRetry(llm.WithRateLimit(m, l.RequestsPerMinute), llm.RetryOptions{}), nil
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

func newGeminiModel(ctx context.Context, cfg *config.Config) (llm.Model, error) {
	key, err := cfg.LLM.ResolveAPIKey(ctx)
	if err != nil {
		return nil, &UserError{Code: ExitUsage, Err: fmt.Errorf("llm api key: %w", err),
			Hint: "set the variable named by llm.api_key_env (default GEMINI_API_KEY) or llm.api_key_cmd"}
	}
	g, err := gemini.New(ctx, gemini.Config{
		APIKey: key.Reveal(), Model: cfg.LLM.Model, BaseURL: cfg.LLM.BaseURL, CallTimeout: cfg.LLM.Timeout.D(),
	})
	if err != nil {
		return nil, fmt.Errorf("gemini client: %w", err)
	}
	return llm.WithRetry(llm.WithRateLimit(g, cfg.LLM.RequestsPerMinute), llm.RetryOptions{}), nil
}
