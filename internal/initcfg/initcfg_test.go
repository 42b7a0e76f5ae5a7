package initcfg

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"

	"github.com/mailagent/mailagent/internal/config"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

// fastmail is a representative setup: a preset, a password command, the
// SMTP login inherited from IMAP, an authserv-id.
func fastmail() *Setup {
	return &Setup{
		Email: "ada@fastmail.com", Name: "Ada Lovelace", Account: "fastmail",
		Provider: "Fastmail", Source: "preset:fastmail",
		IMAP:       Server{Host: "imap.fastmail.com", Port: 993, Security: "tls", Username: "ada@fastmail.com"},
		SMTP:       Server{Host: "smtp.fastmail.com", Port: 465, Security: "tls", Username: "ada@fastmail.com"},
		Secret:     Secret{Kind: SecretCmd, Value: "pass show mail/fastmail"},
		APIKeyEnv:  "GEMINI_API_KEY",
		Model:      "gemini-2.5-flash",
		Mode:       "review",
		AuthservID: "*.messagingengine.com",
	}
}

func parse(t *testing.T, data []byte) *config.Config {
	t.Helper()
	cfg, err := config.Parse(data, "/x/config.toml", 0o600)
	if err != nil {
		t.Fatalf("config.Parse: %v\n%s", err, data)
	}
	if len(cfg.Accounts) != 1 {
		t.Fatalf("got %d accounts, want 1\n%s", len(cfg.Accounts), data)
	}
	return cfg
}

// TestRenderGolden pins the file a representative setup produces, and
// checks that internal/config parses and validates it with the values
// the setup holds.
func TestRenderGolden(t *testing.T) {
	t.Parallel()
	got := Render(fastmail())
	golden := filepath.Join("testdata", "fastmail.golden")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("Render differs from %s (go test -update rewrites it):\n--- got\n%s\n--- want\n%s", golden, got, want)
	}
	if !bytes.Equal(Render(fastmail()), got) {
		t.Error("Render is not deterministic")
	}

	cfg := parse(t, got)
	a := cfg.Accounts[0]
	if a.Name != "fastmail" || a.Email != "ada@fastmail.com" || a.DisplayName != "Ada Lovelace" || a.AuthservID != "*.messagingengine.com" {
		t.Errorf("account: %+v", a)
	}
	if a.IMAP.Host != "imap.fastmail.com" || a.IMAP.Port != 993 || a.IMAP.Security != "tls" || a.IMAP.PasswordCmd != "pass show mail/fastmail" {
		t.Errorf("imap: %+v", a.IMAP)
	}
	if a.SMTP.Host != "smtp.fastmail.com" || a.SMTP.Port != 465 || a.SMTP.Username != "ada@fastmail.com" || a.SMTP.PasswordCmd != "pass show mail/fastmail" {
		t.Errorf("smtp (login inherited from imap): %+v", a.SMTP)
	}
	if cfg.LLM.APIKeyEnv != "GEMINI_API_KEY" || cfg.LLM.Model != "gemini-2.5-flash" || cfg.Policy.Mode != "review" {
		t.Errorf("llm %+v, mode %q", cfg.LLM, cfg.Policy.Mode)
	}
}

// TestRenderVariants covers every secret kind, an SMTP login of its own,
// a CA file, an API key command and no authserv-id: each renders to a
// config that parses and validates, with the chosen source and nothing else.
func TestRenderVariants(t *testing.T) {
	t.Parallel()
	ca := filepath.Join(t.TempDir(), "cert.pem") // config checks that it exists
	if err := os.WriteFile(ca, []byte("-----BEGIN CERTIFICATE-----\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		edit  func(s *Setup)
		check func(t *testing.T, cfg *config.Config, data string)
	}{
		{"password env", func(s *Setup) { s.Secret = Secret{Kind: SecretEnv, Value: "MAIL_PASS"} },
			func(t *testing.T, cfg *config.Config, _ string) {
				if got := cfg.Accounts[0].IMAP.PasswordEnv; got != "MAIL_PASS" {
					t.Errorf("password_env = %q", got)
				}
			}},
		{"keyring", func(s *Setup) { s.Secret = Secret{Kind: SecretKeyring, Password: "kr-secret-991"} },
			func(t *testing.T, cfg *config.Config, data string) {
				if !cfg.Accounts[0].IMAP.PasswordKeyring {
					t.Error("password_keyring not set")
				}
				if strings.Contains(data, "kr-secret-991") {
					t.Error("the keyring password was written to the file")
				}
			}},
		{"oauth2", func(s *Setup) { s.Secret = Secret{Kind: SecretOAuth2, Value: "oama access ada@fastmail.com"} },
			func(t *testing.T, cfg *config.Config, _ string) {
				if got := cfg.Accounts[0].IMAP.OAuth2TokenCmd; got != "oama access ada@fastmail.com" {
					t.Errorf("oauth2_token_cmd = %q", got)
				}
			}},
		{"literal", func(s *Setup) { s.Secret = Secret{Kind: SecretLiteral, Password: `p"a\ss` + "\nword"} },
			func(t *testing.T, cfg *config.Config, _ string) {
				if got := cfg.Accounts[0].IMAP.Password.Reveal(); got != `p"a\ss`+"\nword" {
					t.Errorf("password = %q", got)
				}
			}},
		{"own smtp login", func(s *Setup) {
			s.SMTP.Username = "relay-user"
			s.Secret = Secret{Kind: SecretEnv, Value: "MAIL_PASS"}
		}, func(t *testing.T, cfg *config.Config, _ string) {
			smtp := cfg.Accounts[0].SMTP
			if smtp.Username != "relay-user" || smtp.PasswordEnv != "MAIL_PASS" {
				t.Errorf("smtp: %+v", smtp)
			}
			if cfg.Accounts[0].IMAP.Username != "ada@fastmail.com" {
				t.Errorf("imap username = %q", cfg.Accounts[0].IMAP.Username)
			}
		}},
		{"own imap login, smtp login is the email", func(s *Setup) { s.IMAP.Username = "ada" },
			func(t *testing.T, cfg *config.Config, data string) {
				a := cfg.Accounts[0]
				if a.IMAP.Username != "ada" || a.SMTP.Username != "ada@fastmail.com" {
					t.Errorf("imap %q, smtp %q", a.IMAP.Username, a.SMTP.Username)
				}
				if strings.Count(data, "password_cmd") != 2 {
					t.Errorf("want a password source in both tables:\n%s", data)
				}
			}},
		{"bridge CA and starttls", func(s *Setup) {
			s.IMAP = Server{Host: "127.0.0.1", Port: 1143, Security: "starttls", Username: "ada@proton.me"}
			s.SMTP = Server{Host: "127.0.0.1", Port: 1025, Security: "starttls", Username: "ada@proton.me"}
			s.TLSCAFile = ca
		}, func(t *testing.T, cfg *config.Config, _ string) {
			a := cfg.Accounts[0]
			if a.IMAP.TLSCAFile != ca || a.SMTP.TLSCAFile != ca || a.IMAP.Security != "starttls" {
				t.Errorf("imap %+v smtp %+v", a.IMAP, a.SMTP)
			}
		}},
		{"api key cmd, auto, no authserv", func(s *Setup) {
			s.APIKeyEnv, s.APIKeyCmd = "", "pass show gemini"
			s.Mode = "auto"
			s.AuthservID = ""
		}, func(t *testing.T, cfg *config.Config, data string) {
			if cfg.LLM.APIKeyCmd != "pass show gemini" || cfg.Policy.Mode != "auto" || cfg.Accounts[0].AuthservID != "" {
				t.Errorf("llm %+v mode %q authserv %q", cfg.LLM, cfg.Policy.Mode, cfg.Accounts[0].AuthservID)
			}
			if !strings.Contains(data, `# authserv_id = "mx.example.com"`) {
				t.Errorf("want the commented authserv_id example:\n%s", data)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := fastmail()
			tt.edit(s)
			data := Render(s)
			tt.check(t, parse(t, data), string(data))
		})
	}
}

// renderEvil breaks out of a TOML string and starts a comment, a new
// account and control characters TOML forbids.
const renderEvil = "x\"\n[[accounts]]\nname = \"evil\"\n# \\\"\r\x00\x7f"

// renderAttacks are TestRenderHostileText's hostile strings: one per
// string the wizard takes from the user or the network, with what the
// parsed config must hold (got, want; base is the config of the benign
// setup). The last two carry no control character, so that without the
// quoting they would add a key to a file TOML still reads.
var renderAttacks = []struct {
	name  string
	edit  func(s *Setup)
	check func(cfg, base *config.Config, s *Setup) (got, want string)
}{
	{"display_name", func(s *Setup) { s.Name = "Ada " + renderEvil },
		func(cfg, _ *config.Config, s *Setup) (string, string) { return cfg.Accounts[0].DisplayName, s.Name }},
	{"provider (a comment)", func(s *Setup) { s.Provider = "Evil\n[policy]\nmode = \"auto\"" },
		func(cfg, _ *config.Config, _ *Setup) (string, string) { return cfg.Policy.Mode, "review" }},
	{"source (a comment)", func(s *Setup) { s.Source = "autoconfig\r\n[[accounts]]" },
		func(cfg, base *config.Config, _ *Setup) (string, string) {
			return cfg.Accounts[0].IMAP.Host, base.Accounts[0].IMAP.Host
		}},
	{"password_cmd", func(s *Setup) { s.Secret = Secret{Kind: SecretCmd, Value: "pass " + renderEvil} },
		func(cfg, _ *config.Config, s *Setup) (string, string) {
			return cfg.Accounts[0].IMAP.PasswordCmd, s.Secret.Value
		}},
	{"model", func(s *Setup) { s.Model = "m" + renderEvil },
		func(cfg, _ *config.Config, s *Setup) (string, string) { return cfg.LLM.Model, s.Model }},
	{"api_key_cmd", func(s *Setup) { s.APIKeyEnv, s.APIKeyCmd = "", "gemini-key "+renderEvil },
		func(cfg, _ *config.Config, s *Setup) (string, string) { return cfg.LLM.APIKeyCmd, s.APIKeyCmd }},
	{"display_name adding a key", func(s *Setup) { s.Name = "Ada\"\nmailbox = \"Junk\"\n#" },
		func(cfg, base *config.Config, s *Setup) (string, string) {
			return fmt.Sprintf("%q %q", cfg.Accounts[0].DisplayName, cfg.Accounts[0].Mailbox),
				fmt.Sprintf("%q %q", s.Name, base.Accounts[0].Mailbox)
		}},
	{"model adding a key", func(s *Setup) { s.Model = "m\"\nbase_url = \"https://llm.evil.example/v1\"\n#" },
		func(cfg, base *config.Config, s *Setup) (string, string) {
			return fmt.Sprintf("%q %q", cfg.LLM.Model, cfg.LLM.BaseURL), fmt.Sprintf("%q %q", s.Model, base.LLM.BaseURL)
		}},
}

// renderProblems renders s and says what is wrong with the file for the
// attack at index i: it does not parse, holds other than one account or
// a table Render does not write, or the attack's value does not come back.
// broken reports the file-level problems (the first three).
func renderProblems(s *Setup, i int) (problems []string, broken bool) {
	base, err := config.Parse(Render(fastmail()), "/x/config.toml", 0o600)
	if err != nil {
		return []string{fmt.Sprintf("the benign setup: config.Parse: %v", err)}, true
	}
	data := Render(s)
	cfg, err := config.Parse(data, "/x/config.toml", 0o600)
	if err != nil {
		return []string{fmt.Sprintf("config.Parse: %v", err)}, true
	}
	if len(cfg.Accounts) != 1 {
		return []string{fmt.Sprintf("got %d accounts, want 1", len(cfg.Accounts))}, true
	}
	for _, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "[") && !strings.Contains("[llm] [policy] [[accounts]] [accounts.imap] [accounts.smtp]", strings.TrimSpace(l)) {
			problems, broken = append(problems, fmt.Sprintf("unexpected table line %q", l)), true
		}
	}
	if got, want := renderAttacks[i].check(cfg, base, s); got != want {
		problems = append(problems, fmt.Sprintf("%s: got %q, want %q", renderAttacks[i].name, got, want))
	}
	return problems, broken
}

// TestRenderHostileText puts TOML and comment breakouts in every string
// the wizard takes from the user or the network, all at once and one at
// a time: each must come back as the same value, and none may add a key,
// table or account.
func TestRenderHostileText(t *testing.T) {
	t.Parallel()
	all := fastmail()
	for _, a := range renderAttacks {
		a.edit(all)
	}
	tried, through := 0, 0
	for i, a := range renderAttacks {
		one := fastmail()
		a.edit(one)
		for _, s := range []*Setup{all, one} {
			tried++
			if problems, _ := renderProblems(s, i); len(problems) > 0 {
				through++
				t.Errorf("%s got through: %v\n%s", a.name, problems, Render(s))
			}
		}
	}
	t.Logf("hostile strings: %d tried, %d got through", tried, through)
	if tried != 2*len(renderAttacks) || through != 0 {
		t.Errorf("got %d of %d through, want 0 of %d", through, tried, 2*len(renderAttacks))
	}
}

// TestRenderHostileTextLandsWithoutQuoting is the positive control of
// TestRenderHostileText: with the quoting off (quotingOff: TOMLString
// only adds quotes, CommentText keeps line breaks), each hostile string
// alone is caught by the test's own check (renderProblems). Those with
// control characters, and the second [policy] table, break the file
// (TOML refuses them: no key is added, the config does not load); the
// two without add a key to a file that loads, asserted. Not parallel:
// the switch is global.
func TestRenderHostileTextLandsWithoutQuoting(t *testing.T) {
	quotingOff.Store(true)
	defer quotingOff.Store(false)
	tried, landed, broke := 0, 0, 0
	for i, a := range renderAttacks {
		s := fastmail()
		a.edit(s)
		tried++
		problems, broken := renderProblems(s, i)
		if len(problems) == 0 {
			t.Errorf("%s: comes back whole with the quoting off: the attack does not test the quoting\n%s", a.name, Render(s))
			continue
		}
		landed++
		if broken {
			broke++
		}
		t.Logf("%s: %v", a.name, problems)
	}
	t.Logf("without the quoting: %d of %d landed (%d broke the file, %d added a key to a file that loads)", landed, tried, broke, landed-broke)
	if tried != len(renderAttacks) || landed != tried {
		t.Errorf("positive control: got %d of %d landed, want all %d", landed, tried, len(renderAttacks))
	}
	if landed-broke < 2 {
		t.Errorf("positive control: got %d attacks adding a key to a file that loads, want the 2 without control characters", landed-broke)
	}
}

func TestTOMLString(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, in string }{
		{"plain", "Ada Lovelace"},
		{"quotes and backslashes", `a "b" \c\\`},
		{"control characters", "tab\there\nnew\rline\x00nul\x1fus\x7fdel"},
		{"unicode", "Zoë 李 🙂"},
		{"empty", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var v struct{ K string }
			doc := "K = " + TOMLString(tt.in)
			if _, err := toml.Decode(doc, &v); err != nil {
				t.Fatalf("decode %s: %v", doc, err)
			}
			if v.K != tt.in {
				t.Errorf("round trip: got %q, want %q", v.K, tt.in)
			}
		})
	}
}

func TestCommentText(t *testing.T) {
	t.Parallel()
	got := CommentText("a\nb\r\x00c\u2028d\te")
	if strings.ContainsAny(got, "\n\r\x00\t") {
		t.Errorf("control characters left: %q", got)
	}
	if got != "a b  c\u2028d e" {
		t.Errorf("got %q", got)
	}
}

// TestSecretRedacted checks that printing a Setup never shows a password.
func TestSecretRedacted(t *testing.T) {
	t.Parallel()
	s := fastmail()
	s.Secret = Secret{Kind: SecretLiteral, Password: "hunter2-secret"}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s"} {
		if out := fmt.Sprintf(verb, s); strings.Contains(out, "hunter2-secret") {
			t.Errorf("%s shows the password: %s", verb, out)
		}
		if out := fmt.Sprintf(verb, s.Secret); strings.Contains(out, "hunter2-secret") || !strings.Contains(out, "redacted") {
			t.Errorf("%s of the secret: %s", verb, out)
		}
	}
}
