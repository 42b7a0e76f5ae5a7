package main

import (
	"bytes"
	"crypto/tls"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/mailagent/mailagent/internal/config"
	"github.com/mailagent/mailagent/internal/memimap"
)

// The black-box side of init (internal/cmd/initcmd): these tests run
// `mailagent init` through Main, with the live network (loopback test
// servers, or the e2e stack) and no test seam.

// runInit runs `mailagent init args…` through Main with stdin as the
// typed answers, and returns the exit code, stdout and stderr.
func runInit(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	t.Setenv(config.EnvConfig, "")
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	var out, errb bytes.Buffer
	code = Main(append([]string{"init"}, args...), strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

// answers joins typed answers, one per line; "" is pressing Enter.
func answers(lines ...string) string { return strings.Join(lines, "\n") + "\n" }

// loadConfig loads path with config.Load, checks its mode and returns it
// with its text.
func loadConfig(t *testing.T, path string) (*config.Config, string) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatalf("config not written: %v", err)
	}
	if got := fi.Mode().Perm(); got != 0o600 {
		t.Errorf("config mode: got %04o, want 0600", got)
	}
	cfg, _, err := config.Load(path)
	if err != nil {
		t.Fatalf("config.Load: %v", err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return cfg, string(raw)
}

type wantEndpoint struct {
	host     string
	port     int
	security string
	username string
}

func checkEndpoint(t *testing.T, kind string, got config.Endpoint, want wantEndpoint) {
	t.Helper()
	if got.Host != want.host || got.Port != want.port || got.Security != want.security || got.Username != want.username {
		t.Errorf("%s: got %s:%d %s login %s, want %s:%d %s login %s", kind,
			got.Host, got.Port, got.Security, got.Username, want.host, want.port, want.security, want.username)
	}
}

// startIMAP starts an in-memory IMAP server with one user and the usual
// folders.
func startIMAP(t *testing.T, user, pass string) *memimap.Server {
	t.Helper()
	srv, err := memimap.Start(memimap.Options{
		Users:     []memimap.User{{Name: user, Password: pass}},
		Mailboxes: []string{"Sent", "Drafts"},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return srv
}

// tlsFront listens on loopback with implicit TLS (cert) and forwards
// every connection to the plain-text server on backend: an IMAPS server
// in front of memimap. It returns its port.
func tlsFront(t *testing.T, cert tls.Certificate, backend int) int {
	t.Helper()
	l, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { _ = l.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer func() { _ = c.Close() }()
				b, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(backend)))
				if err != nil {
					return
				}
				defer func() { _ = b.Close() }()
				done := make(chan struct{}, 2)
				go func() { _, _ = io.Copy(b, c); done <- struct{}{} }()
				go func() { _, _ = io.Copy(c, b); done <- struct{}{} }()
				<-done // either side ended: the deferred closes end the other copy
			})
		}
	})
	return l.Addr().(*net.TCPAddr).Port
}
