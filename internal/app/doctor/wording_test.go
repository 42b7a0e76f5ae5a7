package doctor

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"

	"github.com/mailagent/mailagent/internal/config"
)

// TestModelFixBlamesOnlyAConfiguredBaseURL: a lookup failure of the
// default endpoint is the network's; only a configured base_url is named.
func TestModelFixBlamesOnlyAConfiguredBaseURL(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
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
