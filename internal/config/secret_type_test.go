package config

import (
	"strings"
	"testing"
)

// A literal secret written without quotes (password = 123) is refused
// with the key and the fix, and without echoing the value.
func TestSecretMustBeAString(t *testing.T) {
	t.Parallel()
	for _, val := range []string{"123", "0o123", "1e3", "true", "[1, 2]", "2026-01-02"} {
		t.Run(val, func(t *testing.T) {
			src := strings.Replace(validTOML, `password_env = "ADA_PASS"`, "password = "+val, 1)
			_, err := Parse([]byte(src), "/x/config.toml", 0o600)
			if err == nil {
				t.Fatalf("password = %s: got no error", val)
			}
			msg := err.Error()
			for _, want := range []string{"accounts.imap.password", "quoted string", `"…"`} {
				if !strings.Contains(msg, want) {
					t.Errorf("error %q lacks %q", msg, want)
				}
			}
			if strings.Contains(msg, "123") && val == "123" {
				t.Errorf("error echoes the secret: %q", msg)
			}
		})
	}
	// A quoted number is a fine password.
	src := strings.Replace(validTOML, `password_env = "ADA_PASS"`, `password = "123"`, 1)
	cfg, err := Parse([]byte(src), "/x/config.toml", 0o600)
	if err != nil {
		t.Fatalf("password = \"123\": %v", err)
	}
	if got := cfg.Accounts[0].IMAP.Password.Reveal(); got != "123" {
		t.Errorf("password: got %q, want 123", got)
	}
}
