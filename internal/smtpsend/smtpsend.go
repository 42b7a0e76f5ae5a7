// Package smtpsend submits finished messages to an SMTP server with go-smtp.
//
// Contract:
//
//   - TLS is always verified (system roots plus an optional CA file).
//     Plaintext ("insecure") is only allowed to a loopback host; New refuses
//     anything else with ErrPlaintextNotLoopback, without dialing. These
//     rules, and the XOAUTH2 client, are internal/netpolicy's, shared with
//     IMAP.
//   - One connection per Send. Every recipient gets a RCPT; if any RCPT is
//     refused the transaction is reset and no DATA is sent: a message goes to
//     all of its recipients or to none.
//   - Errors from the server or the network are *SendError, classified as
//     temporary (4xx replies, network failures) or permanent (5xx replies,
//     TLS verification, configuration). A rejected login (535) also matches
//     ErrAuth. Cancelling ctx closes the connection and Send returns an error
//     wrapping ctx's error; whether the server had already accepted the
//     message is then unknown (the outbox resolves that against Sent).
//   - The password and OAuth2 token never appear in errors.
//
// A Sender holds no connection between calls and is safe for concurrent use.
package smtpsend

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"

	"github.com/mailagent/mailagent/internal/netpolicy"
)

// Security modes for Options.Security.
const (
	SecurityTLS      = "tls"      // implicit TLS from the first byte (port 465)
	SecurityStartTLS = "starttls" // plaintext, then STARTTLS, which is required (port 587)
	SecurityInsecure = "insecure" // no TLS at all; loopback hosts only (port 25)
)

// DefaultTimeout bounds each SMTP command and the dial when Options.Timeout
// is zero.
const DefaultTimeout = time.Minute

var (
	// ErrPlaintextNotLoopback is returned by New for Security "insecure"
	// with a host that is not loopback. It is
	// netpolicy.ErrPlaintextNotLoopback, the value IMAP returns too.
	ErrPlaintextNotLoopback = netpolicy.ErrPlaintextNotLoopback
	// ErrAuth means the server rejected the credentials (reply 535).
	ErrAuth = errors.New("smtp authentication failed")
	// ErrInvalidOptions wraps every validation failure from New.
	ErrInvalidOptions = errors.New("invalid smtp options")
	// ErrMaybeDelivered marks a failure after the end of DATA, before the
	// server's reply (see SendError.MaybeDelivered).
	ErrMaybeDelivered = errors.New("the connection failed after the message was sent: it may have been delivered")
)

// Options configures a Sender.
type Options struct {
	// Host is the server's host name; it is also the name verified in its
	// TLS certificate.
	Host string
	// Port defaults by Security: 465 for tls, 587 for starttls, 25 for
	// insecure.
	Port int
	// Security is "tls" (the default when empty), "starttls" or "insecure".
	// "insecure" sends everything, including the password, in clear text and
	// is refused unless Host is loopback (netpolicy.IsLoopback: localhost,
	// 127.0.0.0/8, ::1; names are never resolved).
	Security string
	// Username enables AUTH. With Password it uses PLAIN (LOGIN when the
	// server offers only that); with OAuth2Token, XOAUTH2 or OAUTHBEARER.
	Username string
	// Password is the account password. It is never included in errors.
	Password string
	// OAuth2Token is an OAuth 2 access token; it takes precedence over
	// Password. It is never included in errors.
	OAuth2Token string
	// TLSCAFile is a PEM file of extra CA certificates trusted in addition to
	// the system roots (for a self-hosted server).
	TLSCAFile string
	// TLSConfig, when set, is cloned (never modified) and used as the base
	// TLS configuration. A copy of its RootCAs gets TLSCAFile's
	// certificates; ServerName defaults to Host; MinVersion is at least TLS
	// 1.2. InsecureSkipVerify is refused (ErrInvalidOptions wrapping
	// netpolicy.ErrInsecureTLS).
	TLSConfig *tls.Config
	// Timeout bounds the dial and each SMTP command; DefaultTimeout when zero.
	Timeout time.Duration
	// DialContext, when set, makes the connection in place of a TCP dial
	// to the address (tests connect to an in-memory server with it, under
	// testing/synctest); Security, TLS and AUTH work as over TCP.
	DialContext func(ctx context.Context, network, addr string) (net.Conn, error)
	// LocalName is the name given in EHLO; "localhost" when empty. With
	// starttls the EHLO before TLS always says "localhost", so the name is
	// only revealed inside TLS.
	LocalName string
}

// SendError is a failure talking to the server.
type SendError struct {
	// Code is the SMTP reply code, or 0 when the failure was not a reply
	// (network, TLS, protocol).
	Code int
	// Temporary reports whether retrying later may succeed: 4xx replies and
	// network failures are temporary; 5xx replies, TLS verification failures
	// and protocol or configuration errors are not.
	Temporary bool
	// Err is the underlying error, with secrets removed.
	Err error
	// MaybeDelivered is set when the connection failed after the message
	// was sent but before the server's reply: it may have been accepted.
	// Such a failure is never Temporary; the caller must not resend blindly.
	MaybeDelivered bool
}

// MaybeDeliveredErr reports e.MaybeDelivered (for callers that match on an
// interface rather than this type).
func (e *SendError) MaybeDeliveredErr() bool { return e.MaybeDelivered }

// Error implements error.
func (e *SendError) Error() string {
	kind := "permanent"
	if e.Temporary {
		kind = "temporary"
	}
	return fmt.Sprintf("%s smtp failure: %v", kind, e.Err)
}

// Unwrap returns the underlying error.
func (e *SendError) Unwrap() error { return e.Err }

// Sender submits mail to one SMTP server.
type Sender struct {
	opts      Options
	addr      string
	dialAddrs []string    // what is dialled: addr, or literal loopback addresses for insecure
	tlsConfig *tls.Config // nil for insecure
	secrets   []string
}

// New validates opts and loads TLSCAFile. It does not connect.
func New(opts Options) (*Sender, error) {
	opts.Host = strings.TrimSpace(opts.Host)
	if opts.Host == "" || strings.ContainsAny(opts.Host, " \t\r\n/") {
		return nil, fmt.Errorf("%w: host %q", ErrInvalidOptions, opts.Host)
	}
	opts.Security = strings.ToLower(strings.TrimSpace(opts.Security))
	defaultPort := 0
	switch opts.Security {
	case "", SecurityTLS:
		opts.Security, defaultPort = SecurityTLS, 465
	case SecurityStartTLS:
		defaultPort = 587
	case SecurityInsecure:
		if err := netpolicy.CheckPlaintext(opts.Host); err != nil {
			return nil, err
		}
		defaultPort = 25
	default:
		return nil, fmt.Errorf("%w: security %q (want tls, starttls or insecure)", ErrInvalidOptions, opts.Security)
	}
	if opts.Port == 0 {
		opts.Port = defaultPort
	}
	if opts.Port < 1 || opts.Port > 65535 {
		return nil, fmt.Errorf("%w: port %d", ErrInvalidOptions, opts.Port)
	}
	if (opts.Password != "" || opts.OAuth2Token != "") && opts.Username == "" {
		return nil, fmt.Errorf("%w: a password or token needs a username", ErrInvalidOptions)
	}
	if strings.ContainsAny(opts.LocalName, " \t\r\n") {
		return nil, fmt.Errorf("%w: local name %q", ErrInvalidOptions, opts.LocalName)
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}

	s := &Sender{
		opts: opts,
		addr: net.JoinHostPort(opts.Host, strconv.Itoa(opts.Port)),
	}
	for _, secret := range []string{opts.Password, opts.OAuth2Token} {
		if secret != "" {
			s.secrets = append(s.secrets, secret)
		}
	}
	if opts.Security == SecurityInsecure {
		// The literal loopback addresses are dialled: no resolver is asked.
		addrs, err := netpolicy.PlaintextAddrs(opts.Host, opts.Port)
		if err != nil {
			return nil, err
		}
		s.dialAddrs = addrs
	} else {
		cfg, err := netpolicy.TLSConfig(opts.Host, opts.TLSCAFile, opts.TLSConfig)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalidOptions, err)
		}
		s.tlsConfig = cfg
		s.dialAddrs = []string{s.addr}
	}
	return s, nil
}

// Send submits raw to the server with the envelope sender from and
// recipients to. It returns nil only when the server accepted the message
// for every recipient.
func (s *Sender) Send(ctx context.Context, from string, to []string, raw []byte) error {
	return s.SendStaged(ctx, from, to, raw, nil)
}

// SendStaged is Send that calls beforeData (when not nil) once the
// server has accepted the envelope, just before the DATA command: until
// then nothing can have been delivered, so a caller that records the call
// durably knows, after a crash, whether the transaction may have handed
// the message over. An error from beforeData ends the transaction before
// DATA (RSET, QUIT) and is returned wrapped, not temporary.
func (s *Sender) SendStaged(ctx context.Context, from string, to []string, raw []byte, beforeData func() error) error {
	if err := checkEnvelope(from, to); err != nil {
		return err
	}
	if len(raw) == 0 {
		return fmt.Errorf("smtp send: empty message")
	}
	err := s.session(ctx, func(c *smtp.Client) error {
		return s.transaction(c, from, to, raw, beforeData)
	})
	if err != nil {
		return fmt.Errorf("smtp send via %s: %w", s.addr, err)
	}
	return nil
}

// Check connects, negotiates TLS and authenticates, then quits without
// sending mail. It backs `mailagent doctor`.
func (s *Sender) Check(ctx context.Context) error {
	if err := s.session(ctx, func(*smtp.Client) error { return nil }); err != nil {
		return fmt.Errorf("smtp check %s: %w", s.addr, err)
	}
	return nil
}

// session dials, greets, secures and authenticates, runs fn, then quits.
func (s *Sender) session(ctx context.Context, fn func(*smtp.Client) error) (err error) {
	if err := ctx.Err(); err != nil {
		return err
	}
	conn, err := s.dial(ctx)
	if err != nil {
		return s.classify(ctx, "dial", err)
	}
	// go-smtp has no context support: closing the connection is how a
	// cancellation interrupts a blocked read or write.
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stop()

	var c *smtp.Client
	if s.opts.Security == SecurityStartTLS {
		c, err = smtp.NewClientStartTLS(conn, s.tlsConfig)
		if err != nil {
			_ = conn.Close()
			return s.classify(ctx, "starttls", err)
		}
	} else {
		c = smtp.NewClient(conn)
	}
	defer func() { _ = c.Close() }()
	c.CommandTimeout = s.opts.Timeout
	c.SubmissionTimeout = max(s.opts.Timeout, 5*time.Minute)

	localName := s.opts.LocalName
	if localName == "" {
		localName = "localhost"
	}
	if err := c.Hello(localName); err != nil {
		return s.classify(ctx, "hello", err)
	}
	if err := s.auth(c); err != nil {
		return s.classify(ctx, "auth", err)
	}
	if err := fn(c); err != nil {
		return s.classify(ctx, "", err)
	}
	// The message is accepted once DATA got its 250; a failing QUIT changes
	// nothing about that, so its error is ignored.
	_ = c.Quit()
	return nil
}

func (s *Sender) dial(ctx context.Context) (net.Conn, error) {
	if s.opts.DialContext != nil {
		ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
		defer cancel()
		conn, err := s.opts.DialContext(ctx, "tcp", s.dialAddrs[0])
		if err != nil || s.opts.Security != SecurityTLS {
			return conn, err
		}
		tc := tls.Client(conn, s.tlsConfig)
		if err := tc.HandshakeContext(ctx); err != nil {
			_ = conn.Close()
			return nil, err
		}
		return tc, nil
	}
	d := &net.Dialer{Timeout: s.opts.Timeout}
	if s.opts.Security == SecurityTLS {
		td := &tls.Dialer{NetDialer: d, Config: s.tlsConfig}
		return td.DialContext(ctx, "tcp", s.addr)
	}
	return netpolicy.DialFirst(ctx, d, s.dialAddrs)
}

// auth authenticates when a username is configured.
func (s *Sender) auth(c *smtp.Client) error {
	o := s.opts
	if o.Username == "" {
		return nil
	}
	if ok, _ := c.Extension("AUTH"); !ok {
		return errors.New("server offers no AUTH (on a plaintext connection a server may only offer it after TLS)")
	}
	var mech sasl.Client
	switch {
	case o.OAuth2Token != "":
		name, err := netpolicy.OAuth2Mechanism(c.SupportsAuth)
		if err != nil {
			return err
		}
		mech = netpolicy.OAuth2Client(name, o.Username, o.OAuth2Token, o.Host, o.Port)
	case c.SupportsAuth(sasl.Plain):
		mech = sasl.NewPlainClient("", o.Username, o.Password)
	case c.SupportsAuth(sasl.Login):
		mech = sasl.NewLoginClient(o.Username, o.Password)
	default:
		return errors.New("server offers neither PLAIN nor LOGIN authentication")
	}
	return c.Auth(mech)
}

// transaction runs MAIL, one RCPT per recipient, and DATA. A refused RCPT
// resets the transaction before anything is delivered.
func (s *Sender) transaction(c *smtp.Client, from string, to []string, raw []byte, beforeData func() error) error {
	opts := &smtp.MailOptions{Size: int64(len(raw))}
	if !isASCII(from) || !allASCII(to) {
		opts.UTF8 = true
	}
	if err := c.Mail(from, opts); err != nil {
		return fmt.Errorf("mail from: %w", err)
	}
	for _, rcpt := range to {
		if err := c.Rcpt(rcpt, nil); err != nil {
			_ = c.Reset() // best effort: the server forgets the accepted recipients
			return fmt.Errorf("rcpt to <%s> refused, nothing sent: %w", rcpt, err)
		}
	}
	if beforeData != nil {
		if err := beforeData(); err != nil {
			_ = c.Reset()
			return fmt.Errorf("before data, nothing sent: %w", err)
		}
	}
	w, err := c.Data()
	if err != nil {
		return fmt.Errorf("data: %w", err)
	}
	if _, err := w.Write(raw); err != nil {
		_ = w.Close()
		return fmt.Errorf("data: write: %w", err)
	}
	if err := w.Close(); err != nil {
		// The final dot went out; without the server's reply nobody
		// knows whether the message was accepted.
		var reply *smtp.SMTPError
		if !errors.As(err, &reply) {
			return fmt.Errorf("data: %w: %w", ErrMaybeDelivered, err)
		}
		return fmt.Errorf("data: %w", err)
	}
	return nil
}

// classify turns err into the error Send returns: ctx's error when the
// context ended, else a *SendError with secrets removed.
func (s *Sender) classify(ctx context.Context, op string, err error) error {
	if op != "" {
		err = fmt.Errorf("%s: %w", op, err)
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		if errors.Is(err, ErrMaybeDelivered) {
			return &SendError{Err: fmt.Errorf("%w (%s)", ctxErr, s.redact(err.Error())), MaybeDelivered: true}
		}
		return fmt.Errorf("%w (%s)", ctxErr, s.redact(err.Error()))
	}
	se := &SendError{Err: s.redactErr(err), MaybeDelivered: errors.Is(err, ErrMaybeDelivered)}
	var smtpErr *smtp.SMTPError
	var netErr net.Error
	var certErr *tls.CertificateVerificationError
	var unknownAuth x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var invalidCert x509.CertificateInvalidError
	var bearerErr *sasl.OAuthBearerError
	switch {
	case errors.As(err, &bearerErr):
		// OAUTHBEARER's failure arrives as a challenge (RFC 7628 §3.2.2),
		// which go-sasl turns into this error before any 535 reply.
		se.Err = fmt.Errorf("%w: %w", ErrAuth, se.Err)
	case errors.As(err, &smtpErr):
		se.Code = smtpErr.Code
		se.Temporary = smtpErr.Code/100 == 4
		if smtpErr.Code == 535 {
			se.Err = fmt.Errorf("%w: %w", ErrAuth, se.Err)
		}
	case errors.As(err, &certErr), errors.As(err, &unknownAuth), errors.As(err, &hostErr), errors.As(err, &invalidCert):
		se.Temporary = false
	case se.MaybeDelivered:
		se.Temporary = false // retrying could deliver it twice
	case errors.As(err, &netErr), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed):
		se.Temporary = true
	}
	return se
}

// redactErr returns err with any secret replaced. An error carrying a secret
// (only possible if a hostile server echoes it back) loses its chain except
// for the SMTP reply code.
func (s *Sender) redactErr(err error) error {
	msg := err.Error()
	clean := s.redact(msg)
	if clean == msg {
		return err
	}
	var smtpErr *smtp.SMTPError
	if errors.As(err, &smtpErr) {
		return fmt.Errorf("%s: %w", clean, &smtp.SMTPError{Code: smtpErr.Code, EnhancedCode: smtpErr.EnhancedCode, Message: "[redacted]"})
	}
	return errors.New(clean)
}

func (s *Sender) redact(msg string) string {
	for _, secret := range s.secrets {
		msg = strings.ReplaceAll(msg, secret, "[redacted]")
	}
	return msg
}

func checkEnvelope(from string, to []string) error {
	if strings.ContainsAny(from, "\r\n<> ") {
		return fmt.Errorf("smtp send: malformed envelope sender %q", from)
	}
	if len(to) == 0 {
		return fmt.Errorf("smtp send: no recipients")
	}
	for _, r := range to {
		if r == "" || strings.ContainsAny(r, "\r\n<> ") || !strings.Contains(r, "@") {
			return fmt.Errorf("smtp send: malformed recipient %q", r)
		}
	}
	return nil
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

func allASCII(l []string) bool {
	for _, s := range l {
		if !isASCII(s) {
			return false
		}
	}
	return true
}
