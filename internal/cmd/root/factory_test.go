package root

import (
	"errors"
	"testing"

	"github.com/spf13/cobra"

	"github.com/mailagent/mailagent/internal/cmdutil"
	"github.com/mailagent/mailagent/internal/config"
	"github.com/mailagent/mailagent/internal/iostreams"
	"github.com/mailagent/mailagent/internal/llm"
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
