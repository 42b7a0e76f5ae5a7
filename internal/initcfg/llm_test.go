package initcfg

import (
	"fmt"
	"strings"
	"testing"

	"github.com/mailagent/mailagent/internal/config"
)

// TestRenderOpenAI: an OpenAI-compatible server renders as provider
// "openai" with its URL, model and mode; hostile text stays inside its
// strings and comments.
func TestRenderOpenAI(t *testing.T) {
	t.Parallel()
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

// TestRenderAPIKeyKeyring: an API key bound for the keyring renders as
// api_key_keyring = true for Gemini and an OpenAI-compatible server; the
// key itself is never in the file, and the other sources are not written
// beside it (config refuses two sources).
func TestRenderAPIKeyKeyring(t *testing.T) {
	t.Parallel()
	const key = "AIza-secret-Kq93"
	for _, provider := range []string{"", "openai"} {
		s := fastmail()
		s.APIKeyEnv, s.APIKeyCmd = "", ""
		s.APIKey = Secret{Kind: SecretKeyring, Password: key}
		if provider != "" {
			s.LLMProvider, s.LLMPreset, s.LLMBaseURL, s.LLMStructuredOutput = provider, "other", "https://gw.example.com/v1", "json_object"
		}
		data := Render(s)
		if strings.Contains(string(data), key) {
			t.Errorf("provider %q: the key is in the file:\n%s", provider, data)
		}
		cfg, err := config.Parse(data, "/x/config.toml", 0o600)
		if err != nil {
			t.Fatalf("provider %q: does not parse: %v\n%s", provider, err, data)
		}
		if l := cfg.LLM; !l.APIKeyKeyring || l.APIKeyEnv != "" || l.APIKeyCmd != "" || l.KeyringUser() != "llm" {
			t.Errorf("provider %q: llm %+v, want api_key_keyring only, user llm", provider, l)
		}
		if got := fmt.Sprintf("%v %+v %#v", s, s, s); strings.Contains(got, key) {
			t.Errorf("provider %q: the key shows in a formatted Setup: %s", provider, got)
		}
	}
}
