// Package smtptest provides an in-process SMTP sink for tests: a real go-smtp
// server on 127.0.0.1 that records every envelope and message it accepts.
//
// It supports AUTH PLAIN (and XOAUTH2/OAUTHBEARER for tokens), STARTTLS or
// implicit TLS with a generated certificate, scripted failures, and holding a
// command until the test releases it, so tests can wait on events instead of
// sleeping. A Sink is closed by t.Cleanup; all of its goroutines end then.
package smtptest

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// Stage is an SMTP command a failure or hold applies to.
type Stage int

// The stages of a mail transaction.
const (
	StageMail Stage = iota + 1
	StageRcpt
	StageData
)

// SinkOptions configures a Sink. The zero value is a plaintext sink without
// authentication.
type SinkOptions struct {
	// Username and Password, when Username is set, make the sink require
	// AUTH PLAIN before MAIL. Without TLS the sink allows AUTH in clear text
	// (it only listens on loopback).
	Username, Password string
	// OAuth2Token, when set with Username, is accepted through XOAUTH2 and
	// OAUTHBEARER.
	OAuth2Token string
	// AuthMechanisms overrides the advertised mechanisms (default: PLAIN,
	// plus XOAUTH2 and OAUTHBEARER when OAuth2Token is set).
	AuthMechanisms []string
	// TLSCert enables TLS: STARTTLS by default, implicit TLS with
	// ImplicitTLS. NewCert makes one.
	TLSCert *tls.Certificate
	// ImplicitTLS makes the listener speak TLS from the first byte.
	ImplicitTLS bool
	// Listener, when set, is served instead of a new loopback listener
	// (an in-memory one, under testing/synctest); Addr, Host and Port are
	// then its address's.
	Listener net.Listener
}

// Received is one message the sink accepted.
type Received struct {
	From string
	To   []string
	Data []byte
}

// Sink is a running SMTP server that records what it receives. Its methods
// are safe for concurrent use.
type Sink struct {
	// Addr is "127.0.0.1:port"; Host and Port are its parts.
	Addr string
	Host string
	Port int

	opts   SinkOptions
	server *smtp.Server
	done   chan struct{} // closed when the sink shuts down

	mu       sync.Mutex
	msgs     []Received
	changed  chan struct{} // closed and replaced on every new message
	failures map[Stage][]*smtp.SMTPError
	rejects  map[string]*smtp.SMTPError
	holds    map[Stage][]*hold
	attempts int // DATA commands reached, including failed ones
}

type hold struct {
	reached chan struct{}
	release chan struct{}
	once    sync.Once
}

// NewSink starts a sink on 127.0.0.1 with a random port and registers its
// shutdown with t.Cleanup.
func NewSink(t testing.TB, opts SinkOptions) *Sink {
	t.Helper()
	s := &Sink{
		opts:     opts,
		done:     make(chan struct{}),
		changed:  make(chan struct{}),
		failures: map[Stage][]*smtp.SMTPError{},
		rejects:  map[string]*smtp.SMTPError{},
		holds:    map[Stage][]*hold{},
	}
	srv := smtp.NewServer(smtp.BackendFunc(s.newSession))
	srv.Domain = "localhost"
	srv.ErrorLog = log.New(io.Discard, "", 0)
	srv.AllowInsecureAuth = opts.TLSCert == nil
	var ln net.Listener
	var err error
	if opts.TLSCert != nil {
		srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{*opts.TLSCert}, MinVersion: tls.VersionTLS12}
	}
	switch {
	case opts.Listener != nil && opts.TLSCert != nil && opts.ImplicitTLS:
		ln = tls.NewListener(opts.Listener, srv.TLSConfig)
	case opts.Listener != nil:
		ln = opts.Listener
	case opts.TLSCert != nil && opts.ImplicitTLS:
		ln, err = tls.Listen("tcp", "127.0.0.1:0", srv.TLSConfig)
	default:
		ln, err = net.Listen("tcp", "127.0.0.1:0")
	}
	if err != nil {
		t.Fatalf("smtptest: listen: %v", err)
	}
	s.server = srv
	s.Addr = ln.Addr().String()
	host, port, _ := net.SplitHostPort(s.Addr)
	s.Host = host
	s.Port, _ = strconv.Atoi(port)

	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(ln)
	}()
	t.Cleanup(func() {
		close(s.done) // releases held sessions
		_ = srv.Close()
		// Server.Close only closes listeners Serve has registered; if Serve
		// has not started yet, closing ln here is what stops it.
		_ = ln.Close()
		<-served
	})
	return s
}

// Messages returns a copy of the messages accepted so far, in order.
func (s *Sink) Messages() []Received {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Received, len(s.msgs))
	for i, m := range s.msgs {
		out[i] = Received{From: m.From, To: slices.Clone(m.To), Data: slices.Clone(m.Data)}
	}
	return out
}

// DataAttempts returns how many DATA commands reached the sink, including
// ones that failed.
func (s *Sink) DataAttempts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.attempts
}

// WaitFor blocks until at least n messages were accepted or ctx ends.
func (s *Sink) WaitFor(ctx context.Context, n int) error {
	for {
		s.mu.Lock()
		got, ch := len(s.msgs), s.changed
		s.mu.Unlock()
		if got >= n {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("smtptest: waiting for %d messages, have %d: %w", n, got, ctx.Err())
		}
	}
}

// FailNext makes the next n commands at stage fail with the SMTP reply code
// (e.g. 451 temporary, 550 permanent).
func (s *Sink) FailNext(stage Stage, n, code int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range n {
		s.failures[stage] = append(s.failures[stage], replyError(code))
	}
}

// RejectRecipient makes every RCPT for addr (case-insensitive) fail with
// code.
func (s *Sink) RejectRecipient(addr string, code int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rejects[strings.ToLower(addr)] = replyError(code)
}

// Hold makes the next command at stage block before it is answered. reached
// is closed when a session is blocked there; the session continues when
// release is called or the sink shuts down.
func (s *Sink) Hold(stage Stage) (reached <-chan struct{}, release func()) {
	h := &hold{reached: make(chan struct{}), release: make(chan struct{})}
	s.mu.Lock()
	s.holds[stage] = append(s.holds[stage], h)
	s.mu.Unlock()
	return h.reached, func() { h.once.Do(func() { close(h.release) }) }
}

// step applies a pending hold and scripted failure for stage.
func (s *Sink) step(stage Stage) error {
	s.mu.Lock()
	var h *hold
	if l := s.holds[stage]; len(l) > 0 {
		h, s.holds[stage] = l[0], l[1:]
	}
	var fail *smtp.SMTPError
	if l := s.failures[stage]; len(l) > 0 {
		fail, s.failures[stage] = l[0], l[1:]
	}
	s.mu.Unlock()
	if h != nil {
		close(h.reached)
		select {
		case <-h.release:
		case <-s.done:
		}
	}
	if fail != nil {
		return fail
	}
	return nil
}

func replyError(code int) *smtp.SMTPError {
	return &smtp.SMTPError{
		Code:         code,
		EnhancedCode: smtp.EnhancedCode{code / 100, 0, 0},
		Message:      fmt.Sprintf("smtptest scripted failure %d", code),
	}
}

func (s *Sink) newSession(*smtp.Conn) (smtp.Session, error) {
	return &session{sink: s}, nil
}

type session struct {
	sink   *Sink
	authed bool
	from   string
	to     []string
}

var _ smtp.AuthSession = (*session)(nil)

func (ss *session) AuthMechanisms() []string {
	o := ss.sink.opts
	if o.Username == "" {
		return nil
	}
	if o.AuthMechanisms != nil {
		return o.AuthMechanisms
	}
	mechs := []string{sasl.Plain}
	if o.OAuth2Token != "" {
		mechs = append(mechs, "XOAUTH2", sasl.OAuthBearer)
	}
	return mechs
}

func (ss *session) Auth(mech string) (sasl.Server, error) {
	o := ss.sink.opts
	if !slices.Contains(ss.AuthMechanisms(), mech) {
		return nil, smtp.ErrAuthUnknownMechanism
	}
	switch mech {
	case sasl.Plain:
		return sasl.NewPlainServer(func(identity, username, password string) error {
			if username != o.Username || password != o.Password || o.Password == "" || (identity != "" && identity != username) {
				return smtp.ErrAuthFailed
			}
			ss.authed = true
			return nil
		}), nil
	case sasl.OAuthBearer:
		return sasl.NewOAuthBearerServer(func(opts sasl.OAuthBearerOptions) *sasl.OAuthBearerError {
			if opts.Username != o.Username || opts.Token != o.OAuth2Token || o.OAuth2Token == "" {
				return &sasl.OAuthBearerError{Status: "invalid_token"}
			}
			ss.authed = true
			return nil
		}), nil
	case "XOAUTH2":
		return &xoauth2Server{check: func(user, token string) bool {
			ok := user == o.Username && token == o.OAuth2Token && o.OAuth2Token != ""
			ss.authed = ss.authed || ok
			return ok
		}}, nil
	}
	return nil, smtp.ErrAuthUnknownMechanism
}

func (ss *session) Mail(from string, _ *smtp.MailOptions) error {
	if ss.sink.opts.Username != "" && !ss.authed {
		return smtp.ErrAuthRequired
	}
	if err := ss.sink.step(StageMail); err != nil {
		return err
	}
	ss.from, ss.to = from, nil
	return nil
}

func (ss *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	if err := ss.sink.step(StageRcpt); err != nil {
		return err
	}
	ss.sink.mu.Lock()
	rej := ss.sink.rejects[strings.ToLower(to)]
	ss.sink.mu.Unlock()
	if rej != nil {
		return rej
	}
	ss.to = append(ss.to, to)
	return nil
}

func (ss *session) Data(r io.Reader) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	s := ss.sink
	s.mu.Lock()
	s.attempts++
	s.mu.Unlock()
	if err := s.step(StageData); err != nil {
		return err
	}
	s.mu.Lock()
	s.msgs = append(s.msgs, Received{From: ss.from, To: slices.Clone(ss.to), Data: data})
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()
	return nil
}

func (ss *session) Reset() { ss.from, ss.to = "", nil }

func (ss *session) Logout() error { return nil }

// xoauth2Server checks an XOAUTH2 initial response
// ("user=U\x01auth=Bearer T\x01\x01"). go-sasl has no server for it.
type xoauth2Server struct {
	check  func(user, token string) bool
	failed bool
}

func (x *xoauth2Server) Next(response []byte) ([]byte, bool, error) {
	if x.failed {
		// The client acknowledged the error challenge.
		return nil, false, smtp.ErrAuthFailed
	}
	if response == nil {
		return []byte{}, false, nil
	}
	var user, token string
	for _, part := range strings.Split(string(response), "\x01") {
		if v, ok := strings.CutPrefix(part, "user="); ok {
			user = v
		}
		if v, ok := strings.CutPrefix(part, "auth=Bearer "); ok {
			token = v
		}
	}
	if x.check(user, token) {
		return nil, true, nil
	}
	x.failed = true
	return []byte(`{"status":"401","schemes":"bearer"}`), false, nil
}
