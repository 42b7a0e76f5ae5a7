package config

import (
	"strings"
	"testing"

	"github.com/zalando/go-keyring"
)

const llmAccounts = `
[[accounts]]
name = "personal"
email = "ada@example.com"
  [accounts.imap]
  host = "imap.example.com"
  password_env = "ADA_PASS"
  [accounts.smtp]
  host = "smtp.example.com"
  security = "starttls"
`

func TestOpenAIProviderConfig(t *testing.T) {
	t.Parallel()
	cfg, err := Parse([]byte(`[llm]
provider = "openai"
base_url = "http://localhost:11434/v1"
model = "qwen2.5:7b"
structured_output = "json_object"
`+llmAccounts), "", 0o600)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	l := cfg.LLM
	if l.Provider != ProviderOpenAI || l.Model != "qwen2.5:7b" || l.StructuredOutput != "json_object" {
		t.Errorf("llm %+v", l)
	}
	if l.APIKeyEnv != "" || l.APIKeyCmd != "" {
		t.Errorf("a local server got a key source: env %q cmd %q", l.APIKeyEnv, l.APIKeyCmd)
	}
}

func TestLLMConfigErrors(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ name, llm, key, fix string }{
		{"openai without model", "provider = \"openai\"\nbase_url = \"http://localhost:8080/v1\"\n", "llm.model", "/v1/models"},
		{"unknown provider", "provider = \"anthropic\"\nmodel = \"claude\"\n", "llm.provider", "openai"},
		{"bad mode", "provider = \"openai\"\nmodel = \"m\"\nstructured_output = \"grammar\"\n", "llm.structured_output", "json_object"},
		{"mode on gemini", "structured_output = \"json_object\"\n", "llm.structured_output", "gemini"},
		{"bad base url", "provider = \"openai\"\nmodel = \"m\"\nbase_url = \"localhost:11434\"\n", "llm.base_url", "http://localhost:11434/v1"},
		{"task provider", "[llm.classify]\nprovider = \"nope\"\nmodel = \"m\"\n", "llm.classify.provider", "openai"},
		{"task model missing", "[llm.draft]\nprovider = \"openai\"\nbase_url = \"http://localhost:8000/v1\"\n", "llm.draft.model", "/v1/models"},
		{"task timeout", "[llm.draft]\ntimeout = \"soon\"\n", "llm.draft.timeout", "90s"},
		{"task two keys", "[llm.draft]\napi_key_env = \"A\"\napi_key_cmd = \"b\"\n", "llm.draft", "exactly one"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte("[llm]\n"+tt.llm+llmAccounts), "", 0o600)
			var found bool
			for _, fe := range fieldErrors(t, err) {
				if fe.Key == tt.key && strings.Contains(fe.Fix, tt.fix) {
					found = true
				} else {
					t.Errorf("other problem: %v", fe)
				}
			}
			if !found {
				t.Errorf("no problem at %s with a fix naming %q; got %v", tt.key, tt.fix, err)
			}
		})
	}
}

func TestForTask(t *testing.T) {
	t.Parallel()
	cfg, err := Parse([]byte(`[llm]
api_key_env = "MY_GEMINI"
model = "gemini-2.5-pro"
timeout = "90s"

[llm.classify]
model = "gemini-2.5-flash-lite"

[llm.draft]
provider = "openai"
base_url = "http://localhost:11434/v1"
model = "qwen2.5:32b"
`+llmAccounts), "", 0o600)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	c := cfg.LLM.ForTask(TaskClassify)
	if c.Provider != ProviderGemini || c.Model != "gemini-2.5-flash-lite" || c.APIKeyEnv != "MY_GEMINI" || c.Timeout.D().Seconds() != 90 {
		t.Errorf("classify %+v: want [llm] with the model replaced", c)
	}
	d := cfg.LLM.ForTask(TaskDraft)
	if d.Provider != ProviderOpenAI || d.Model != "qwen2.5:32b" || d.BaseURL != "http://localhost:11434/v1" || d.Timeout.D().Seconds() != 90 {
		t.Errorf("draft %+v", d)
	}
	// Another server never inherits the Gemini key.
	if d.APIKeyEnv != "" || d.APIKeyCmd != "" || !d.APIKey.Empty() {
		t.Errorf("draft inherited a key source: %q %q", d.APIKeyEnv, d.APIKeyCmd)
	}
	if l := cfg.LLM.ForTask("other"); l.Model != "gemini-2.5-pro" {
		t.Errorf("unknown task: %+v", l)
	}
	// An unset task section is [llm] itself (so both tasks share a model).
	cfg2, err := Parse([]byte("[llm]\napi_key_env = \"K\"\n"+llmAccounts), "", 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if cfg2.LLM.ForTask(TaskClassify) != cfg2.LLM.ForTask(TaskDraft) {
		t.Error("unset sections differ")
	}
}

// TestTaskGeminiDefaultKey: a task that moves to gemini from an openai
// [llm] gets GEMINI_API_KEY, not the other server's key.
func TestTaskGeminiDefaultKey(t *testing.T) {
	t.Parallel()
	cfg, err := Parse([]byte(`[llm]
provider = "openai"
model = "local"
base_url = "http://localhost:8080/v1"
api_key_env = "LOCAL_KEY"

[llm.draft]
provider = "gemini"
model = "gemini-2.5-pro"
`+llmAccounts), "", 0o600)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	d := cfg.LLM.ForTask(TaskDraft)
	if d.APIKeyEnv != "GEMINI_API_KEY" || d.BaseURL != "" || d.StructuredOutput != "" {
		t.Errorf("draft %+v", d)
	}
}

// TestAPIKeyKeyring: the key can live in the system keyring, under user
// "llm", or "llm/TASK" for a task section with its own source.
func TestAPIKeyKeyring(t *testing.T) {
	t.Parallel()
	keyring.MockInit()
	if err := keyring.Set(KeyringService, "llm", "main-key"); err != nil {
		t.Fatal(err)
	}
	if err := keyring.Set(KeyringService, "llm/draft", "draft-key"); err != nil {
		t.Fatal(err)
	}
	cfg, err := Parse([]byte(`[llm]
api_key_keyring = true

[llm.draft]
provider = "openai"
model = "big"
base_url = "https://gw.example.com/v1"
api_key_keyring = true
`+llmAccounts), "", 0o600)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if cfg.LLM.APIKeyEnv != "" {
		t.Errorf("keyring source also got GEMINI_API_KEY: %q", cfg.LLM.APIKeyEnv)
	}
	for task, want := range map[string]string{TaskClassify: "main-key", TaskDraft: "draft-key"} {
		s, err := cfg.LLM.ForTask(task).ResolveAPIKey(t.Context())
		if err != nil || s.Reveal() != want {
			t.Errorf("%s: %v", task, err)
		}
	}
	missing := LLM{APIKeyKeyring: true, Classify: LLMTask{APIKeyKeyring: true}}
	if _, err := missing.ForTask(TaskClassify).ResolveAPIKey(t.Context()); err == nil || !strings.Contains(err.Error(), "secret-tool store") {
		t.Errorf("missing entry: %v", err)
	}
	_, err = Parse([]byte("[llm]\napi_key_keyring = true\napi_key_env = \"X\"\n"+llmAccounts), "", 0o600)
	if err == nil || !strings.Contains(err.Error(), "exactly one") {
		t.Errorf("two sources accepted: %v", err)
	}
}
