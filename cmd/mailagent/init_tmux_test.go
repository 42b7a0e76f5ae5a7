package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mailagent/mailagent/internal/smtpsend/smtptest"
)

// startInitTmux runs `mailagent --config path init args…` (this test
// binary as the command) in a 100×40 terminal whose HOME and XDG
// directories are dir's, with env added.
func startInitTmux(t *testing.T, dir, path string, env []string, args ...string) *tmuxTerm {
	t.Helper()
	needTmux(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	x := &tmuxTerm{t: t, socket: fmt.Sprintf("ma-init-%d-%d", os.Getpid(), time.Now().UnixNano())}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("terminal at the end:\n%s", x.initTranscript())
		}
		_, _ = x.run("kill-server")
	})
	cmd := []string{"env", "-u", "ACCESSIBLE", "-u", "NO_COLOR", cliEnv + "=1", "HOME=" + dir,
		"XDG_CONFIG_HOME=" + filepath.Join(dir, "config"), "XDG_STATE_HOME=" + filepath.Join(dir, "state")}
	cmd = append(append(cmd, env...), self, "--config", path, "init")
	cmd = x.recordExit(append(cmd, args...))
	x.must(append([]string{"-f", "/dev/null", "new-session", "-d", "-s", "ma", "-c", dir, "-x", "100", "-y", "40", "--"}, cmd...)...)
	x.must("set-option", "-w", "-t", "ma", "remain-on-exit", "on")
	return x
}

// initTranscript is the whole pane, scrollback included.
func (x *tmuxTerm) initTranscript() string {
	out, _ := x.run("capture-pane", "-p", "-J", "-S", "-", "-t", "ma")
	return out
}

// initAsking is the title of the huh field waiting for an answer: the
// last "┃ title" line followed by the field's own "┃" lines (an input's
// "┃ > …", a menu's "┃ > item" and "┃   item").
func (x *tmuxTerm) initAsking() string {
	lines := strings.Split(strings.TrimRight(x.screen(), "\n "), "\n")
	for i := len(lines) - 2; i >= 0; i-- {
		title, ok := strings.CutPrefix(lines[i], "┃ ")
		if ok && !strings.HasPrefix(title, " ") && !strings.HasPrefix(title, ">") && strings.HasPrefix(lines[i+1], "┃") {
			return title
		}
	}
	return ""
}

// initEchoes counts the answers to label echoed so far ("label: answer").
func (x *tmuxTerm) initEchoes(label string) int {
	n := 0
	for _, l := range strings.Split(x.initTranscript(), "\n") {
		if strings.HasPrefix(l, label) && strings.Contains(l, ": ") {
			n++
		}
	}
	return n
}

// initWaitAsked waits until init asks label.
func (x *tmuxTerm) initWaitAsked(label string) string {
	x.t.Helper()
	return x.waitFor("the question "+strconv.Quote(label), func(string) bool {
		return strings.HasPrefix(x.initAsking(), label)
	})
}

// initAnswer waits for label's question, types text (Enter alone when
// empty: the default) and waits for the answer's echo.
func (x *tmuxTerm) initAnswer(label, text string) {
	x.t.Helper()
	x.initWaitAsked(label)
	before := x.initEchoes(label)
	if text != "" {
		x.must("send-keys", "-t", "ma", "-l", text)
	}
	x.keys("Enter")
	x.waitFor("the answer to "+strconv.Quote(label), func(string) bool { return x.initEchoes(label) > before })
}

// TestInitEarlyProbeInTmux runs `mailagent init` in a real terminal
// (tmux, the huh fields) against an IMAPS server with its own CA (a TLS
// front to imapmemserver) and a go-smtp sink speaking STARTTLS with the
// same certificate. A wrong IMAP port is reported with its fix as soon as
// the IMAP section is answered, before any SMTP question; corrected, the
// unknown authority brings the CA question, still before SMTP; SMTP then
// trusts the same CA without asking; both logins pass once the account is
// named, and the file is written with the CA. The same flow against
// Dovecot and Postfix: agente2e's TestInitEarlyProbeUnderTmux.
func TestInitEarlyProbeInTmux(t *testing.T) {
	t.Parallel()
	needTmux(t)
	const user, pass = "ada@example.com", "tmux-init-secret-6620"
	srv := startIMAP(t, user, pass)
	cert, caPEM := smtptest.NewCert(t)
	imaps := tlsFront(t, cert, srv.Port)
	sink := smtptest.NewSink(t, smtptest.SinkOptions{Username: user, Password: pass, TLSCert: &cert})
	dir := t.TempDir()
	ca := filepath.Join(dir, "own-ca.pem")
	if err := os.WriteFile(ca, caPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	closed := strconv.Itoa(refusedPort(t))
	path := filepath.Join(dir, "config.toml")
	imapsAddr := "127.0.0.1:" + strconv.Itoa(imaps)
	smtpAddr := "127.0.0.1:" + strconv.Itoa(sink.Port)
	x := startInitTmux(t, dir, path, []string{"MA_TEST_INIT_PASS=" + pass, "MA_TEST_INIT_NO_KEY="},
		"--provider", "generic", "--no-doctor", "--password-env", "MA_TEST_INIT_PASS")

	x.initAnswer("Email address", user)
	x.initAnswer("Your name", "Ada Lovelace")
	x.initAnswer("Use these settings?", "e")
	x.initAnswer("IMAP host", "127.0.0.1:"+closed) // not a usual port: security is asked
	x.initAnswer("IMAP security", "ssl")
	x.initAnswer("IMAP login name", "")

	x.initWaitAsked("What now?")
	screen := x.initTranscript()
	for _, want := range []string{"✗ IMAP: imap dial 127.0.0.1:" + closed, "fix: nothing listens on 127.0.0.1:" + closed} {
		if !strings.Contains(screen, want) {
			t.Errorf("the terminal lacks %q:\n%s", want, screen)
		}
	}
	if strings.Contains(screen, "SMTP host") {
		t.Errorf("an SMTP question came before the IMAP failure was reported:\n%s", screen)
	}
	x.initAnswer("What now?", "") // edit (the default)
	x.initAnswer("IMAP host", "") // 127.0.0.1, as typed
	x.initAnswer("IMAP security", "")
	x.initAnswer("IMAP port", strconv.Itoa(imaps))
	x.initAnswer("IMAP login name", "")

	x.initWaitAsked("Path to the CA certificate")
	screen = x.initTranscript()
	if !strings.Contains(screen, "✗ IMAP: the certificate of "+imapsAddr+" is not signed by an authority this system trusts") {
		t.Errorf("the unknown authority was not reported:\n%s", screen)
	}
	if strings.Contains(screen, "SMTP host") {
		t.Errorf("an SMTP question came before the IMAP CA question:\n%s", screen)
	}
	x.initAnswer("Path to the CA certificate", ca)
	x.initAnswer("SMTP host", "smtp://"+smtpAddr) // a URL: starttls and the port
	x.initAnswer("SMTP login name", "")
	x.initAnswer("Use these settings?", "")
	x.initAnswer("Account name", "")
	x.initAnswer("Model provider", "")
	x.initAnswer("Read the Gemini API key from", "")
	x.initAnswer("Environment variable", "MA_TEST_INIT_NO_KEY")
	x.initAnswer("Gemini model", "")
	x.initAnswer("Mode", "")
	if st := x.exitStatus(); st != "0" {
		t.Errorf("init ended with exit status %q, want 0", st)
	}

	screen = x.initTranscript()
	for _, want := range []string{
		"✓ IMAP: " + imapsAddr + " answers (implicit TLS, certificate verified)",
		"✓ SMTP: " + smtpAddr + " answers (STARTTLS, certificate verified)",
		"trusting the CA in " + ca,
		"✓ IMAP: logged in to " + imapsAddr + " as " + user,
		"✓ SMTP: logged in to " + smtpAddr + " as " + user,
		"Wrote " + path,
	} {
		if !strings.Contains(screen, want) {
			t.Errorf("the terminal lacks %q:\n%s", want, screen)
		}
	}
	if n := x.initEchoes("Path to the CA certificate"); n != 1 {
		t.Errorf("the CA was answered %d times, want once (SMTP reuses it):\n%s", n, screen)
	}
	if strings.Contains(screen, pass) {
		t.Error("the password reached the terminal")
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("config not written: %v", err)
	}
	if !strings.Contains(string(raw), "tls_ca_file = \""+ca+"\"") {
		t.Errorf("the config does not name the CA:\n%s", raw)
	}
}

// TestInitGoesBackInTmux: in a real terminal, Esc at a question goes
// back to the one before it with the earlier answer kept as its default,
// and Shift-Tab does the same; Enter then keeps that answer and the
// interview goes on from there.
func TestInitGoesBackInTmux(t *testing.T) {
	t.Parallel()
	needTmux(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "config.toml")
	x := startInitTmux(t, dir, path, []string{"MA_TEST_INIT_PASS=x"}, "--provider", "generic", "--no-doctor", "--password-env", "MA_TEST_INIT_PASS")

	x.initAnswer("Email address", "ada@example.com")
	x.initWaitAsked("Your name")
	x.keys("Escape")
	x.initWaitAsked("Email address")
	if s := x.screen(); !strings.Contains(s, "ada@example.com") {
		t.Errorf("back at the email question, the earlier answer is not its default:\n%s", s)
	}
	x.initAnswer("Email address", "") // Enter keeps it
	x.initAnswer("Your name", "Ada Lovelace")
	x.initWaitAsked("Use these settings?")
	x.keys("BTab") // Shift-Tab
	x.initWaitAsked("Your name")
	if s := x.screen(); !strings.Contains(s, "Ada Lovelace") {
		t.Errorf("back at the name question, the earlier answer is not its default:\n%s", s)
	}
	x.initAnswer("Your name", "")
	x.initWaitAsked("Use these settings?")
	if n := x.initEchoes("Email address"); n != 2 {
		t.Errorf("the email was answered %d times, want 2 (once, then kept after going back)", n)
	}
	x.keys("C-c")
	if got := x.exitStatus(); got == "0" {
		t.Errorf("init after Ctrl-C exited 0")
	}
	if _, err := os.Stat(path); err == nil {
		t.Error("init wrote a config although it was cancelled")
	}
}
