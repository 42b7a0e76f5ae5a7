package main

import (
	"fmt"
	"net/http"
	"os"
	"strings"
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

// oaBridge is the Gemini-handler bridge of the OpenAI fake.
type oaBridge = openaitest.Bridge

func newOABridge(t *testing.T, mode openaitest.Mode, h geminitest.Handler) *oaBridge {
	return openaitest.NewBridge(t, mode, h)
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
		openaitest.DefaultModel, b.Srv.URL, mode.StructuredOutput())
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
