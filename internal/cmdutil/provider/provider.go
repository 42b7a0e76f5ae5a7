// Package provider builds the language model the configuration names:
// the Gemini client (internal/llm/gemini) or an OpenAI-compatible one
// (internal/llm/openai), wrapped in the same rate limit and retries
// whatever the provider.
//
// Contract: New is the real cmdutil.Factory.NewModel. It is the one
// package of the command tier that links the providers' SDKs, and only
// the composition root imports it (internal/cmd/root's NewFactory;
// internal/rig/archtest holds it to that), so that cmdutil and every
// command's tests build without genai or openai-go. A key that does not
// resolve is cmdutil.ModelKey's *cmdutil.UserError, with its hint; New
// contacts no server.
package provider

import (
	"context"
	"fmt"

	"github.com/mailagent/mailagent/internal/cmdutil"
	"github.com/mailagent/mailagent/internal/config"
	"github.com/mailagent/mailagent/internal/llm"
	"github.com/mailagent/mailagent/internal/llm/gemini"
	"github.com/mailagent/mailagent/internal/llm/openai"
)

// CloseIdle closes the idle connections of the models New built (their
// shared transport), ending their goroutines: the composition root calls
// it as a command returns, so a process that runs commands in process (a
// test binary, a benchmark) keeps no connection to a model server open.
func CloseIdle() {
	gemini.CloseIdleConnections()
	openai.CloseIdleConnections()
}

// New builds the model cfg.LLM names (provider gemini or openai), wrapped
// in the same rate limit and retries whatever the provider.
func New(ctx context.Context, cfg *config.Config) (llm.Model, error) {
	l := cfg.LLM
	key, err := cmdutil.ModelKey(ctx, l)
	if err != nil {
		return nil, err
	}
	var m llm.Model
	if l.Provider == config.ProviderOpenAI {
		m, err = openai.New(openai.Config{
			APIKey: key.Reveal(), Model: l.Model, BaseURL: l.BaseURL, CallTimeout: l.Timeout.D(),
			StructuredOutput: llm.StructuredOutput(l.StructuredOutput),
		})
		if err != nil {
			return nil, fmt.Errorf("openai client: %w", err)
		}
	} else {
		m, err = gemini.New(ctx, gemini.Config{
			APIKey: key.Reveal(), Model: l.Model, BaseURL: l.BaseURL, CallTimeout: l.Timeout.D(),
		})
		if err != nil {
			return nil, fmt.Errorf("gemini client: %w", err)
		}
	}
	return llm.WithRetry(llm.WithRateLimit(m, l.RequestsPerMinute), llm.RetryOptions{}), nil
}
