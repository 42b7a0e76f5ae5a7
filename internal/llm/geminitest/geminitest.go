// Package geminitest is a fake Gemini REST API for tests.
//
// Contract: NewServer starts an httptest server that answers
// POST {base}/{version}/models/{model}:generateContent — the path
// google.golang.org/genai uses for the Gemini API backend — through a
// Handler the test supplies. Every request is recorded (path, model,
// headers, raw body and decoded JSON body) and can be read back with
// Requests. A Reply's Delay ends early when the client goes away or the
// server shuts down, so a slow reply never blocks test cleanup. The server
// is closed by t.Cleanup. Everything is safe for concurrent use.
package geminitest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mailagent/mailagent/internal/llm"
	"github.com/mailagent/mailagent/internal/llm/fakewire"
	"github.com/mailagent/mailagent/internal/llm/gemini"
)

// TestAPIKey is the API key NewGemini uses unless told otherwise.
const TestAPIKey = "test-key-geminitest-0123456789"

// DefaultModel is the model name NewGemini uses unless told otherwise.
const DefaultModel = "gemini-test"

// Request is one recorded generateContent request.
type Request struct {
	Path    string         // URL path, e.g. "/v1beta/models/gemini-test:generateContent"
	Version string         // API version segment, e.g. "v1beta"
	Model   string         // model name from the path, e.g. "gemini-test"
	Header  http.Header    // request headers (include x-goog-api-key)
	Body    map[string]any // decoded JSON body; nil when it was not JSON
	Raw     []byte         // raw body

}

// SystemText returns the concatenated text parts of systemInstruction.
func (r *Request) SystemText() string {
	si, _ := r.Body["systemInstruction"].(map[string]any)
	return partsText(si)
}

// UserText returns the concatenated text parts of every user content.
func (r *Request) UserText() string {
	contents, _ := r.Body["contents"].([]any)
	var b strings.Builder
	for _, c := range contents {
		cm, _ := c.(map[string]any)
		if role, _ := cm["role"].(string); role != "" && role != "user" {
			continue
		}
		b.WriteString(partsText(cm))
	}
	return b.String()
}

// GenerationConfig returns the generationConfig object, or nil.
func (r *Request) GenerationConfig() map[string]any {
	gc, _ := r.Body["generationConfig"].(map[string]any)
	return gc
}

// ResponseSchema returns generationConfig.responseSchema, or nil.
func (r *Request) ResponseSchema() map[string]any {
	s, _ := r.GenerationConfig()["responseSchema"].(map[string]any)
	return s
}

func partsText(content map[string]any) string {
	parts, _ := content["parts"].([]any)
	var b strings.Builder
	for _, p := range parts {
		pm, _ := p.(map[string]any)
		t, _ := pm["text"].(string)
		b.WriteString(t)
	}
	return b.String()
}

// Reply is what the server answers.
type Reply struct {
	Status int         // HTTP status; 0 means 200
	Header http.Header // extra response headers, e.g. Retry-After
	// Text is the candidate's text for a 200 reply.
	Text string
	// Body, when non-empty, is sent verbatim instead of a generated body.
	Body         string
	Usage        llm.Usage
	FinishReason string        // candidate finishReason; empty means "STOP"
	ModelVersion string        // modelVersion; empty means the request's model
	Delay        time.Duration // wait before answering (ends when the client goes away)
	// Hangup closes the connection without any response, as a crashed
	// proxy would; the client sees a connection error.
	Hangup bool
}

// Handler decides the reply to one request.
type Handler func(req *Request) Reply

// Server is a running fake.
type Server struct {
	URL string // base URL, to use as gemini.Config.BaseURL

	wire *fakewire.Server[*Request]
	h    Handler
}

// NewServer starts a fake answering through h. A nil h answers every
// request with the text "{}".
func NewServer(t testing.TB, h Handler) *Server {
	t.Helper()
	if h == nil {
		h = func(*Request) Reply { return Reply{Text: "{}"} }
	}
	s := &Server{h: h}
	s.wire = fakewire.Start[*Request](t, s.serve)
	s.URL = s.wire.URL()
	return s
}

// Client returns an HTTP client for the server.
func (s *Server) Client() *http.Client { return s.wire.Client() }

// Requests returns the recorded requests in arrival order.
func (s *Server) Requests() []*Request { return s.wire.Requests() }

// NewGemini returns a *gemini.Model pointed at the server. Empty fields of
// cfg default to TestAPIKey, DefaultModel, the server's URL and client.
func (s *Server) NewGemini(t testing.TB, cfg gemini.Config) *gemini.Model {
	t.Helper()
	if cfg.APIKey == "" {
		cfg.APIKey = TestAPIKey
	}
	if cfg.Model == "" {
		cfg.Model = DefaultModel
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = s.URL
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = s.Client()
	}
	g, err := gemini.New(t.Context(), cfg)
	if err != nil {
		t.Fatalf("geminitest: new gemini: %v", err)
	}
	return g
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "read body", http.StatusBadRequest)
		return
	}
	version, model, ok := parsePath(r.URL.Path)
	if r.Method != http.MethodPost || !ok {
		writeError(w, http.StatusNotFound, "NOT_FOUND", fmt.Sprintf("%s %s is not generateContent", r.Method, r.URL.Path))
		return
	}
	req := &Request{Path: r.URL.Path, Version: version, Model: model, Header: r.Header.Clone(), Raw: raw}
	var body map[string]any
	if json.Unmarshal(raw, &body) == nil {
		req.Body = body
	}
	s.wire.Record(req)

	rep := s.h(req)
	if !s.wire.Wait(r, rep.Delay) {
		return
	}
	if rep.Hangup {
		fakewire.Hangup(w)
		return
	}
	out := rep.Body
	if out == "" && (rep.Status == 0 || rep.Status == http.StatusOK) {
		mv := rep.ModelVersion
		if mv == "" {
			mv = model
		}
		out = candidateBody(rep.Text, rep.FinishReason, mv, rep.Usage)
	}
	fakewire.WriteJSON(w, rep.Header, rep.Status, out)
}

// parsePath splits "/{version}/models/{model}:generateContent".
func parsePath(p string) (version, model string, ok bool) {
	rest, found := strings.CutSuffix(p, ":generateContent")
	if !found {
		return "", "", false
	}
	parts := strings.Split(strings.TrimPrefix(rest, "/"), "/")
	if len(parts) < 3 || parts[len(parts)-2] != "models" {
		return "", "", false
	}
	return parts[len(parts)-3], parts[len(parts)-1], true
}

func candidateBody(text, finish, modelVersion string, u llm.Usage) string {
	if finish == "" {
		finish = "STOP"
	}
	cand := map[string]any{"index": 0, "finishReason": finish}
	if text != "" {
		cand["content"] = map[string]any{"role": "model", "parts": []any{map[string]any{"text": text}}}
	}
	b, _ := json.Marshal(map[string]any{
		"candidates": []any{cand},
		"usageMetadata": map[string]any{
			"promptTokenCount":     u.PromptTokens,
			"candidatesTokenCount": u.OutputTokens,
			"totalTokenCount":      u.TotalTokens,
		},
		"modelVersion": modelVersion,
	})
	return string(b)
}

// JSONReply answers with v marshalled as the candidate's text.
func JSONReply(v any, usage llm.Usage) Reply {
	b, err := json.Marshal(v)
	if err != nil {
		return ErrorReply(http.StatusInternalServerError, "INTERNAL", "geminitest: marshal reply: "+err.Error())
	}
	return Reply{Text: string(b), Usage: usage}
}

// ErrorReply answers with a Google API error body
// {"error":{"code","message","status","details"}}.
func ErrorReply(code int, status, message string, details ...map[string]any) Reply {
	e := map[string]any{"code": code, "message": message, "status": status}
	if len(details) > 0 {
		e["details"] = details
	}
	b, _ := json.Marshal(map[string]any{"error": e})
	return Reply{Status: code, Body: string(b)}
}

// RateLimitReply answers 429 RESOURCE_EXHAUSTED with a google.rpc.RetryInfo
// detail carrying retryDelay (e.g. "7s"), as Gemini does.
func RateLimitReply(retryDelay string) Reply {
	return ErrorReply(http.StatusTooManyRequests, "RESOURCE_EXHAUSTED", "quota exceeded",
		map[string]any{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": retryDelay})
}

// BlockedPromptReply answers 200 with no candidates and a promptFeedback
// blockReason (e.g. "SAFETY").
func BlockedPromptReply(reason string, usage llm.Usage) Reply {
	b, _ := json.Marshal(map[string]any{
		"promptFeedback": map[string]any{"blockReason": reason},
		"usageMetadata":  map[string]any{"promptTokenCount": usage.PromptTokens, "totalTokenCount": usage.TotalTokens},
	})
	return Reply{Body: string(b)}
}

func writeError(w http.ResponseWriter, code int, status, msg string) {
	rep := ErrorReply(code, status, msg)
	fakewire.WriteJSON(w, nil, code, rep.Body)
}
