package initcmd

import (
	"strings"
	"testing"

	"github.com/mailagent/mailagent/internal/config"
)

// fastmailSteps answers the mail part of the interview for ada@fastmail.com.
func fastmailSteps() []step {
	return []step{
		{"Email address", "ada@fastmail.com"},
		{"Your name", "Ada Lovelace"},
		{"Use these settings?", "y"},
		{"Account name", ""},
		{"Password source", secretCmd},
		{"Command that prints the password", "pass show mail/fastmail"},
	}
}

// TestInterviewLocalModelPresets: init offers each local server; taking a
// preset's defaults writes a config that parses as provider "openai" with
// the preset's base URL, model and structured-output mode, and no key.
func TestInterviewLocalModelPresets(t *testing.T) {
	noDiscovery(t)
	for _, tt := range []struct{ preset, url, model, mode string }{
		{"ollama", "http://localhost:11434/v1", "qwen2.5:7b", "json_schema"},
		{"llamacpp", "http://localhost:8080/v1", "qwen2.5-7b-instruct", "json_schema"},
		{"vllm", "http://localhost:8000/v1", "Qwen/Qwen2.5-7B-Instruct", "json_schema"},
		{"lmstudio", "http://localhost:1234/v1", "qwen2.5-7b-instruct", "json_schema"},
	} {
		t.Run(tt.preset, func(t *testing.T) {
			p := &scriptedPrompter{steps: append(fastmailSteps(),
				step{"Model provider", tt.preset},
				step{"Server base URL", ""}, step{"Model name", ""}, step{"Structured output", ""}, step{"API key", ""},
				step{"Mode", ""},
			)}
			_, data, err := interview(t.Context(), p, &InitOptions{Net: testNet}, "/x/config.toml")
			if err != nil {
				t.Fatalf("interview: %v\nasked: %q", err, p.asked)
			}
			cfg, err := config.Parse(data, "/x/config.toml", 0o600)
			if err != nil {
				t.Fatalf("rendered config does not parse: %v\n%s", err, data)
			}
			l := cfg.LLM
			if l.Provider != "openai" || l.BaseURL != tt.url || l.Model != tt.model || l.StructuredOutput != tt.mode {
				t.Errorf("llm %+v, want openai %s %s %s", l, tt.url, tt.model, tt.mode)
			}
			if l.APIKeyEnv != "" || l.APIKeyCmd != "" || strings.Contains(string(data), "GEMINI_API_KEY") {
				t.Errorf("a local server got a key source:\n%s", data)
			}
		})
	}
}

// TestInterviewOpenAICompatibleWithKey: another gateway in JSON mode with
// a key read from a variable; a bad URL is asked again.
func TestInterviewOpenAICompatibleWithKey(t *testing.T) {
	noDiscovery(t)
	p := &scriptedPrompter{steps: append(fastmailSteps(),
		step{"Model provider", "other"},
		step{"Server base URL", "localhost:4000"},
		step{"Server base URL", "https://gw.example.com/v1"},
		step{"Model name", "team/mixtral"},
		step{"Structured output", "json_object"},
		step{"API key", "env"}, step{"Environment variable", "GW_KEY"},
		step{"Mode", ""},
	)}
	_, data, err := interview(t.Context(), p, &InitOptions{Net: testNet}, "/x/config.toml")
	if err != nil {
		t.Fatalf("interview: %v", err)
	}
	if len(p.rejected) != 1 {
		t.Errorf("rejected %q, want the URL without a scheme", p.rejected)
	}
	cfg, err := config.Parse(data, "/x/config.toml", 0o600)
	if err != nil {
		t.Fatalf("rendered config does not parse: %v\n%s", err, data)
	}
	if l := cfg.LLM; l.BaseURL != "https://gw.example.com/v1" || l.StructuredOutput != "json_object" || l.APIKeyEnv != "GW_KEY" || l.Model != "team/mixtral" {
		t.Errorf("llm %+v", l)
	}
}
