package initcmd

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zalando/go-keyring"

	"github.com/mailagent/mailagent/internal/cmdutil"
	"github.com/mailagent/mailagent/internal/config"
)

// TestInterviewAPIKeyKeyring: the API-key menus offer the system keyring
// beside env and cmd, for Gemini and for an OpenAI-compatible server.
// Wrong input (no key, a pasted shell line, two keys, the keyring not
// answering) is refused with a reason and the menu comes back; the key is
// never said back, never in the file, and only the last answer counts.
func TestInterviewAPIKeyKeyring(t *testing.T) {
	const key = "AIzaSy-test-Key-0042"
	gemini := func(steps ...step) []step {
		out := append(fastmailSteps(), step{"Model provider", "gemini"})
		out = append(out, steps...)
		return append(out, step{"Gemini model", ""}, step{"Mode", ""})
	}
	openai := func(steps ...step) []step {
		out := append(fastmailSteps(), step{"Model provider", "other"},
			step{"Server base URL", "https://gw.example.com/v1"}, step{"Model name", "team/m"}, step{"Structured output", ""})
		out = append(out, steps...)
		return append(out, step{"Mode", ""})
	}
	for _, tt := range []struct {
		name        string
		unavailable bool
		steps       []step
		wantKeyring bool
		wantEnv     string
		wantSaid    []string
		refused     []string // typed text that must never be said back
	}{
		{name: "gemini: keyring", steps: gemini(step{"Read the Gemini API key from", "keyring"}, step{"API key", key}), wantKeyring: true},
		{name: "gemini: empty key, then the key",
			steps: gemini(step{"Read the Gemini API key from", "keyring"}, step{"API key", "   "},
				step{"Read the Gemini API key from", "keyring"}, step{"API key", key}),
			wantKeyring: true, wantSaid: []string{"No key was typed"}},
		{name: "gemini: a pasted shell line is refused, then env",
			steps: gemini(step{"Read the Gemini API key from", "keyring"}, step{"API key", "export GEMINI_API_KEY=" + key},
				step{"Read the Gemini API key from", ""}, step{"Environment variable", "MY_GEMINI"}),
			wantEnv: "MY_GEMINI", wantSaid: []string{"not an API key"}, refused: []string{"export GEMINI_API_KEY"}},
		{name: "gemini: two keys with a newline and an escape are refused",
			steps: gemini(step{"Read the Gemini API key from", "keyring"}, step{"API key", key + "\n\x1b[2Jsecond-key"},
				step{"Read the Gemini API key from", "keyring"}, step{"API key", key}),
			wantKeyring: true, wantSaid: []string{"not an API key"}, refused: []string{"second-key", "\x1b"}},
		{name: "gemini: keyring unavailable, then cmd", unavailable: true,
			steps: gemini(step{"Read the Gemini API key from", "keyring"},
				step{"Read the Gemini API key from", "cmd"}, step{"Command that prints the API key", "pass show gemini"}),
			wantSaid: []string{"keyring is not available here"}},
		{name: "gemini: keyring, then changed to env on a second thought",
			steps: gemini(step{"Read the Gemini API key from", "keyring"}, step{"API key", "   "},
				step{"Read the Gemini API key from", "env"}, step{"Environment variable", ""}),
			wantEnv: defaultAPIKeyEnv, wantSaid: []string{"No key was typed"}},
		{name: "openai: keyring", steps: openai(step{"API key", "keyring"}, step{"API key (not shown)", key}), wantKeyring: true},
		{name: "openai: keyring unavailable, then none", unavailable: true,
			steps:    openai(step{"API key", "keyring"}, step{"API key", "none"}),
			wantSaid: []string{"keyring is not available here"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			noDiscovery(t)
			keyring.MockInit()
			if tt.unavailable {
				keyring.MockInitWithError(errors.New("no secret service on the session bus"))
			}
			t.Cleanup(keyring.MockInit)
			p := &scriptedPrompter{steps: tt.steps}
			s, data, err := interview(t.Context(), p, &InitOptions{Net: testNet}, "/x/config.toml")
			if err != nil {
				t.Fatalf("interview: %v\nasked: %q", err, p.asked)
			}
			if len(p.steps) != 0 {
				t.Errorf("script not used up: %v", p.steps)
			}
			said := p.said.String()
			for _, w := range tt.wantSaid {
				if !strings.Contains(said, w) {
					t.Errorf("the interview did not say %q:\n%s", w, said)
				}
			}
			for _, secret := range append([]string{key}, tt.refused...) {
				if strings.Contains(said, secret) || strings.Contains(string(data), secret) {
					t.Errorf("%q was said back or written:\nsaid: %s\nfile: %s", secret, said, data)
				}
			}
			cfg, err := config.Parse(data, "/x/config.toml", 0o600)
			if err != nil {
				t.Fatalf("rendered config does not parse: %v\n%s", err, data)
			}
			l := cfg.LLM
			if l.APIKeyKeyring != tt.wantKeyring || l.APIKeyEnv != tt.wantEnv {
				t.Errorf("llm: api_key_keyring %v api_key_env %q; want %v %q\n%s", l.APIKeyKeyring, l.APIKeyEnv, tt.wantKeyring, tt.wantEnv, data)
			}
			if tt.wantKeyring != (s.APIKey.Kind == secretKeyring && s.APIKey.Password == key) {
				t.Errorf("setup key: %v, want the typed key for the keyring: %v", s.APIKey, tt.wantKeyring)
			}
			if _, err := keyring.Get(config.KeyringService, "llm"); !tt.unavailable && !errors.Is(err, keyring.ErrNotFound) {
				t.Errorf("the interview wrote the keyring (err %v): only init does, just before the file", err)
			}
		})
	}
}

// TestInitAPIKeyKeyring: `init` with typed answers (numbers, as a script
// or habit types them) stores the API key in the keyring under "llm",
// writes api_key_keyring, and the config resolves the key from there.
// With no keyring, the menu keeps its numbers (3 is still the keyring,
// refused) and another source is taken; nothing goes to the keyring.
func TestInitAPIKeyKeyring(t *testing.T) {
	noDiscovery(t)
	const key = "AIzaSy-typed-Key-7731"
	script := func(keyAnswers ...string) string {
		lines := []string{"ada@fastmail.com", "Ada Lovelace", "y", "", "1", "pass show mail/ada", ""}
		return answers(append(append(lines, keyAnswers...), "", "")...) // model, mode
	}

	keyring.MockInit()
	path := filepath.Join(t.TempDir(), "config.toml")
	code, stdout, stderr := runInit(t, script("3", key), "--config", path, "--no-doctor")
	if code != cmdutil.ExitOK {
		t.Fatalf("exit code: got %d, want 0; stderr:\n%s", code, stderr)
	}
	if strings.Contains(stdout+stderr, key) {
		t.Errorf("the key was printed:\nstdout: %s\nstderr: %s", stdout, stderr)
	}
	if !strings.Contains(stderr, "  3) the system keyring: type it once now, mailagent stores it there (api_key_keyring)") {
		t.Errorf("the menu does not offer the keyring as 3:\n%s", stderr)
	}
	if strings.Contains(stderr, "export GEMINI_API_KEY") {
		t.Errorf("next steps ask to export a key kept in the keyring:\n%s", stderr)
	}
	if got, err := keyring.Get(config.KeyringService, "llm"); err != nil || got != key {
		t.Errorf("keyring %s/llm: got %q (err %v), want the typed key", config.KeyringService, got, err)
	}
	cfg, raw := loadConfig(t, path)
	if strings.Contains(raw, key) || !cfg.LLM.APIKeyKeyring {
		t.Errorf("want api_key_keyring and no key in the file:\n%s", raw)
	}
	if got, err := cfg.LLM.ResolveAPIKey(context.Background()); err != nil || got.Reveal() != key {
		t.Errorf("the config does not resolve the key from the keyring: err %v", err)
	}

	keyring.MockInitWithError(errors.New("no secret service on the session bus"))
	t.Cleanup(keyring.MockInit)
	path = filepath.Join(t.TempDir(), "config.toml")
	code, _, stderr = runInit(t, script("3", "1", "MY_KEY"), "--config", path, "--no-doctor")
	if code != cmdutil.ExitOK {
		t.Fatalf("unavailable keyring: exit code %d; stderr:\n%s", code, stderr)
	}
	// "3) … not available": in the password menu, and twice in the API
	// key menu (shown again after the refusal).
	if strings.Count(stderr, "  3) the system keyring: not available here") != 3 || !strings.Contains(stderr, "keyring is not available here (no secret service") {
		t.Errorf("stderr does not keep 3 for the keyring and say why it is refused:\n%s", stderr)
	}
	cfg, _ = loadConfig(t, path)
	if cfg.LLM.APIKeyKeyring || cfg.LLM.APIKeyEnv != "MY_KEY" {
		t.Errorf("llm: %+v, want api_key_env MY_KEY", cfg.LLM)
	}
}
