package initcmd

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	appdoctor "github.com/mailagent/mailagent/internal/app/doctor"
	"github.com/mailagent/mailagent/internal/config"
	"github.com/mailagent/mailagent/internal/initcfg"
	"github.com/mailagent/mailagent/internal/prompter"
	"github.com/mailagent/mailagent/internal/termsafe"

	"github.com/mailagent/mailagent/internal/app/setup"
)

// Testing each server's login as soon as the password source is known:
// IMAP, then SMTP, before the model questions (each server was reached
// without a login as soon as it was entered: init_reach.go). A
// certificate signed by an unknown authority (a self-hosted server with
// its own CA) is answered by asking for the CA file; SMTP tries the IMAP
// CA first. Any other failure says why and what to change, and offers to
// edit, retry or go on.

// serverProbe logs in to one server (kind "imap" or "smtp") of acct and
// logs out. InitNet.Probe replaces it in tests; the live one is
// setup.Probe.
type serverProbe func(ctx context.Context, kind string, acct *config.Account) error

// probeAccount is the account the setup describes, as the config will
// read it: the setup is rendered and parsed, so the secret resolves the
// way watch will resolve it. The keyring is not written yet: its
// password is tested as typed.
func probeAccount(s *initSetup) (*config.Account, error) {
	c := *s
	if c.Secret.Kind == secretKeyring {
		c.Secret.Kind = secretLiteral
	}
	// The model questions come later; placeholders keep the file valid.
	if c.APIKeyEnv == "" && c.APIKeyCmd == "" {
		c.APIKeyEnv = defaultAPIKeyEnv
	}
	c.Model = initDefault(c.Model, defaultModel)
	c.Mode = initDefault(c.Mode, config.ModeReview)
	c.Account = initDefault(c.Account, "probe")
	dir, err := os.Getwd()
	if err != nil {
		dir = os.TempDir()
	}
	cfg, err := config.Parse(initcfg.Render(&c), filepath.Join(dir, "mailagent-init.toml"), 0o600)
	if err != nil {
		return nil, err
	}
	return &cfg.Accounts[0], nil
}

// testServers tests the IMAP, then the SMTP login. A server the user kept
// although it could not be reached is not tried again: doctor tests it
// once the file is written.
func testServers(ctx context.Context, p Prompter, s *initSetup, opts *InitOptions, reach *reachState) error {
	p.Say("\nTesting the logins with these settings:\n")
	for _, kind := range []string{"imap", "smtp"} {
		if reach.keptUnreached(s, kind) {
			p.Say("  - %s: login not tested: the server could not be reached and you kept it (doctor tests it at the end)\n", strings.ToUpper(kind))
			continue
		}
		if err := testServer(ctx, p, s, opts, kind); err != nil {
			return err
		}
	}
	return nil
}

// testServer tests one server until it passes or the user goes on.
func testServer(ctx context.Context, p Prompter, s *initSetup, opts *InitOptions, kind string) error {
	label := strings.ToUpper(kind)
	for {
		srv := &s.IMAP
		if kind == "smtp" {
			srv = &s.SMTP
		}
		ca := s.TLSCAFile
		if kind == "smtp" && s.SMTPCAFile != "" {
			ca = s.SMTPCAFile
		}
		acct, perr := probeAccount(s)
		ep := config.Endpoint{Host: srv.Host, Port: srv.Port, Security: srv.Security}
		var err error
		if perr == nil {
			ep = acct.IMAP
			if kind == "smtp" {
				ep = acct.SMTP
			}
			err = opts.Net.probe()(ctx, kind, acct)
		}
		if perr == nil && err == nil {
			p.Say("  ✓ %s: logged in to %s as %s (%s)\n", label, termsafe.Line(ep.Addr()), termsafe.Line(srv.Username), appdoctor.SecurityWords(srv.Security))
			if ca != "" && srv.Security != config.SecurityInsecure {
				p.Say("    trusting the CA in %s\n", ca)
			}
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if perr != nil {
			// The whole config is checked when the answers are complete,
			// and its problems shown then, with an offer to go again.
			p.Say("  - %s: not tested: the settings have problems, shown at the end\n", label)
			return nil
		}
		switch {
		case unknownAuthority(err):
			again, err := askUnknownAuthority(ctx, p, s, kind, ep.Addr(), ca)
			if err != nil {
				return err
			}
			if again {
				continue
			}
		default:
			// The reason carries server text (greetings, NO replies).
			p.Say("  ✗ %s: %s\n    fix: %s\n", label, termsafe.Line(probeReason(err)), termsafe.Line(appdoctor.ConnFix(err, ep, kind)))
		}
		items := []prompter.Choice{
			{Key: "edit", Label: "edit the " + label + " settings"},
			{Key: "retry", Label: "test again (after fixing it elsewhere)"},
		}
		if opts.PasswordCmd == "" && opts.PasswordEnv == "" && opts.OAuth2TokenCmd == "" {
			items = append(items, prompter.Choice{Key: "secret", Label: "change the password source"})
		}
		items = append(items, prompter.Choice{Key: "skip", Label: "keep these settings and go on (doctor tests them again at the end)"})
		choice, err := p.Choose(ctx, "What now?", items, "edit")
		if err != nil {
			return err
		}
		switch choice {
		case "edit":
			if err := editServer(ctx, p, label, kind, srv); err != nil {
				return err
			}
			markEdited(s)
		case "secret":
			s.Secret = secretChoice{}
			if err := askSecret(ctx, p, s, opts); err != nil {
				return err
			}
		case "skip":
			return nil
		}
	}
}

// probeReason is the first line of a probe's error, without smtpsend's
// retry classification.
func probeReason(err error) string {
	return clipReason(initFirstLine(setup.WithoutRetryClass(err)))
}

// unknownAuthority reports a certificate chain the system roots (and the
// CA file given, if any) do not vouch for.
func unknownAuthority(err error) bool {
	var ua x509.UnknownAuthorityError
	if errors.As(err, &ua) {
		return true
	}
	var cv *tls.CertificateVerificationError
	return errors.As(err, &cv) && errors.As(cv.Err, &ua)
}

// askCAFile asks for a PEM file holding at least one certificate; empty
// is "not now". The answer is made absolute.
func askCAFile(ctx context.Context, p Prompter, label string) (string, error) {
	v, err := p.Text(ctx, label, "", func(v string) error {
		if v == "" {
			return nil
		}
		return checkCAFile(initExpandTilde(v))
	})
	if err != nil || v == "" {
		return "", err
	}
	abs, err := filepath.Abs(initExpandTilde(v))
	if err != nil {
		return "", fmt.Errorf("certificate path %s: %w", v, err)
	}
	return abs, nil
}

// checkCAFile accepts a readable PEM file with at least one certificate.
func checkCAFile(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("cannot read %s: %v", path, errors.Unwrap(err))
	}
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			return fmt.Errorf("%s holds no PEM certificate (-----BEGIN CERTIFICATE-----): give the CA's certificate, not its key", path)
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		if _, err := x509.ParseCertificate(b.Bytes); err != nil {
			return fmt.Errorf("%s: the certificate does not parse: %v", path, err)
		}
		return nil
	}
}
