package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/charmbracelet/x/exp/golden"

	"github.com/mailagent/mailagent/internal/config"
	"github.com/mailagent/mailagent/internal/memimap"
)

// TestDoctorWordingGolden runs doctor against real servers set up to fail
// the way a newcomer's first config does, and compares the report with
// testdata/TestDoctorWordingGolden.golden (-update rewrites it). The
// golden pins the issue-9 wording: a missing folder is named, the API key
// fix is printed once, an SMTP TLS failure says implicit TLS (not
// "permanent smtp failure") and names the fix, and an empty database
// reads as such.
func TestDoctorWordingGolden(t *testing.T) {
	h := newHarness(t, classifyReply, "", func(o *memimap.Options) { o.Mailboxes = []string{"Sent"} })
	cfg, err := os.ReadFile(h.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	// SMTP with implicit TLS against the plain-text sink.
	smtpTable := strings.Index(string(cfg), "[accounts.smtp]")
	fixed := string(cfg[:smtpTable]) + strings.Replace(string(cfg[smtpTable:]), `security = "insecure"`, `security = "tls"`, 1)
	if err := os.WriteFile(h.cfgPath, []byte(fixed), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("MA_TEST_GEMINI_KEY", "")

	stdout, stderr, code := h.run("doctor")
	if code != ExitPartial {
		t.Fatalf("exit %d, want %d\n%s\n%s", code, ExitPartial, stdout, stderr)
	}
	out := strings.ReplaceAll(stdout, h.dir, "DIR")
	out = strings.ReplaceAll(out, ":"+strconv.Itoa(h.imap.Port)+" ", ":IMAPPORT ")
	out = strings.ReplaceAll(out, ":"+strconv.Itoa(h.smtp.Port), ":SMTPPORT")
	out = regexp.MustCompile(`reached IDLE in [0-9.]+[mµn]?s`).ReplaceAllString(out, "reached IDLE in Ns")
	golden.RequireEqual(t, []byte(out))

	for _, bad := range []string{`""`, "permanent smtp failure", "llm.base_url"} {
		if strings.Contains(out, bad) {
			t.Errorf("doctor says %q:\n%s", bad, out)
		}
	}
	if n := strings.Count(out, "MA_TEST_GEMINI_KEY=…"); n != 1 {
		t.Errorf("the key fix is printed %d times, want once:\n%s", n, out)
	}
	if m := offersIncoming.FindString(out); m != "" {
		t.Errorf("doctor offers the watched mailbox as a folder to use: %q", m)
	}
	if !regexp.MustCompile(`(?m)^FAIL  imap personal: Drafts folder: .*"Drafts"`).MatchString(out) {
		t.Errorf("the missing Drafts folder is not named:\n%s", out)
	}
}

// TestModelFixBlamesOnlyAConfiguredBaseURL: a lookup failure of the
// default endpoint is the network's; only a configured base_url is named.
func TestModelFixBlamesOnlyAConfiguredBaseURL(t *testing.T) {
	dns := fmt.Errorf("gemini generate: %w", &net.DNSError{Err: "no such host", Name: "generativelanguage.googleapis.com", IsNotFound: true})
	if fix := modelFix(dns, ""); strings.Contains(fix, "base_url") || !strings.Contains(fix, "online") {
		t.Errorf("default endpoint: fix %q", fix)
	}
	if fix := modelFix(dns, "https://llm.internal/v1"); !strings.Contains(fix, "llm.base_url (https://llm.internal/v1)") {
		t.Errorf("configured base_url: fix %q", fix)
	}
	if fix := modelFix(errors.New("boom"), ""); strings.Contains(fix, "base_url") {
		t.Errorf("other failure, no base_url: fix %q", fix)
	}
}

// TestSplitFix: the fix an error carries is moved out once; multi-line
// errors and parentheses that are not a fix stay as they are.
func TestSplitFix(t *testing.T) {
	for _, c := range []struct{ in, detail, fix string }{
		{"env X is empty: no secret (fix: export X=…)", "env X is empty: no secret", "export X=…"},
		{"plain error", "plain error", ""},
		{"a (b) c", "a (b) c", ""},
		{"line1 (fix: a)\nline2 (fix: b)", "line1 (fix: a)\nline2 (fix: b)", ""},
	} {
		d, f := splitFix(c.in)
		if d != c.detail || f != c.fix {
			t.Errorf("splitFix(%q) = %q, %q; want %q, %q", c.in, d, f, c.detail, c.fix)
		}
	}
	d := &doctor{}
	d.fail("model: api key", errors.New("no secret (fix: export K=…)"), "set the variable named by llm.api_key_env")
	if c := d.checks[0]; c.Detail != "no secret" || c.Fix != "export K=…" {
		t.Errorf("check %+v, want the error's own fix, once", c)
	}
}

// TestConnFixNamesTheFix: each connection failure a newcomer meets gets
// the fix for it, with the port of the other security mode where that is
// the likely mistake.
func TestConnFixNamesTheFix(t *testing.T) {
	imapStartTLS := config.Endpoint{Host: "mail.example.org", Port: 993, Security: config.SecurityStartTLS}
	smtpTLS := config.Endpoint{Host: "mail.example.org", Port: 587, Security: config.SecurityTLS}
	for _, c := range []struct {
		name string
		err  error
		e    config.Endpoint
		kind string
		want string
	}{
		{"starttls on an implicit-TLS port", fmt.Errorf("imap starttls with x: %w", io.ErrUnexpectedEOF), imapStartTLS, "imap", `usually port 993), use security = "tls"`},
		{"implicit TLS on a plain port", fmt.Errorf("dial: %w", tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"}), smtpTLS, "smtp", `use security = "starttls" (port 587), or port 465 for security = "tls"`},
		{"unknown authority", fmt.Errorf("handshake: %w", x509.UnknownAuthorityError{}), smtpTLS, "smtp", "set accounts.smtp.tls_ca_file to the PEM file of the CA"},
		{"host does not resolve", &net.DNSError{Err: "no such host", Name: "mail.example.org"}, smtpTLS, "smtp", "mail.example.org does not resolve: check accounts.smtp.host"},
		{"nothing listens", fmt.Errorf("dial: %w", syscall.ECONNREFUSED), imapStartTLS, "imap", "nothing listens on mail.example.org:993"},
	} {
		if got := connFix(c.err, c.e, c.kind); !strings.Contains(got, c.want) {
			t.Errorf("%s: fix %q, want it to contain %q", c.name, got, c.want)
		}
	}
}
