package config

import (
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkRedact runs Redact over the corpus's first 1,000 messages
// (header block and body, 16 KiB each at most), against the patterns run
// over the whole text (redactReference), the form before the prefilters:
//
//	go test -run '^$' -bench Redact -count 5 ./internal/config
func BenchmarkRedact(b *testing.B) {
	root := corpusRoot()
	if root == "" {
		b.Skip("corpus not found")
	}
	var texts []string
	var size int64
	_ = filepath.WalkDir(filepath.Join(root, "spamassassin"), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || len(texts) >= 1000 {
			return nil
		}
		if raw, err := os.ReadFile(p); err == nil {
			texts = append(texts, string(raw[:min(len(raw), 16<<10)]))
			size += int64(min(len(raw), 16<<10))
		}
		return nil
	})
	r := NewRedactor(NewSecret("imap-pass-7731"), NewSecret("llm-key-from-env-55"))
	for _, bc := range []struct {
		name string
		f    func(string) string
	}{{"prefiltered", r.Redact}, {"reference", func(s string) string { return redactReference(r, s) }}} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(size)
			for b.Loop() {
				for _, s := range texts {
					bc.f(s)
				}
			}
		})
	}
}
