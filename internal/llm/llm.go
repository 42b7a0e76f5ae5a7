// Package llm is mailagent's provider-neutral door to a language model:
// the core the rest of the project depends on, free of any provider's SDK.
//
// Contract:
//   - Model is the one interface the rest of the project depends on. A
//     Request carries a system prompt, a user prompt and an optional JSON
//     Schema (a provider-neutral subset that maps onto Gemini's
//     ResponseSchema: no type unions, enums instead).
//   - The providers live in packages of their own, so that only what
//     builds a real client links an SDK: internal/llm/gemini
//     (google.golang.org/genai) and internal/llm/openai (any
//     OpenAI-compatible server through github.com/openai/openai-go). This
//     package imports neither (internal/rig/archtest). How the OpenAI
//     provider asks for JSON is a StructuredOutput mode (json_schema
//     strict, json_object with the schema in the prompt, or the prompt
//     alone); the answer goes through the same GenerateJSON validation in
//     every mode. Presets describe the local servers.
//   - Each provider makes one HTTP request per call, bounded by a per-call
//     timeout (DefaultCallTimeout unless configured). HTTP failures are
//     *APIError (with Temporary and RetryAfter); empty or blocked answers
//     are *ResponseError (ErrEmptyResponse, ErrBlocked).
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
	"time"
)

// DefaultCallTimeout bounds one provider call when the provider's
// configuration gives no call timeout.
const DefaultCallTimeout = 60 * time.Second

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
