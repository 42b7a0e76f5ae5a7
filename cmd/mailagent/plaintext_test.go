package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mailagent/mailagent/imapsync"
	"github.com/mailagent/mailagent/internal/config"
	"github.com/mailagent/mailagent/internal/netpolicy"
	"github.com/mailagent/mailagent/internal/smtpsend"
)

// TestPlaintextRuleIsOneRule checks that configuration validation, IMAP and
// SMTP apply the same loopback rule (internal/netpolicy) to every host, and
// that IMAP and SMTP refuse a non-loopback host with the same error before
// dialling anything.
func TestPlaintextRuleIsOneRule(t *testing.T) {
	t.Parallel()
	hosts := []string{
		"127.0.0.1", "127.5.5.5", "::1", "[::1]", "localhost", "LOCALHOST.",
		"0.0.0.0", "10.0.0.1", "192.0.2.1", "localtest.me", "127.0.0.1.nip.io", "imap.example.com",
	}
	for _, host := range hosts {
		t.Run(host, func(t *testing.T) {
			loopback := netpolicy.IsLoopback(host)

			_, cfgErr := config.Parse([]byte(fmt.Sprintf(`
[llm]
api_key_env = "TEST_GEMINI_KEY"
[[accounts]]
name = "p"
email = "ada@example.com"
  [accounts.imap]
  host = %q
  security = "insecure"
  password_env = "ADA_PASS"
  [accounts.smtp]
  host = %q
  security = "insecure"
`, host, host)), "", 0o600)
			if loopback != (cfgErr == nil) {
				t.Errorf("config: got %v, want accepted=%v", cfgErr, loopback)
			}

			_, smtpErr := smtpsend.New(smtpsend.Options{Host: host, Port: 1, Security: smtpsend.SecurityInsecure})
			if loopback != (smtpErr == nil) {
				t.Errorf("smtpsend.New: got %v, want accepted=%v", smtpErr, loopback)
			}
			if loopback {
				return // IMAP would dial: the rest is about refusals
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_, imapErr := imapsync.Dial(ctx, imapsync.Options{Host: host, Port: 1, Security: imapsync.SecurityInsecure, Username: "u", Password: "secret"})
			for name, err := range map[string]error{"imap": imapErr, "smtp": smtpErr} {
				if !errors.Is(err, netpolicy.ErrPlaintextNotLoopback) {
					t.Errorf("%s: got %v, want netpolicy.ErrPlaintextNotLoopback", name, err)
				}
			}
			if imapErr == nil || smtpErr == nil || imapErr.Error() != smtpErr.Error() {
				t.Errorf("got imap %q and smtp %q, want the same error", imapErr, smtpErr)
			}
			if strings.Contains(fmt.Sprint(imapErr), "secret") {
				t.Errorf("imap error %q contains the password", imapErr)
			}
			if !strings.Contains(fmt.Sprint(cfgErr), "non-loopback") {
				t.Errorf("config: got %v, want the security key refused", cfgErr)
			}
		})
	}
}
