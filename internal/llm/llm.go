// Package llm is mailagent's provider-neutral door to a language model.
//
// Contract:
//   - Model is the one interface the rest of the project depends on. A
//     Request carries a system prompt, a user prompt and an optional JSON
//     Schema (a provider-neutral subset that maps onto Gemini's
//     ResponseSchema: no type unions, enums instead).
//   - Gemini implements Model with google.golang.org/genai. Nothing outside
//     this package imports genai.
//   - OpenAI implements Model for any OpenAI-compatible chat completions
//     server (OpenAI, Ollama, llama.cpp, vLLM, LM Studio) with
//     github.com/openai/openai-go, with the SDK's own retries off. How it
//     asks for JSON is a StructuredOutput mode (json_schema strict,
//     json_object with the schema in the prompt, or the prompt alone); the
//     answer goes through the same GenerateJSON validation in every mode.
//     Presets describe the local servers. Nothing outside this package
//     imports the SDK.
//   - Each provider makes one HTTP request per call, bounded by a per-call timeout.
//     HTTP failures are *APIError (with Temporary and RetryAfter); empty or
//     blocked answers are *ResponseError (ErrEmptyResponse, ErrBlocked).
//   - WithRetry wraps any Model and retries temporary failures (429, 5xx,
//     timeouts, cut connections) with exponential backoff and jitter,
//     waiting at least the server's retry delay; permanent errors and a
//     done context return at once.
//   - GenerateJSON asks for structured output, decodes it strictly and
//     validates it in Go, and makes exactly one repair attempt that quotes
//     the validation error; a second failure is *InvalidOutputError. It
//     never coerces an invalid answer into a valid one.
//   - Packages geminitest and openaitest are fake servers for tests.
//   - Every call reports its token Usage.
//   - API keys never appear in errors.
package llm

import (
	"context"
	"net/http"
	"sync"
)

// Model generates one response for one request. Implementations must be
// safe for concurrent use.
type Model interface {
	Generate(ctx context.Context, req Request) (*Response, error)
}

// Request is one model call.
type Request struct {
	System string // system instruction
	Prompt string // user content
	// Schema, when non-nil, asks for application/json output that matches it.
	Schema          *Schema
	Temperature     *float32
	MaxOutputTokens int32
}

// Schema is the subset of JSON Schema that Gemini's ResponseSchema accepts.
type Schema struct {
	Type        string             `json:"type"` // object | array | string | number | integer | boolean
	Description string             `json:"description,omitempty"`
	Enum        []string           `json:"enum,omitempty"`
	Items       *Schema            `json:"items,omitempty"`
	Properties  map[string]*Schema `json:"properties,omitempty"`
	Required    []string           `json:"required,omitempty"`
	// PropertyOrdering fixes the order of object fields in the output.
	PropertyOrdering []string `json:"property_ordering,omitempty"`
	MinItems         *int64   `json:"min_items,omitempty"`
	MaxItems         *int64   `json:"max_items,omitempty"`
	Minimum          *float64 `json:"minimum,omitempty"`
	Maximum          *float64 `json:"maximum,omitempty"`
	MaxLength        *int64   `json:"max_length,omitempty"`
}

// Usage is the token accounting of one call.
type Usage struct {
	PromptTokens int32 `json:"prompt_tokens"`
	OutputTokens int32 `json:"output_tokens"`
	TotalTokens  int32 `json:"total_tokens"`
}

// Add returns the sum of two usages.
func (u Usage) Add(o Usage) Usage {
	return Usage{u.PromptTokens + o.PromptTokens, u.OutputTokens + o.OutputTokens, u.TotalTokens + o.TotalTokens}
}

// Response is the result of one successful call.
type Response struct {
	Text    string
	Usage   Usage
	Model   string // the model version that answered, when known
	Retries int    // attempts beyond the first, set by Retry
	// FinishReason is the provider's reason the answer ended, e.g. "STOP"
	// or "MAX_TOKENS" (a truncated answer); empty when unknown.
	FinishReason string
}

// ModelFunc adapts a function to Model, for fakes in tests.
type ModelFunc func(ctx context.Context, req Request) (*Response, error)

// Generate calls f.
func (f ModelFunc) Generate(ctx context.Context, req Request) (*Response, error) { return f(ctx, req) }

// maxIdlePerHost is how many idle connections to one model server are
// kept for reuse. http.DefaultTransport keeps 2, so with llm.concurrency
// 4 every call beyond the second opened a connection (a TLS handshake to
// a real API) and closed it after one answer: 326 connections for 2,563
// calls in a triage of the corpus (BENCHMARKS.md §2).
const maxIdlePerHost = 64

// sharedTransport is the transport of every model client built without
// one: http.DefaultTransport's settings (proxy from the environment,
// timeouts, HTTP/2), keeping enough idle connections for every worker,
// shared by the classify and draft models so they reuse each other's. A
// request (prompt, system text and schema: 4 to 8 KB) goes out in one
// write: the default 4 KB buffer took two or three.
var sharedTransport = sync.OnceValue(func() http.RoundTripper {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = maxIdlePerHost
	t.WriteBufferSize = 32 << 10
	return t
})
