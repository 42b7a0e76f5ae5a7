package gemini_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mailagent/mailagent/internal/llm"
	"github.com/mailagent/mailagent/internal/llm/gemini"
	"github.com/mailagent/mailagent/internal/llm/geminitest"
)

func ptr[T any](v T) *T { return &v }

func testSchema() *llm.Schema {
	return &llm.Schema{
		Type: "object",
		Properties: map[string]*llm.Schema{
			"label":      {Type: "string", Enum: []string{"a", "b"}},
			"tags":       {Type: "array", Items: &llm.Schema{Type: "string", MaxLength: ptr[int64](20)}, MinItems: ptr[int64](1), MaxItems: ptr[int64](3)},
			"confidence": {Type: "number", Minimum: ptr(0.0), Maximum: ptr(1.0)},
		},
		Required:         []string{"label", "tags", "confidence"},
		PropertyOrdering: []string{"label", "tags", "confidence"},
	}
}

func TestGeminiRequestShape(t *testing.T) {
	t.Parallel()
	srv := geminitest.NewServer(t, func(*geminitest.Request) geminitest.Reply {
		r := geminitest.JSONReply(map[string]any{"label": "a"}, llm.Usage{PromptTokens: 11, OutputTokens: 7, TotalTokens: 18})
		r.ModelVersion = "gemini-test-001"
		return r
	})
	g := srv.NewGemini(t, gemini.Config{})
	resp, err := g.Generate(t.Context(), llm.Request{
		System:          "you are a classifier",
		Prompt:          "classify this",
		Schema:          testSchema(),
		Temperature:     ptr[float32](0.25),
		MaxOutputTokens: 512,
	})
	if err != nil {
		t.Fatalf("generate: %v", err)
	}
	if got, want := resp.Text, `{"label":"a"}`; got != want {
		t.Errorf("text: got %q, want %q", got, want)
	}
	if got, want := resp.Usage, (llm.Usage{PromptTokens: 11, OutputTokens: 7, TotalTokens: 18}); got != want {
		t.Errorf("usage: got %+v, want %+v", got, want)
	}
	if got, want := resp.Model, "gemini-test-001"; got != want {
		t.Errorf("model: got %q, want %q", got, want)
	}
	if got, want := resp.FinishReason, "STOP"; got != want {
		t.Errorf("finish reason: got %q, want %q", got, want)
	}

	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("requests: got %d, want 1", len(reqs))
	}
	r := reqs[0]
	if got, want := r.Path, "/v1beta/models/"+geminitest.DefaultModel+":generateContent"; got != want {
		t.Errorf("path: got %q, want %q", got, want)
	}
	if got, want := r.Header.Get("x-goog-api-key"), geminitest.TestAPIKey; got != want {
		t.Errorf("api key header: got %q, want %q", got, want)
	}
	if strings.Contains(string(r.Raw), geminitest.TestAPIKey) {
		t.Errorf("request body contains the api key")
	}
	if got, want := r.SystemText(), "you are a classifier"; got != want {
		t.Errorf("system text: got %q, want %q", got, want)
	}
	if got, want := r.UserText(), "classify this"; got != want {
		t.Errorf("user text: got %q, want %q", got, want)
	}
	gc := r.GenerationConfig()
	if got, want := gc["responseMimeType"], "application/json"; got != want {
		t.Errorf("responseMimeType: got %v, want %v", got, want)
	}
	if got, want := gc["temperature"], 0.25; got != want {
		t.Errorf("temperature: got %v, want %v", got, want)
	}
	if got, want := gc["maxOutputTokens"], 512.0; got != want {
		t.Errorf("maxOutputTokens: got %v, want %v", got, want)
	}
	sch := r.ResponseSchema()
	checkJSON(t, "schema.type", sch["type"], "OBJECT")
	checkJSON(t, "schema.required", sch["required"], []any{"label", "tags", "confidence"})
	checkJSON(t, "schema.propertyOrdering", sch["propertyOrdering"], []any{"label", "tags", "confidence"})
	props, _ := sch["properties"].(map[string]any)
	label, _ := props["label"].(map[string]any)
	checkJSON(t, "label.type", label["type"], "STRING")
	checkJSON(t, "label.enum", label["enum"], []any{"a", "b"})
	tags, _ := props["tags"].(map[string]any)
	checkJSON(t, "tags.type", tags["type"], "ARRAY")
	checkJSON(t, "tags.minItems", tags["minItems"], "1")
	checkJSON(t, "tags.maxItems", tags["maxItems"], "3")
	items, _ := tags["items"].(map[string]any)
	checkJSON(t, "tags.items.type", items["type"], "STRING")
	checkJSON(t, "tags.items.maxLength", items["maxLength"], "20")
	conf, _ := props["confidence"].(map[string]any)
	checkJSON(t, "confidence.minimum", conf["minimum"], 0.0)
	checkJSON(t, "confidence.maximum", conf["maximum"], 1.0)
}

// checkJSON compares decoded JSON values; int64 schema bounds may be encoded
// as numbers or strings, so numbers are compared through their text.
func checkJSON(t *testing.T, name string, got, want any) {
	t.Helper()
	norm := func(v any) string {
		b, _ := json.Marshal(v)
		return strings.Trim(string(b), `"`)
	}
	if norm(got) != norm(want) {
		t.Errorf("%s: got %v, want %v", name, got, want)
	}
}

func TestGeminiPlainTextRequest(t *testing.T) {
	t.Parallel()
	srv := geminitest.NewServer(t, func(*geminitest.Request) geminitest.Reply { return geminitest.Reply{Text: "hello"} })
	g := srv.NewGemini(t, gemini.Config{})
	resp, err := g.Generate(t.Context(), llm.Request{Prompt: "hi"})
	if err != nil {
		t.Fatalf("generate: %v", err)
	}
	if resp.Text != "hello" {
		t.Errorf("text: got %q, want %q", resp.Text, "hello")
	}
	r := srv.Requests()[0]
	if _, ok := r.GenerationConfig()["responseMimeType"]; ok {
		t.Errorf("responseMimeType set without a schema: %v", r.GenerationConfig())
	}
	if _, ok := r.Body["systemInstruction"]; ok {
		t.Errorf("systemInstruction sent for an empty system prompt")
	}
}

func TestNewGeminiRejectsBadConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  gemini.Config
	}{
		{name: "no key", cfg: gemini.Config{Model: "m"}},
		{name: "no model", cfg: gemini.Config{APIKey: "k"}},
		{name: "negative timeout", cfg: gemini.Config{APIKey: "k", Model: "m", CallTimeout: -time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := gemini.New(t.Context(), tt.cfg); err == nil {
				t.Errorf("got nil error, want an error")
			}
		})
	}
}

func TestGeminiSchemaErrors(t *testing.T) {
	t.Parallel()
	srv := geminitest.NewServer(t, nil)
	g := srv.NewGemini(t, gemini.Config{})
	tests := []struct {
		name   string
		schema *llm.Schema
	}{
		{name: "unknown type", schema: &llm.Schema{Type: "null"}},
		{name: "required not defined", schema: &llm.Schema{Type: "object", Required: []string{"x"}}},
		{name: "nested bad type", schema: &llm.Schema{Type: "array", Items: &llm.Schema{Type: "tuple"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := g.Generate(t.Context(), llm.Request{Prompt: "x", Schema: tt.schema}); err == nil {
				t.Errorf("got nil error, want a schema error")
			}
		})
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("requests sent for invalid schemas: got %d, want 0", n)
	}
}

func TestGeminiAPIErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		reply         geminitest.Reply
		wantStatus    int
		wantTemporary bool
		wantAfter     time.Duration
	}{
		{name: "400", reply: geminitest.ErrorReply(400, "INVALID_ARGUMENT", "bad"), wantStatus: 400},
		{name: "401", reply: geminitest.ErrorReply(401, "UNAUTHENTICATED", "API key not valid"), wantStatus: 401},
		{name: "403", reply: geminitest.ErrorReply(403, "PERMISSION_DENIED", "no"), wantStatus: 403},
		{name: "404", reply: geminitest.ErrorReply(404, "NOT_FOUND", "no model"), wantStatus: 404},
		{name: "429 retry info", reply: geminitest.RateLimitReply("2.5s"), wantStatus: 429, wantTemporary: true, wantAfter: 2500 * time.Millisecond},
		{name: "429 retry-after header", reply: withHeader(geminitest.ErrorReply(429, "RESOURCE_EXHAUSTED", "slow down"), "Retry-After", "7"), wantStatus: 429, wantTemporary: true, wantAfter: 7 * time.Second},
		{name: "header wins over retry info", reply: withHeader(geminitest.RateLimitReply("30s"), "Retry-After", "3"), wantStatus: 429, wantTemporary: true, wantAfter: 3 * time.Second},
		{name: "500", reply: geminitest.ErrorReply(500, "INTERNAL", "oops"), wantStatus: 500, wantTemporary: true},
		{name: "502 plain text", reply: geminitest.Reply{Status: 502, Body: "bad gateway"}, wantStatus: 502, wantTemporary: true},
		{name: "503", reply: geminitest.ErrorReply(503, "UNAVAILABLE", "overloaded"), wantStatus: 503, wantTemporary: true},
		{name: "504", reply: geminitest.ErrorReply(504, "DEADLINE_EXCEEDED", "late"), wantStatus: 504, wantTemporary: true},
		{name: "message echoes key", reply: geminitest.ErrorReply(400, "INVALID_ARGUMENT", "key "+geminitest.TestAPIKey+" is bad"), wantStatus: 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := geminitest.NewServer(t, func(*geminitest.Request) geminitest.Reply { return tt.reply })
			g := srv.NewGemini(t, gemini.Config{})
			_, err := g.Generate(t.Context(), llm.Request{Prompt: "x"})
			var ae *llm.APIError
			if !errors.As(err, &ae) {
				t.Fatalf("error: got %v (%T), want *llm.APIError", err, err)
			}
			if ae.StatusCode != tt.wantStatus {
				t.Errorf("status: got %d, want %d", ae.StatusCode, tt.wantStatus)
			}
			if got := ae.Temporary(); got != tt.wantTemporary {
				t.Errorf("Temporary(): got %v, want %v", got, tt.wantTemporary)
			}
			if got := llm.IsTemporary(err); got != tt.wantTemporary {
				t.Errorf("IsTemporary: got %v, want %v", got, tt.wantTemporary)
			}
			if ae.RetryAfter != tt.wantAfter {
				t.Errorf("RetryAfter: got %s, want %s", ae.RetryAfter, tt.wantAfter)
			}
			if strings.Contains(err.Error(), geminitest.TestAPIKey) {
				t.Errorf("error text contains the api key: %q", err)
			}
		})
	}
}

func withHeader(r geminitest.Reply, k, v string) geminitest.Reply {
	if r.Header == nil {
		r.Header = http.Header{}
	}
	r.Header.Set(k, v)
	return r
}

func TestGeminiResponseErrors(t *testing.T) {
	t.Parallel()
	usage := llm.Usage{PromptTokens: 5, TotalTokens: 5}
	tests := []struct {
		name       string
		reply      geminitest.Reply
		wantIs     error
		wantReason string
	}{
		{name: "no candidates", reply: geminitest.Reply{Body: `{"candidates":[]}`}, wantIs: llm.ErrEmptyResponse},
		{name: "empty text", reply: geminitest.Reply{Text: "", FinishReason: "STOP"}, wantIs: llm.ErrEmptyResponse, wantReason: "STOP"},
		{name: "whitespace text", reply: geminitest.Reply{Text: "  \n"}, wantIs: llm.ErrEmptyResponse},
		{name: "safety finish", reply: geminitest.Reply{Text: "partial", FinishReason: "SAFETY", Usage: usage}, wantIs: llm.ErrBlocked, wantReason: "SAFETY"},
		{name: "recitation finish", reply: geminitest.Reply{Text: "x", FinishReason: "RECITATION"}, wantIs: llm.ErrBlocked, wantReason: "RECITATION"},
		{name: "prompt blocked", reply: geminitest.BlockedPromptReply("PROHIBITED_CONTENT", usage), wantIs: llm.ErrBlocked, wantReason: "PROHIBITED_CONTENT"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := geminitest.NewServer(t, func(*geminitest.Request) geminitest.Reply { return tt.reply })
			g := srv.NewGemini(t, gemini.Config{})
			_, err := g.Generate(t.Context(), llm.Request{Prompt: "x"})
			if !errors.Is(err, tt.wantIs) {
				t.Fatalf("error: got %v, want errors.Is %v", err, tt.wantIs)
			}
			var re *llm.ResponseError
			if !errors.As(err, &re) {
				t.Fatalf("error: got %T, want *llm.ResponseError", err)
			}
			if tt.wantReason != "" && re.Reason != tt.wantReason {
				t.Errorf("reason: got %q, want %q", re.Reason, tt.wantReason)
			}
			if llm.IsTemporary(err) {
				t.Errorf("IsTemporary: got true, want false")
			}
		})
	}
}

func TestGeminiCallTimeout(t *testing.T) {
	t.Parallel()
	srv := geminitest.NewServer(t, func(*geminitest.Request) geminitest.Reply {
		return geminitest.Reply{Text: "late", Delay: time.Minute}
	})
	g := srv.NewGemini(t, gemini.Config{CallTimeout: 20 * time.Millisecond})
	_, err := g.Generate(t.Context(), llm.Request{Prompt: "x"})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error: got %v, want context.DeadlineExceeded", err)
	}
	if !llm.IsTemporary(err) {
		t.Errorf("IsTemporary(timeout): got false, want true")
	}
	if strings.Contains(err.Error(), geminitest.TestAPIKey) {
		t.Errorf("error text contains the api key: %q", err)
	}
}

func TestGeminiParentCancelNotTemporary(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	srv := geminitest.NewServer(t, func(*geminitest.Request) geminitest.Reply {
		cancel()
		return geminitest.Reply{Text: "late", Delay: time.Minute}
	})
	g := srv.NewGemini(t, gemini.Config{})
	_, err := g.Generate(ctx, llm.Request{Prompt: "x"})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error: got %v, want context.Canceled", err)
	}
	if llm.IsTemporary(err) {
		t.Errorf("IsTemporary(cancelled): got true, want false")
	}
}

func TestGeminiConnectionErrorHidesKey(t *testing.T) {
	t.Parallel()
	srv := geminitest.NewServer(t, nil)
	g, err := gemini.New(t.Context(), gemini.Config{
		APIKey:  "secret-key-for-conn-test",
		Model:   "m",
		BaseURL: srv.URL + "/" + "secret-key-for-conn-test", // the key even sits in the URL
		HTTPClient: &http.Client{Transport: roundTripFunc(func(*http.Request) (*http.Response, error) {
			return nil, errors.New("dial secret-key-for-conn-test: connection reset by peer")
		})},
	})
	if err != nil {
		t.Fatalf("new gemini: %v", err)
	}
	_, err = g.Generate(t.Context(), llm.Request{Prompt: "x"})
	if err == nil {
		t.Fatal("got nil error, want a transport error")
	}
	if strings.Contains(err.Error(), "secret-key-for-conn-test") {
		t.Errorf("error text contains the api key: %q", err)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
