package main

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/mailagent/mailagent/internal/rig/e2e"
	"github.com/mailagent/mailagent/internal/smtpsend/smtptest"
)

// TestInitSelfHostedE2E runs `mailagent init` as a newcomer would, typing
// into the line prompter, against the real Dovecot and Postfix of
// scripts/e2e-stack.sh, whose certificates are signed by the stack's own
// CA. It needs MAILAGENT_E2E=1 (source DIR/env); without it it skips.
//
// The answers carry wrong inputs copied from another mail client
// ("host:port", "ssl", "smtp://…"). IMAP is reached as soon as its
// section is answered: it meets the unknown authority and asks for the
// CA before any SMTP question, refuses a wrong CA, accepts the stack's;
// SMTP trusts the same CA without asking. The logins are tested once the
// password source is known. Doctor then passes the mail
// checks and fails only the missing model key, so init names that check
// and its fix and does not suggest watch.
func TestInitSelfHostedE2E(t *testing.T) {
	st := e2e.Require(t)
	const user = "ada@example.test"
	t.Setenv("MA_E2E_INIT_PASS", st.Password(t, user))
	t.Setenv("MA_E2E_INIT_NO_KEY", "")
	dir := t.TempDir()
	_, otherCA := smtptest.NewCert(t)
	wrongCA := filepath.Join(dir, "other-ca.pem")
	if err := os.WriteFile(wrongCA, otherCA, 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "config.toml")
	imaps := net.JoinHostPort(st.IMAPHost, strconv.Itoa(st.IMAPSPort))
	script := answers(
		user, "Ada Lovelace",
		"e",
		imaps, "ssl", "", // IMAP: host:port (not a usual port: security asked), "ssl", login
		wrongCA,                     // the IMAP certificate is not trusted: a CA that did not sign it
		st.CAFile,                   // the stack's CA
		"smtp://"+st.SMTPAddr(), "", // SMTP: a URL gives starttls and the port; login
		"y",
		"", "2", "MA_E2E_INIT_PASS", // account, password from env
		"", "1", "MA_E2E_INIT_NO_KEY", "", "", // provider (gemini), api key env (unset), model, mode
	)
	code, stdout, stderr := runInit(t, script, "--config", path, "--provider", "generic")
	if code != ExitPartial {
		t.Fatalf("exit code %d, want %d (doctor: no model key); stderr:\n%s", code, ExitPartial, stderr)
	}
	if stdout != path+"\n" {
		t.Errorf("stdout %q, want the path only", stdout)
	}
	for _, want := range []string{
		"✗ IMAP: the certificate of " + imaps + " is not signed by an authority this system trusts",
		"It is not signed by " + wrongCA + " either",
		"✓ IMAP: " + imaps + " answers (implicit TLS, certificate verified)",
		"✓ SMTP: " + st.SMTPAddr() + " answers (STARTTLS, certificate verified)",
		"✓ IMAP: logged in to " + imaps + " as " + user + " (implicit TLS, certificate verified)",
		"✓ SMTP: logged in to " + st.SMTPAddr() + " as " + user + " (STARTTLS, certificate verified)",
		"trusting the CA in " + st.CAFile,
		"PASS  imap example: connect and login",
		"PASS  smtp example: connect and AUTH",
		"FAIL  model: api key",
		"Not ready yet: doctor found 1 problem.",
		"fix: export MA_E2E_INIT_NO_KEY=…",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if n := strings.Count(stderr, "Path to the CA certificate"); n != 2 {
		t.Errorf("the CA was asked %d times, want 2 (IMAP: wrong CA, right CA; SMTP reuses it):\n%s", n, stderr)
	}
	if ca, smtp := strings.Index(stderr, "Path to the CA certificate"), strings.Index(stderr, "SMTP host"); ca < 0 || smtp < 0 || ca > smtp {
		t.Errorf("the IMAP CA was not asked before the SMTP questions:\n%s", stderr)
	}
	if strings.Contains(stderr[strings.Index(stderr, "Not ready yet"):], "watch") {
		t.Errorf("watch is suggested after a failed doctor:\n%s", stderr)
	}
	cfg, raw := loadConfig(t, path)
	a := cfg.Accounts[0]
	checkEndpoint(t, "imap", a.IMAP, wantEndpoint{st.IMAPHost, st.IMAPSPort, "tls", user})
	checkEndpoint(t, "smtp", a.SMTP, wantEndpoint{st.SMTPHost, st.SMTPPort, "starttls", user})
	if a.IMAP.TLSCAFile != st.CAFile || a.SMTP.TLSCAFile != st.CAFile {
		t.Errorf("tls_ca_file: imap %q smtp %q, want %q for both\n%s", a.IMAP.TLSCAFile, a.SMTP.TLSCAFile, st.CAFile, raw)
	}
	if strings.Contains(stdout+stderr+raw, st.Password(t, user)) {
		t.Error("the password was printed or written")
	}
}
