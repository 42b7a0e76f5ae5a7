package imapsync

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapserver"
	"github.com/emersion/go-imap/v2/imapserver/imapmemserver"
	"github.com/emersion/go-sasl"
)

const (
	testUser     = "alice@example.org"
	testPassword = "s3cret-Pa55word"
	testToken    = "ya29.oauth-token-value"
)

// serverConfig describes one fake IMAP server (go-imap's imapmemserver
// behind a real imapserver, speaking the real protocol on 127.0.0.1).
type serverConfig struct {
	tls        string      // "", "implicit" or "starttls"
	caps       imap.CapSet // nil: defaultCaps
	noInsecure bool        // refuse authentication on plaintext (LOGINDISABLED)
	mechs      []string    // SASL mechanisms offered; nil: PLAIN
	// listing, when set, replaces LIST results; special-use attributes are
	// included only when the client asks with RETURN (SPECIAL-USE).
	listing []imap.ListData
	// delim is the separator LIST reports with listing ('/' when 0), and
	// namespace, when set, answers NAMESPACE (a Courier-style server:
	// personal prefix "INBOX.", separator '.').
	delim     rune
	namespace *imap.NamespaceData
	// refuseUse makes CREATE with a USE list fail ([USEATTR]), as a
	// server that allows one \Sent folder does.
	refuseUse bool
}

func defaultCaps() imap.CapSet {
	return imap.CapSet{imap.CapIMAP4rev1: {}, imap.CapUIDPlus: {}, imap.CapMove: {}, imap.CapNamespace: {}}
}

type testServer struct {
	t     *testing.T
	cfg   serverConfig
	mem   *imapmemserver.Server
	user  *imapmemserver.User
	addr  string
	port  int
	caPEM string // path of the CA certificate file (TLS servers)
	cert  tls.Certificate

	mu           sync.Mutex
	srv          *imapserver.Server
	ln           net.Listener
	serveDone    chan struct{}
	fetchGate    chan struct{} // when set, Fetch blocks until it is closed
	fetchEntered chan struct{}
	// fetchErr and loginErr, when set, are asked before each FETCH and
	// LOGIN: a non-nil answer is sent to the client instead (fault
	// injection: NO [UNAVAILABLE] and the like).
	fetchErr func() error
	loginErr func() error
	created  []createCall // every CREATE received, in order
	// fetchSetErr, when set, sees each FETCH's number set and may refuse it.
	fetchSetErr func(imap.NumSet) error
	// storeErr, when set, is asked before each STORE (move_test.go).
	storeErr func() error
}

func (s *testSession) Store(w *imapserver.FetchWriter, numSet imap.NumSet, flags *imap.StoreFlags, options *imap.StoreOptions) error {
	s.ts.mu.Lock()
	inject := s.ts.storeErr
	s.ts.mu.Unlock()
	if inject != nil {
		if err := inject(); err != nil {
			return err
		}
	}
	return s.SessionIMAP4rev2.Store(w, numSet, flags, options)
}

// injectFetch and injectLogin set the fault hooks (see testServer).
func (ts *testServer) injectFetch(f func() error) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.fetchErr = f
}

func (ts *testServer) injectLogin(f func() error) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.loginErr = f
}

// failTimes returns a hook that answers err the first n times, then nil.
func failTimes(n int, err error) func() error {
	var mu sync.Mutex
	return func() error {
		mu.Lock()
		defer mu.Unlock()
		if n <= 0 {
			return nil
		}
		n--
		return err
	}
}

func startServer(t *testing.T, cfg serverConfig) *testServer {
	t.Helper()
	ts := &testServer{t: t, cfg: cfg, mem: imapmemserver.New()}
	ts.user = imapmemserver.NewUser(testUser, testPassword)
	ts.mem.AddUser(ts.user)
	if err := ts.user.Create("INBOX", nil); err != nil {
		t.Fatalf("create INBOX: %v", err)
	}
	if cfg.tls != "" {
		ts.caPEM, ts.cert = makeCert(t)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	ts.addr = ln.Addr().String()
	ts.port = ln.Addr().(*net.TCPAddr).Port
	ts.serve(ln)
	t.Cleanup(ts.stop)
	return ts
}

func (ts *testServer) serve(ln net.Listener) {
	caps := ts.cfg.caps
	if caps == nil {
		caps = defaultCaps()
	}
	var tlsCfg *tls.Config
	if ts.cfg.tls != "" {
		tlsCfg = &tls.Config{Certificates: []tls.Certificate{ts.cert}}
	}
	if ts.cfg.tls == "implicit" {
		ln = tls.NewListener(ln, tlsCfg)
	}
	srv := imapserver.New(&imapserver.Options{
		NewSession: func(*imapserver.Conn) (imapserver.Session, *imapserver.GreetingData, error) {
			inner := ts.mem.NewSession().(imapserver.SessionIMAP4rev2)
			return &testSession{SessionIMAP4rev2: inner, ts: ts}, nil, nil
		},
		Caps:         caps,
		TLSConfig:    tlsCfg,
		InsecureAuth: !ts.cfg.noInsecure,
		Logger:       discardLogger{},
	})
	done := make(chan struct{})
	ts.mu.Lock()
	ts.srv, ts.ln, ts.serveDone = srv, ln, done
	ts.mu.Unlock()
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
}

// stop closes the listener and every connection.
func (ts *testServer) stop() {
	ts.mu.Lock()
	srv, ln, done := ts.srv, ts.ln, ts.serveDone
	ts.srv, ts.ln = nil, nil
	if ts.fetchGate != nil {
		select {
		case <-ts.fetchGate:
		default:
			close(ts.fetchGate)
		}
	}
	ts.mu.Unlock()
	if srv != nil {
		// imapserver.Close misses a listener whose Serve has not started
		// yet, so close it here too.
		_ = srv.Close()
		_ = ln.Close()
		<-done
	}
}

// restart kills the server with all its connections and starts a new one
// on the same port with the same mailboxes.
func (ts *testServer) restart() {
	ts.t.Helper()
	ts.stop()
	var ln net.Listener
	var err error
	for i := 0; i < 50; i++ {
		if ln, err = net.Listen("tcp", ts.addr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond) // port release is asynchronous
	}
	if err != nil {
		ts.t.Fatalf("relisten on %s: %v", ts.addr, err)
	}
	ts.serve(ln)
}

// options returns client options for this server.
func (ts *testServer) options() Options {
	o := Options{Host: "127.0.0.1", Port: ts.port, Username: testUser, Password: testPassword, Account: "work"}
	switch ts.cfg.tls {
	case "implicit":
		o.Security, o.TLSCAFile = SecurityTLS, ts.caPEM
	case "starttls":
		o.Security, o.TLSCAFile = SecurityStartTLS, ts.caPEM
	default:
		o.Security = SecurityInsecure
	}
	return o
}

func (ts *testServer) dial(t *testing.T) *Client {
	t.Helper()
	c, err := Dial(context.Background(), ts.options())
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// add appends a message straight into the backend.
func (ts *testServer) add(t *testing.T, mailbox string, raw []byte, date time.Time, flags ...imap.Flag) uint32 {
	t.Helper()
	data, err := ts.user.Append(mailbox, literal{bytes.NewReader(raw), int64(len(raw))}, &imap.AppendOptions{Time: date, Flags: flags})
	if err != nil {
		t.Fatalf("append to %s: %v", mailbox, err)
	}
	return uint32(data.UID)
}

func (ts *testServer) createMailbox(t *testing.T, name string) {
	t.Helper()
	if err := ts.user.Create(name, nil); err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
}

// gateFetch makes the server's next FETCH block until the test ends; the
// returned channel is closed when a FETCH has reached the server.
func (ts *testServer) gateFetch() <-chan struct{} {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.fetchGate = make(chan struct{})
	ts.fetchEntered = make(chan struct{})
	return ts.fetchEntered
}

type literal struct {
	*bytes.Reader
	n int64
}

func (l literal) Size() int64 { return l.n }

type discardLogger struct{}

func (discardLogger) Printf(string, ...any) {}

// testSession wraps imapmemserver's session to add what it lacks: SASL
// mechanisms, special-use LIST attributes and a FETCH that can be held.
type testSession struct {
	imapserver.SessionIMAP4rev2
	ts *testServer
}

func (s *testSession) List(w *imapserver.ListWriter, ref string, patterns []string, options *imap.ListOptions) error {
	if s.ts.cfg.listing == nil {
		return s.SessionIMAP4rev2.List(w, ref, patterns, options)
	}
	for _, d := range s.ts.cfg.listing {
		d := d
		if !options.ReturnSpecialUse {
			var attrs []imap.MailboxAttr
			for _, a := range d.Attrs {
				if !strings.HasPrefix(string(a), `\`) || a == imap.MailboxAttrNoSelect || a == imap.MailboxAttrHasChildren || a == imap.MailboxAttrHasNoChildren {
					attrs = append(attrs, a)
				}
			}
			d.Attrs = attrs
		}
		d.Delim = '/'
		if s.ts.cfg.delim != 0 {
			d.Delim = s.ts.cfg.delim
		}
		if err := w.WriteList(&d); err != nil {
			return err
		}
	}
	return nil
}

// createCall is one CREATE the test server received.
type createCall struct {
	name string
	use  []imap.MailboxAttr
}

func (s *testSession) Create(name string, options *imap.CreateOptions) error {
	var use []imap.MailboxAttr
	if options != nil {
		use = options.SpecialUse
	}
	s.ts.mu.Lock()
	s.ts.created = append(s.ts.created, createCall{name: name, use: use})
	s.ts.mu.Unlock()
	if len(use) > 0 && s.ts.cfg.refuseUse {
		return &imap.Error{Type: imap.StatusResponseTypeNo, Code: "USEATTR", Text: "one \\Sent folder only"}
	}
	return s.SessionIMAP4rev2.Create(name, options)
}

func (s *testSession) Namespace() (*imap.NamespaceData, error) {
	if s.ts.cfg.namespace != nil {
		return s.ts.cfg.namespace, nil
	}
	return s.SessionIMAP4rev2.Namespace()
}

func (s *testSession) Fetch(w *imapserver.FetchWriter, numSet imap.NumSet, options *imap.FetchOptions) error {
	s.ts.mu.Lock()
	gate, entered, inject, injectSet := s.ts.fetchGate, s.ts.fetchEntered, s.ts.fetchErr, s.ts.fetchSetErr
	s.ts.mu.Unlock()
	if inject != nil {
		if err := inject(); err != nil {
			return err
		}
	}
	if injectSet != nil {
		if err := injectSet(numSet); err != nil {
			return err
		}
	}
	if gate != nil {
		select {
		case <-entered:
		default:
			close(entered)
		}
		<-gate
	}
	return s.SessionIMAP4rev2.Fetch(w, numSet, options)
}

func (s *testSession) Login(username, password string) error {
	s.ts.mu.Lock()
	inject := s.ts.loginErr
	s.ts.mu.Unlock()
	if inject != nil {
		if err := inject(); err != nil {
			return err
		}
	}
	return s.SessionIMAP4rev2.Login(username, password)
}

func (s *testSession) AuthenticateMechanisms() []string {
	if s.ts.cfg.mechs == nil {
		return []string{"PLAIN"}
	}
	return s.ts.cfg.mechs
}

func (s *testSession) Authenticate(mech string) (sasl.Server, error) {
	switch mech {
	case "PLAIN":
		return sasl.NewPlainServer(func(_, username, password string) error {
			return s.Login(username, password)
		}), nil
	case "OAUTHBEARER":
		return sasl.NewOAuthBearerServer(func(o sasl.OAuthBearerOptions) *sasl.OAuthBearerError {
			if o.Token != testToken || s.Login(o.Username, testPassword) != nil {
				return &sasl.OAuthBearerError{Status: "invalid_token", Schemes: "bearer"}
			}
			return nil
		}), nil
	case "XOAUTH2":
		return &xoauth2Server{login: func(user, token string) error {
			if token != testToken {
				return errors.New("invalid token")
			}
			return s.Login(user, testPassword)
		}}, nil
	}
	return nil, &imap.Error{Type: imap.StatusResponseTypeNo, Text: "unsupported mechanism"}
}

// xoauth2Server is the server half of XOAUTH2, as Gmail behaves: a bad
// token gets a JSON challenge, then the command fails.
type xoauth2Server struct {
	login  func(user, token string) error
	failed error
}

func (x *xoauth2Server) Next(resp []byte) ([]byte, bool, error) {
	if x.failed != nil {
		return nil, true, &imap.Error{Type: imap.StatusResponseTypeNo, Code: imap.ResponseCodeAuthenticationFailed, Text: "Invalid credentials"}
	}
	var user, token string
	for _, kv := range strings.Split(string(resp), "\x01") {
		if v, ok := strings.CutPrefix(kv, "user="); ok {
			user = v
		}
		if v, ok := strings.CutPrefix(kv, "auth=Bearer "); ok {
			token = v
		}
	}
	if err := x.login(user, token); err != nil {
		x.failed = err
		return []byte(`{"status":"401"}`), false, nil
	}
	return nil, true, nil
}

// makeCert writes a self-signed CA certificate for 127.0.0.1 and
// localhost, and returns its PEM path and the server key pair.
func makeCert(t *testing.T) (string, tls.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("generate key: %v", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: "imapsync test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		DNSNames:              []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatalf("create certificate: %v", err)
	}
	path := filepath.Join(t.TempDir(), fmt.Sprintf("ca-%d.pem", tmpl.SerialNumber))
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatalf("write CA: %v", err)
	}
	return path, tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// textMessage builds a small RFC 5322 message.
func textMessage(subject, msgID, body string) []byte {
	return []byte("From: Bob <bob@example.com>\r\n" +
		"To: Alice <alice@example.org>\r\n" +
		"Subject: " + subject + "\r\n" +
		"Message-ID: " + msgID + "\r\n" +
		"Date: Mon, 02 Jan 2023 15:04:05 +0000\r\n" +
		"MIME-Version: 1.0\r\n" +
		"Content-Type: text/plain; charset=utf-8\r\n" +
		"\r\n" + body + "\r\n")
}

// traceBuffer is a concurrency-safe Debug writer.
type traceBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *traceBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *traceBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Idle polls the mailbox instead of using imapmemserver's IDLE, which
// only reports changes made after its IDLE began: a message appended
// between the client's last command and its IDLE would go unreported
// until the next change. Real servers (Dovecot) report it.
func (s *testSession) Idle(w *imapserver.UpdateWriter, stop <-chan struct{}) error {
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		if err := s.Poll(w, true); err != nil {
			return err
		}
		select {
		case <-stop:
			return nil
		case <-tick.C:
		}
	}
}

func (b *traceBuffer) Reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Reset()
}
