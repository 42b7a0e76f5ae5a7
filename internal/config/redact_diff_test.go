package config

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mailagent/mailagent/internal/rig/testsize"
)

// redactReference is Redact without any shortcut: every secret value,
// then each pattern over the whole text, in Redact's order. Redact's
// prefilters and windows must give exactly what it gives.
func redactReference(r *Redactor, s string) string {
	for _, v := range r.values {
		s = strings.ReplaceAll(s, v, redacted)
	}
	s = credHeader().ReplaceAllString(s, "${1} "+redacted)
	s = credScheme().ReplaceAllString(s, "${1} "+redacted)
	s = credPair().ReplaceAllString(s, "${1}"+redacted)
	return credShape().ReplaceAllString(s, redacted)
}

// TestRedactMatchesReference: on hostile and generated text, and on every
// header block and body of the mail corpus when it is present, Redact
// gives what the patterns run over the whole text give. The generated
// texts and the corpus messages are sized by testsize (3,000 and 600
// without -race, a tenth with it): the regexps under the race detector
// were the package's whole run.
func TestRedactMatchesReference(t *testing.T) {
	t.Parallel()
	r := NewRedactor(NewSecret("imap-pass-7731"), NewSecret("llm-key-from-env-55"))
	texts := []string{
		"", "sk-", "xsk-abcdefghijklmnopqrst", "risk-free desk-top sk-abcdefghijklmnop1234 ask-abcdefghijklmnopqrstu",
		"-sk-abcdefghijklmnopq-", "_sk-abcdefghijklmnopqrst", "AIzaAIzaSyA1234567890abcdefghijklm", "ghp_ghp_abcdefghijklmnopqrstuvwx",
		"xoxb-123456789012 xoxz-123456789012 AKIAABCDEFGHIJKLMNOP AKIAabcdefghijklmnop", "naïve sk-ÄBCDEFGHIJKLMNOPQRS ſk-abcdefghijklmnopqrst",
		"gh_ thought high_ghp_x ghs_abcdefghijklmnopqrst1 ghr_abcdefghijklmnopqrs", "PASSWORD=x Authorization: y\nCookie: z BEARER abcdefghijk",
		"\xff\xfesk-abcdefghijklmnopqrstu\xff", "AIza" + strings.Repeat("A", 40) + "!" + "sk-" + strings.Repeat("b", 16),
	}
	words := []string{"sk-", "AIza", "xoxp-", "AKIA", "ghp_", "gho_", "_", "-", "abcdefghij", "0123456789", " ", "\n", "=", ":", "password", "Bearer ",
		"ſ", "é", "token", "api", "API_", "message_key", "Api-", "\"", "'", "KEY", "ABCDEFGHIJKLMNOP",
		"Cookie", "authorization", "Api-Key", "SECRET", "passwd", "basic ", "x-api-key:", "\u212a", "\r", "\t"}
	rng := rand.New(rand.NewPCG(1, 2))
	for range testsize.N(3000, 300) {
		var b strings.Builder
		for range 1 + rng.IntN(12) {
			b.WriteString(words[rng.IntN(len(words))])
		}
		texts = append(texts, b.String())
	}
	if dir := corpusRoot(); dir != "" {
		n, most := 0, testsize.N(600, 60)
		_ = filepath.WalkDir(filepath.Join(dir, "spamassassin"), func(p string, d os.DirEntry, err error) error {
			if n >= most {
				return filepath.SkipAll
			}
			if err != nil || d.IsDir() {
				return nil
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return nil
			}
			n++
			texts = append(texts, string(b[:min(len(b), 16<<10)]))
			return nil
		})
		t.Logf("%d corpus messages", n)
	}
	for _, s := range texts {
		if got, want := r.Redact(s), redactReference(r, s); got != want {
			t.Fatalf("Redact(%.200q)\n got %.300q\nwant %.300q", s, got, want)
		}
	}
}

// corpusRoot is ../shared/corpora beside the repository, or
// $MAILAGENT_CORPORA, or "" when neither is there.
func corpusRoot() string {
	if c := os.Getenv("MAILAGENT_CORPORA"); c != "" {
		return c
	}
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
	c := filepath.Join(dir, "..", "shared", "corpora")
	if _, err := os.Stat(c); err != nil {
		return ""
	}
	return c
}
