// Package gemini is mailagent's Gemini provider: an llm.Model over the
// Gemini API through google.golang.org/genai.
//
// Contract: New builds a *Model from a Config without contacting the
// server. Each Generate is exactly one HTTP request (the SDK's automatic
// continuation off), bounded by the per-call timeout; retries belong to
// llm.WithRetry. HTTP failures are *llm.APIError, with RetryAfter from the
// Retry-After header (which genai's APIError drops: a transport records
// it) or else google.rpc.RetryInfo; empty or blocked answers are
// *llm.ResponseError; an expired per-call timeout wraps
// context.DeadlineExceeded. The API key never appears in an error. A
// request's schema maps onto genai's ResponseSchema, and the bytes the SDK
// made of a schema are reused on later calls, so the request stays byte
// for byte the same; the prompt and the system instruction are handed to
// the body as values that encode to genai's own bytes for them. No other
// package imports genai (internal/rig/archtest's sdkHomes).
package gemini

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"google.golang.org/genai"

	"github.com/mailagent/mailagent/internal/llm"
	"github.com/mailagent/mailagent/internal/llm/internal/httpcall"
)

// Config configures a Gemini model.
type Config struct {
	// APIKey authenticates with the Gemini API. Required. It is sent in the
	// x-goog-api-key header and never appears in errors.
	APIKey string
	// Model is the model name, e.g. "gemini-2.5-flash". Required.
	Model string
	// BaseURL overrides the API endpoint (tests point it at geminitest).
	// Empty means the SDK default.
	BaseURL string
	// HTTPClient is used for requests; nil means a default client. It is
	// copied, never modified.
	HTTPClient *http.Client
	// CallTimeout bounds each call; zero means llm.DefaultCallTimeout.
	CallTimeout time.Duration
}

// Model is an llm.Model backed by the Gemini API through
// google.golang.org/genai. It is safe for concurrent use. It makes exactly
// one HTTP request per Generate call: retries belong to llm.WithRetry.
type Model struct {
	client  *genai.Client
	model   string
	timeout time.Duration
	secret  string

	// schemas holds, per response schema (its JSON as the key), the
	// responseSchema the SDK sent for it the first time, so that later
	// calls hand the SDK those bytes instead of a schema to convert and
	// marshal through its JSON round trips again (see Generate).
	schemas sync.Map // string -> json.RawMessage
	nSchema atomic.Int32
}

// maxCachedSchemas bounds Model.schemas: the product asks a handful of
// schemas; one that varies per call is converted each time, as before.
const maxCachedSchemas = 64

// CloseIdleConnections closes the idle connections of the transport
// models built without one share (httpcall.Transport), and so ends their
// goroutines; a later call opens a new one. The composition root calls it
// as a command returns.
func CloseIdleConnections() { httpcall.CloseIdle() }

// New builds a Gemini model. It does not contact the server.
func New(ctx context.Context, cfg Config) (*Model, error) {
	if cfg.APIKey == "" {
		return nil, errors.New("gemini: api key is empty")
	}
	if cfg.Model == "" {
		return nil, errors.New("gemini: model is empty")
	}
	if cfg.CallTimeout < 0 {
		return nil, fmt.Errorf("gemini: negative call timeout %s", cfg.CallTimeout)
	}
	timeout := cfg.CallTimeout
	if timeout == 0 {
		timeout = llm.DefaultCallTimeout
	}
	// Copy the caller's client and wrap its transport, so Retry-After
	// headers (which genai's APIError drops) can be read.
	hc := &http.Client{}
	if cfg.HTTPClient != nil {
		*hc = *cfg.HTTPClient
	}
	base := hc.Transport
	if base == nil {
		base = httpcall.Transport()
	}
	hc.Transport = &headerTransport{base: base}

	client, err := genai.NewClient(ctx, &genai.ClientConfig{
		APIKey:      cfg.APIKey,
		Backend:     genai.BackendGeminiAPI,
		HTTPClient:  hc,
		HTTPOptions: genai.HTTPOptions{BaseURL: cfg.BaseURL},
	})
	if err != nil {
		return nil, httpcall.Redact(fmt.Errorf("gemini: new client: %w", err), cfg.APIKey)
	}
	return &Model{client: client, model: cfg.Model, timeout: timeout, secret: cfg.APIKey}, nil
}

// Generate makes one generateContent call. HTTP failures are
// *llm.APIError; empty or blocked answers are *llm.ResponseError; an
// expired per-call timeout wraps context.DeadlineExceeded.
func (g *Model) Generate(ctx context.Context, req llm.Request) (*llm.Response, error) {
	cfg := &genai.GenerateContentConfig{
		Temperature:     req.Temperature,
		MaxOutputTokens: req.MaxOutputTokens,
		// One call, one request: no hidden continuation hops.
		AutomaticContinuation: new(false),
	}
	// The prompt and the system instruction go into the body as typed
	// values that encode to the bytes the SDK makes of them (wireText), so
	// the SDK does not round-trip the mail text through JSON and maps
	// before encoding it (TestGeminiTextSameRequest, FuzzGeminiTextSameRequest).
	texts := wireTexts(req)
	var schema genai.ExtrasRequestProvider
	if req.Schema != nil {
		cfg.ResponseMIMEType = "application/json"
		// The schema goes into the body as the bytes the SDK made of it
		// the first time: the request is byte for byte the same
		// (TestGeminiCachedSchemaSameRequest), without the SDK's
		// conversions of the schema on every call.
		key, err := json.Marshal(req.Schema)
		if err != nil {
			return nil, fmt.Errorf("gemini: schema: %w", err)
		}
		if raw, ok := g.schemas.Load(string(key)); ok {
			schema = putSchema(raw.(json.RawMessage))
		} else {
			s, err := toGenaiSchema(req.Schema, "$")
			if err != nil {
				return nil, fmt.Errorf("gemini: %w", err)
			}
			cfg.ResponseSchema = s
			schema = g.keepSchema(string(key))
		}
	}
	cfg.HTTPOptions = &genai.HTTPOptions{ExtrasRequestProvider: func(body map[string]any) map[string]any {
		texts.put(body)
		if schema != nil {
			body = schema(body)
		}
		return body
	}}

	meta := &callMeta{}
	callCtx, cancel := context.WithTimeout(context.WithValue(ctx, callMetaKey{}, meta), g.timeout)
	defer cancel()

	resp, err := g.client.Models.GenerateContent(callCtx, g.model, nil, cfg)
	if err != nil {
		return nil, g.wrapErr(ctx, callCtx, err, meta)
	}
	return g.toResponse(resp)
}

// wireContent and wirePart are a genai.Content of text parts as the SDK
// puts it in a request body: its fields in the order encoding/json sorts
// the map the SDK builds ("parts" before "role"), and a part's empty text
// left out as the SDK's omitempty leaves it.
type wireContent struct {
	Parts []wirePart `json:"parts"`
	Role  string     `json:"role"`
}

type wirePart struct {
	Text string `json:"text,omitempty"`
}

// wireBody holds a request's text: the body's "contents" (the prompt, one
// user part) and "systemInstruction" (when there is one).
type wireBody struct {
	contents []wireContent
	system   *wireContent
}

func wireTexts(req llm.Request) wireBody {
	w := wireBody{contents: []wireContent{{Parts: []wirePart{{Text: wireText(req.Prompt)}}, Role: genai.RoleUser}}}
	if req.System != "" {
		w.system = &wireContent{Parts: []wirePart{{Text: wireText(req.System)}}, Role: genai.RoleUser}
	}
	return w
}

// put sets the body's text fields, which the SDK left out (it was given
// no contents and no system instruction).
func (w wireBody) put(body map[string]any) {
	body["contents"] = w.contents
	if w.system != nil {
		body["systemInstruction"] = w.system
	}
}

// wireText returns s as the SDK's JSON round trip leaves it: encoding/json
// writes each byte of invalid UTF-8 as the escape \ufffd, and the SDK
// decodes that into the rune U+FFFD, which the body's encoding then writes
// as its three bytes; so each invalid byte becomes U+FFFD here, and valid
// text (nearly all of it) is returned as it is.
func wireText(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b.WriteRune(utf8.RuneError)
		} else {
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// keepSchema returns a request hook that records the body's
// responseSchema, as the SDK made it, under key, and leaves the body as it
// is.
func (g *Model) keepSchema(key string) genai.ExtrasRequestProvider {
	return func(body map[string]any) map[string]any {
		gc, _ := body["generationConfig"].(map[string]any)
		rs, ok := gc["responseSchema"]
		if !ok || g.nSchema.Load() >= maxCachedSchemas {
			return body
		}
		if raw, err := json.Marshal(rs); err == nil {
			if _, loaded := g.schemas.LoadOrStore(key, json.RawMessage(raw)); !loaded {
				g.nSchema.Add(1)
			}
		}
		return body
	}
}

// putSchema returns a request hook that sets the body's responseSchema to
// raw (recorded by keepSchema).
func putSchema(raw json.RawMessage) genai.ExtrasRequestProvider {
	return func(body map[string]any) map[string]any {
		gc, _ := body["generationConfig"].(map[string]any)
		if gc == nil {
			gc = map[string]any{}
			body["generationConfig"] = gc
		}
		gc["responseSchema"] = raw
		return body
	}
}

func (g *Model) toResponse(resp *genai.GenerateContentResponse) (*llm.Response, error) {
	var usage llm.Usage
	if u := resp.UsageMetadata; u != nil {
		usage = llm.Usage{PromptTokens: u.PromptTokenCount, OutputTokens: u.CandidatesTokenCount, TotalTokens: u.TotalTokenCount}
	}
	if pf := resp.PromptFeedback; pf != nil && pf.BlockReason != "" {
		return nil, &llm.ResponseError{Blocked: true, Reason: string(pf.BlockReason), Message: pf.BlockReasonMessage, Usage: usage}
	}
	if len(resp.Candidates) == 0 || resp.Candidates[0] == nil {
		return nil, &llm.ResponseError{Reason: "no candidates", Usage: usage}
	}
	c := resp.Candidates[0]
	if blockedFinish(c.FinishReason) {
		return nil, &llm.ResponseError{Blocked: true, Reason: string(c.FinishReason), Message: c.FinishMessage, Usage: usage}
	}
	var b strings.Builder
	if c.Content != nil {
		for _, p := range c.Content.Parts {
			if p != nil && !p.Thought {
				b.WriteString(p.Text)
			}
		}
	}
	if strings.TrimSpace(b.String()) == "" {
		return nil, &llm.ResponseError{Reason: string(c.FinishReason), Message: c.FinishMessage, Usage: usage}
	}
	model := resp.ModelVersion
	if model == "" {
		model = g.model
	}
	return &llm.Response{Text: b.String(), Usage: usage, Model: model, FinishReason: string(c.FinishReason)}, nil
}

// blockedFinish reports finish reasons that mean the provider withheld or
// cut the answer for policy reasons.
func blockedFinish(r genai.FinishReason) bool {
	switch r {
	case genai.FinishReasonSafety, genai.FinishReasonRecitation, genai.FinishReasonLanguage,
		genai.FinishReasonBlocklist, genai.FinishReasonProhibitedContent, genai.FinishReasonSPII,
		genai.FinishReasonImageSafety, genai.FinishReasonImageProhibitedContent, genai.FinishReasonImageRecitation:
		return true
	}
	return false
}

// wrapErr turns a genai error into *llm.APIError or a wrapped transport error,
// with the API key redacted.
func (g *Model) wrapErr(parent, callCtx context.Context, err error, meta *callMeta) error {
	var ge genai.APIError
	var gp *genai.APIError
	switch {
	case errors.As(err, &ge):
	case errors.As(err, &gp) && gp != nil:
		ge = *gp
	default:
		if parent.Err() == nil && errors.Is(callCtx.Err(), context.DeadlineExceeded) {
			return httpcall.Redact(fmt.Errorf("gemini generate: call timed out after %s: %w", g.timeout, err), g.secret)
		}
		return httpcall.Redact(fmt.Errorf("gemini generate: %w", err), g.secret)
	}
	code := ge.Code
	if code == 0 {
		code = meta.status()
	}
	ae := &llm.APIError{
		StatusCode: code,
		Status:     ge.Status,
		Message:    strings.ReplaceAll(ge.Message, g.secret, "[REDACTED]"),
		RetryAfter: meta.retryAfter(),
	}
	if ae.RetryAfter == 0 {
		ae.RetryAfter = retryInfoDelay(ge.Details)
	}
	return ae
}

// retryInfoDelay reads google.rpc.RetryInfo.retryDelay ("37s", "1.5s")
// from an error's details.
func retryInfoDelay(details []map[string]any) time.Duration {
	for _, d := range details {
		if t, _ := d["@type"].(string); !strings.HasSuffix(t, "google.rpc.RetryInfo") {
			continue
		}
		s, _ := d["retryDelay"].(string)
		if !strings.HasSuffix(s, "s") {
			continue
		}
		if v, err := time.ParseDuration(s); err == nil && v > 0 {
			return v
		}
	}
	return 0
}

// callMeta collects HTTP details of one call that genai does not surface.
type callMeta struct {
	mu    sync.Mutex
	code  int
	after time.Duration
}

func (m *callMeta) status() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.code
}

func (m *callMeta) retryAfter() time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.after
}

type callMetaKey struct{}

// headerTransport records the status and Retry-After header of failed
// responses into the request context's callMeta. Hand-rolled because
// genai.APIError carries no response headers.
type headerTransport struct {
	base http.RoundTripper
}

func (t *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil || resp.StatusCode < 400 {
		return resp, err
	}
	if m, ok := req.Context().Value(callMetaKey{}).(*callMeta); ok {
		d := httpcall.ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
		m.mu.Lock()
		m.code = resp.StatusCode
		m.after = d
		m.mu.Unlock()
	}
	return resp, nil
}

// toGenaiSchema maps the provider-neutral schema onto genai.Schema.
func toGenaiSchema(s *llm.Schema, path string) (*genai.Schema, error) {
	if s == nil {
		return nil, nil
	}
	out := &genai.Schema{
		Description:      s.Description,
		Enum:             s.Enum,
		Required:         s.Required,
		PropertyOrdering: s.PropertyOrdering,
		MinItems:         s.MinItems,
		MaxItems:         s.MaxItems,
		Minimum:          s.Minimum,
		Maximum:          s.Maximum,
		MaxLength:        s.MaxLength,
	}
	switch s.Type {
	case "object":
		out.Type = genai.TypeObject
	case "array":
		out.Type = genai.TypeArray
	case "string":
		out.Type = genai.TypeString
	case "number":
		out.Type = genai.TypeNumber
	case "integer":
		out.Type = genai.TypeInteger
	case "boolean":
		out.Type = genai.TypeBoolean
	default:
		return nil, fmt.Errorf("schema %s: unsupported type %q", path, s.Type)
	}
	if s.Items != nil {
		items, err := toGenaiSchema(s.Items, path+"[]")
		if err != nil {
			return nil, err
		}
		out.Items = items
	}
	if len(s.Properties) > 0 {
		out.Properties = make(map[string]*genai.Schema, len(s.Properties))
		for name, p := range s.Properties {
			ps, err := toGenaiSchema(p, path+"."+name)
			if err != nil {
				return nil, err
			}
			out.Properties[name] = ps
		}
	}
	for _, r := range s.Required {
		if _, ok := s.Properties[r]; !ok {
			return nil, fmt.Errorf("schema %s: required property %q is not defined", path, r)
		}
	}
	return out, nil
}
