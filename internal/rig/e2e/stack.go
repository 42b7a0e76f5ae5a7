// Package e2e gives end-to-end tests access to the real mail stack started
// by scripts/e2e-stack.sh: Dovecot (IMAP, IDLE, LMTP) and Postfix (SMTP)
// listening on 127.0.0.1, with the test users of example.test.
//
// Contract:
//   - Require reads the stack's address from the environment the script
//     writes (source /tmp/mailagent-e2e/env). Without MAILAGENT_E2E=1 the
//     calling test is skipped with a message saying how to start the stack;
//     with it, a stack that cannot be parsed or reached fails the test, so a
//     broken CI setup is never mistaken for a skip.
//   - Every helper takes the test and fails it (t.Fatal) on error, so tests
//     read as plain steps. Helpers call t.Helper and register their own
//     cleanup with t.Cleanup; nothing outlives the test.
//   - Mail never leaves the machine: Postfix delivers every address to a
//     local user, unknown ones to Sink.
//   - The stack is shared by every test binary that `go test ./...` runs in
//     parallel. Tests must isolate themselves by mailbox (ResetMailbox on a
//     mailbox name of their own) rather than assume an empty account.
//
// The helpers speak the real protocols through go-imap and go-smtp; they do
// not use any mailagent package, so they can check mailagent's behaviour
// from the outside.
package e2e

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Test users created by scripts/e2e-stack.sh. Their passwords are in
// Stack.Users.
const (
	Owner  = "ada@example.test"    // the mailbox owner in agent tests
	Bob    = "bob@example.test"    // a correspondent
	Carol  = "carol@example.test"  // another correspondent
	Sink   = "sink@example.test"   // receives mail for every unknown address
	Corpus = "corpus@example.test" // bulk corpus tests (threading agreement)
)

// SkipMessage is what Require says when the stack is not configured.
const SkipMessage = "end-to-end tests need Dovecot+Postfix: run `scripts/e2e-stack.sh start` and `source /tmp/mailagent-e2e/env` (CI does this)"

// errDisabled means MAILAGENT_E2E is not set to 1.
var errDisabled = errors.New("MAILAGENT_E2E is not 1")

// Stack describes a running e2e mail stack.
type Stack struct {
	IMAPHost  string // plaintext IMAP with STARTTLS on IMAPHost:IMAPPort
	IMAPPort  int
	IMAPSPort int // implicit TLS IMAP on IMAPHost:IMAPSPort
	SMTPHost  string
	SMTPPort  int    // SMTP with STARTTLS and AUTH PLAIN; open relay for loopback
	CAFile    string // PEM of the CA that signed the servers' certificate
	Dir       string // the script's state directory (configs, logs, mail)

	// Users maps each test user's address to its password.
	Users map[string]string

	// CourierIMAPPort and CourierIMAPSPort are the second Dovecot of
	// scripts/e2e-courier.sh, laid out as Courier-IMAP (folders under the
	// "INBOX." namespace, "." separator, no SPECIAL-USE); 0 when absent.
	// Same host, users and CA. See Courier.
	CourierIMAPPort  int
	CourierIMAPSPort int
}

// Courier returns the stack as seen through its Courier-style Dovecot:
// the IMAP ports are that server's (SMTP stays Postfix, which delivers to
// the main Dovecot only: put mail there with Append). The test fails when
// the environment has no such server.
func (s *Stack) Courier(t testing.TB) *Stack {
	t.Helper()
	if s.CourierIMAPPort == 0 {
		t.Fatal("e2e: no Courier-style IMAP server in the environment (MAILAGENT_E2E_COURIER_IMAP_PORT); restart the stack with scripts/e2e-stack.sh start")
	}
	c := *s
	c.IMAPPort, c.IMAPSPort = s.CourierIMAPPort, s.CourierIMAPSPort
	return &c
}

// Require returns the stack described by the environment, or skips the test
// with SkipMessage when MAILAGENT_E2E is not 1. It fails the test when the
// environment is set but incomplete, or when the IMAP port does not accept
// connections.
func Require(t testing.TB) *Stack {
	t.Helper()
	s, err := fromEnv(os.Getenv)
	if errors.Is(err, errDisabled) {
		t.Skip(SkipMessage)
	}
	if err != nil {
		t.Fatalf("e2e stack environment: %v", err)
	}
	// The shared lock first: another test binary may hold it exclusively
	// while it restarts Dovecot (RestartDovecot), and a dial before the
	// lock would find the server down for those seconds.
	holdSharedLock(t, s.Dir)
	conn, err := net.DialTimeout("tcp", s.IMAPAddr(), 5*time.Second)
	if err != nil {
		t.Fatalf("MAILAGENT_E2E=1 but IMAP at %s is not reachable (is the stack running? scripts/e2e-stack.sh start): %v", s.IMAPAddr(), err)
	}
	_ = conn.Close()
	return s
}

// fromEnv builds a Stack from the variables scripts/e2e-stack.sh writes.
func fromEnv(getenv func(string) string) (*Stack, error) {
	if getenv("MAILAGENT_E2E") != "1" {
		return nil, errDisabled
	}
	s := &Stack{
		IMAPHost: getenv("MAILAGENT_E2E_IMAP_HOST"),
		SMTPHost: getenv("MAILAGENT_E2E_SMTP_HOST"),
		CAFile:   getenv("MAILAGENT_E2E_CA"),
		Dir:      getenv("MAILAGENT_E2E_DIR"),
	}
	var errs []error
	port := func(name string) int {
		v := getenv(name)
		p, err := strconv.Atoi(v)
		if err != nil || p <= 0 || p > 65535 {
			errs = append(errs, fmt.Errorf("%s=%q is not a port number", name, v))
		}
		return p
	}
	s.IMAPPort = port("MAILAGENT_E2E_IMAP_PORT")
	s.IMAPSPort = port("MAILAGENT_E2E_IMAPS_PORT")
	s.SMTPPort = port("MAILAGENT_E2E_SMTP_PORT")
	for name, v := range map[string]string{
		"MAILAGENT_E2E_IMAP_HOST": s.IMAPHost,
		"MAILAGENT_E2E_SMTP_HOST": s.SMTPHost,
		"MAILAGENT_E2E_CA":        s.CAFile,
		"MAILAGENT_E2E_DIR":       s.Dir,
	} {
		if v == "" {
			errs = append(errs, fmt.Errorf("%s is empty", name))
		}
	}
	if getenv("MAILAGENT_E2E_COURIER_IMAP_PORT") != "" {
		s.CourierIMAPPort = port("MAILAGENT_E2E_COURIER_IMAP_PORT")
		s.CourierIMAPSPort = port("MAILAGENT_E2E_COURIER_IMAPS_PORT")
	}
	users, err := parseUsers(getenv("MAILAGENT_E2E_USERS"))
	if err != nil {
		errs = append(errs, err)
	}
	s.Users = users
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return s, nil
}

// parseUsers parses "a@x:pw,b@x:pw". Passwords are never echoed in errors.
func parseUsers(v string) (map[string]string, error) {
	if v == "" {
		return nil, errors.New("MAILAGENT_E2E_USERS is empty")
	}
	users := make(map[string]string)
	for i, pair := range strings.Split(v, ",") {
		addr, pass, ok := strings.Cut(pair, ":")
		addr = strings.ToLower(strings.TrimSpace(addr))
		if !ok || !strings.Contains(addr, "@") || pass == "" {
			return nil, fmt.Errorf("MAILAGENT_E2E_USERS entry %d is not address:password", i+1)
		}
		users[addr] = pass
	}
	return users, nil
}

// IMAPAddr is host:port of the plaintext (STARTTLS) IMAP listener.
func (s *Stack) IMAPAddr() string { return net.JoinHostPort(s.IMAPHost, strconv.Itoa(s.IMAPPort)) }

// IMAPSAddr is host:port of the implicit-TLS IMAP listener.
func (s *Stack) IMAPSAddr() string {
	return net.JoinHostPort(s.IMAPHost, strconv.Itoa(s.IMAPSPort))
}

// SMTPAddr is host:port of the SMTP listener.
func (s *Stack) SMTPAddr() string { return net.JoinHostPort(s.SMTPHost, strconv.Itoa(s.SMTPPort)) }

// Password returns the password of a test user, failing the test for an
// unknown user.
func (s *Stack) Password(t testing.TB, user string) string {
	t.Helper()
	pass, ok := s.Users[strings.ToLower(user)]
	if !ok {
		t.Fatalf("e2e: no test user %q (have %v)", user, s.userNames())
	}
	return pass
}

func (s *Stack) userNames() []string {
	names := make([]string, 0, len(s.Users))
	for u := range s.Users {
		names = append(names, u)
	}
	return names
}

// TLSConfig returns a client TLS configuration that trusts only the stack's
// CA, for connections to the IMAP and SMTP host.
func (s *Stack) TLSConfig(t testing.TB) *tls.Config {
	t.Helper()
	pem, err := os.ReadFile(s.CAFile)
	if err != nil {
		t.Fatalf("e2e: read CA: %v", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		t.Fatalf("e2e: no certificate in %s", s.CAFile)
	}
	return &tls.Config{RootCAs: pool, ServerName: s.IMAPHost, MinVersion: tls.VersionTLS12}
}
