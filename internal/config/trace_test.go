package config

import (
	"strings"
	"testing"
	"time"
)

// TestTraceDefaults: snapshots are on and kept 14 days unless configured;
// "0" keeps them (a negative store retention); a bad value is a field
// error naming the key.
func TestTraceDefaults(t *testing.T) {
	t.Parallel()
	cfg, err := Parse([]byte(validTOML), "/x/config.toml", 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.Trace.Snapshots || cfg.SnapshotRetention() != 14*24*time.Hour {
		t.Errorf("defaults: snapshots %v, retention %v", cfg.Trace.Snapshots, cfg.SnapshotRetention())
	}
	cfg, err = Parse([]byte(validTOML+"\n[trace]\nsnapshots = false\nsnapshot_retention = \"0\"\n"), "/x/config.toml", 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Trace.Snapshots || cfg.SnapshotRetention() >= 0 {
		t.Errorf("configured: snapshots %v, retention %v", cfg.Trace.Snapshots, cfg.SnapshotRetention())
	}
	_, err = Parse([]byte(validTOML+"\n[trace]\nsnapshot_retention = \"soon\"\n"), "/x/config.toml", 0o600)
	if err == nil || !strings.Contains(err.Error(), "trace.snapshot_retention") {
		t.Errorf("bad retention: %v", err)
	}
}

// TestRedactor: configured secret values and credential-shaped text are
// replaced; ordinary mail text is left alone.
func TestRedactor(t *testing.T) {
	t.Setenv("ADA_PASS", "imap-pass-7731")
	cfg, err := Parse([]byte(validTOML), "/x/config.toml", 0o600)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("TEST_GEMINI_KEY", "llm-key-from-env-55")
	r := NewRedactor(append(cfg.KnownSecrets(), NewSecret("abc"))...)
	in := strings.Join([]string{
		"Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.payload.sig",
		"> cookie: session=abcdef123456",
		"X-Goog-Api-Key: AIzaSyA-1234567890abcdefghijklmno",
		"the key is llm-key-from-env-55 and the password imap-pass-7731",
		`{"api_key": "zzz-top-secret", "password":"p4ssw0rd!"}`,
		"token=abcdef0123&user=bob",
		"call me with sk-proj-ABCDEFGHIJKLMNOP1234 or ghp_0123456789abcdefghijABCDEFGHIJ",
		"Basic dXNlcjpwYXNzd29yZA==",
		"Can we meet on Tuesday about the abc project?",
	}, "\n")
	out := r.Redact(in)
	for _, leak := range []string{"eyJhbGciOiJIUzI1NiJ9", "session=abcdef123456", "AIzaSyA-1234567890", "llm-key-from-env-55",
		"imap-pass-7731", "zzz-top-secret", "p4ssw0rd!", "abcdef0123", "sk-proj-ABCDEFGHIJKLMNOP1234", "ghp_0123456789", "dXNlcjpwYXNzd29yZA"} {
		if strings.Contains(out, leak) {
			t.Errorf("%q survived:\n%s", leak, out)
		}
	}
	if !strings.Contains(out, "Can we meet on Tuesday about the abc project?") || !strings.Contains(out, "user=bob") {
		t.Errorf("ordinary text changed:\n%s", out)
	}
	if !strings.Contains(out, "Authorization: [redacted]") {
		t.Errorf("Authorization header not redacted by name:\n%s", out)
	}
}

// TestRedactPrefilterMissesNothing: the word checks that let most text skip
// the patterns never skip text a pattern matches, case folds included.
func TestRedactPrefilterMissesNothing(t *testing.T) {
	t.Parallel()
	r := NewRedactor()
	for _, s := range []string{
		"password=hunter22", "PASSWORD : hunter22", `"api_key": "abc123def"`, "ſecret=abc123", "api_\u212Aey=abc123",
		"Authorization: Basic dXNlcjpwYXNz", "bearer abcdefgh12345678", "token='abcdef'", "passwd\t=\tabcdef",
		"key AIzaSyA1234567890abcdefghijklmnop", "sk-abcdefghijklmnop1234", "ghp_abcdefghijklmnopqrstuvwx",
	} {
		got := r.Redact("before " + s + " after")
		if !strings.Contains(got, "[redacted]") {
			t.Errorf("%q: not redacted: %q", s, got)
		}
	}
	for _, s := range []string{`{"message_key": {"uid": 7}, "tokens_in": 500}`, "the monkey ate the cookie jar's lid"} {
		if got := r.Redact(s); got != s {
			t.Errorf("%q changed to %q", s, got)
		}
	}
}
