package config

import (
	"os"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
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
	credHeader = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?im)^([ \t>]*(?:proxy-)?(?:authorization|cookie|set-cookie|x-api-key|x-goog-api-key|api-key)[ \t]*:)[^\r\n]*`)
	})
	// name=value or "name": "value" where the name says it is secret.
	credPair = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)((?:api[_-]?key|access[_-]?token|refresh[_-]?token|client[_-]?secret|secret|password|passwd|token)["']?\s*[:=]\s*["']?)[^\s"'&,;]+`)
	})
	// Bearer and Basic credentials in running text.
	credScheme = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)\b(bearer|basic)\s+[A-Za-z0-9\-._~+/]{8,}=*`) })
	// Key formats: Google (AIza…), OpenAI/Anthropic (sk-…), GitHub, Slack, AWS.
	credShape = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`\b(?:AIza[0-9A-Za-z\-_]{20,}|sk-[A-Za-z0-9\-_]{16,}|gh[pousr]_[A-Za-z0-9]{20,}|xox[abposr]-[A-Za-z0-9\-]{10,}|AKIA[0-9A-Z]{16})\b`)
	})
)

// redactionOff makes every Redactor return its text as it is. It exists
// only for the positive control of the adversarial tests of what
// snapshots keep (SwitchOffRedactionForTest); nothing in the product sets
// it.
var redactionOff atomic.Bool

// SwitchOffRedactionForTest turns redaction off until the returned
// function is called. Only adversarial tests' positive controls call it,
// never from a parallel test.
func SwitchOffRedactionForTest() (restore func()) {
	redactionOff.Store(true)
	return func() { redactionOff.Store(false) }
}

// Redact returns s with every secret value and credential-shaped text
// replaced by "[redacted]".
func (r *Redactor) Redact(s string) string {
	if redactionOff.Load() {
		return s
	}
	if r != nil {
		for _, v := range r.values {
			s = strings.ReplaceAll(s, v, redacted)
		}
	}
	// Each pattern runs only on text that holds one of its words: the
	// patterns are case-insensitive alternations, and running all four
	// over every snapshot of every message cost triage most of its time
	// (BENCHMARKS.md §2). needs finds the words as (?i) matches them, so
	// a pattern is skipped only where it cannot match; "[redacted]" adds
	// none of the words.
	hdr, scheme, pair, shape := needs(s)
	if hdr {
		s = credHeader().ReplaceAllString(s, "${1} "+redacted)
	}
	if scheme {
		s = credScheme().ReplaceAllString(s, "${1} "+redacted)
	}
	if pair {
		s = credPair().ReplaceAllString(s, "${1}"+redacted)
	}
	if shape {
		s = redactShapes(s)
	}
	return s
}

// shapePrefixes are the literal starts of credShape's alternatives.
var shapePrefixes = []string{"AIza", "sk-", "xox", "AKIA", "ghp_", "gho_", "ghu_", "ghs_", "ghr_"}

// isShapeByte reports whether c can be part of a credShape match: every
// alternative is made of these bytes only.
func isShapeByte(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c == '-' || c == '_'
}

// redactShapes applies credShape to the runs of s that can hold a match.
// A match is made of shape bytes only and starts with one of the
// prefixes, so it lies inside one maximal run of shape bytes holding a
// prefix; the bytes around a run are not word characters, so \b reads
// the same in the run alone as in s. Running the pattern over every text
// instead cost triage a quarter of a second per 6,000 messages: its
// prefixes ("sk-" in "risk-free") occur in ordinary mail, and a leading
// alternation gives the regexp engine no literal to skip ahead by.
func redactShapes(s string) string {
	var b strings.Builder
	done := 0 // s[:done] is written to b (or unchanged when b is empty)
	for pos := 0; pos < len(s); {
		i := -1
		for _, p := range shapePrefixes {
			if j := strings.Index(s[pos:], p); j >= 0 && (i < 0 || j < i) {
				i = j
			}
		}
		if i < 0 {
			break
		}
		start, end := pos+i, pos+i
		for start > 0 && isShapeByte(s[start-1]) {
			start--
		}
		for end < len(s) && isShapeByte(s[end]) {
			end++
		}
		if run := s[start:end]; credShape().MatchString(run) {
			b.WriteString(s[done:start])
			b.WriteString(credShape().ReplaceAllString(run, redacted))
			done = end
		}
		pos = max(end, pos+i+1)
	}
	if done == 0 {
		return s
	}
	b.WriteString(s[done:])
	return b.String()
}

// needs reports which patterns s may match: credHeader (one of its
// header names), credScheme (bearer or basic), credPair (pairCandidate)
// and credShape (one of its prefixes). One pass over s, comparing ASCII
// letters without case, where lowering a copy and searching it once per
// word took ten passes. (?i) folds only two non-ASCII letters onto the
// patterns' ASCII ones (ſ onto s, the Kelvin sign onto k); text holding
// either is folded and searched word by word instead (and credShape is
// tried).
func needs(s string) (hdr, scheme, pair, shape bool) {
	if strings.Contains(s, "\u017f") || strings.Contains(s, "\u212a") {
		low := fold(s)
		hdr = strings.Contains(low, "authorization") || strings.Contains(low, "cookie") || strings.Contains(low, "api-key")
		scheme = strings.Contains(low, "bearer") || strings.Contains(low, "basic")
		return hdr, scheme, pairCandidate(low), true
	}
	// Two bytes at a time through a table of the words' first two
	// letters in either case: few positions start a word, so the loop
	// rarely branches, and hasFold checks the whole word where one may.
	tab := pairTable()
	for i := 0; i+1 < len(s) && !(hdr && scheme && pair && shape); i++ {
		k := tab[uint16(s[i])<<8|uint16(s[i+1])]
		if k == 0 {
			continue
		}
		switch t := s[i:]; k {
		case 'a':
			hdr = hdr || hasFold(t, "authorization") || hasFold(t, "api-key")
		case 'c':
			hdr = hdr || hasFold(t, "cookie")
		case 'b':
			scheme = scheme || hasFold(t, "bearer") || hasFold(t, "basic")
		case 'k': // only as api[_-]?key: "message_key" makes no pair
			pair = pair || hasFold(t, "key") && apiBefore(s[:i]) && pairTail(t[3:])
		case 't':
			pair = pair || hasFold(t, "token") && pairTail(t[5:])
		case 's':
			pair = pair || hasFold(t, "secret") && pairTail(t[6:])
		case 'p':
			pair = pair || hasFold(t, "password") && pairTail(t[8:]) || hasFold(t, "passwd") && pairTail(t[6:])
		case shapeClass:
			shape = shape || shapeAt(t)
		}
	}
	return hdr, scheme, pair, shape
}

// shapeClass marks, in pairTable, the two bytes credShape's prefixes
// start with (case matters there).
const shapeClass = 1

// shapeAt reports whether t starts with one of credShape's prefixes.
func shapeAt(t string) bool {
	for _, p := range shapePrefixes {
		if strings.HasPrefix(t, p) {
			return true
		}
	}
	return false
}

// pairTable maps two bytes to the first letter of the words needs looks
// for that start with them (in any case), or to shapeClass for the start
// of a credShape prefix, 0 for none; no prefix begins with a word's two
// letters. Built on first use (64 KiB), not at start-up.
var pairTable = sync.OnceValue(func() *[1 << 16]byte {
	t := new([1 << 16]byte)
	for _, w := range []string{"au", "ap", "co", "be", "ba", "ke", "to", "se", "pa"} {
		for _, a := range []byte{w[0], w[0] - 32} {
			for _, b := range []byte{w[1], w[1] - 32} {
				t[uint16(a)<<8|uint16(b)] = w[0]
			}
		}
	}
	for _, p := range shapePrefixes {
		t[uint16(p[0])<<8|uint16(p[1])] = shapeClass
	}
	return t
})

// hasFold reports whether s starts with word (lower-case ASCII) in any
// case of its letters.
func hasFold(s, word string) bool {
	if len(s) < len(word) {
		return false
	}
	for j := 0; j < len(word); j++ {
		c, w := s[j], word[j]
		if c != w && !(w >= 'a' && w <= 'z' && c|0x20 == w) {
			return false
		}
	}
	return true
}

// apiBefore reports whether s ends with "api", "api_" or "api-" in any
// case: what credPair needs before "key".
func apiBefore(s string) bool {
	if n := len(s); n > 0 && (s[n-1] == '_' || s[n-1] == '-') {
		s = s[:n-1]
	}
	return len(s) >= 3 && hasFold(s[len(s)-3:], "api")
}

// pairTail reports whether what follows a credPair name makes a pair: an
// optional quote, spaces, then ':' or '='.
func pairTail(rest string) bool {
	t := strings.TrimLeft(rest, `"'`)
	t = strings.TrimLeftFunc(t, unicode.IsSpace)
	return strings.HasPrefix(t, ":") || strings.HasPrefix(t, "=")
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
			if pairTail(rest) {
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
