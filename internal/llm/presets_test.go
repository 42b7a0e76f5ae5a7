package llm_test

import (
	"strings"
	"testing"

	"github.com/mailagent/mailagent/internal/llm"
)

func TestParseStructuredOutput(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]llm.StructuredOutput{"": llm.OutputJSONSchema, "json_object": llm.OutputJSONObject, "prompt": llm.OutputPrompt} {
		if got, err := llm.ParseStructuredOutput(in); err != nil || got != want {
			t.Errorf("%q: %q, %v", in, got, err)
		}
	}
	if _, err := llm.ParseStructuredOutput("grammar"); err == nil {
		t.Error("unknown mode accepted")
	}
}

func TestPresets(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"ollama", "llamacpp", "vllm", "lmstudio"} {
		p, ok := llm.PresetByName(name)
		if !ok || !strings.HasPrefix(p.BaseURL, "http://localhost:") || !strings.HasSuffix(p.BaseURL, "/v1") || p.NeedsKey {
			t.Errorf("%s: %+v", name, p)
		}
		if _, err := llm.ParseStructuredOutput(string(p.StructuredOutput)); err != nil || p.ExampleModel == "" || p.ModelNaming == "" {
			t.Errorf("%s: incomplete preset %+v", name, p)
		}
	}
}
