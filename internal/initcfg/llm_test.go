package initcfg

import (
	"strings"
	"testing"

	"github.com/mailagent/mailagent/internal/config"
)

// TestRenderOpenAI: an OpenAI-compatible server renders as provider
// "openai" with its URL, model and mode; hostile text stays inside its
// strings and comments.
func TestRenderOpenAI(t *testing.T) {
	s := fastmail()
	s.APIKeyEnv, s.APIKeyCmd = "", ""
	s.LLMProvider, s.LLMPreset, s.LLMBaseURL, s.LLMStructuredOutput = "openai", "ollama\n[evil]\nx = 1", "http://localhost:11434/v1", "prompt"
	s.Model = "qwen\"\n[llm.draft]\nprovider = \"nope\""
	data := Render(s)
	cfg, err := config.Parse(data, "/x/config.toml", 0o600)
	if err != nil {
		t.Fatalf("does not parse: %v\n%s", err, data)
	}
	l := cfg.LLM
	if l.Provider != "openai" || l.BaseURL != s.LLMBaseURL || l.Model != s.Model || l.StructuredOutput != "prompt" || l.APIKeyEnv != "" {
		t.Errorf("llm %+v", l)
	}
	if l.Draft != (config.LLMTask{}) || strings.Contains(string(data), "\n[evil]") {
		t.Errorf("hostile text added keys or tables:\n%s", data)
	}
	s.APIKeyEnv = "VLLM_KEY"
	cfg, err = config.Parse(Render(s), "/x/config.toml", 0o600)
	if err != nil || cfg.LLM.APIKeyEnv != "VLLM_KEY" {
		t.Fatalf("with a key: %v %+v", err, cfg.LLM)
	}
}
