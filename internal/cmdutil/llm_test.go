package cmdutil

import (
	"errors"
	"strings"
	"testing"

	"github.com/mailagent/mailagent/internal/config"
	"github.com/mailagent/mailagent/internal/iostreams"
)

// TestNewBuildsNoModel: the Factory New returns checks the model's key as
// the real builder does (a source that does not resolve is the same usage
// error, with its hint) and then builds nothing: ErrNoModelProvider, the
// composition root's NewFactory being what sets the real builder.
func TestNewBuildsNoModel(t *testing.T) {
	t.Parallel()
	ios, _, _, _ := iostreams.Test()
	f := New(ios)
	const unset = "MAILAGENT_CMDUTIL_TEST_KEY_NEVER_SET"
	_, err := f.NewModel(t.Context(), &config.Config{LLM: config.LLM{Provider: config.ProviderGemini, Model: "m", APIKeyEnv: unset}})
	var ue *UserError
	if !errors.As(err, &ue) || ue.Code != ExitUsage || !strings.Contains(ue.Hint, "GEMINI_API_KEY") || !strings.Contains(err.Error(), unset) {
		t.Errorf("unresolved key: got %v, want the usage error naming %s", err, unset)
	}
	for _, l := range []config.LLM{
		{Provider: config.ProviderGemini, Model: "m", APIKey: config.NewSecret("k")},
		{Provider: config.ProviderOpenAI, Model: "m"},
	} {
		if m, err := f.NewModel(t.Context(), &config.Config{LLM: l}); m != nil || !errors.Is(err, ErrNoModelProvider) {
			t.Errorf("%s with its key: got %v, %v; want ErrNoModelProvider", l.Provider, m, err)
		}
	}
}
