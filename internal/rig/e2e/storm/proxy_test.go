package storm

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mailagent/mailagent/internal/smtpsend/smtptest"
)

// flappingSMTP is a fault-injecting SMTP front for the stack's Postfix.
// While it is down, every connection is answered by the front itself: a
// real greeting, EHLO, STARTTLS (with its own certificate) and then a
// transient "454 4.7.0" to every AUTH and MAIL, as a submission server
// whose authentication backend is briefly unavailable answers. Once
// recovered, every new connection is a byte-for-byte TCP relay to Postfix
// (and its milters), and the connections still talking to the front are
// cut.
type flappingSMTP struct {
	ln      net.Listener
	backend string
	tlsCfg  *tls.Config

	mu          sync.Mutex
	down        bool
	refused     int       // AUTH and MAIL commands answered 454
	firstRefuse time.Time // the first 454
	recoveredAt time.Time
	fronts      map[net.Conn]struct{}
	relayed     int // connections relayed to Postfix

	wg sync.WaitGroup
}

// newFlappingSMTP listens on 127.0.0.1 and starts down. cert is the
// front's certificate for STARTTLS (the client must trust it as well as
// Postfix's). The listener closes when the test ends.
func newFlappingSMTP(t *testing.T, backend string, cert tls.Certificate) *flappingSMTP {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &flappingSMTP{
		ln: ln, backend: backend, down: true,
		tlsCfg: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
		fronts: map[net.Conn]struct{}{},
	}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(func() {
		_ = ln.Close()
		p.mu.Lock()
		for c := range p.fronts {
			_ = c.Close()
		}
		p.mu.Unlock()
		p.wg.Wait()
	})
	return p
}

func (p *flappingSMTP) port() int { return p.ln.Addr().(*net.TCPAddr).Port }

// recover lets every later connection through to Postfix and cuts the
// ones the front is still answering. It returns the time it did so.
func (p *flappingSMTP) recover() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = false
	p.recoveredAt = time.Now()
	for c := range p.fronts {
		_ = c.Close()
	}
	return p.recoveredAt
}

// stats reports how many commands got a 454, when the first did, and how
// many connections were relayed.
func (p *flappingSMTP) stats() (refused int, first time.Time, relayed int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.refused, p.firstRefuse, p.relayed
}

func (p *flappingSMTP) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		down := p.down
		if down {
			p.fronts[c] = struct{}{}
		} else {
			p.relayed++
		}
		p.mu.Unlock()
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			if down {
				p.front(c)
				p.mu.Lock()
				delete(p.fronts, c)
				p.mu.Unlock()
				_ = c.Close()
				return
			}
			p.relay(c)
		}()
	}
}

// relay copies bytes both ways between c and Postfix until either side
// closes.
func (p *flappingSMTP) relay(c net.Conn) {
	defer func() { _ = c.Close() }()
	b, err := net.DialTimeout("tcp", p.backend, 10*time.Second)
	if err != nil {
		return
	}
	defer func() { _ = b.Close() }()
	done := make(chan struct{}, 2)
	cp := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		if tc, ok := dst.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		done <- struct{}{}
	}
	go cp(b, c)
	go cp(c, b)
	<-done
	<-done
}

// front speaks just enough SMTP for a client to reach AUTH, and refuses
// AUTH and MAIL with a transient 454.
func (p *flappingSMTP) front(c net.Conn) {
	_ = c.SetDeadline(time.Now().Add(time.Minute))
	var conn net.Conn = c
	r := bufio.NewReader(conn)
	w := func(s string) bool {
		_, err := io.WriteString(conn, s)
		return err == nil
	}
	if !w("220 storm.example.test ESMTP fault front\r\n") {
		return
	}
	secure := false
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		verb := strings.ToUpper(strings.Fields(strings.TrimSpace(line) + " x")[0])
		var ok bool
		switch verb {
		case "EHLO", "HELO":
			if secure {
				ok = w("250-storm.example.test\r\n250-PIPELINING\r\n250-8BITMIME\r\n250-ENHANCEDSTATUSCODES\r\n250 AUTH PLAIN LOGIN\r\n")
			} else {
				ok = w("250-storm.example.test\r\n250-PIPELINING\r\n250-8BITMIME\r\n250-ENHANCEDSTATUSCODES\r\n250 STARTTLS\r\n")
			}
		case "STARTTLS":
			if secure || !w("220 2.0.0 Ready to start TLS\r\n") {
				return
			}
			tc := tls.Server(c, p.tlsCfg)
			if err := tc.Handshake(); err != nil {
				return
			}
			conn, r, secure, ok = tc, bufio.NewReader(tc), true, true
		case "AUTH", "MAIL":
			p.mu.Lock()
			p.refused++
			if p.firstRefuse.IsZero() {
				p.firstRefuse = time.Now()
			}
			p.mu.Unlock()
			ok = w("454 4.7.0 Temporary authentication failure (storm)\r\n")
		case "RSET", "NOOP":
			ok = w("250 2.0.0 OK\r\n")
		case "QUIT":
			_ = w("221 2.0.0 Bye\r\n")
			return
		default:
			ok = w("502 5.5.2 Command not recognized\r\n")
		}
		if !ok {
			return
		}
	}
}

// authReply plays a client against the front by hand: greeting, EHLO,
// STARTTLS (verified with roots), EHLO, AUTH PLAIN. It returns the first
// line of the answer to AUTH.
func authReply(addr string, roots *tls.Config) (string, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return "", err
	}
	defer func() { _ = c.Close() }()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	var conn net.Conn = c
	r := bufio.NewReader(conn)
	// read returns the last line of a (possibly multi-line) reply.
	read := func() (string, error) {
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return "", err
			}
			if len(line) < 4 || line[3] != '-' {
				return strings.TrimSpace(line), nil
			}
		}
	}
	step := func(cmd, want string) error {
		if cmd != "" {
			if _, err := io.WriteString(conn, cmd+"\r\n"); err != nil {
				return err
			}
		}
		line, err := read()
		if err != nil {
			return err
		}
		if !strings.HasPrefix(line, want) {
			return fmt.Errorf("after %q: got %q, want %s", cmd, line, want)
		}
		return nil
	}
	if err := step("", "220"); err != nil {
		return "", err
	}
	if err := step("EHLO client.example.test", "250"); err != nil {
		return "", err
	}
	if err := step("STARTTLS", "220"); err != nil {
		return "", err
	}
	tc := tls.Client(c, roots)
	if err := tc.Handshake(); err != nil {
		return "", err
	}
	conn, r = tc, bufio.NewReader(tc)
	if err := step("EHLO client.example.test", "250"); err != nil {
		return "", err
	}
	if _, err := io.WriteString(conn, "AUTH PLAIN AGFkYQBwYXNz\r\n"); err != nil {
		return "", err
	}
	return read()
}

// TestFlappingFront checks the fault front itself, without the stack:
// down, AUTH after STARTTLS gets a 454 and is counted; recovered, a new
// connection is relayed to the backend byte for byte.
func TestFlappingFront(t *testing.T) {
	t.Parallel()
	backend, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = backend.Close() })
	go func() {
		for {
			c, err := backend.Accept()
			if err != nil {
				return
			}
			_, _ = io.WriteString(c, "220 the real backend\r\n")
			_ = c.Close()
		}
	}()
	cert, certPEM := smtptest.NewCert(t)
	front := newFlappingSMTP(t, backend.Addr().String(), cert)
	addr := fmt.Sprintf("127.0.0.1:%d", front.port())
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(certPEM)
	got, err := authReply(addr, &tls.Config{RootCAs: roots, ServerName: "127.0.0.1"})
	if err != nil || !strings.HasPrefix(got, "454 4.7.0") {
		t.Fatalf("down: AUTH answered %q (%v), want 454 4.7.0", got, err)
	}
	if refused, first, relayed := front.stats(); refused != 1 || first.IsZero() || relayed != 0 {
		t.Errorf("down: got %d refused (first %v), %d relayed; want 1, set, 0", refused, first, relayed)
	}
	front.recover()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || line != "220 the real backend\r\n" {
		t.Fatalf("recovered: greeting %q (%v), want the backend's", line, err)
	}
	if _, _, relayed := front.stats(); relayed != 1 {
		t.Errorf("recovered: got %d relayed connections, want 1", relayed)
	}
}
