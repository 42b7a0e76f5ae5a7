package doctor

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/mailagent/mailagent/internal/config"
	"github.com/mailagent/mailagent/internal/llm"
	"github.com/mailagent/mailagent/internal/llm/openai"
)

// The doctor's model checks, per distinct model: [llm], then
// [llm.classify] and [llm.draft] when they name another model. Labels are
// "model: CHECK" for [llm] and "model TASK: CHECK" for a task section.
var llmCheckLabels = map[string]string{
	"api key":                      "api_key",
	"server answers":               "server",
	"model listed":                 "listed",
	"structured output round trip": "round_trip",
}

func init() {
	for label, id := range llmCheckLabels {
		fixedCheckIDs["model: "+label] = "model." + id
		for _, task := range []string{config.TaskClassify, config.TaskDraft} {
			fixedCheckIDs["model "+task+": "+label] = "model." + task + "." + id
		}
	}
}

// model checks every distinct model the configuration uses.
func (d *doctor) model(ctx context.Context, cfg *config.Config) {
	d.modelFor(ctx, cfg, "model")
	for _, task := range []string{config.TaskClassify, config.TaskDraft} {
		if tc := taskConfig(cfg, task); tc.LLM != taskConfig(cfg, "").LLM {
			d.modelFor(ctx, tc, "model "+task)
		}
	}
}

// modelFor checks one model: its key resolves; for an OpenAI-compatible
// server, that the server answers and lists the model at /models; then
// that one schema-checked call round-trips. Each failure names the fix.
func (d *doctor) modelFor(ctx context.Context, cfg *config.Config, prefix string) {
	l := cfg.LLM
	isOpenAI := l.Provider == config.ProviderOpenAI
	m, err := d.env.NewModel(ctx, cfg)
	if err != nil {
		fix := "set the variable named by llm.api_key_env (default GEMINI_API_KEY) or llm.api_key_cmd"
		if isOpenAI {
			fix = "set the variable named by llm.api_key_env or fix llm.api_key_cmd; a local server needs no key: remove both"
		}
		d.fail(prefix+": api key", err, fix)
		return
	}
	if !isOpenAI || l.HasKeySource() {
		d.pass(prefix+": api key", "resolved (value not shown)")
	}
	var unlisted error // the server does not list the model: judged after the round trip
	var unlistedFix string
	if isOpenAI {
		ok, fix, err := d.openAIServer(ctx, cfg, prefix)
		if !ok {
			return
		}
		unlisted, unlistedFix = err, fix
	}
	type probe struct {
		OK *bool `json:"ok"`
	}
	cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	start := time.Now()
	_, info, err := llm.GenerateJSON(cctx, m, llm.Request{
		System: "You answer health checks.",
		Prompt: `Answer with {"ok": true}.`,
		Schema: &llm.Schema{Type: "object", Properties: map[string]*llm.Schema{"ok": {Type: "boolean"}}, Required: []string{"ok"}},
	}, func(p *probe) error {
		if p.OK == nil {
			return errors.New("ok: required")
		}
		return nil
	})
	if err != nil {
		if unlisted != nil {
			d.fail(prefix+": model listed", unlisted, unlistedFix)
		}
		d.fail(prefix+": structured output round trip", err, roundTripFix(err, l))
		return
	}
	if unlisted != nil {
		// llama.cpp's server answers with its one model whatever the name.
		d.warn(prefix+": model listed", unlisted.Error()+", but the server answered with "+info.Model, unlistedFix)
	}
	d.pass(prefix+": structured output round trip", fmt.Sprintf("%s answered in %s (%d tokens, %s)",
		info.Model, time.Since(start).Round(time.Millisecond), info.Usage.TotalTokens, structuredMode(l)))
}

// openAIServer checks that the server answers /models (false when not:
// nothing more can be checked) and reports whether it lists the model: a
// non-nil error and its fix when it does not.
func (d *doctor) openAIServer(ctx context.Context, cfg *config.Config, prefix string) (bool, string, error) {
	l := cfg.LLM
	var key string
	if l.HasKeySource() {
		s, err := l.ResolveAPIKey(ctx)
		if err != nil {
			d.fail(prefix+": api key", err, "set the variable named by llm.api_key_env or fix llm.api_key_cmd")
			return false, "", nil
		}
		key = s.Reveal()
	}
	timeout := 15 * time.Second
	if t := l.Timeout.D(); t > 0 && t < timeout {
		timeout = t
	}
	c, err := openai.New(openai.Config{APIKey: key, Model: l.Model, BaseURL: l.BaseURL, CallTimeout: timeout,
		StructuredOutput: llm.StructuredOutput(l.StructuredOutput)})
	if err != nil {
		d.fail(prefix+": server answers", err, "fix llm.model and llm.structured_output")
		return false, "", nil
	}
	base := l.BaseURL
	if base == "" {
		base = openai.DefaultBaseURL
	}
	ids, err := c.ListModels(ctx)
	if err != nil {
		d.fail(prefix+": server answers", err, serverFix(err, base))
		return false, "", nil
	}
	d.pass(prefix+": server answers", fmt.Sprintf("%s lists %d model(s)", base, len(ids)))
	if !slices.Contains(ids, l.Model) {
		shown := ids
		if len(shown) > 8 {
			shown = shown[:8]
		}
		fix := fmt.Sprintf("set llm.model to a listed name (%s)", strings.Join(shown, ", "))
		if len(ids) == 0 {
			fix = "load a model into the server"
		}
		if strings.Contains(base, ":11434") {
			fix += fmt.Sprintf(", or pull it: ollama pull %s", l.Model)
		}
		return true, fix, fmt.Errorf("the server does not list model %q", l.Model)
	}
	d.pass(prefix+": model listed", l.Model)
	return true, "", nil
}

func serverFix(err error, base string) string {
	var ae *llm.APIError
	var oe *net.OpError
	switch {
	case errors.As(err, &ae) && (ae.StatusCode == 401 || ae.StatusCode == 403):
		return "the server refused the API key: set llm.api_key_env to a valid key"
	case errors.As(err, &ae) && ae.StatusCode == 404:
		return fmt.Sprintf("%s has no /models: llm.base_url must be the API root, usually ending in /v1 (e.g. http://localhost:11434/v1)", base)
	case errors.As(err, &oe):
		return fmt.Sprintf("nothing answers at %s: start the server (ollama serve, llama-server, vllm serve, LM Studio's local server) or fix llm.base_url", base)
	}
	return "check llm.base_url and that the server is running"
}

func roundTripFix(err error, l config.LLM) string {
	var ae *llm.APIError
	var inv *llm.InvalidOutputError
	switch {
	case errors.As(err, &ae) && ae.StatusCode == 400 && l.Provider == config.ProviderOpenAI && structuredMode(l) == llm.OutputJSONSchema:
		return `the server rejected response_format json_schema: set llm.structured_output = "json_object" (JSON mode) or "prompt"`
	case errors.As(err, &ae) && ae.StatusCode == 400 && l.Provider == config.ProviderOpenAI && structuredMode(l) == llm.OutputJSONObject:
		return `the server rejected response_format json_object: set llm.structured_output = "prompt"`
	case errors.As(err, &inv) && l.Provider == config.ProviderOpenAI && structuredMode(l) != llm.OutputJSONSchema:
		return `the model does not follow the schema: use a server and llm.structured_output = "json_schema" that enforce it, or a larger model`
	case errors.As(err, &inv):
		return "the model does not follow the schema: try a larger model"
	case errors.Is(err, context.DeadlineExceeded):
		return "the model did not answer in time: raise llm.timeout, or use a smaller model"
	}
	return modelFix(err, l.BaseURL)
}

// modelFix names the fix for a failed model call. Only a base_url the
// config sets is blamed: a lookup failure of the default endpoint is the
// network's.
func modelFix(err error, baseURL string) string {
	var api *llm.APIError
	var dnsErr *net.DNSError
	switch {
	case errors.As(err, &api) && (api.StatusCode == 400 || api.StatusCode == 401 || api.StatusCode == 403):
		return "the API key was refused: create a new one and update its source"
	case errors.As(err, &api) && api.StatusCode == 404:
		return "the model was not found: check llm.model"
	case errors.As(err, &dnsErr) || strings.Contains(err.Error(), "no such host"):
		if baseURL != "" {
			return "the host of llm.base_url (" + baseURL + ") does not resolve: check llm.base_url"
		}
		return "the model's API host does not resolve: check that this machine is online and its DNS works"
	case baseURL != "":
		return "check llm.model, and that llm.base_url (" + baseURL + ") is reachable"
	}
	return "check llm.model, and that this machine can reach the model's API"
}

func structuredMode(l config.LLM) llm.StructuredOutput {
	if l.Provider != config.ProviderOpenAI {
		return "response schema"
	}
	m, err := llm.ParseStructuredOutput(l.StructuredOutput)
	if err != nil {
		return llm.StructuredOutput(l.StructuredOutput)
	}
	return m
}

// taskConfig is cfg with [llm] resolved for task (cmdutil.TaskConfig's
// rule: config.LLM.ForTask).
func taskConfig(cfg *config.Config, task string) *config.Config {
	c := *cfg
	c.LLM = cfg.LLM.ForTask(task)
	return &c
}
