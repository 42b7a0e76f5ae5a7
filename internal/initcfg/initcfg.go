// Package initcfg turns the answers of `mailagent init` into a config file:
// Render writes a Setup as commented TOML, and Write puts it on disk.
//
// Contract:
//   - Render is pure: it reads only its Setup and returns the same bytes
//     for the same Setup. For a Setup whose fields are valid (the wizard
//     checks each answer), the output is a config that internal/config
//     parses and validates. Every string goes through TOMLString, so hostile
//     text (quotes, newlines, control characters) cannot add keys or tables;
//     text from the network that lands in a comment goes through CommentText.
//   - Keys equal to their defaults are left out, so the file stays short;
//     an SMTP login equal to the IMAP one is left out (the config copies it).
//   - Secrets: Render never writes a secret except the one the user asked
//     to keep in the file (SecretLiteral); a password or API key bound
//     for the keyring is only named (password_keyring, api_key_keyring).
//     A Secret prints redacted.
//   - Write creates the file with mode 0600 (its directory 0700). Without
//     force it never replaces an existing file (fs.ErrExist); with force it
//     replaces the file atomically: temp file, fsync, rename.
//
// It imports nothing from the project (its tests use internal/config to
// check the output): the command (cmd/mailagent) keeps the interview and
// this package keeps the file format.
package initcfg

import (
	"fmt"
	"strings"
	"sync/atomic"
	"unicode"
)

// Setup is everything the wizard learned; Render turns it into TOML.
type Setup struct {
	Email, Name, Account string
	Provider, Source     string // display name and where the settings came from
	Notes                string
	IMAP, SMTP           Server
	// TLSCAFile is the CA that signed the servers' certificates when the
	// system does not trust it (Proton Bridge's cert.pem, a self-hosted
	// server's own CA): IMAP's, and SMTP's unless SMTPCAFile is set.
	TLSCAFile            string
	SMTPCAFile           string // SMTP's own CA, when it differs from TLSCAFile
	Secret               Secret
	APIKeyEnv, APIKeyCmd string
	// APIKey is the model's API key when it goes to the system keyring
	// (Kind SecretKeyring, Password the key typed at init; the command
	// stores it under service "mailagent", user "llm"). Render writes
	// only api_key_keyring = true, never the key. Zero otherwise.
	APIKey      Secret
	Model, Mode string
	AuthservID  string // the server's id in Authentication-Results
	// The model server: LLMProvider "" is Gemini; "openai" is an
	// OpenAI-compatible server at LLMBaseURL (LLMPreset names the kind,
	// e.g. "ollama", for the comment), asked for JSON per
	// LLMStructuredOutput. Its API key source (APIKeyEnv/APIKeyCmd) may be
	// empty: a local server needs none.
	LLMProvider, LLMPreset, LLMBaseURL, LLMStructuredOutput string
}

// Server is one endpoint, IMAP or SMTP.
type Server struct {
	Host     string
	Port     int
	Security string // tls, starttls or insecure (the config's security values)
	Username string
	Auth     string // autoconfig.AuthPassword or AuthOAuth2, advisory
}

// Secret kinds, one per config key.
const (
	SecretCmd     = "cmd"
	SecretEnv     = "env"
	SecretKeyring = "keyring"
	SecretOAuth2  = "oauth2"
	SecretLiteral = "literal"
)

// Secret is where the mail password lives. Value is a command or a
// variable name, never a secret; Password is set only for the keyring
// and literal kinds and is never printed (see String).
type Secret struct {
	Kind     string
	Value    string
	Password string
}

// String describes s without its password, so that %v and %+v of a
// Secret (or of a Setup) never show it.
func (s Secret) String() string {
	pw := ""
	if s.Password != "" {
		pw = " password:[redacted]"
	}
	return fmt.Sprintf("{%s %q%s}", s.Kind, s.Value, pw)
}

// GoString is String, for %#v.
func (s Secret) GoString() string { return "initcfg.Secret" + s.String() }

// SMTPOwnLogin reports whether SMTP needs its own username and secret
// lines: the config copies the IMAP login to SMTP only when the SMTP
// table names neither.
func (s *Setup) SMTPOwnLogin() bool { return s.SMTP.Username != s.IMAP.Username }

// Render writes s as commented TOML that config.Parse accepts. Keys
// equal to their defaults are left out, so the file stays short.
func Render(s *Setup) []byte {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	w("# mailagent configuration, written by `mailagent init`.\n")
	w("# Check it at any time with `mailagent doctor`; the README's Configuration\n")
	w("# section describes every key. Keep this file private (mode 0600).\n\n")

	w("[llm]\n")
	if s.LLMProvider != "" {
		renderOpenAI(w, s)
	} else {
		w("# The API key is not stored here: mailagent reads it from this source.\n")
		switch {
		case s.APIKey.Kind == SecretKeyring:
			w("%s", keyringKeyLine)
		case s.APIKeyCmd != "":
			w("api_key_cmd = %s\n", TOMLString(s.APIKeyCmd))
		default:
			w("api_key_env = %s\n", TOMLString(s.APIKeyEnv))
		}
		w("model = %s\n", TOMLString(s.Model))
	}
	w("# [llm.classify] and [llm.draft] may name another provider or model per\n")
	w("# task (e.g. a small local model to classify); unset keys come from [llm].\n\n")

	w("[policy]\n")
	w("# review: nothing is ever sent without your approval (mailagent review).\n")
	w("# auto: low-risk replies to known contacts are sent when every safety gate passes.\n")
	w("mode = %s\n\n", TOMLString(s.Mode))

	w("[[accounts]]\n")
	w("# The short name used by --account and for keyring entries.\n")
	w("name = %s\n", TOMLString(s.Account))
	w("email = %s\n", TOMLString(s.Email))
	w("display_name = %s\n", TOMLString(s.Name))
	renderAuthserv(w, s)

	src := s.Source
	if s.Provider != "" {
		src = s.Provider + ", from " + s.Source
	}
	w("\n  # Incoming mail (%s).\n", CommentText(src))
	w("  [accounts.imap]\n")
	renderEndpoint(&b, s.IMAP, s.Email, s.TLSCAFile)
	renderSecret(&b, s.Secret)

	w("\n  # Outgoing mail.")
	if !s.SMTPOwnLogin() {
		w(" With no login here, SMTP uses the IMAP login above.")
	}
	w("\n  [accounts.smtp]\n")
	smtp := s.SMTP
	if !s.SMTPOwnLogin() {
		smtp.Username = s.Email // leave it out: the IMAP login is inherited
	}
	smtpCA := s.TLSCAFile
	if s.SMTPCAFile != "" {
		smtpCA = s.SMTPCAFile
	}
	renderEndpoint(&b, smtp, s.Email, smtpCA)
	if s.SMTPOwnLogin() {
		if smtp.Username == s.Email {
			// Explicit, so that a reader sees the two logins differ.
			w("  username = %s\n", TOMLString(smtp.Username))
		}
		renderSecret(&b, s.Secret)
	}
	return []byte(b.String())
}

// renderAuthserv writes the authserv_id line of the account table.
func renderAuthserv(w func(string, ...any), s *Setup) {
	w("# Your server's id in Authentication-Results: only mail it authenticated\n")
	w("# can be answered automatically. `mailagent doctor` checks it.\n")
	if s.AuthservID == "" {
		w("# authserv_id = \"mx.example.com\"\n")
		return
	}
	w("authserv_id = %s\n", TOMLString(s.AuthservID))
}

func renderEndpoint(b *strings.Builder, e Server, email, ca string) {
	fmt.Fprintf(b, "  host = %s\n", TOMLString(e.Host))
	fmt.Fprintf(b, "  port = %d\n", e.Port)
	fmt.Fprintf(b, "  security = %s   # tls (implicit TLS) | starttls\n", TOMLString(e.Security))
	if e.Username != email {
		fmt.Fprintf(b, "  username = %s\n", TOMLString(e.Username))
	}
	if ca != "" {
		fmt.Fprintf(b, "  tls_ca_file = %s\n", TOMLString(ca))
	}
}

func renderSecret(b *strings.Builder, c Secret) {
	switch c.Kind {
	case SecretCmd:
		fmt.Fprintf(b, "  password_cmd = %s   # its output is the password\n", TOMLString(c.Value))
	case SecretEnv:
		fmt.Fprintf(b, "  password_env = %s\n", TOMLString(c.Value))
	case SecretKeyring:
		b.WriteString("  password_keyring = true   # stored in the system keyring by mailagent init\n")
	case SecretOAuth2:
		b.WriteString("  # Prints a fresh OAuth2 access token; see docs/OAUTH2.md.\n")
		fmt.Fprintf(b, "  oauth2_token_cmd = %s\n", TOMLString(c.Value))
	case SecretLiteral:
		b.WriteString("  # Stored in plain text at your request: prefer password_cmd or password_keyring.\n")
		fmt.Fprintf(b, "  password = %s\n", TOMLString(c.Password))
	}
}

// quotingOff makes TOMLString put quotes around s without escaping
// anything and CommentText return s as it is. It exists only for the
// positive control of TestRenderHostileText (package initcfg); nothing in
// the product sets it. Never from a parallel test.
var quotingOff atomic.Bool

// TOMLString quotes s as a TOML basic string. Hand-written because the
// TOML library only encodes whole documents, and JSON quoting differs
// (it leaves U+007F bare, which TOML forbids).
func TOMLString(s string) string {
	if quotingOff.Load() {
		return `"` + s + `"`
	}
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// CommentText makes text read from the network safe inside a # comment.
func CommentText(s string) string {
	if quotingOff.Load() {
		return s
	}
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
}

// keyringKeyLine is the [llm] key of an API key kept in the keyring.
const keyringKeyLine = "api_key_keyring = true   # stored in the system keyring (service \"mailagent\", user \"llm\") by mailagent init\n"

// renderOpenAI writes the [llm] keys of an OpenAI-compatible server.
func renderOpenAI(w func(string, ...any), s *Setup) {
	what := "An OpenAI-compatible server"
	if s.LLMPreset != "" && s.LLMPreset != "other" {
		what += " (" + CommentText(s.LLMPreset) + ")"
	}
	w("# %s. `mailagent doctor` checks it answers and lists the model.\n", what)
	w("provider = %s\n", TOMLString(s.LLMProvider))
	w("base_url = %s\n", TOMLString(s.LLMBaseURL))
	w("# The model name exactly as the server lists it at /v1/models.\n")
	w("model = %s\n", TOMLString(s.Model))
	w("# How JSON is asked for: json_schema (enforced by the server), json_object\n")
	w("# (JSON mode, schema in the prompt) or prompt. Answers are validated alike.\n")
	w("structured_output = %s\n", TOMLString(s.LLMStructuredOutput))
	switch {
	case s.APIKey.Kind == SecretKeyring:
		w("# The API key is not stored here: mailagent reads it from this source.\n")
		w("%s", keyringKeyLine)
	case s.APIKeyCmd != "":
		w("# The API key is not stored here: mailagent reads it from this source.\n")
		w("api_key_cmd = %s\n", TOMLString(s.APIKeyCmd))
	case s.APIKeyEnv != "":
		w("# The API key is not stored here: mailagent reads it from this source.\n")
		w("api_key_env = %s\n", TOMLString(s.APIKeyEnv))
	default:
		w("# No API key: the server needs none.\n")
	}
}
