package config

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSecretCmdThatCannotRun: a password_cmd whose program is missing or
// not executable says which program and what to do (as a " (fix: …)" the
// doctor prints on its own line), never only "exit status 127"; and it
// never shows what the command printed.
func TestSecretCmdThatCannotRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	noexec := filepath.Join(dir, "get-pass")
	if err := os.WriteFile(noexec, []byte("#!/bin/sh\necho hunter2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ cmd, prog, why, fix string }{
		{"pass-not-installed-here show mail/x", "pass-not-installed-here", "was not found", "(fix: install it, or give its full path in accounts.imap password_cmd)"},
		{noexec + " --quiet", noexec, "cannot be run (not executable)", "(fix: chmod +x it, or give the right path in accounts.imap password_cmd)"},
	} {
		_, err := runSecretCmd(context.Background(), "accounts.imap password_cmd", c.cmd, 0)
		if err == nil {
			t.Fatalf("%q: no error", c.cmd)
		}
		msg := err.Error()
		if !strings.Contains(msg, `"`+c.prog+`" `+c.why) || !strings.HasSuffix(msg, c.fix) {
			t.Errorf("%q: %q; want the program %q %s and %s", c.cmd, msg, c.prog, c.why, c.fix)
		}
		if strings.Contains(msg, "hunter2") {
			t.Errorf("%q: the error shows the command's output", c.cmd)
		}
	}
	// A command that runs and fails keeps its own stderr, no invented fix.
	_, err := runSecretCmd(context.Background(), "accounts.imap password_cmd", "echo 'gpg: decryption failed' >&2; exit 2", 0)
	if err == nil || !strings.Contains(err.Error(), "gpg: decryption failed") || strings.Contains(err.Error(), "(fix:") {
		t.Errorf("a failing command: %v", err)
	}
}
