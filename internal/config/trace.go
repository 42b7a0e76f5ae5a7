package config

import (
	"os"
	"regexp"
	"sort"
	"strings"
	"time"
	"unicode"
)

// Trace configures what a message's trace keeps.
type Trace struct {
	// Snapshots keeps each step's input and output (prompt variables,
	// the model's raw answer, the inputs of each gate), redacted and
	// capped, for `explain --steps` and the TUI detail (default true).
	Snapshots bool `toml:"snapshots"`
	// SnapshotRetention is how long snapshots are kept ("14d"); "0"
	// keeps them as long as the traces.
	SnapshotRetention Days `toml:"snapshot_retention"`
}

// DefaultSnapshotRetention is trace.snapshot_retention's default.
const DefaultSnapshotRetention = 14 * 24 * time.Hour

// SnapshotRetention returns trace.snapshot_retention for
// store.Options.SnapshotRetention: a negative value for "keep them".
func (c *Config) SnapshotRetention() time.Duration {
	if c.Trace.SnapshotRetention.D() == 0 {
		return -1
	}
	return c.Trace.SnapshotRetention.D()
}

func (c *Config) validateTrace(p *problems) {
	p.duration("trace.snapshot_retention", c.Trace.SnapshotRetention.Duration, `"14d"`, true)
}

// Redactor removes secrets from text that is about to be stored (trace
// snapshots): every configured or resolved secret value it was given,
// and anything shaped like a credential (Authorization and Cookie header
// values, key=value pairs named like a key, token or password, bearer
// tokens, well-known API key formats), each replaced by "[redacted]". It
// is safe for concurrent use.
type Redactor struct {
	values []string // longest first, so that a value containing another goes whole
}

// minSecretLen: shorter values are not replaced literally (a 3-character
// password would turn every "the" into "[redacted]"); the patterns still
// apply.
const minSecretLen = 6

// NewRedactor returns a Redactor for these secrets (empty ones ignored).
func NewRedactor(secrets ...Secret) *Redactor {
	r := &Redactor{}
	for _, s := range secrets {
		if v := s.Reveal(); len(v) >= minSecretLen {
			r.values = append(r.values, v)
		}
	}
	sort.Slice(r.values, func(i, j int) bool { return len(r.values[i]) > len(r.values[j]) })
	return r
}

// KnownSecrets returns the secrets a Redactor can know without running a
// command or reading the keyring: those written in the file (api_key,
// passwords) and the values of the environment variables named by
// api_key_env and password_env.
func (c *Config) KnownSecrets() []Secret {
	out := []Secret{c.LLM.APIKey, c.LLM.Classify.APIKey, c.LLM.Draft.APIKey}
	env := []string{c.LLM.APIKeyEnv, c.LLM.Classify.APIKeyEnv, c.LLM.Draft.APIKeyEnv, "GEMINI_API_KEY"}
	for _, a := range c.Accounts {
		out = append(out, a.IMAP.Password, a.SMTP.Password, a.Calendar.Password)
		env = append(env, a.IMAP.PasswordEnv, a.SMTP.PasswordEnv, a.Calendar.PasswordEnv)
	}
	for _, name := range env {
		if name != "" {
			out = append(out, NewSecret(os.Getenv(name)))
		}
	}
	return out
}

var (
	// A header line whose value is a credential, wherever it appears.
	credHeader = regexp.MustCompile(`(?im)^([ \t>]*(?:proxy-)?(?:authorization|cookie|set-cookie|x-api-key|x-goog-api-key|api-key)[ \t]*:)[^\r\n]*`)
	// name=value or "name": "value" where the name says it is secret.
	credPair = regexp.MustCompile(`(?i)((?:api[_-]?key|access[_-]?token|refresh[_-]?token|client[_-]?secret|secret|password|passwd|token)["']?\s*[:=]\s*["']?)[^\s"'&,;]+`)
	// Bearer and Basic credentials in running text.
	credScheme = regexp.MustCompile(`(?i)\b(bearer|basic)\s+[A-Za-z0-9\-._~+/]{8,}=*`)
	// Key formats: Google (AIza…), OpenAI/Anthropic (sk-…), GitHub, Slack, AWS.
	credShape = regexp.MustCompile(`\b(?:AIza[0-9A-Za-z\-_]{20,}|sk-[A-Za-z0-9\-_]{16,}|gh[pousr]_[A-Za-z0-9]{20,}|xox[abposr]-[A-Za-z0-9\-]{10,}|AKIA[0-9A-Z]{16})\b`)
)

// Redact returns s with every secret value and credential-shaped text
// replaced by "[redacted]".
func (r *Redactor) Redact(s string) string {
	if r != nil {
		for _, v := range r.values {
			s = strings.ReplaceAll(s, v, redacted)
		}
	}
	// Each pattern runs only on text that holds one of its words: the
	// patterns are case-insensitive alternations, and running all four
	// over every snapshot of every message cost triage most of its time
	// (BENCHMARKS.md §2). fold lowers the text as (?i) matches it, so the
	// check skips a pattern only where it cannot match; "[redacted]" adds
	// none of the words.
	low := fold(s)
	if strings.Contains(low, "authorization") || strings.Contains(low, "cookie") || strings.Contains(low, "api-key") {
		s = credHeader.ReplaceAllString(s, "${1} "+redacted)
	}
	if strings.Contains(low, "bearer") || strings.Contains(low, "basic") {
		s = credScheme.ReplaceAllString(s, "${1} "+redacted)
	}
	if pairCandidate(low) {
		s = credPair.ReplaceAllString(s, "${1}"+redacted)
	}
	if strings.Contains(s, "AIza") || strings.Contains(s, "sk-") || strings.Contains(s, "xox") || strings.Contains(s, "AKIA") ||
		(strings.Contains(s, "gh") && strings.Contains(s, "_")) {
		s = credShape.ReplaceAllString(s, redacted)
	}
	return s
}

// pairCandidate reports whether low (folded text) may hold a credPair:
// one of its names' last words followed, after an optional quote and
// spaces, by ':' or '='. JSON field names such as "message_key" or
// "tokens_in" alone do not make the pattern run.
func pairCandidate(low string) bool {
	for _, w := range []string{"key", "token", "secret", "password", "passwd"} {
		for rest := low; ; {
			i := strings.Index(rest, w)
			if i < 0 {
				break
			}
			rest = rest[i+len(w):]
			t := strings.TrimLeft(rest, `"'`)
			t = strings.TrimLeftFunc(t, unicode.IsSpace)
			if strings.HasPrefix(t, ":") || strings.HasPrefix(t, "=") {
				return true
			}
		}
	}
	return false
}

// fold lowers s the way a (?i) pattern compares letters: unicode.ToLower,
// plus the one fold ToLower leaves out among the patterns' letters (ſ,
// the long s, matches s). The Kelvin sign already lowers to k.
func fold(s string) string {
	return strings.Map(func(r rune) rune {
		if r == 'ſ' {
			return 's'
		}
		return unicode.ToLower(r)
	}, s)
}
