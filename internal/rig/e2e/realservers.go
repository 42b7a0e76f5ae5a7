package e2e

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

// RealServer is one of the real Debian IMAP servers that
// scripts/e2e-realservers.sh runs beside the stack's Dovecot (Courier-IMAP
// 5.0.13, Cyrus IMAP 3.6.1), twice: with stock settings, where IDLE only
// tells a client of new mail when the server polls, every 60 s, and with
// the fix doctor names for that. Every account starts bare: INBOX alone,
// "INBOX." as the personal namespace, "." as separator. Users, passwords
// and CA are the stack's; SMTP stays Postfix, which delivers to the main
// Dovecot only (put mail in with Stack.Append).
type RealServer struct {
	// Name is the software as doctor names it: "Courier-IMAP", "Cyrus IMAP".
	Name string
	// Stock is the stack as seen through the server with stock Debian
	// settings (Courier: IMAP_ENHANCEDIDLE=0; Cyrus: no idled).
	Stock *Stack
	// Fixed is the stack as seen through the same server with the fix
	// applied (Courier: IMAP_ENHANCEDIDLE=1 with gamin; Cyrus: idled).
	Fixed *Stack
	// Fix is a word of the fix doctor must name: "IMAP_ENHANCEDIDLE", "idled".
	Fix string
	// SpecialUse is whether the server announces CREATE-SPECIAL-USE (Cyrus
	// does, Courier does not).
	SpecialUse bool
}

// Exclusive gives t the owner account of both of r's instances to itself
// until t ends: tests that make the account bare, create its folders or
// run a watcher that drafts into it must not overlap on one server (two
// did, and one test's `doctor --fix` re-created the folders another had
// just deleted). Tests on different servers still run in parallel. Call
// it after t.Parallel.
//
// The lock is a file lock (flock) in the stack's directory, so it holds
// across test binaries too: go test runs packages as separate processes
// at once, and the storm's watchers and agente2e's bare-account test use
// the same real Courier.
func (r *RealServer) Exclusive(t testing.TB) {
	t.Helper()
	dir := cmp.Or(r.Stock.Dir, os.TempDir())
	path := filepath.Join(dir, fmt.Sprintf("realserver-%d.lock", r.Stock.IMAPPort))
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatalf("real server lock: %v", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		_ = f.Close()
		t.Fatalf("real server lock %s: %v", path, err)
	}
	t.Cleanup(func() { _ = f.Close() }) // closing the file releases the lock
}

// RealCourier returns the real Courier-IMAP, or skips the test saying why
// when the environment names none (the packages could not be had: see
// scripts/e2e-realservers.sh).
func (s *Stack) RealCourier(t testing.TB) *RealServer {
	t.Helper()
	return s.realServer(t, RealServer{Name: "Courier-IMAP", Fix: "IMAP_ENHANCEDIDLE"},
		"MAILAGENT_E2E_COURIERREAL_IMAP_PORT", "MAILAGENT_E2E_COURIERREAL_IDLE_IMAP_PORT")
}

// RealCyrus returns the real Cyrus IMAP, or skips the test saying why.
func (s *Stack) RealCyrus(t testing.TB) *RealServer {
	t.Helper()
	return s.realServer(t, RealServer{Name: "Cyrus IMAP", Fix: "idled", SpecialUse: true},
		"MAILAGENT_E2E_CYRUS_IMAP_PORT", "MAILAGENT_E2E_CYRUS_IDLED_IMAP_PORT")
}

func (s *Stack) realServer(t testing.TB, r RealServer, stockVar, fixedVar string) *RealServer {
	t.Helper()
	stock, fixed := os.Getenv(stockVar), os.Getenv(fixedVar)
	if stock == "" || fixed == "" {
		t.Skipf("no real %s beside the stack (%s unset): scripts/e2e-realservers.sh start did not run or could not unpack or start it; see its warnings and %s/realservers/*/ns.log, then run scripts/e2e-stack.sh start-realservers and source %s/env",
			r.Name, stockVar, s.Dir, s.Dir)
	}
	var err error
	if r.Stock, err = s.onPort(stock); err != nil {
		t.Fatalf("%s: %v", stockVar, err)
	}
	if r.Fixed, err = s.onPort(fixed); err != nil {
		t.Fatalf("%s: %v", fixedVar, err)
	}
	return &r
}

// onPort is a copy of s whose IMAP (STARTTLS) port is port; such a server
// has no implicit-TLS port.
func (s *Stack) onPort(port string) (*Stack, error) {
	p, err := strconv.Atoi(port)
	if err != nil || p <= 0 || p > 65535 {
		return nil, fmt.Errorf("not a port: %q", port)
	}
	c := *s
	c.IMAPPort, c.IMAPSPort = p, 0
	return &c, nil
}
