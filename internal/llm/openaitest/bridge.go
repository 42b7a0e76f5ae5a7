package openaitest

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/mailagent/mailagent/internal/llm/geminitest"
)

// Bridge runs a model written for the Gemini fake (a geminitest.Handler)
// behind this OpenAI-compatible fake: each chat request is shown to the
// handler as the Gemini request it stands for (system text, user text and
// the schema the model can see), and the reply is translated back. So one
// scripted (or compromised) model drives both providers, in process and
// end to end.
type Bridge struct {
	// Srv is the OpenAI-compatible server; its URL is the base_url.
	Srv *Server

	mu   sync.Mutex
	reqs []*geminitest.Request
}

// NewBridge starts a server in mode that answers with h.
func NewBridge(t testing.TB, mode Mode, h geminitest.Handler) *Bridge {
	b := &Bridge{}
	b.Srv = NewServer(t, mode, func(r *Request) Reply {
		gr := &geminitest.Request{Path: r.Path, Model: r.Model(), Header: r.Header, Raw: r.Raw, Body: map[string]any{
			"systemInstruction": map[string]any{"parts": []any{map[string]any{"text": r.SystemText()}}},
			"contents":          []any{map[string]any{"role": "user", "parts": []any{map[string]any{"text": r.UserText()}}}},
			"generationConfig":  map[string]any{"responseSchema": r.ResponseSchema()},
		}}
		b.mu.Lock()
		b.reqs = append(b.reqs, gr)
		b.mu.Unlock()
		return FromGemini(h(gr))
	})
	return b
}

// Requests returns what the handler was shown, as Gemini requests.
func (b *Bridge) Requests() []*geminitest.Request {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]*geminitest.Request(nil), b.reqs...)
}

// FromGemini translates a Gemini fake reply into the OpenAI wire form.
func FromGemini(g geminitest.Reply) Reply {
	r := Reply{Status: g.Status, Header: g.Header, Text: g.Text, Usage: g.Usage, Model: g.ModelVersion, Delay: g.Delay, Hangup: g.Hangup}
	switch g.FinishReason {
	case "", "STOP":
	case "MAX_TOKENS":
		r.FinishReason = "length"
	default:
		r.FinishReason = "content_filter"
	}
	if g.Body != "" {
		var body struct {
			Error *struct {
				Message, Status string
			} `json:"error"`
			PromptFeedback *struct {
				BlockReason string `json:"blockReason"`
			} `json:"promptFeedback"`
		}
		_ = json.Unmarshal([]byte(g.Body), &body)
		switch {
		case body.Error != nil:
			e := ErrorReply(g.Status, strings.ToLower(body.Error.Status), body.Error.Message)
			r.Body = e.Body
		case body.PromptFeedback != nil:
			r.Refusal = "blocked: " + body.PromptFeedback.BlockReason
		default:
			r.Status, r.Body = http.StatusInternalServerError, ErrorReply(500, "server_error", "untranslatable fake reply").Body
		}
	}
	return r
}
