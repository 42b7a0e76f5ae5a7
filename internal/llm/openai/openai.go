// Package openai is mailagent's provider for any OpenAI-compatible chat
// completions server (OpenAI, Ollama, llama.cpp, vLLM, LM Studio): an
// llm.Model through github.com/openai/openai-go.
//
// Contract: New builds a *Model from a Config without contacting the
// server; only the Config counts, never the SDK's environment variables.
// Each Generate is exactly one HTTP request (the SDK's own retries off),
// bounded by the per-call timeout; retries belong to llm.WithRetry. How
// JSON is asked for is the Config's llm.StructuredOutput mode (json_schema
// strict, json_object with the schema in the prompt, or the prompt
// alone); the answer goes through the same llm.GenerateJSON validation in
// every mode, a fenced answer being unwrapped and never altered. HTTP
// failures are *llm.APIError (with retry-after-ms or Retry-After), empty,
// refused or filtered answers *llm.ResponseError; the API key never
// appears in an error. ListModels reads /models, for the doctor. No other
// package imports openai-go (internal/rig/archtest's sdkHomes).
package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	oai "github.com/openai/openai-go/v2"
	"github.com/openai/openai-go/v2/option"
	"github.com/openai/openai-go/v2/shared"

	"github.com/mailagent/mailagent/internal/llm"
	"github.com/mailagent/mailagent/internal/llm/internal/httpcall"
)

// DefaultBaseURL is the endpoint used when Config.BaseURL is empty.
const DefaultBaseURL = "https://api.openai.com/v1/"

// Config configures an OpenAI-compatible model.
type Config struct {
	// APIKey is sent as a bearer token. Optional: local servers (Ollama,
	// llama.cpp, vLLM, LM Studio) usually need none. Never in errors.
	APIKey string
	// Model is the model name the server knows, e.g. "qwen2.5:7b". Required.
	Model string
	// BaseURL is the API root that holds /chat/completions and /models,
	// e.g. "http://localhost:11434/v1". Empty means DefaultBaseURL.
	BaseURL string
	// HTTPClient is used for requests; nil means a default client.
	HTTPClient *http.Client
	// CallTimeout bounds each call; zero means llm.DefaultCallTimeout.
	CallTimeout time.Duration
	// StructuredOutput selects how JSON is asked for; "" is json_schema.
	StructuredOutput llm.StructuredOutput
}

// Model is an llm.Model backed by an OpenAI-compatible chat completions
// API through github.com/openai/openai-go. It is safe for concurrent use
// and makes exactly one HTTP request per Generate call (the SDK's own
// retries are off): retries belong to llm.WithRetry.
type Model struct {
	chat    oai.ChatCompletionService
	models  oai.ModelService
	model   string
	mode    llm.StructuredOutput
	timeout time.Duration
	secret  string
}

// CloseIdleConnections closes the idle connections of the transport
// models built without one share (httpcall.Transport, gemini's too), and
// so ends their goroutines; a later call opens a new one.
func CloseIdleConnections() { httpcall.CloseIdle() }

// New builds an OpenAI-compatible model. It does not contact the
// server. Environment variables the SDK would read (OPENAI_API_KEY,
// OPENAI_BASE_URL, OPENAI_ORG_ID, …) are ignored: only cfg counts.
func New(cfg Config) (*Model, error) {
	if strings.TrimSpace(cfg.Model) == "" {
		return nil, errors.New("openai: model is empty")
	}
	if cfg.CallTimeout < 0 {
		return nil, fmt.Errorf("openai: negative call timeout %s", cfg.CallTimeout)
	}
	mode, err := llm.ParseStructuredOutput(string(cfg.StructuredOutput))
	if err != nil {
		return nil, fmt.Errorf("openai: %w", err)
	}
	timeout := cfg.CallTimeout
	if timeout == 0 {
		timeout = llm.DefaultCallTimeout
	}
	base := cfg.BaseURL
	if base == "" {
		base = DefaultBaseURL
	}
	opts := []option.RequestOption{
		option.WithBaseURL(base),
		// The SDK requires some credential; a local server ignores it.
		option.WithAPIKey(cmpOr(cfg.APIKey, "none")),
		option.WithMaxRetries(0),
	}
	hc := &http.Client{} // the caller's is copied, never modified
	if cfg.HTTPClient != nil {
		*hc = *cfg.HTTPClient
	}
	if hc.Transport == nil {
		hc.Transport = httpcall.Transport()
	}
	opts = append(opts, option.WithHTTPClient(hc))
	// The services, not the SDK's NewClient: the client would add what the
	// environment says (OPENAI_ORG_ID, OPENAI_PROJECT_ID, custom headers),
	// which must not reach a server the configuration did not name.
	return &Model{chat: oai.NewChatCompletionService(opts...), models: oai.NewModelService(opts...),
		model: cfg.Model, mode: mode, timeout: timeout, secret: cfg.APIKey}, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// Mode returns the structured-output mode in use.
func (o *Model) Mode() llm.StructuredOutput { return o.mode }

// Generate makes one chat completions call. HTTP failures are
// *llm.APIError (a 401 says the key was refused); empty, refused or
// filtered answers are *llm.ResponseError; an expired per-call timeout wraps
// context.DeadlineExceeded.
func (o *Model) Generate(ctx context.Context, req llm.Request) (*llm.Response, error) {
	params := oai.ChatCompletionNewParams{Model: o.model}
	system := req.System
	if req.Schema != nil {
		js, err := toJSONSchema(req.Schema, "$", o.mode == llm.OutputJSONSchema)
		if err != nil {
			return nil, fmt.Errorf("openai: %w", err)
		}
		switch o.mode {
		case llm.OutputJSONSchema:
			params.ResponseFormat = oai.ChatCompletionNewParamsResponseFormatUnion{
				OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{
					Name:   "answer",
					Strict: oai.Bool(true),
					Schema: js,
				}},
			}
		case llm.OutputJSONObject:
			params.ResponseFormat = oai.ChatCompletionNewParamsResponseFormatUnion{OfJSONObject: &shared.ResponseFormatJSONObjectParam{}}
			system += schemaInstruction(js)
		default:
			system += schemaInstruction(js)
		}
	}
	if system != "" {
		params.Messages = append(params.Messages, oai.SystemMessage(system))
	}
	params.Messages = append(params.Messages, oai.UserMessage(req.Prompt))
	if req.Temperature != nil {
		params.Temperature = oai.Float(float64(*req.Temperature))
	}
	if req.MaxOutputTokens > 0 {
		params.MaxTokens = oai.Int(int64(req.MaxOutputTokens))
	}

	callCtx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	resp, err := o.chat.New(callCtx, params)
	if err != nil {
		return nil, o.wrapErr(ctx, callCtx, err)
	}
	return o.toResponse(resp, req.Schema != nil)
}

func (o *Model) toResponse(resp *oai.ChatCompletion, wantJSON bool) (*llm.Response, error) {
	usage := llm.Usage{
		PromptTokens: int32(resp.Usage.PromptTokens),
		OutputTokens: int32(resp.Usage.CompletionTokens),
		TotalTokens:  int32(resp.Usage.TotalTokens),
	}
	if len(resp.Choices) == 0 {
		return nil, &llm.ResponseError{Reason: "no choices", Usage: usage}
	}
	c := resp.Choices[0]
	if c.Message.Refusal != "" {
		return nil, &llm.ResponseError{Blocked: true, Reason: "refusal", Message: c.Message.Refusal, Usage: usage}
	}
	if c.FinishReason == "content_filter" {
		return nil, &llm.ResponseError{Blocked: true, Reason: c.FinishReason, Usage: usage}
	}
	text := c.Message.Content
	if strings.TrimSpace(text) == "" {
		return nil, &llm.ResponseError{Reason: c.FinishReason, Usage: usage}
	}
	if wantJSON {
		text = unfence(text)
	}
	model := resp.Model
	if model == "" {
		model = o.model
	}
	finish := strings.ToUpper(c.FinishReason)
	if c.FinishReason == "length" {
		finish = "MAX_TOKENS" // the neutral name, as Gemini reports a truncated answer
	}
	return &llm.Response{Text: text, Usage: usage, Model: model, FinishReason: finish}, nil
}

// wrapErr turns an SDK error into *llm.APIError or a wrapped transport error,
// with the API key redacted.
func (o *Model) wrapErr(parent, callCtx context.Context, err error) error {
	var oe *oai.Error
	if !errors.As(err, &oe) || oe == nil {
		if parent.Err() == nil && errors.Is(callCtx.Err(), context.DeadlineExceeded) {
			return httpcall.Redact(fmt.Errorf("openai generate: call timed out after %s: %w", o.timeout, err), o.secret)
		}
		return httpcall.Redact(fmt.Errorf("openai generate: %w", err), o.secret)
	}
	ae := &llm.APIError{StatusCode: oe.StatusCode, Status: cmpOr(oe.Type, oe.Code), Message: oe.Message}
	if o.secret != "" {
		ae.Message = strings.ReplaceAll(ae.Message, o.secret, "[REDACTED]")
	}
	switch oe.StatusCode {
	case http.StatusUnauthorized, http.StatusForbidden:
		ae.Message = strings.TrimSpace(ae.Message + " (the server refused the API key: set llm.api_key_env or llm.api_key_cmd to a valid key, or none for a local server)")
	case http.StatusNotFound:
		ae.Message = strings.TrimSpace(ae.Message + fmt.Sprintf(" (model %q or the endpoint does not exist: check llm.base_url ends in /v1 and `mailagent doctor` lists the model)", o.model))
	}
	if oe.Response != nil {
		ae.RetryAfter = retryAfter(oe.Response.Header, time.Now())
	}
	return ae
}

// retryAfter reads retry-after-ms (OpenAI's) or Retry-After.
func retryAfter(h http.Header, now time.Time) time.Duration {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 && ms < float64(24*time.Hour/time.Millisecond) {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	return httpcall.ParseRetryAfter(h.Get("Retry-After"), now)
}

// schemaInstruction is appended to the system prompt when the server
// cannot be given the schema as a response format.
func schemaInstruction(js map[string]any) string {
	b, _ := json.MarshalIndent(js, "", "  ") // maps of plain values always marshal
	return "\n\n## Output format\nAnswer with exactly one JSON value that conforms to this JSON Schema, and nothing else: no prose, no markdown, no code fence.\n" + string(b) + "\n"
}

// toJSONSchema maps the provider-neutral schema onto standard JSON Schema,
// with additionalProperties false on every object. With strict, it is the
// form OpenAI's strict mode accepts: every property is required, and an
// optional one may be null instead (its type becomes [T, "null"], and null
// joins its enum). A null decodes like an absent field (llm.DecodeStrict into
// Go values), so the caller's validation sees the same answer either way.
func toJSONSchema(s *llm.Schema, path string, strict bool) (map[string]any, error) {
	out := map[string]any{}
	switch s.Type {
	case "object", "array", "string", "number", "integer", "boolean":
		out["type"] = s.Type
	default:
		return nil, fmt.Errorf("schema %s: unsupported type %q", path, s.Type)
	}
	if s.Description != "" {
		out["description"] = s.Description
	}
	if len(s.Enum) > 0 {
		out["enum"] = s.Enum
	}
	if s.MinItems != nil {
		out["minItems"] = *s.MinItems
	}
	if s.MaxItems != nil {
		out["maxItems"] = *s.MaxItems
	}
	if s.Minimum != nil {
		out["minimum"] = *s.Minimum
	}
	if s.Maximum != nil {
		out["maximum"] = *s.Maximum
	}
	if s.MaxLength != nil {
		out["maxLength"] = *s.MaxLength
	}
	if s.Items != nil {
		items, err := toJSONSchema(s.Items, path+"[]", strict)
		if err != nil {
			return nil, err
		}
		out["items"] = items
	}
	if s.Type == "object" {
		props := map[string]any{}
		for name, p := range s.Properties {
			ps, err := toJSONSchema(p, path+"."+name, strict)
			if err != nil {
				return nil, err
			}
			if strict && !slices.Contains(s.Required, name) {
				ps["type"] = []any{ps["type"], "null"}
				if enum, ok := ps["enum"].([]string); ok {
					ps["enum"] = append(toAnys(enum), nil)
				}
			}
			props[name] = ps
		}
		out["properties"] = props
		out["additionalProperties"] = false
		req := []string{}
		for _, r := range s.Required {
			if _, ok := s.Properties[r]; !ok {
				return nil, fmt.Errorf("schema %s: required property %q is not defined", path, r)
			}
			req = append(req, r)
		}
		if strict {
			req = slices.Sorted(maps.Keys(s.Properties))
		}
		out["required"] = req
	}
	return out, nil
}

func toAnys(ss []string) []any {
	out := make([]any, len(ss))
	for i, v := range ss {
		out[i] = v
	}
	return out
}

// unfence returns the content of the one markdown code block in text when
// text is not bare JSON: servers without a JSON mode often wrap the answer
// in prose and a ```json fence. Anything else is returned unchanged, to be
// judged (and repaired) by llm.GenerateJSON; the content is never altered.
func unfence(text string) string {
	t := strings.TrimSpace(text)
	if strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[") {
		return text
	}
	if strings.Count(t, "```") != 2 {
		return text
	}
	_, rest, _ := strings.Cut(t, "```")
	block, _, _ := strings.Cut(rest, "```")
	// The info string ("json") runs to the end of the opening line.
	nl := strings.IndexByte(block, '\n')
	if nl < 0 {
		return text
	}
	if info := strings.TrimSpace(block[:nl]); info != "" && !strings.EqualFold(info, "json") {
		return text
	}
	return block[nl+1:]
}

// ListModels returns the model ids the server lists at /models. It is one
// request, not retried, bounded by the call timeout.
func (o *Model) ListModels(ctx context.Context) ([]string, error) {
	callCtx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	page, err := o.models.List(callCtx)
	if err != nil {
		return nil, o.wrapErr(ctx, callCtx, err)
	}
	ids := make([]string, 0, len(page.Data))
	for _, m := range page.Data {
		ids = append(ids, m.ID)
	}
	return ids, nil
}
