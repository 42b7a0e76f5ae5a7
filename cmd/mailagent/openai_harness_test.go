package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/mailagent/mailagent/internal/llm/geminitest"
	"github.com/mailagent/mailagent/internal/llm/openaitest"
	"github.com/mailagent/mailagent/internal/memimap"
)

// Provider names for tests that run over both providers: "gemini" is the
// Gemini REST fake; "openai-MODE" is the OpenAI-compatible fake in that
// server mode, with the structured-output setting that suits it.
const (
	provGemini   = "gemini"
	provStrict   = "openai-strict"
	provJSONOnly = "openai-json-only"
	provProse    = "openai-prose"
)

var openAIModes = map[string]openaitest.Mode{
	provStrict:   openaitest.ModeStrict,
	provJSONOnly: openaitest.ModeJSONOnly,
	provProse:    openaitest.ModeProse,
}

// oaBridge runs a model written for the Gemini fake (a geminitest.Handler)
// behind the OpenAI-compatible fake: each chat request is shown to the
// handler as the Gemini request it stands for (system text, user text and
// the schema the model can see), and the reply is translated back. So one
// compromised model drives both providers.
type oaBridge struct {
	srv *openaitest.Server

	mu   sync.Mutex
	reqs []*geminitest.Request
}

func newOABridge(t *testing.T, mode openaitest.Mode, h geminitest.Handler) *oaBridge {
	b := &oaBridge{}
	b.srv = openaitest.NewServer(t, mode, func(r *openaitest.Request) openaitest.Reply {
		gr := &geminitest.Request{Path: r.Path, Model: r.Model(), Header: r.Header, Raw: r.Raw, Body: map[string]any{
			"systemInstruction": map[string]any{"parts": []any{map[string]any{"text": r.SystemText()}}},
			"contents":          []any{map[string]any{"role": "user", "parts": []any{map[string]any{"text": r.UserText()}}}},
			"generationConfig":  map[string]any{"responseSchema": r.ResponseSchema()},
		}}
		b.mu.Lock()
		b.reqs = append(b.reqs, gr)
		b.mu.Unlock()
		return toOAReply(h(gr))
	})
	return b
}

func (b *oaBridge) Requests() []*geminitest.Request {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]*geminitest.Request(nil), b.reqs...)
}

// toOAReply translates a Gemini fake reply into the OpenAI wire form.
func toOAReply(g geminitest.Reply) openaitest.Reply {
	r := openaitest.Reply{Status: g.Status, Header: g.Header, Text: g.Text, Usage: g.Usage, Model: g.ModelVersion, Delay: g.Delay, Hangup: g.Hangup}
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
			e := openaitest.ErrorReply(g.Status, strings.ToLower(body.Error.Status), body.Error.Message)
			r.Body = e.Body
		case body.PromptFeedback != nil:
			r.Refusal = "blocked: " + body.PromptFeedback.BlockReason
		default:
			r.Status, r.Body = http.StatusInternalServerError, openaitest.ErrorReply(500, "server_error", "untranslatable fake reply").Body
		}
	}
	return r
}

// newHarnessOn is newHarness with the model behind the given provider. For
// an openai provider the Gemini fake fails any request, so a call that
// goes to the wrong provider is caught.
func newHarnessOn(t *testing.T, provider string, h geminitest.Handler, extraConfig string, imapOpts ...func(*memimap.Options)) *harness {
	t.Helper()
	mode, ok := openAIModes[provider]
	if !ok {
		return newHarness(t, h, extraConfig, imapOpts...)
	}
	hs := newHarness(t, func(*geminitest.Request) geminitest.Reply {
		t.Errorf("provider %s: the Gemini endpoint was called", provider)
		return geminitest.ErrorReply(http.StatusInternalServerError, "INTERNAL", "wrong provider")
	}, extraConfig, imapOpts...)
	b := newOABridge(t, mode, h)
	hs.openai = b
	raw, err := os.ReadFile(hs.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	old := fmt.Sprintf("[llm]\nmodel = \"gemini-test\"\napi_key_env = \"MA_TEST_GEMINI_KEY\"\nbase_url = %q\n", hs.gemini.URL)
	if !strings.Contains(string(raw), old) {
		t.Fatalf("harness config has no [llm] section to replace:\n%s", raw)
	}
	// A local server: no API key at all.
	repl := fmt.Sprintf("[llm]\nprovider = \"openai\"\nmodel = %q\nbase_url = %q\nstructured_output = %q\n",
		openaitest.DefaultModel, b.srv.URL, mode.StructuredOutput())
	if err := os.WriteFile(hs.cfgPath, []byte(strings.Replace(string(raw), old, repl, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	return hs
}

// modelRequests returns what the model was sent, whichever the provider.
func (h *harness) modelRequests() []*geminitest.Request {
	if h.openai != nil {
		return h.openai.Requests()
	}
	return h.gemini.Requests()
}
