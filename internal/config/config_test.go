package config

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zalando/go-keyring"
)

const validTOML = `
[llm]
api_key_env = "TEST_GEMINI_KEY"

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

// fieldErrors flattens a joined error into its FieldErrors.
func fieldErrors(t *testing.T, err error) []*FieldError {
	t.Helper()
	var out []*FieldError
	var walk func(error)
	walk = func(e error) {
		if e == nil {
			return
		}
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			for _, x := range j.Unwrap() {
				walk(x)
			}
			return
		}
		var fe *FieldError
		if errors.As(e, &fe) {
			out = append(out, fe)
			return
		}
		t.Errorf("unexpected non-field error: %v", e)
	}
	walk(err)
	return out
}

func TestParseDefaults(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", "/var/state-test")
	cfg, err := Parse([]byte(validTOML), "/etc/mailagent/config.toml", 0o644)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	checks := []struct {
		name string
		got  any
		want any
	}{
		{"state_dir", cfg.StateDir, "/var/state-test/mailagent"},
		{"log_file", cfg.LogFile, "/var/state-test/mailagent/mailagent.log"},
		{"llm.provider", cfg.LLM.Provider, "gemini"},
		{"llm.model", cfg.LLM.Model, "gemini-2.5-flash"},
		{"llm.concurrency", cfg.LLM.Concurrency, 4},
		{"llm.timeout", cfg.LLM.Timeout.D(), 60 * time.Second},
		{"llm.max_body_chars", cfg.LLM.MaxBodyChars, 4000},
		{"sync.claims", cfg.Sync.Claims, ClaimsAuto},
		{"accounts[0].mailbox", cfg.Accounts[0].Mailbox, "INBOX"},
		{"accounts[0].display_name", cfg.Accounts[0].DisplayName, "personal"},
		{"accounts[0].imap.port", cfg.Accounts[0].IMAP.Port, 993},
		{"accounts[0].imap.security", cfg.Accounts[0].IMAP.Security, "tls"},
		{"accounts[0].imap.username", cfg.Accounts[0].IMAP.Username, "ada@example.com"},
		{"accounts[0].smtp.port", cfg.Accounts[0].SMTP.Port, 587},
		{"accounts[0].smtp.password_env (inherited)", cfg.Accounts[0].SMTP.PasswordEnv, "ADA_PASS"},
		{"sync.max_message_bytes", cfg.Sync.MaxMessageBytes, int64(10485760)},
		{"sync.poll_interval", cfg.Sync.PollInterval.D(), time.Minute},
		{"sync.initial_lookback", cfg.Sync.InitialLookback.D(), 24 * time.Hour},
		{"sync.retry_interval", cfg.Sync.RetryInterval.D(), 15 * time.Minute},
		{"policy.mode", cfg.Policy.Mode, "review"},
		{"policy.min_confidence", cfg.Policy.MinConfidence, 0.8},
		{"policy.never_auto", strings.Join(cfg.Policy.NeverAuto, ","), strings.Join(DefaultNeverAuto, ",")},
		{"policy.max_auto_per_contact_per_day", cfg.Policy.MaxAutoPerContactPerDay, 3},
		{"policy.max_auto_per_day", cfg.Policy.MaxAutoPerDay, 20},
		{"policy.drafts_to_imap", cfg.Policy.DraftsToIMAP, true},
		{"policy.ai_footer", cfg.Policy.AIFooter, true},
		{"policy.max_draft_chars", cfg.Policy.MaxDraftChars, 4000},
		{"footer", cfg.Policy.Footer("Ada"), "—\nThis reply was written by an AI assistant on behalf of Ada."},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s: got %v, want %v", c.name, c.got, c.want)
		}
	}
}

func TestParseFullSchema(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(ca, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	// Every key of the documented schema, so that a rename breaks this test.
	src := fmt.Sprintf(`
state_dir = "state"
prompts_dir = "prompts"
owner_profile_file = "profile.md"
log_file = "/tmp/x.log"
[llm]
provider = "gemini"
model = "gemini-2.5-pro"
api_key_cmd = "echo k"
base_url = "http://127.0.0.1:9999/"
concurrency = 2
timeout = "90s"
max_body_chars = 5000
classify_automated = true
[[accounts]]
name = "personal"
email = "ada@example.com"
display_name = "Ada Lovelace"
mailbox = "INBOX"
sent_mailbox = "Sent Items"
drafts_mailbox = "Drafts"
aliases = ["ada@example.org"]
authserv_id = "mx.example.com"
  [accounts.imap]
  host = "127.0.0.1"
  port = 1143
  security = "insecure"
  username = "ada"
  password_cmd = "pass show mail/ada"
  tls_ca_file = %q
  [accounts.smtp]
  host = "smtp.example.com"
  port = 465
  security = "tls"
  username = "ada"
  password_keyring = true
[sync]
max_message_bytes = 2048
poll_interval = "2m"
initial_lookback = "0s"
retry_interval = "1m"
[policy]
mode = "auto"
min_confidence = 0.9
never_auto = ["spam"]
auto_send_new_contacts = true
max_auto_per_contact_per_day = 1
max_auto_per_day = 5
send_delay = "30s"
reply_all = true
drafts_to_imap = false
ai_footer = false
footer_text = "bye {{name}}"
max_draft_chars = 2000
`, ca)
	file := filepath.Join(dir, "config.toml")
	cfg, err := Parse([]byte(src), file, 0o644)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	a := cfg.Accounts[0]
	checks := []struct {
		name string
		got  any
		want any
	}{
		{"state_dir relative to the file", cfg.StateDir, filepath.Join(dir, "state")},
		{"prompts_dir", cfg.PromptsDir, filepath.Join(dir, "prompts")},
		{"owner_profile_file", cfg.OwnerProfileFile, filepath.Join(dir, "profile.md")},
		{"log_file", cfg.LogFile, "/tmp/x.log"},
		{"llm.api_key_env not defaulted", cfg.LLM.APIKeyEnv, ""},
		{"llm.timeout", cfg.LLM.Timeout.D(), 90 * time.Second},
		{"llm.base_url", cfg.LLM.BaseURL, "http://127.0.0.1:9999/"},
		{"llm.classify_automated", cfg.LLM.ClassifyAutomated, true},
		{"aliases", strings.Join(a.OwnerAddresses(), ","), "ada@example.com,ada@example.org"},
		{"authserv_id", a.AuthservID, "mx.example.com"},
		{"imap addr", a.IMAP.Addr(), "127.0.0.1:1143"},
		{"smtp keyring user", a.SMTP.KeyringUser(), "personal/smtp"},
		{"sync.initial_lookback", cfg.Sync.InitialLookback.D(), time.Duration(0)},
		{"policy.send_delay", cfg.Policy.SendDelay.D(), 30 * time.Second},
		{"policy.drafts_to_imap", cfg.Policy.DraftsToIMAP, false},
		{"policy.never_auto", strings.Join(cfg.Policy.NeverAuto, ","), "spam"},
		{"footer off", cfg.Policy.Footer("Ada"), ""},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s: got %v, want %v", c.name, c.got, c.want)
		}
	}
}

func TestValidationMessages(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		edit        func(string) string
		wantKey     string
		wantProblem string
		wantFix     string
	}{
		{
			name: "bad security with port 993",
			edit: func(s string) string {
				return strings.Replace(s, `password_env = "ADA_PASS"`, "password_env = \"ADA_PASS\"\n  security = \"ssl\"\n  port = 993", 1)
			},
			wantKey:     "accounts[0].imap.security",
			wantProblem: `"ssl" is not one of tls, starttls, insecure`,
			wantFix:     `use "tls" for port 993`,
		},
		{
			name: "port out of range",
			edit: func(s string) string {
				return strings.Replace(s, `host = "imap.example.com"`, "host = \"imap.example.com\"\n  port = 99999", 1)
			},
			wantKey:     "accounts[0].imap.port",
			wantProblem: "99999 is not a TCP port",
			wantFix:     "993 (tls) or 143 (starttls)",
		},
		{
			name:        "insecure on a remote host",
			edit:        func(s string) string { return strings.Replace(s, `security = "starttls"`, `security = "insecure"`, 1) },
			wantKey:     "accounts[0].smtp.security",
			wantProblem: `non-loopback host "smtp.example.com"`,
			wantFix:     `use "tls" or "starttls"`,
		},
		{
			name:        "bad duration",
			edit:        func(s string) string { return s + "\n[sync]\npoll_interval = \"90\"\n" },
			wantKey:     "sync.poll_interval",
			wantProblem: `"90" is not a duration`,
			wantFix:     `"90s"`,
		},
		{
			name:        "integer duration",
			edit:        func(s string) string { return s + "\n[policy]\nsend_delay = 5\n" },
			wantKey:     "policy.send_delay",
			wantProblem: `"5" is not a duration`,
			wantFix:     "with a unit",
		},
		{
			name:        "followup default_after too short",
			edit:        func(s string) string { return s + "\n[followup]\ndefault_after = \"5m\"\n" },
			wantKey:     "followup.default_after",
			wantProblem: "shorter than an hour",
			wantFix:     `"3d"`,
		},
		{
			name:        "followup max_nudges out of range",
			edit:        func(s string) string { return s + "\n[followup]\nmax_nudges = 0\n" },
			wantKey:     "followup.max_nudges",
			wantProblem: "outside 1–10",
			wantFix:     "use 2",
		},
		{
			name:        "followup nudge_text only white space",
			edit:        func(s string) string { return s + "\n[followup]\nnudge_text = \"  \\n \"\n" },
			wantKey:     "followup.nudge_text",
			wantProblem: "only white space",
			wantFix:     "write the follow-up text",
		},
		{
			name:        "mailbox archive mode",
			edit:        func(s string) string { return s + "\n[mailbox]\narchive = \"delete\"\n" },
			wantKey:     "mailbox.archive",
			wantProblem: `"delete" is not off, move or keyword`,
			wantFix:     `"move"`,
		},
		{
			name:        "mailbox archive folder with a wildcard",
			edit:        func(s string) string { return s + "\n[mailbox]\narchive_folder = \"Arch*\"\n" },
			wantKey:     "mailbox.archive_folder",
			wantProblem: "wildcard",
			wantFix:     "Archive",
		},
		{
			name:        "unknown intent in never_auto",
			edit:        func(s string) string { return s + "\n[policy]\nnever_auto = [\"spam\", \"complain\"]\n" },
			wantKey:     "policy.never_auto[1]",
			wantProblem: `"complain" is not a known intent`,
			wantFix:     `did you mean "complaint"?`,
		},
		{
			name: "unknown key with suggestion",
			edit: func(s string) string {
				return strings.Replace(s, `host = "imap.example.com"`, "host = \"imap.example.com\"\n  porrt = 993", 1)
			},
			wantKey:     "accounts.imap.porrt",
			wantProblem: "unknown key",
			wantFix:     `did you mean "port"?`,
		},
		{
			name:        "unknown top-level table",
			edit:        func(s string) string { return s + "\n[polcy]\nmode = \"auto\"\n" },
			wantKey:     "polcy",
			wantProblem: "unknown key",
			wantFix:     `did you mean "policy"?`,
		},
		{
			name: "duplicate account name",
			edit: func(s string) string {
				return s + strings.Replace(validTOML[strings.Index(validTOML, "[[accounts]]"):], "ada@", "bob@", 1)
			},
			wantKey:     "accounts[1].name",
			wantProblem: `"personal" is already used by accounts[0]`,
			wantFix:     "unique name",
		},
		{
			name:        "no password source",
			edit:        func(s string) string { return strings.Replace(s, `password_env = "ADA_PASS"`, "", 1) },
			wantKey:     "accounts[0].imap",
			wantProblem: "no password source is set",
			wantFix:     "password_cmd",
		},
		{
			name: "two password sources",
			edit: func(s string) string {
				return strings.Replace(s, `password_env = "ADA_PASS"`, "password_env = \"ADA_PASS\"\n  password_cmd = \"pass x\"", 1)
			},
			wantKey:     "accounts[0].imap",
			wantProblem: "password_cmd, password_env",
			wantFix:     "keep exactly one",
		},
		{
			name:        "bad mode",
			edit:        func(s string) string { return s + "\n[policy]\nmode = \"yolo\"\n" },
			wantKey:     "policy.mode",
			wantProblem: `"yolo" is not one of review, auto`,
			wantFix:     `"review"`,
		},
		{
			name:        "confidence out of range",
			edit:        func(s string) string { return s + "\n[policy]\nmin_confidence = 80\n" },
			wantKey:     "policy.min_confidence",
			wantProblem: "outside 0..1",
			wantFix:     "between 0 and 1",
		},
		{
			name: "bad email",
			edit: func(s string) string {
				return strings.Replace(s, `email = "ada@example.com"`, `email = "Ada <ada@example.com>"`, 1)
			},
			wantKey:     "accounts[0].email",
			wantProblem: "is not an email address",
			wantFix:     "bare address",
		},
		{
			name: "authserv_id pasted with its results",
			edit: func(s string) string {
				return strings.Replace(s, `email = "ada@example.com"`, "email = \"ada@example.com\"\nauthserv_id = \"mx.google.com; dkim=pass\"", 1)
			},
			wantKey:     "accounts[0].authserv_id",
			wantProblem: `"mx.google.com;" is not a host name`,
			wantFix:     "mailagent doctor",
		},
		{
			name:        "retention not a duration",
			edit:        func(s string) string { return s + "\n[store]\nretention = \"3 months\"\n" },
			wantKey:     "store.retention",
			wantProblem: `"3 months" is not a duration`,
			wantFix:     "unit",
		},
		{
			name:        "retention too short",
			edit:        func(s string) string { return s + "\n[store]\nretention = \"2d\"\n" },
			wantKey:     "store.retention",
			wantProblem: "shorter than 7 days",
			wantFix:     `"90d"`,
		},
		{
			name:        "retention negative",
			edit:        func(s string) string { return s + "\n[store]\nretention = \"-5h\"\n" },
			wantKey:     "store.retention",
			wantProblem: "negative",
			wantFix:     "positive",
		},
		{
			name: "drafts_mailbox is the watched INBOX",
			edit: func(s string) string {
				return strings.Replace(s, `email = "ada@example.com"`, "email = \"ada@example.com\"\ndrafts_mailbox = \"inbox\"", 1)
			},
			wantKey:     "accounts[0].drafts_mailbox",
			wantProblem: `"inbox" is this account's mailbox`,
			wantFix:     "mailagent doctor --fix",
		},
		{
			name: "sent_mailbox is the watched INBOX",
			edit: func(s string) string {
				return strings.Replace(s, `email = "ada@example.com"`, "email = \"ada@example.com\"\nsent_mailbox = \"INBOX\"", 1)
			},
			wantKey:     "accounts[0].sent_mailbox",
			wantProblem: `"INBOX" is this account's mailbox`,
			wantFix:     "mailagent doctor --fix",
		},
		{
			name: "sent_mailbox is the configured mailbox",
			edit: func(s string) string {
				return strings.Replace(s, `email = "ada@example.com"`, "email = \"ada@example.com\"\nmailbox = \"INBOX.Work\"\nsent_mailbox = \"INBOX.Work\"", 1)
			},
			wantKey:     "accounts[0].sent_mailbox",
			wantProblem: `"INBOX.Work" is this account's mailbox`,
			wantFix:     "leave sent_mailbox out",
		},
		{
			name: "drafts_mailbox is another account's mailbox on the same login",
			edit: func(s string) string {
				return strings.Replace(s, `email = "ada@example.com"`, "email = \"ada@example.com\"\ndrafts_mailbox = \"Lists\"", 1) + `
[[accounts]]
name = "lists"
email = "ada@example.com"
mailbox = "Lists"
  [accounts.imap]
  host = "imap.example.com"
  password_env = "ADA_PASS"
  [accounts.smtp]
  host = "smtp.example.com"
  security = "starttls"
`
			},
			wantKey:     "accounts[0].drafts_mailbox",
			wantProblem: `the mailbox account "lists" watches`,
			wantFix:     "mailagent doctor --fix",
		},
		{
			name:        "bad base url",
			edit:        func(s string) string { return strings.Replace(s, "[llm]", "[llm]\nbase_url = \"localhost:8080\"", 1) },
			wantKey:     "llm.base_url",
			wantProblem: "is not an http(s) URL",
			wantFix:     "full URL",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := tt.edit(validTOML)
			_, err := Parse([]byte(src), "/x/config.toml", 0o600)
			fes := fieldErrors(t, err)
			var found *FieldError
			for _, fe := range fes {
				if fe.Key == tt.wantKey {
					found = fe
				}
			}
			if found == nil {
				t.Fatalf("no error for key %s; got %v", tt.wantKey, err)
			}
			if !strings.Contains(found.Problem, tt.wantProblem) {
				t.Errorf("problem: got %q, want it to contain %q", found.Problem, tt.wantProblem)
			}
			if !strings.Contains(found.Fix, tt.wantFix) {
				t.Errorf("fix: got %q, want it to contain %q", found.Fix, tt.wantFix)
			}
			msg := found.Error()
			if !strings.HasPrefix(msg, "config /x/config.toml: "+tt.wantKey+": ") {
				t.Errorf("message: got %q, want prefix %q", msg, "config /x/config.toml: "+tt.wantKey+": ")
			}
		})
	}
}

// TestMailboxNotIncoming: Drafts and Sent elsewhere than the watched
// mailbox load; only a name that is the incoming mailbox is refused.
func TestMailboxNotIncoming(t *testing.T) {
	t.Parallel()
	for _, extra := range []string{"drafts_mailbox = \"INBOX.Drafts\"\nsent_mailbox = \"INBOX.Sent\"", "sent_mailbox = \"Inbox2\""} {
		src := strings.Replace(validTOML, `email = "ada@example.com"`, "email = \"ada@example.com\"\n"+extra, 1)
		if _, err := Parse([]byte(src), "/x/config.toml", 0o600); err != nil {
			t.Errorf("%s: got %v, want it to load", extra, err)
		}
	}
	for _, tt := range []struct {
		a, b string
		want bool
	}{{"INBOX", "inbox", true}, {"Inbox", "INBOX", true}, {"Sent", "sent", false}, {"INBOX.Sent", "INBOX.Sent", true}, {"INBOX", "INBOX.Sent", false}} {
		if got := SameMailbox(tt.a, tt.b); got != tt.want {
			t.Errorf("SameMailbox(%q, %q): got %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestValidAuthservID(t *testing.T) {
	t.Parallel()
	for id, want := range map[string]bool{
		"mx.google.com": true, "*.messagingengine.com": true, "protection.outlook.com": true, "mail_1.example": true,
		"": false, "*.": false, "mx.google.com;": false, "a..b": false, ".x": false, "dkim=pass": false, "*.*.x": false,
	} {
		if got := validAuthservID(id); got != want {
			t.Errorf("validAuthservID(%q): got %v, want %v", id, got, want)
		}
	}
}

func TestValidationMessageFormat(t *testing.T) {
	t.Parallel()
	src := strings.Replace(validTOML, `password_env = "ADA_PASS"`, "password_env = \"ADA_PASS\"\n  security = \"ssl\"\n  port = 993", 1)
	_, err := Parse([]byte(src), "/x/config.toml", 0o600)
	want := `config /x/config.toml: accounts[0].imap.security: "ssl" is not one of tls, starttls, insecure (fix: use "tls" for port 993)`
	if err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
}

func TestValidationCollectsAll(t *testing.T) {
	t.Parallel()
	src := validTOML + `
[sync]
poll_interval = "soon"
[policy]
mode = "sometimes"
max_draft_chars = 5
`
	src = strings.Replace(src, `host = "smtp.example.com"`, `host = ""`, 1)
	_, err := Parse([]byte(src), "/x/config.toml", 0o600)
	got := map[string]bool{}
	for _, fe := range fieldErrors(t, err) {
		got[fe.Key] = true
	}
	for _, k := range []string{"sync.poll_interval", "policy.mode", "policy.max_draft_chars", "accounts[0].smtp.host"} {
		if !got[k] {
			t.Errorf("missing error for %s; got %v", k, err)
		}
	}
	if len(got) != 4 {
		t.Errorf("got %d distinct keys in error, want 4: %v", len(got), err)
	}
}

func TestInsecureAllowedOnLoopback(t *testing.T) {
	t.Parallel()
	for _, host := range []string{"127.0.0.1", "localhost", "::1", "[::1]"} {
		t.Run(host, func(t *testing.T) {
			src := strings.Replace(validTOML, `host = "imap.example.com"`, fmt.Sprintf("host = %q\n  security = \"insecure\"", host), 1)
			cfg, err := Parse([]byte(src), "", 0o600)
			if err != nil {
				t.Fatalf("got %v, want no error", err)
			}
			if cfg.Accounts[0].IMAP.Port != 143 {
				t.Errorf("port: got %d, want 143", cfg.Accounts[0].IMAP.Port)
			}
		})
	}
}

// TestClaimsSetting: sync.claims takes "auto", "on", "off" (any case) and
// the first release's booleans; anything else is an error naming the key.
func TestClaimsSetting(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		value string
		want  ClaimsMode
		ok    bool
	}{
		{`"auto"`, ClaimsAuto, true}, {`"on"`, ClaimsOn, true}, {`"OFF"`, ClaimsOff, true},
		{"true", ClaimsOn, true}, {"false", ClaimsOff, true},
		{`"sometimes"`, "", false}, {"1", "", false}, {`""`, "", false},
	} {
		src := "[sync]\nclaims = " + tc.value + "\n\n" + validTOML
		cfg, err := Parse([]byte(src), "/x/config.toml", 0o600)
		switch {
		case tc.ok && (err != nil || cfg.Sync.Claims != tc.want):
			t.Errorf("claims = %s: got %v, %v; want %q", tc.value, cfg.Sync.Claims, err, tc.want)
		case !tc.ok && (err == nil || !strings.Contains(err.Error(), "claims")):
			t.Errorf("claims = %s: got %v; want an error naming claims", tc.value, err)
		}
	}
}

func TestTOMLSyntaxError(t *testing.T) {
	t.Parallel()
	_, err := Parse([]byte("[llm\nmodel="), "/x/config.toml", 0o600)
	if err == nil || !strings.HasPrefix(err.Error(), "config /x/config.toml: ") {
		t.Errorf("got %v, want an error naming the file", err)
	}
}

func TestLiteralSecretFileMode(t *testing.T) {
	t.Parallel()
	src := strings.Replace(validTOML, `password_env = "ADA_PASS"`, `password = "hunter2"`, 1)
	tests := []struct {
		name    string
		mode    os.FileMode
		wantErr bool
	}{
		{"0600 accepted", 0o600, false},
		{"0400 accepted", 0o400, false},
		{"0640 refused", 0o640, true},
		{"0644 refused", 0o644, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			file := filepath.Join(dir, "config.toml")
			if err := os.WriteFile(file, []byte(src), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(file, tt.mode); err != nil {
				t.Fatal(err)
			}
			cfg, used, err := Load(file)
			if used != file {
				t.Errorf("file: got %q, want %q", used, file)
			}
			if (err != nil) != tt.wantErr {
				t.Fatalf("got err %v, wantErr %v", err, tt.wantErr)
			}
			if err != nil {
				if !strings.Contains(err.Error(), "chmod 600 "+file) {
					t.Errorf("got %q, want the chmod fix", err)
				}
				if strings.Contains(err.Error(), "hunter2") {
					t.Errorf("error leaks the password: %q", err)
				}
				return
			}
			pw, err := cfg.Accounts[0].IMAP.ResolvePassword(context.Background())
			if err != nil || pw.Reveal() != "hunter2" {
				t.Errorf("got %q, %v; want hunter2", pw.Reveal(), err)
			}
			if s := fmt.Sprintf("%+v", cfg); strings.Contains(s, "hunter2") {
				t.Errorf("printing the config leaks the password: %s", s)
			}
		})
	}
}

func TestFind(t *testing.T) {
	dir := t.TempDir()
	xdgFile := filepath.Join(dir, "xdg", "mailagent", "config.toml")
	if err := os.MkdirAll(filepath.Dir(xdgFile), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(xdgFile, []byte(validTOML), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		explicit string
		env      string
		xdg      string
		want     string
		wantErr  error
	}{
		{"explicit wins", "/a/explicit.toml", "/b/env.toml", filepath.Join(dir, "xdg"), "/a/explicit.toml", nil},
		{"env next", "", "/b/env.toml", filepath.Join(dir, "xdg"), "/b/env.toml", nil},
		{"xdg last", "", "", filepath.Join(dir, "xdg"), xdgFile, nil},
		{"home fallback", "", "", "", filepath.Join(dir, "home", ".config", "mailagent", "config.toml"), ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(EnvConfig, tt.env)
			t.Setenv("XDG_CONFIG_HOME", tt.xdg)
			t.Setenv("HOME", filepath.Join(dir, "home"))
			got, err := Find(tt.explicit)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) || !strings.Contains(err.Error(), tt.want) {
					t.Errorf("got %v, want %v naming %s", err, tt.wantErr, tt.want)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestLoadMissingExplicit(t *testing.T) {
	t.Parallel()
	_, used, err := Load("/nonexistent/mailagent.toml")
	if used != "/nonexistent/mailagent.toml" || err == nil || !strings.Contains(err.Error(), "/nonexistent/mailagent.toml") {
		t.Errorf("got %q, %v; want an error naming the file", used, err)
	}
}

func TestOverrideStateDir(t *testing.T) {
	t.Parallel()
	cfg, err := Parse([]byte(validTOML), "", 0o600)
	if err != nil {
		t.Fatal(err)
	}
	cfg.OverrideStateDir("/srv/ma")
	if cfg.StateDir != "/srv/ma" || cfg.LogFile != "/srv/ma/mailagent.log" {
		t.Errorf("got %q, %q; want /srv/ma and its log", cfg.StateDir, cfg.LogFile)
	}
}

func TestSecretRedaction(t *testing.T) {
	t.Parallel()
	s := NewSecret("hunter2")
	holder := struct {
		Name string
		Pass Secret
		Ptr  *Secret
	}{"x", s, &s}
	var logBuf bytes.Buffer
	slog.New(slog.NewJSONHandler(&logBuf, nil)).Info("m", "pw", s, "holder", holder)
	j, err := json.Marshal(holder)
	if err != nil {
		t.Fatal(err)
	}
	txt, _ := s.MarshalText()
	outputs := map[string]string{
		"%v":   fmt.Sprintf("%v", s),
		"%s":   fmt.Sprintf("%s", s),
		"%d":   fmt.Sprintf("%d", s),
		"%x":   fmt.Sprintf("%x", s),
		"%q":   fmt.Sprintf("%q", s),
		"%+v":  fmt.Sprintf("%+v", holder),
		"%#v":  fmt.Sprintf("%#v", holder),
		"json": string(j),
		"text": string(txt),
		"slog": logBuf.String(),
		"err":  fmt.Errorf("wrapped %v", s).Error(),
	}
	for name, out := range outputs {
		if strings.Contains(out, "hunter2") {
			t.Errorf("%s: got %q, which leaks the secret", name, out)
		}
		if !strings.Contains(out, "[redacted]") {
			t.Errorf("%s: got %q, want [redacted]", name, out)
		}
	}
	if s.Reveal() != "hunter2" {
		t.Errorf("Reveal: got %q, want hunter2", s.Reveal())
	}
}

func endpoint(mod func(*Endpoint)) Endpoint {
	e := Endpoint{account: "personal", kind: "imap", CmdTimeout: Dur(5 * time.Second)}
	mod(&e)
	return e
}

func TestResolvePassword(t *testing.T) {
	keyring.MockInit()
	if err := keyring.Set(KeyringService, "personal/imap", "from-keyring"); err != nil {
		t.Fatal(err)
	}
	t.Setenv("MA_TEST_PW", "from-env")
	t.Setenv("MA_TEST_EMPTY", "")
	tests := []struct {
		name     string
		e        Endpoint
		want     string
		wantErr  []string // substrings of the error
		wantNot  []string // must not appear in the error
		sentinel error
	}{
		{name: "cmd success trims one newline", e: endpoint(func(e *Endpoint) { e.PasswordCmd = `printf 's3cret \n\n'` }), want: "s3cret \n"},
		{name: "cmd crlf", e: endpoint(func(e *Endpoint) { e.PasswordCmd = `printf 'abc\r\n'` }), want: "abc"},
		{name: "cmd failure keeps stderr, drops stdout", e: endpoint(func(e *Endpoint) {
			e.PasswordCmd = `echo leaked-stdout; echo "gpg: decryption failed" >&2; exit 3`
		}), wantErr: []string{"password_cmd", "exit status 3", "gpg: decryption failed"}, wantNot: []string{"leaked-stdout"}},
		{name: "cmd prints nothing", e: endpoint(func(e *Endpoint) { e.PasswordCmd = `true` }), wantErr: []string{"printed nothing"}, sentinel: ErrNoSecret},
		{name: "cmd timeout", e: endpoint(func(e *Endpoint) {
			e.PasswordCmd = `echo partial; sleep 30 | cat`
			e.CmdTimeout = Dur(200 * time.Millisecond)
		}), wantErr: []string{"timed out after 200ms"}, wantNot: []string{"partial"}, sentinel: context.DeadlineExceeded},
		{name: "env", e: endpoint(func(e *Endpoint) { e.PasswordEnv = "MA_TEST_PW" }), want: "from-env"},
		{name: "env empty names the variable", e: endpoint(func(e *Endpoint) { e.PasswordEnv = "MA_TEST_EMPTY" }), wantErr: []string{"MA_TEST_EMPTY"}, sentinel: ErrNoSecret},
		{name: "env unset names the variable", e: endpoint(func(e *Endpoint) { e.PasswordEnv = "MA_TEST_UNSET_XYZ" }), wantErr: []string{"MA_TEST_UNSET_XYZ"}, sentinel: ErrNoSecret},
		{name: "keyring", e: endpoint(func(e *Endpoint) { e.PasswordKeyring = true }), want: "from-keyring"},
		{name: "keyring missing entry", e: endpoint(func(e *Endpoint) { e.PasswordKeyring = true; e.kind = "smtp" }), wantErr: []string{`"personal/smtp"`, "secret-tool store"}, sentinel: ErrNoSecret},
		{name: "literal", e: endpoint(func(e *Endpoint) { e.Password = NewSecret("lit") }), want: "lit"},
		{name: "oauth2 endpoint has no password", e: endpoint(func(e *Endpoint) { e.OAuth2TokenCmd = "echo tok" }), wantErr: []string{"oauth2_token_cmd"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.e.ResolvePassword(context.Background())
			if len(tt.wantErr) == 0 {
				if err != nil || got.Reveal() != tt.want {
					t.Fatalf("got %q, %v; want %q", got.Reveal(), err, tt.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("got %q, want an error", got.Reveal())
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("got %q, want it to contain %q", err, w)
				}
			}
			for _, w := range tt.wantNot {
				if strings.Contains(err.Error(), w) {
					t.Errorf("got %q, which must not contain %q", err, w)
				}
			}
			if tt.sentinel != nil && !errors.Is(err, tt.sentinel) {
				t.Errorf("got %v, want errors.Is %v", err, tt.sentinel)
			}
		})
	}
}

func TestResolveOAuth2AndAPIKey(t *testing.T) {
	e := endpoint(func(e *Endpoint) { e.OAuth2TokenCmd = "echo ya29.token" })
	tok, err := e.ResolveOAuth2Token(context.Background())
	if err != nil || tok.Reveal() != "ya29.token" {
		t.Errorf("oauth2: got %q, %v; want ya29.token", tok.Reveal(), err)
	}
	t.Setenv("TEST_GEMINI_KEY", "AIza-test")
	cfg, err := Parse([]byte(validTOML), "", 0o600)
	if err != nil {
		t.Fatal(err)
	}
	k, err := cfg.LLM.ResolveAPIKey(context.Background())
	if err != nil || k.Reveal() != "AIza-test" {
		t.Errorf("api key env: got %q, %v; want AIza-test", k.Reveal(), err)
	}
	cfg.LLM.APIKeyEnv, cfg.LLM.APIKeyCmd = "", "echo from-cmd"
	k, err = cfg.LLM.ResolveAPIKey(context.Background())
	if err != nil || k.Reveal() != "from-cmd" {
		t.Errorf("api key cmd: got %q, %v; want from-cmd", k.Reveal(), err)
	}
}

func TestResolveCancelled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	e := endpoint(func(e *Endpoint) { e.PasswordCmd = "echo x" })
	if _, err := e.ResolvePassword(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("got %v, want context.Canceled", err)
	}
}

func TestStoreRetention(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, toml string
		want       time.Duration
	}{
		{"default", "", 90 * 24 * time.Hour},
		{"days", "\n[store]\nretention = \"30d\"\n", 30 * 24 * time.Hour},
		{"go duration", "\n[store]\nretention = \"240h\"\n", 10 * 24 * time.Hour},
		{"forever", "\n[store]\nretention = \"0\"\n", -1},
		{"forever in days", "\n[store]\nretention = \"0d\"\n", -1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Parse([]byte(validTOML+tt.toml), "/x/config.toml", 0o600)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if got := cfg.StoreRetention(); got != tt.want {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}
