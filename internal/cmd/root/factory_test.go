package root

import (
	"errors"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/mailagent/mailagent/internal/cmdutil"
	"github.com/mailagent/mailagent/internal/config"
	"github.com/mailagent/mailagent/internal/iostreams"
	"github.com/mailagent/mailagent/internal/llm"
	"github.com/mailagent/mailagent/internal/llm/geminitest"
	"github.com/mailagent/mailagent/internal/llm/openaitest"
)

// TestMainBuildsTheConfiguredModel: the Factory Main runs over (and
// NewFactory, which gen-docs and the binary's tests build over) has the
// real model builder: the configured OpenAI-compatible server answers
// the call. The control is cmdutil.New's Factory, which checks the key
// and builds no model.
func TestMainBuildsTheConfiguredModel(t *testing.T) {
	t.Parallel()
	srv := openaitest.NewServer(t, openaitest.ModeStrict, func(*openaitest.Request) openaitest.Reply { return openaitest.Reply{Text: "ok"} })
	cfg := &config.Config{LLM: config.LLM{Provider: config.ProviderOpenAI, Model: openaitest.DefaultModel, BaseURL: srv.URL}}
	ios, _, _, errOut := iostreams.Test()
	var mains *cmdutil.Factory
	if code := Main([]string{"version"}, ios, func(f *cmdutil.Factory) []*cobra.Command { mains = f; return nil }); code != cmdutil.ExitOK {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	for name, f := range map[string]*cmdutil.Factory{"Main": mains, "NewFactory": NewFactory(ios)} {
		m, err := f.NewModel(t.Context(), cfg)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if resp, err := m.Generate(t.Context(), llm.Request{Prompt: "hi"}); err != nil || resp.Text != "ok" {
			t.Errorf("%s: got %v, %v; want the server's answer", name, resp, err)
		}
	}
	if n := len(srv.Requests()); n != 2 {
		t.Errorf("server saw %d calls, want 2", n)
	}
	if m, err := cmdutil.New(ios).NewModel(t.Context(), cfg); m != nil || !errors.Is(err, cmdutil.ErrNoModelProvider) {
		t.Errorf("control: cmdutil.New's Factory built %v, %v; want ErrNoModelProvider", m, err)
	}
}

// unsetKeyEnv names a variable no environment sets: a key source that
// does not resolve.
const unsetKeyEnv = "MAILAGENT_PROVIDER_TEST_KEY_NEVER_SET"

// TestNewFactoryBuildsTheConfiguredProvider: NewFactory's NewModel
// (cmdutil/provider.New, tested here, whose test binary links both SDKs
// anyway, rather than in a binary of its own) builds the Gemini client
// for provider gemini and the OpenAI-compatible one for provider openai,
// each with the configured key and model and reaching base_url: one call
// through each fake shows which client made it.
func TestNewFactoryBuildsTheConfiguredProvider(t *testing.T) {
	t.Parallel()
	ios, _, _, _ := iostreams.Test()
	newModel := NewFactory(ios).NewModel
	gem := geminitest.NewServer(t, func(*geminitest.Request) geminitest.Reply { return geminitest.Reply{Text: "from gemini"} })
	oai := openaitest.NewServer(t, openaitest.ModeStrict, func(*openaitest.Request) openaitest.Reply { return openaitest.Reply{Text: "from openai"} })
	for _, tc := range []struct {
		name  string
		llm   config.LLM
		want  string
		check func(t *testing.T)
	}{
		{"gemini", config.LLM{Provider: config.ProviderGemini, Model: "gemini-x", APIKey: config.NewSecret("gemini-key"), BaseURL: gem.URL}, "from gemini",
			func(t *testing.T) {
				reqs := gem.Requests()
				if len(reqs) != 1 || reqs[0].Model != "gemini-x" || reqs[0].Header.Get("x-goog-api-key") != "gemini-key" {
					t.Errorf("gemini requests: %d, want 1 for model gemini-x with the configured key", len(reqs))
				}
			}},
		{"openai", config.LLM{Provider: config.ProviderOpenAI, Model: openaitest.DefaultModel, BaseURL: oai.URL}, "from openai",
			func(t *testing.T) {
				reqs := oai.Requests()
				if len(reqs) != 1 || reqs[0].Model() != openaitest.DefaultModel {
					t.Errorf("openai requests: %d, want 1 for model %s", len(reqs), openaitest.DefaultModel)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := newModel(t.Context(), &config.Config{LLM: tc.llm})
			if err != nil {
				t.Fatal(err)
			}
			resp, err := m.Generate(t.Context(), llm.Request{Prompt: "hi"})
			if err != nil {
				t.Fatal(err)
			}
			if resp.Text != tc.want {
				t.Errorf("answer %q, want %q", resp.Text, tc.want)
			}
			tc.check(t)
		})
	}
}

// TestNewFactoryKeyErrorsNameTheFix: with NewFactory's NewModel, a key
// source that does not resolve is a usage error whose hint names the fix
// for that provider; an OpenAI-compatible server without any key source
// builds (local servers need none), and a bad setting is an error before
// any call.
func TestNewFactoryKeyErrorsNameTheFix(t *testing.T) {
	t.Parallel()
	ios, _, _, _ := iostreams.Test()
	newModel := NewFactory(ios).NewModel
	for _, tc := range []struct {
		name string
		llm  config.LLM
		hint string // "" means no error
	}{
		{"gemini key unset", config.LLM{Provider: config.ProviderGemini, Model: "m", APIKeyEnv: unsetKeyEnv}, "(default GEMINI_API_KEY)"},
		{"openai key unset", config.LLM{Provider: config.ProviderOpenAI, Model: "m", APIKeyEnv: unsetKeyEnv}, "a local server (Ollama, llama.cpp, vLLM, LM Studio) needs neither"},
		{"openai no key source", config.LLM{Provider: config.ProviderOpenAI, Model: "m", BaseURL: "http://127.0.0.1:9/v1"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := newModel(t.Context(), &config.Config{LLM: tc.llm})
			if tc.hint == "" {
				if err != nil || m == nil {
					t.Fatalf("got %v, %v; want a model", m, err)
				}
				return
			}
			var ue *cmdutil.UserError
			if !errors.As(err, &ue) || ue.Code != cmdutil.ExitUsage || !strings.Contains(ue.Hint, tc.hint) || !strings.Contains(err.Error(), unsetKeyEnv) {
				t.Fatalf("got %v (%#v), want a usage error naming %s with hint %q", err, ue, unsetKeyEnv, tc.hint)
			}
		})
	}
	_, err := newModel(t.Context(), &config.Config{LLM: config.LLM{Provider: config.ProviderOpenAI, Model: "m", StructuredOutput: "xml"}})
	if err == nil || !strings.Contains(err.Error(), "openai client") {
		t.Errorf("unknown structured output: got %v, want the openai client's error", err)
	}
}
