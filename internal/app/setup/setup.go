// Package setup is what `mailagent init` does beyond asking: it reaches
// each server without logging in (Reach), tests the logins (Probe), reads
// the authserv-id from the newest mail (FindAuthserv), keeps secrets in
// the system keyring (StoreInKeyring, ForgetKeyring) and names the model
// servers it offers (LLMPresets). The interview itself, the questions and
// their answers, is the command's (internal/cmd/initcmd).
package setup

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"slices"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"

	"github.com/mailagent/mailagent/imapsync"
	"github.com/mailagent/mailagent/internal/app/doctor"
	"github.com/mailagent/mailagent/internal/app/wire"
	"github.com/mailagent/mailagent/internal/config"
	"github.com/mailagent/mailagent/internal/llm"
	"github.com/mailagent/mailagent/internal/netpolicy"
	"github.com/mailagent/mailagent/internal/smtpsend"
)

// ProbeTimeout bounds one Probe: connect, TLS, greeting and login.
const ProbeTimeout = 20 * time.Second

// Probe logs in to one server (kind "imap" or "smtp") of acct with the
// logins watch uses (internal/app/wire), and logs out. The error says why
// the login failed; Reason shortens it for a prompt.
func Probe(ctx context.Context, kind string, acct *config.Account) error {
	ctx, cancel := context.WithTimeout(ctx, ProbeTimeout)
	defer cancel()
	if kind == "imap" {
		opts, err := wire.IMAPOptions(ctx, acct)
		if err != nil {
			return err
		}
		opts.DialTimeout = 10 * time.Second
		c, err := imapsync.Dial(ctx, opts)
		if err != nil {
			return err
		}
		_ = c.Close() // logged in: that was the test
		return nil
	}
	opts, err := wire.SMTPOptions(ctx, acct)
	if err != nil {
		return err
	}
	opts.Timeout = 10 * time.Second
	s, err := smtpsend.New(opts)
	if err != nil {
		return err
	}
	return s.Check(ctx)
}

// WithoutRetryClass is err without smtpsend's retry classification (the
// failure as the server or the network gave it), for a one-line reason.
func WithoutRetryClass(err error) error {
	var se *smtpsend.SendError
	if errors.As(err, &se) {
		return se.Err
	}
	return err
}

// Reach connects to one server (kind "imap" or "smtp") without logging
// in: TCP connect, TLS (implicit, or STARTTLS) with ep's CA, and the
// greeting (IMAP CAPABILITY, SMTP EHLO), bounded by timeout. A server
// that says nothing in that time is reported as "no answer", wrapping
// context.DeadlineExceeded.
func Reach(ctx context.Context, kind string, ep config.Endpoint, timeout time.Duration) error {
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var err error
	if kind == "smtp" {
		err = reachSMTP(rctx, ep, timeout)
	} else {
		err = reachIMAP(rctx, ep)
	}
	var ne net.Error
	if err != nil && ctx.Err() == nil && (errors.Is(rctx.Err(), context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()) {
		// Closing the connection is how the deadline ends a read: say
		// what it was, not "use of closed network connection". The SMTP
		// client's own deadline (the same timeout) may fire a moment
		// before the context's: that is the same silence.
		return fmt.Errorf("%s %s: no answer within %s: %w", kind, ep.Addr(), timeout, context.DeadlineExceeded)
	}
	return err
}

// reachSMTP connects, negotiates TLS and says EHLO: smtpsend's check
// without a username does not authenticate.
func reachSMTP(ctx context.Context, ep config.Endpoint, timeout time.Duration) error {
	s, err := smtpsend.New(smtpsend.Options{Host: ep.Host, Port: ep.Port, Security: ep.Security,
		TLSCAFile: ep.TLSCAFile, Timeout: timeout})
	if err != nil {
		return err
	}
	return s.Check(ctx)
}

// reachIMAP connects, negotiates TLS, waits for the greeting and asks
// for the capabilities, then logs out.
func reachIMAP(ctx context.Context, ep config.Endpoint) error {
	addr := ep.Addr()
	addrs := []string{addr}
	var tlsCfg *tls.Config
	switch ep.Security {
	case config.SecurityTLS, config.SecurityStartTLS:
		cfg, err := netpolicy.TLSConfig(ep.Host, ep.TLSCAFile, nil)
		if err != nil {
			return fmt.Errorf("imap %s: %w", addr, err)
		}
		tlsCfg = cfg
	case config.SecurityInsecure:
		// The literal loopback addresses are dialled: no resolver is asked.
		a, err := netpolicy.PlaintextAddrs(ep.Host, ep.Port)
		if err != nil {
			return err
		}
		addrs = a
	default:
		return fmt.Errorf("imap %s: unknown security %q (want tls, starttls or insecure)", addr, ep.Security)
	}
	raw, err := netpolicy.DialFirst(ctx, &net.Dialer{}, addrs)
	if err != nil {
		return fmt.Errorf("imap dial %s: %w", addr, err)
	}
	// go-imap has no context: closing the connection ends a blocked read
	// (of the TLS layer too, which reads from raw).
	stop := context.AfterFunc(ctx, func() { _ = raw.Close() })
	defer stop()
	defer func() { _ = raw.Close() }()
	conn := raw
	if ep.Security == config.SecurityTLS {
		cfg := tlsCfg.Clone()
		cfg.NextProtos = []string{"imap"}
		tc := tls.Client(raw, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			return fmt.Errorf("imap tls handshake with %s: %w", addr, err)
		}
		conn = tc
	}
	opts := &imapclient.Options{TLSConfig: tlsCfg}
	var c *imapclient.Client
	if ep.Security == config.SecurityStartTLS {
		if c, err = imapclient.NewStartTLS(conn, opts); err != nil {
			return fmt.Errorf("imap starttls with %s: %w", addr, err)
		}
	} else {
		c = imapclient.New(conn, opts)
	}
	defer func() { _ = c.Close() }()
	if err := imapsync.WaitGreeting(c); err != nil {
		return fmt.Errorf("imap greeting from %s: %w", addr, err)
	}
	caps, err := c.Capability().Wait()
	if err != nil {
		return fmt.Errorf("imap capabilities of %s: %w", addr, err)
	}
	if !caps.Has(imap.CapIMAP4rev1) && !caps.Has(imap.CapIMAP4rev2) {
		return fmt.Errorf("imap %s: the server does not say it speaks IMAP4rev1 or IMAP4rev2", addr)
	}
	_ = c.Logout().Wait() // reached: that was the test
	return nil
}

// FindAuthserv logs in to acct's IMAP server and proposes the
// authserv_id the newest mail of its mailbox shows
// (doctor.DiscoverAuthserv); "" when it cannot tell or anything fails
// (doctor then shows the fix).
func FindAuthserv(ctx context.Context, acct *config.Account) string {
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	opts, err := wire.IMAPOptions(dctx, acct)
	if err != nil {
		return ""
	}
	opts.DialTimeout = 10 * time.Second
	c, err := imapsync.Dial(dctx, opts)
	if err != nil {
		return ""
	}
	defer func() { _ = c.Close() }()
	got, err := doctor.DiscoverAuthserv(dctx, c, acct.Mailbox, "")
	if err != nil {
		return ""
	}
	return got.Suggest
}

// IsLoopback reports whether host is a loopback name or address
// (netpolicy's rule: a local bridge such as Proton's).
func IsLoopback(host string) bool { return netpolicy.IsLoopback(host) }

// LLMPreset is an OpenAI-compatible model server init offers
// (internal/llm's presets).
type LLMPreset = llm.Preset

// The structured-output modes of an OpenAI-compatible server.
const (
	OutputJSONSchema = llm.OutputJSONSchema
	OutputJSONObject = llm.OutputJSONObject
	OutputPrompt     = llm.OutputPrompt
)

// LLMPresets are the OpenAI-compatible servers init knows, in menu order.
func LLMPresets() []LLMPreset { return slices.Clone(llm.Presets) }

// LLMPresetByName is the preset called name.
func LLMPresetByName(name string) (LLMPreset, bool) { return llm.PresetByName(name) }

// CheckStructuredOutput accepts a structured_output value the config
// takes (json_schema, json_object or prompt).
func CheckStructuredOutput(v string) error {
	_, err := llm.ParseStructuredOutput(v)
	return err
}
