package smtpsend_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"testing"

	"github.com/mailagent/mailagent/internal/smtpsend"
	"github.com/mailagent/mailagent/internal/smtpsend/smtptest"
)

const (
	user     = "ada@example.org"
	password = "s3cret-Pa55word"
	token    = "ya29.token-value"
)

var rawMsg = []byte("From: ada@example.org\r\nTo: bob@example.com\r\nSubject: hi\r\n\r\nhello\r\n")

func newSender(t *testing.T, opts smtpsend.Options) *smtpsend.Sender {
	t.Helper()
	s, err := smtpsend.New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return s
}

func plainOpts(sink *smtptest.Sink) smtpsend.Options {
	return smtpsend.Options{Host: sink.Host, Port: sink.Port, Security: "insecure", Username: user, Password: password}
}

func assertDelivered(t *testing.T, sink *smtptest.Sink, to []string) {
	t.Helper()
	msgs := sink.Messages()
	if len(msgs) != 1 {
		t.Fatalf("got %d messages at the sink, want 1", len(msgs))
	}
	m := msgs[0]
	if m.From != user || !slices.Equal(m.To, to) {
		t.Errorf("got envelope from %q to %q, want from %q to %q", m.From, m.To, user, to)
	}
	if !bytes.Equal(m.Data, rawMsg) {
		t.Errorf("got data %q, want %q", m.Data, rawMsg)
	}
}

func sendError(t *testing.T, err error) *smtpsend.SendError {
	t.Helper()
	var se *smtpsend.SendError
	if !errors.As(err, &se) {
		t.Fatalf("got error %v (%T), want a *SendError", err, err)
	}
	return se
}

func TestSendPlaintextLoopbackAuthPlain(t *testing.T) {
	t.Parallel()
	sink := smtptest.NewSink(t, smtptest.SinkOptions{Username: user, Password: password})
	s := newSender(t, plainOpts(sink))
	to := []string{"bob@example.com", "carol@example.net"}
	if err := s.Send(context.Background(), user, to, rawMsg); err != nil {
		t.Fatalf("Send: %v", err)
	}
	assertDelivered(t, sink, to)
}

func TestSendTLS(t *testing.T) {
	t.Parallel()
	cert, caPEM := smtptest.NewCert(t)
	_, otherPEM := smtptest.NewCert(t)
	caFile := smtptest.WriteCAFile(t, caPEM)
	wrongCAFile := smtptest.WriteCAFile(t, otherPEM)

	tests := []struct {
		name     string
		implicit bool
		security string
	}{
		{name: "starttls", security: "starttls"},
		{name: "implicit tls", implicit: true, security: "tls"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sink := smtptest.NewSink(t, smtptest.SinkOptions{Username: user, Password: password, TLSCert: &cert, ImplicitTLS: tt.implicit})
			opts := smtpsend.Options{Host: sink.Host, Port: sink.Port, Security: tt.security, Username: user, Password: password, TLSCAFile: caFile}

			t.Run("trusted ca", func(t *testing.T) {
				s := newSender(t, opts)
				if err := s.Check(context.Background()); err != nil {
					t.Fatalf("Check: %v", err)
				}
				if err := s.Send(context.Background(), user, []string{"bob@example.com"}, rawMsg); err != nil {
					t.Fatalf("Send: %v", err)
				}
				assertDelivered(t, sink, []string{"bob@example.com"})
			})
			t.Run("wrong ca", func(t *testing.T) {
				bad := opts
				bad.TLSCAFile = wrongCAFile
				s := newSender(t, bad)
				err := s.Send(context.Background(), user, []string{"bob@example.com"}, rawMsg)
				se := sendError(t, err)
				if se.Temporary {
					t.Errorf("got temporary for a certificate failure, want permanent: %v", err)
				}
				if n := len(sink.Messages()); n != 1 {
					t.Errorf("got %d messages, want only the earlier 1", n)
				}
				if err := s.Check(context.Background()); err == nil {
					t.Error("Check with the wrong CA: got nil, want an error")
				}
			})
			t.Run("system roots only", func(t *testing.T) {
				bad := opts
				bad.TLSCAFile = ""
				if err := newSender(t, bad).Check(context.Background()); err == nil {
					t.Error("got nil for a self-signed certificate without its CA, want an error")
				}
			})
		})
	}
}

func TestStartTLSRequired(t *testing.T) {
	t.Parallel()
	// A server without STARTTLS must not get the password in clear text.
	sink := smtptest.NewSink(t, smtptest.SinkOptions{Username: user, Password: password})
	_, caPEM := smtptest.NewCert(t)
	s := newSender(t, smtpsend.Options{Host: sink.Host, Port: sink.Port, Security: "starttls", Username: user, Password: password, TLSCAFile: smtptest.WriteCAFile(t, caPEM)})
	err := s.Send(context.Background(), user, []string{"bob@example.com"}, rawMsg)
	if se := sendError(t, err); se.Temporary {
		t.Errorf("got temporary, want permanent: %v", err)
	}
	if n := len(sink.Messages()); n != 0 {
		t.Errorf("got %d messages, want 0", n)
	}
}

func TestAuthFailure(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		opts  smtpsend.Options
		mechs []string // offered by the sink; nil: its default
		code  int      // the reply code; 0 when the failure is not a reply
	}{
		{name: "wrong password", opts: smtpsend.Options{Password: password}, code: 535},
		{name: "wrong xoauth2 token", opts: smtpsend.Options{OAuth2Token: token}, mechs: []string{"XOAUTH2"}, code: 535},
		// OAUTHBEARER reports the failure in a challenge, before any reply.
		{name: "wrong oauthbearer token", opts: smtpsend.Options{OAuth2Token: token}, code: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sink := smtptest.NewSink(t, smtptest.SinkOptions{Username: user, Password: "the-right-one", OAuth2Token: "right-token", AuthMechanisms: tt.mechs})
			opts := tt.opts
			opts.Host, opts.Port, opts.Security, opts.Username = sink.Host, sink.Port, "insecure", user
			s := newSender(t, opts)
			for _, run := range []struct {
				op string
				fn func() error
			}{
				{"send", func() error { return s.Send(context.Background(), user, []string{"bob@example.com"}, rawMsg) }},
				{"check", func() error { return s.Check(context.Background()) }},
			} {
				err := run.fn()
				if !errors.Is(err, smtpsend.ErrAuth) {
					t.Fatalf("%s: got %v, want ErrAuth", run.op, err)
				}
				se := sendError(t, err)
				if se.Code != tt.code || se.Temporary {
					t.Errorf("%s: got code %d temporary %v, want %d permanent", run.op, se.Code, se.Temporary, tt.code)
				}
				for _, secret := range []string{password, token} {
					if strings.Contains(err.Error(), secret) {
						t.Errorf("%s: got error %q containing the secret", run.op, err)
					}
				}
			}
			if n := len(sink.Messages()); n != 0 {
				t.Errorf("got %d messages, want 0", n)
			}
		})
	}
}

func TestOAuth2(t *testing.T) {
	t.Parallel()
	for _, mech := range []string{"XOAUTH2", "OAUTHBEARER"} {
		t.Run(mech, func(t *testing.T) {
			sink := smtptest.NewSink(t, smtptest.SinkOptions{Username: user, OAuth2Token: token, AuthMechanisms: []string{mech}})
			s := newSender(t, smtpsend.Options{Host: sink.Host, Port: sink.Port, Security: "insecure", Username: user, OAuth2Token: token})
			if err := s.Send(context.Background(), user, []string{"bob@example.com"}, rawMsg); err != nil {
				t.Fatalf("Send: %v", err)
			}
			assertDelivered(t, sink, []string{"bob@example.com"})
		})
	}
}

func TestNoAuthAgainstAuthServer(t *testing.T) {
	t.Parallel()
	sink := smtptest.NewSink(t, smtptest.SinkOptions{Username: user, Password: password})
	s := newSender(t, smtpsend.Options{Host: sink.Host, Port: sink.Port, Security: "insecure"})
	err := s.Send(context.Background(), user, []string{"bob@example.com"}, rawMsg)
	if se := sendError(t, err); se.Temporary || se.Code/100 != 5 {
		t.Errorf("got code %d temporary %v, want a permanent 5xx: %v", se.Code, se.Temporary, err)
	}
}

func TestReplyClassification(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		stage         smtptest.Stage
		code          int
		wantTemporary bool
	}{
		{name: "451 at data", stage: smtptest.StageData, code: 451, wantTemporary: true},
		{name: "550 at data", stage: smtptest.StageData, code: 550, wantTemporary: false},
		{name: "421 at mail", stage: smtptest.StageMail, code: 421, wantTemporary: true},
		{name: "553 at mail", stage: smtptest.StageMail, code: 553, wantTemporary: false},
		{name: "452 at rcpt", stage: smtptest.StageRcpt, code: 452, wantTemporary: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sink := smtptest.NewSink(t, smtptest.SinkOptions{})
			s := newSender(t, smtpsend.Options{Host: sink.Host, Port: sink.Port, Security: "insecure"})
			sink.FailNext(tt.stage, 1, tt.code)
			err := s.Send(context.Background(), user, []string{"bob@example.com"}, rawMsg)
			se := sendError(t, err)
			if se.Code != tt.code || se.Temporary != tt.wantTemporary {
				t.Errorf("got code %d temporary %v, want code %d temporary %v", se.Code, se.Temporary, tt.code, tt.wantTemporary)
			}
			if errors.Is(err, smtpsend.ErrAuth) {
				t.Errorf("got ErrAuth for %d, want not", tt.code)
			}
			if n := len(sink.Messages()); n != 0 {
				t.Fatalf("got %d messages after a failure, want 0", n)
			}
			// The failure was scripted once: the retry goes through.
			if err := s.Send(context.Background(), user, []string{"bob@example.com"}, rawMsg); err != nil {
				t.Fatalf("retry: %v", err)
			}
			if n := len(sink.Messages()); n != 1 {
				t.Errorf("got %d messages after the retry, want 1", n)
			}
		})
	}
}

func TestRejectedRecipientSendsNothing(t *testing.T) {
	t.Parallel()
	sink := smtptest.NewSink(t, smtptest.SinkOptions{})
	sink.RejectRecipient("nobody@example.com", 550)
	s := newSender(t, smtpsend.Options{Host: sink.Host, Port: sink.Port, Security: "insecure"})

	err := s.Send(context.Background(), user, []string{"bob@example.com", "nobody@example.com", "carol@example.com"}, rawMsg)
	se := sendError(t, err)
	if se.Code != 550 || se.Temporary {
		t.Errorf("got code %d temporary %v, want 550 permanent", se.Code, se.Temporary)
	}
	if !strings.Contains(err.Error(), "nobody@example.com") {
		t.Errorf("got %q, want the refused recipient named", err)
	}
	if n := sink.DataAttempts(); n != 0 {
		t.Errorf("got %d DATA commands, want 0", n)
	}
	if n := len(sink.Messages()); n != 0 {
		t.Errorf("got %d messages, want 0", n)
	}
}

func TestCancelMidSend(t *testing.T) {
	t.Parallel()
	sink := smtptest.NewSink(t, smtptest.SinkOptions{})
	s := newSender(t, smtpsend.Options{Host: sink.Host, Port: sink.Port, Security: "insecure"})
	reached, release := sink.Hold(smtptest.StageRcpt)
	defer release()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- s.Send(ctx, user, []string{"bob@example.com"}, rawMsg) }()

	<-reached
	cancel()
	err := <-errc
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	release()
	if n := sink.DataAttempts(); n != 0 {
		t.Errorf("got %d DATA commands after cancel, want 0", n)
	}
}

func TestCancelledBeforeSend(t *testing.T) {
	t.Parallel()
	sink := smtptest.NewSink(t, smtptest.SinkOptions{})
	s := newSender(t, smtpsend.Options{Host: sink.Host, Port: sink.Port, Security: "insecure"})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Send(ctx, user, []string{"bob@example.com"}, rawMsg); !errors.Is(err, context.Canceled) {
		t.Errorf("got %v, want context.Canceled", err)
	}
}

func TestConnectionRefusedIsTemporary(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	_ = ln.Close()
	s := newSender(t, smtpsend.Options{Host: "127.0.0.1", Port: port, Security: "insecure", Username: user, Password: password})
	err = s.Send(context.Background(), user, []string{"bob@example.com"}, rawMsg)
	se := sendError(t, err)
	if !se.Temporary || se.Code != 0 {
		t.Errorf("got code %d temporary %v, want code 0 temporary: %v", se.Code, se.Temporary, err)
	}
	if strings.Contains(err.Error(), password) {
		t.Errorf("got error %q containing the password", err)
	}
}

func TestNewValidation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		opts smtpsend.Options
		want error // nil means New succeeds
	}{
		{name: "insecure ipv4 loopback", opts: smtpsend.Options{Host: "127.0.0.1", Security: "insecure"}},
		{name: "insecure other 127/8", opts: smtpsend.Options{Host: "127.0.0.2", Security: "insecure"}},
		{name: "insecure ipv6 loopback", opts: smtpsend.Options{Host: "::1", Security: "insecure"}},
		{name: "insecure localhost", opts: smtpsend.Options{Host: "LocalHost", Security: "insecure"}},
		{name: "insecure remote name", opts: smtpsend.Options{Host: "smtp.example.com", Security: "insecure"}, want: smtpsend.ErrPlaintextNotLoopback},
		{name: "insecure private ip", opts: smtpsend.Options{Host: "10.0.0.1", Security: "insecure"}, want: smtpsend.ErrPlaintextNotLoopback},
		{name: "insecure lookalike", opts: smtpsend.Options{Host: "127.0.0.1.nip.io", Security: "insecure"}, want: smtpsend.ErrPlaintextNotLoopback},
		{name: "insecure any address", opts: smtpsend.Options{Host: "0.0.0.0", Security: "insecure"}, want: smtpsend.ErrPlaintextNotLoopback},
		{name: "tls remote", opts: smtpsend.Options{Host: "smtp.example.com", Security: "tls"}},
		{name: "default security", opts: smtpsend.Options{Host: "smtp.example.com"}},
		{name: "starttls", opts: smtpsend.Options{Host: "smtp.example.com", Security: "STARTTLS"}},
		{name: "unknown security", opts: smtpsend.Options{Host: "smtp.example.com", Security: "ssl3"}, want: smtpsend.ErrInvalidOptions},
		{name: "empty host", opts: smtpsend.Options{Security: "tls"}, want: smtpsend.ErrInvalidOptions},
		{name: "bad port", opts: smtpsend.Options{Host: "smtp.example.com", Port: 70000}, want: smtpsend.ErrInvalidOptions},
		{name: "password without user", opts: smtpsend.Options{Host: "smtp.example.com", Password: password}, want: smtpsend.ErrInvalidOptions},
		{name: "missing ca file", opts: smtpsend.Options{Host: "smtp.example.com", TLSCAFile: "/nonexistent/ca.pem"}, want: smtpsend.ErrInvalidOptions},
		{name: "local name with newline", opts: smtpsend.Options{Host: "smtp.example.com", LocalName: "a\r\nMAIL"}, want: smtpsend.ErrInvalidOptions},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.Password = password
			if tt.opts.Username == "" && tt.name != "password without user" {
				tt.opts.Username = user
			}
			s, err := smtpsend.New(tt.opts)
			if tt.want == nil {
				if err != nil || s == nil {
					t.Fatalf("got %v, want a Sender", err)
				}
				return
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
			if strings.Contains(err.Error(), password) {
				t.Errorf("got error %q containing the password", err)
			}
		})
	}
}

func TestCAFileWithoutCertificate(t *testing.T) {
	t.Parallel()
	f := smtptest.WriteCAFile(t, []byte("not a pem"))
	if _, err := smtpsend.New(smtpsend.Options{Host: "smtp.example.com", TLSCAFile: f}); !errors.Is(err, smtpsend.ErrInvalidOptions) {
		t.Errorf("got %v, want ErrInvalidOptions", err)
	}
}

func TestEnvelopeValidation(t *testing.T) {
	t.Parallel()
	sink := smtptest.NewSink(t, smtptest.SinkOptions{})
	s := newSender(t, smtpsend.Options{Host: sink.Host, Port: sink.Port, Security: "insecure"})
	tests := []struct {
		name string
		from string
		to   []string
		raw  []byte
	}{
		{name: "no recipients", from: user, raw: rawMsg},
		{name: "injected recipient", from: user, to: []string{"bob@example.com>\r\nRCPT TO:<evil@x.com"}, raw: rawMsg},
		{name: "injected sender", from: "a@x\r\nRSET", to: []string{"bob@example.com"}, raw: rawMsg},
		{name: "empty recipient", from: user, to: []string{""}, raw: rawMsg},
		{name: "empty message", from: user, to: []string{"bob@example.com"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := s.Send(context.Background(), tt.from, tt.to, tt.raw); err == nil {
				t.Error("got nil, want an error")
			}
		})
	}
	if n := len(sink.Messages()); n != 0 {
		t.Errorf("got %d messages, want 0", n)
	}
}

func TestCancelAfterDataIsMaybeDelivered(t *testing.T) {
	t.Parallel()
	sink := smtptest.NewSink(t, smtptest.SinkOptions{})
	s := newSender(t, smtpsend.Options{Host: sink.Host, Port: sink.Port, Security: "insecure"})
	// The sink has read the whole message (the final dot) and holds its
	// reply: whatever happens now, the message may have been accepted.
	reached, release := sink.Hold(smtptest.StageData)
	defer release()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- s.Send(ctx, user, []string{"bob@example.com"}, rawMsg) }()
	<-reached
	cancel()
	err := <-errc
	var se *smtpsend.SendError
	if !errors.As(err, &se) || !se.MaybeDelivered || se.Temporary {
		t.Fatalf("got %#v, want a SendError with MaybeDelivered and not Temporary", err)
	}
	if !errors.Is(err, context.Canceled) {
		t.Errorf("got %v, want it to wrap context.Canceled too", err)
	}
}

// Options.DialContext makes the connection in place of the TCP dial (the
// address it is given is ignored here: nothing listens on port 9), and
// every security mode, certificate checks included, works over it.
func TestDialContext(t *testing.T) {
	t.Parallel()
	cert, caPEM := smtptest.NewCert(t)
	_, otherPEM := smtptest.NewCert(t)
	caFile := smtptest.WriteCAFile(t, caPEM)
	wrongCAFile := smtptest.WriteCAFile(t, otherPEM)
	for _, security := range []string{"insecure", "starttls", "tls"} {
		t.Run(security, func(t *testing.T) {
			t.Parallel()
			so := smtptest.SinkOptions{Username: user, Password: password}
			if security != "insecure" {
				so.TLSCert, so.ImplicitTLS = &cert, security == "tls"
			}
			sink := smtptest.NewSink(t, so)
			dials := 0
			opts := smtpsend.Options{Host: "127.0.0.1", Port: 9, Security: security, Username: user, Password: password, TLSCAFile: caFile,
				DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
					dials++
					var d net.Dialer
					return d.DialContext(ctx, network, sink.Addr)
				}}
			if err := newSender(t, opts).Send(context.Background(), user, []string{"bob@example.com"}, rawMsg); err != nil {
				t.Fatalf("Send: %v", err)
			}
			assertDelivered(t, sink, []string{"bob@example.com"})
			if dials != 1 {
				t.Errorf("DialContext called %d times, want 1", dials)
			}
			if security == "insecure" {
				return
			}
			opts.TLSCAFile = wrongCAFile
			if err := newSender(t, opts).Check(context.Background()); err == nil {
				t.Error("Check with the wrong CA over DialContext: got nil, want an error")
			}
		})
	}
}
