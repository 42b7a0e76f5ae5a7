package setup

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zalando/go-keyring"

	"github.com/mailagent/mailagent/internal/config"
	"github.com/mailagent/mailagent/internal/initcfg"
	"github.com/mailagent/mailagent/internal/memimap"
	"github.com/mailagent/mailagent/internal/smtpsend/smtptest"
)

// None of these tests is parallel: they set environment variables and
// go-keyring's global provider.

const user, pass = "ada@example.com", "setup-secret-5521"

// account is the config's account for a plain-text IMAP server on
// imapPort and SMTP on smtpPort (loopback), its password in
// $MA_SETUP_PASS, as init renders and config parses it.
func account(t *testing.T, imapPort, smtpPort int) *config.Account {
	t.Helper()
	s := &initcfg.Setup{Email: user, Name: "Ada", Account: "personal", Model: "m", Mode: config.ModeReview, APIKeyEnv: "MA_SETUP_KEY",
		IMAP:   initcfg.Server{Host: "127.0.0.1", Port: imapPort, Security: config.SecurityInsecure, Username: user},
		SMTP:   initcfg.Server{Host: "127.0.0.1", Port: smtpPort, Security: config.SecurityInsecure, Username: user},
		Secret: initcfg.Secret{Kind: initcfg.SecretEnv, Value: "MA_SETUP_PASS"}}
	cfg, err := config.Parse(initcfg.Render(s), filepath.Join(t.TempDir(), "config.toml"), 0o600)
	if err != nil {
		t.Fatalf("parse the rendered setup: %v", err)
	}
	return &cfg.Accounts[0]
}

func startIMAP(t *testing.T) *memimap.Server {
	t.Helper()
	srv, err := memimap.Start(memimap.Options{Users: []memimap.User{{Name: user, Password: pass}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return srv
}

// silentServer accepts connections and never says anything.
func silentServer(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { close(done); _ = l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() { <-done; _ = c.Close() }()
		}
	}()
	return l.Addr().(*net.TCPAddr).Port
}

// refusedPort is a loopback port that refuses connections for the rest
// of the test: a socket bound to it that never listens (a port merely
// closed may be taken again, or connect to itself).
func refusedPort(t *testing.T) int {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	return sa.(*syscall.SockaddrInet4).Port
}

// TestProbeLogsIn: Probe logs in to the real protocol implementations
// (memimap, the go-smtp sink) with the password the config resolves, and
// fails on a wrong one.
func TestProbeLogsIn(t *testing.T) {
	srv := startIMAP(t)
	sink := smtptest.NewSink(t, smtptest.SinkOptions{Username: user, Password: pass})
	acct := account(t, srv.Port, sink.Port)
	ctx := context.Background()

	t.Setenv("MA_SETUP_PASS", pass)
	for _, kind := range []string{"imap", "smtp"} {
		if err := Probe(ctx, kind, acct); err != nil {
			t.Errorf("%s with the right password: %v", kind, err)
		}
	}
	t.Setenv("MA_SETUP_PASS", "wrong-"+pass)
	for _, kind := range []string{"imap", "smtp"} {
		if err := Probe(ctx, kind, acct); err == nil {
			t.Errorf("%s with a wrong password: logged in", kind)
		}
	}
}

// TestReach: a server that answers is reached without a login (no
// password source resolves here); a refused port and a silent server
// fail, the silent one as "no answer" wrapping DeadlineExceeded within
// the timeout.
func TestReach(t *testing.T) {
	t.Parallel()
	srv := startIMAP(t)
	sink := smtptest.NewSink(t, smtptest.SinkOptions{Username: user, Password: pass})
	ctx := context.Background()
	ep := func(port int) config.Endpoint {
		return config.Endpoint{Host: "127.0.0.1", Port: port, Security: config.SecurityInsecure}
	}
	if err := Reach(ctx, "imap", ep(srv.Port), 5*time.Second); err != nil {
		t.Errorf("imap: %v", err)
	}
	if err := Reach(ctx, "smtp", ep(sink.Port), 5*time.Second); err != nil {
		t.Errorf("smtp: %v", err)
	}
	if err := Reach(ctx, "imap", ep(refusedPort(t)), 5*time.Second); err == nil {
		t.Error("imap on a refusing port: reached")
	}
	silent := silentServer(t)
	for _, kind := range []string{"imap", "smtp"} {
		start := time.Now()
		err := Reach(ctx, kind, ep(silent), 300*time.Millisecond)
		if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "no answer within 300ms") {
			t.Errorf("%s on a silent server: %v, want no answer within 300ms (DeadlineExceeded)", kind, err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("%s on a silent server took %s", kind, d)
		}
	}
}

// TestKeyringStoreAndForget: the password goes under both keyring users
// when SMTP has its own login, the API key under the [llm] user; Forget
// removes them; a keyring that refuses says what it could not store and
// that nothing was written.
func TestKeyringStoreAndForget(t *testing.T) {
	t.Parallel()
	keyring.MockInit()
	t.Cleanup(keyring.MockInit)
	if err := KeyringAvailable(); err != nil {
		t.Fatalf("mock keyring not available: %v", err)
	}
	s := &initcfg.Setup{Account: "work",
		IMAP:   initcfg.Server{Username: "ada"},
		SMTP:   initcfg.Server{Username: "ada-smtp"},
		Secret: initcfg.Secret{Kind: initcfg.SecretKeyring, Password: "mail-pw"},
		APIKey: initcfg.Secret{Kind: initcfg.SecretKeyring, Password: "api-key"}}
	if !s.SMTPOwnLogin() {
		t.Fatal("setup: SMTP should have its own login")
	}
	if err := StoreInKeyring(s); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"work/imap": "mail-pw", "work/smtp": "mail-pw", config.LLM{}.KeyringUser(): "api-key"}
	for u, secret := range want {
		if got, err := keyring.Get(config.KeyringService, u); err != nil || got != secret {
			t.Errorf("keyring %s: %q, %v; want %q", u, got, err, secret)
		}
	}
	ForgetKeyring(s)
	for u := range want {
		if _, err := keyring.Get(config.KeyringService, u); !errors.Is(err, keyring.ErrNotFound) {
			t.Errorf("keyring %s after Forget: %v, want not found", u, err)
		}
	}

	refused := errors.New("no secret service")
	keyring.MockInitWithError(refused)
	if err := KeyringAvailable(); !errors.Is(err, refused) {
		t.Errorf("KeyringAvailable on a refusing keyring: %v", err)
	}
	err := StoreInKeyring(s)
	if !errors.Is(err, refused) || !strings.Contains(err.Error(), `user "work/imap"`) || !strings.HasSuffix(err.Error(), "nothing was written") {
		t.Errorf("StoreInKeyring on a refusing keyring: %v", err)
	}
	// Nothing asks for the keyring: nothing is stored, no error.
	if err := StoreInKeyring(&initcfg.Setup{Account: "w", Secret: initcfg.Secret{Kind: initcfg.SecretEnv, Value: "P"}}); err != nil {
		t.Errorf("a setup without keyring secrets: %v", err)
	}
}

// TestFindAuthservIgnoresForgedHeaders: the authserv_id init writes comes
// from the owner's server's header, the topmost one; a sender's forged
// Authentication-Results below it never becomes the suggestion (attacks
// tried and through are counted). Control: without the server's own
// header on top, the same forged headers are what the mail shows, and
// the suggestion is the attacker's: the check can see the attack land.
func TestFindAuthservIgnoresForgedHeaders(t *testing.T) {
	t.Setenv("MA_SETUP_PASS", pass)
	const server, forged = "mx.example.com", "mx.attacker.example"
	msg := func(i int, withServer bool) []byte {
		var b strings.Builder
		if withServer {
			fmt.Fprintf(&b, "Authentication-Results: %s; dkim=fail; spf=fail\r\n", server)
		}
		fmt.Fprintf(&b, "Authentication-Results: %s; dkim=pass header.d=example.com; dmarc=pass\r\n", forged)
		fmt.Fprintf(&b, "From: boss@example.com\r\nTo: %s\r\nSubject: wire %d\r\nMessage-ID: <m%d@example.com>\r\n\r\nhi\r\n", user, i, i)
		return []byte(b.String())
	}
	run := func(withServer bool) (tried, through int, got string) {
		srv := startIMAP(t)
		for i := range 3 {
			if _, err := srv.Append(context.Background(), user, "INBOX", msg(i, withServer), nil, time.Now()); err != nil {
				t.Fatal(err)
			}
			tried++
		}
		got = FindAuthserv(context.Background(), account(t, srv.Port, 1))
		if got == forged {
			through = tried
		}
		return tried, through, got
	}
	tried, through, got := run(true)
	t.Logf("forged Authentication-Results: %d tried, %d through", tried, through)
	if tried == 0 || through != 0 || got != server {
		t.Errorf("suggestion %q (%d of %d forged headers through), want %q", got, through, tried, server)
	}
	if _, through, got := run(false); through == 0 || got != forged {
		t.Errorf("control: without the server's header the suggestion is %q, want the forged %q", got, forged)
	}
	// Nothing to read: no suggestion, no error.
	if got := FindAuthserv(context.Background(), account(t, startIMAP(t).Port, 1)); got != "" {
		t.Errorf("empty mailbox: suggestion %q", got)
	}
}
