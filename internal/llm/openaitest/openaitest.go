// Package openaitest is a fake OpenAI-compatible server for tests.
//
// Contract: NewServer starts an httptest server that answers
// POST {URL}/chat/completions (URL ends in /v1, as the base URL of Ollama,
// llama.cpp, vLLM or LM Studio does) through a Handler the test supplies,
// and GET {URL}/models with the server's model list. The Mode says how the
// server treats response_format, as real servers differ:
//
//   - ModeStrict honours json_schema and json_object; the handler sees the
//     schema the client sent (Request.ResponseSchema).
//   - ModeJSONOnly answers 400 to json_schema (as servers without
//     structured outputs do) and honours json_object.
//   - ModeProse ignores response_format and wraps every answer in prose and
//     a ```json fence, as a chat model without a JSON mode does.
//
// Outside ModeStrict the handler only sees a schema the client put into
// the prompt, as a real model would. Every request is recorded and can be
// read back with Requests. A Reply's Delay ends early when the client goes
// away or the server shuts down. The server is closed by t.Cleanup.
// Everything is safe for concurrent use.
package openaitest

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
	"github.com/mailagent/mailagent/internal/llm/openai"
)

// DefaultModel is the model the server lists and NewOpenAI uses unless
// told otherwise.
const DefaultModel = "local-test:7b"

// Mode is how the server treats response_format.
type Mode int

// The server modes (see the package comment).
const (
	ModeStrict Mode = iota
	ModeJSONOnly
	ModeProse
)

func (m Mode) String() string {
	switch m {
	case ModeStrict:
		return "strict"
	case ModeJSONOnly:
		return "json-only"
	case ModeProse:
		return "prose"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// StructuredOutput is the client mode that suits a server mode.
func (m Mode) StructuredOutput() llm.StructuredOutput {
	switch m {
	case ModeJSONOnly:
		return llm.OutputJSONObject
	case ModeProse:
		return llm.OutputPrompt
	}
	return llm.OutputJSONSchema
}

// Request is one recorded chat completions request.
type Request struct {
	Path   string
	Header http.Header
	Body   map[string]any // decoded JSON body; nil when it was not JSON
	Raw    []byte
	// Format is response_format.type ("json_schema", "json_object") or "".
	Format string
	// Strict is response_format.json_schema.strict.
	Strict bool
	mode   Mode
}

// Model returns the requested model name.
func (r *Request) Model() string { s, _ := r.Body["model"].(string); return s }

// SystemText returns the concatenated system messages.
func (r *Request) SystemText() string { return r.messages("system") }

// UserText returns the concatenated user messages.
func (r *Request) UserText() string { return r.messages("user") }

func (r *Request) messages(role string) string {
	msgs, _ := r.Body["messages"].([]any)
	var b strings.Builder
	for _, m := range msgs {
		mm, _ := m.(map[string]any)
		if mm["role"] != role {
			continue
		}
		switch c := mm["content"].(type) {
		case string:
			b.WriteString(c)
		case []any:
			for _, p := range c {
				pm, _ := p.(map[string]any)
				t, _ := pm["text"].(string)
				b.WriteString(t)
			}
		}
	}
	return b.String()
}

// ResponseSchema returns the JSON Schema the model can see: the
// response_format schema when the server honours it (ModeStrict), else one
// the client wrote into the system prompt; nil when there is none.
func (r *Request) ResponseSchema() map[string]any {
	if r.mode == ModeStrict && r.Format == "json_schema" {
		rf, _ := r.Body["response_format"].(map[string]any)
		js, _ := rf["json_schema"].(map[string]any)
		s, _ := js["schema"].(map[string]any)
		return s
	}
	return PromptSchema(r.SystemText())
}

// PromptSchema finds the JSON Schema object written into a prompt after the
// words "JSON Schema", or returns nil.
func PromptSchema(prompt string) map[string]any {
	_, rest, ok := strings.Cut(prompt, "JSON Schema")
	if !ok {
		return nil
	}
	i := strings.IndexByte(rest, '{')
	if i < 0 {
		return nil
	}
	var s map[string]any
	if err := json.NewDecoder(strings.NewReader(rest[i:])).Decode(&s); err != nil {
		return nil
	}
	return s
}

// Reply is what the server answers.
type Reply struct {
	Status int         // HTTP status; 0 means 200
	Header http.Header // extra response headers, e.g. Retry-After
	// Text is the assistant message content of a 200 reply.
	Text string
	// Refusal is the assistant message refusal, when set.
	Refusal string
	// Body, when non-empty, is sent verbatim instead of a generated body.
	Body         string
	Usage        llm.Usage
	FinishReason string // empty means "stop"
	Model        string // empty means the requested model
	Delay        time.Duration
	// Hangup closes the connection without any response.
	Hangup bool
}

// Handler decides the reply to one request.
type Handler func(req *Request) Reply

// Server is a running fake.
type Server struct {
	URL    string // base URL ending in /v1, for openai.Config.BaseURL
	Mode   Mode
	Models []string // listed at /models; default {DefaultModel}
	// AnyModel answers whatever model is asked for, as llama.cpp's server
	// does (it serves one model); otherwise an unlisted model is a 404.
	AnyModel bool

	wire *fakewire.Server[*Request]
	h    Handler
}

// NewServer starts a fake in mode answering through h. A nil h answers "{}".
func NewServer(t testing.TB, mode Mode, h Handler) *Server {
	t.Helper()
	if h == nil {
		h = func(*Request) Reply { return Reply{Text: "{}"} }
	}
	s := &Server{Mode: mode, Models: []string{DefaultModel}, h: h}
	s.wire = fakewire.Start[*Request](t, s.serve)
	s.URL = s.wire.URL() + "/v1"
	return s
}

// Client returns an HTTP client for the server.
func (s *Server) Client() *http.Client { return s.wire.Client() }

// Requests returns the recorded chat requests in arrival order.
func (s *Server) Requests() []*Request { return s.wire.Requests() }

// NewOpenAI returns an *openai.Model pointed at the server. Empty fields of
// cfg default to DefaultModel, the server's URL and client, and the
// structured-output mode that suits the server.
func (s *Server) NewOpenAI(t testing.TB, cfg openai.Config) *openai.Model {
	t.Helper()
	if cfg.Model == "" {
		cfg.Model = DefaultModel
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = s.URL
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = s.Client()
	}
	if cfg.StructuredOutput == "" {
		cfg.StructuredOutput = s.Mode.StructuredOutput()
	}
	m, err := openai.New(cfg)
	if err != nil {
		t.Fatalf("openaitest: new openai: %v", err)
	}
	return m
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "read body", http.StatusBadRequest)
		return
	}
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/v1/models":
		s.models(w)
		return
	case r.Method == http.MethodPost && r.URL.Path == "/v1/chat/completions":
	default:
		writeReply(w, ErrorReply(http.StatusNotFound, "invalid_request_error", fmt.Sprintf("%s %s: no such endpoint", r.Method, r.URL.Path)))
		return
	}
	req := &Request{Path: r.URL.Path, Header: r.Header.Clone(), Raw: raw, mode: s.Mode}
	var body map[string]any
	if json.Unmarshal(raw, &body) != nil {
		writeReply(w, ErrorReply(http.StatusBadRequest, "invalid_request_error", "body is not JSON"))
		return
	}
	req.Body = body
	if rf, ok := body["response_format"].(map[string]any); ok {
		req.Format, _ = rf["type"].(string)
		js, _ := rf["json_schema"].(map[string]any)
		req.Strict, _ = js["strict"].(bool)
	}
	s.wire.Record(req)

	if s.Mode == ModeJSONOnly && req.Format == "json_schema" {
		writeReply(w, ErrorReply(http.StatusBadRequest, "invalid_request_error", "response_format json_schema is not supported by this server"))
		return
	}
	if !s.AnyModel && !s.knows(req.Model()) {
		writeReply(w, ErrorReply(http.StatusNotFound, "invalid_request_error", fmt.Sprintf("model %q not found", req.Model())))
		return
	}
	rep := s.h(req)
	if !s.wire.Wait(r, rep.Delay) {
		return
	}
	if rep.Hangup {
		fakewire.Hangup(w)
		return
	}
	if rep.Body == "" && (rep.Status == 0 || rep.Status == http.StatusOK) {
		text := rep.Text
		if s.Mode == ModeProse && text != "" {
			text = "Sure! Here is the answer you asked for:\n\n```json\n" + text + "\n```\n\nLet me know if you need anything else."
		}
		model := rep.Model
		if model == "" {
			model = req.Model()
		}
		rep.Body = completionBody(text, rep.Refusal, rep.FinishReason, model, rep.Usage)
	}
	writeReply(w, rep)
}

func (s *Server) knows(model string) bool {
	for _, m := range s.Models {
		if m == model {
			return true
		}
	}
	return false
}

func (s *Server) models(w http.ResponseWriter) {
	data := []any{}
	for _, m := range s.Models {
		data = append(data, map[string]any{"id": m, "object": "model", "created": 0, "owned_by": "openaitest"})
	}
	b, _ := json.Marshal(map[string]any{"object": "list", "data": data})
	writeReply(w, Reply{Body: string(b)})
}

func writeReply(w http.ResponseWriter, rep Reply) {
	fakewire.WriteJSON(w, rep.Header, rep.Status, rep.Body)
}

func completionBody(text, refusal, finish, model string, u llm.Usage) string {
	if finish == "" {
		finish = "stop"
	}
	msg := map[string]any{"role": "assistant", "content": text}
	if refusal != "" {
		msg["refusal"] = refusal
		msg["content"] = nil
	}
	b, _ := json.Marshal(map[string]any{
		"id": "chatcmpl-openaitest", "object": "chat.completion", "created": time.Now().Unix(), "model": model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
		"usage": map[string]any{
			"prompt_tokens": u.PromptTokens, "completion_tokens": u.OutputTokens, "total_tokens": u.TotalTokens,
		},
	})
	return string(b)
}

// JSONReply answers with v marshalled as the message content.
func JSONReply(v any, usage llm.Usage) Reply {
	b, err := json.Marshal(v)
	if err != nil {
		return ErrorReply(http.StatusInternalServerError, "server_error", "openaitest: marshal reply: "+err.Error())
	}
	return Reply{Text: string(b), Usage: usage}
}

// ErrorReply answers with an OpenAI error body {"error":{"message","type","code"}}.
func ErrorReply(code int, typ, message string) Reply {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": message, "type": typ, "code": nil, "param": nil}})
	return Reply{Status: code, Body: string(b)}
}
