package agente2e

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/mailagent/mailagent/internal/rig/e2e"
)

// initTerm drives `mailagent init` in a tmux pane (session "init"): its
// questions are charm.land/huh fields, each drawn as a "┃ label" title
// over "┃ …" input lines, and echoed as "label: answer" once answered.
type initTerm struct {
	t *testing.T
	x *tmux
}

// transcript is the whole pane, scrollback included, wrapped lines joined.
func (it *initTerm) transcript() string {
	out, _ := it.x.run("capture-pane", "-p", "-J", "-S", "-", "-t", "init")
	return out
}

// active is the title of the field waiting for an answer: the last
// "┃ title" line followed by the field's own "┃" lines (an input's
// "┃ > …", a menu's "┃ > item" and "┃   item").
func (it *initTerm) active() string {
	out, _ := it.x.run("capture-pane", "-p", "-J", "-t", "init")
	lines := strings.Split(strings.TrimRight(out, "\n "), "\n")
	for i := len(lines) - 2; i >= 0; i-- {
		title, ok := strings.CutPrefix(lines[i], "┃ ")
		if ok && !strings.HasPrefix(title, " ") && !strings.HasPrefix(title, ">") && strings.HasPrefix(lines[i+1], "┃") {
			return title
		}
	}
	return ""
}

// echoes counts the answers to label shown so far.
func (it *initTerm) echoes(label string) int {
	n := 0
	for _, l := range strings.Split(it.transcript(), "\n") {
		if strings.HasPrefix(l, label) && strings.Contains(l, ": ") {
			n++
		}
	}
	return n
}

// waitAsked waits until the field waiting for an answer is label's.
func (it *initTerm) waitAsked(label string) {
	it.t.Helper()
	eventually(it.t, waitShort, "init asks "+label, func() (bool, string) {
		a := it.active()
		return strings.HasPrefix(a, label), "asking " + a + "; screen:\n" + it.transcript()
	})
}

// answer waits for label's question, types text (Enter alone when
// empty: the default) and waits for the answer's echo.
func (it *initTerm) answer(label, text string) {
	it.t.Helper()
	it.waitAsked(label)
	before := it.echoes(label)
	if text != "" {
		it.x.must("send-keys", "-t", "init", "-l", text)
	}
	it.x.must("send-keys", "-t", "init", "Enter")
	eventually(it.t, waitShort, "init takes the answer to "+label, func() (bool, string) {
		return it.echoes(label) > before, "screen:\n" + it.transcript()
	})
}

// TestInitEarlyProbeUnderTmux runs `mailagent init` in a real terminal
// (tmux, 100x40, the huh fields) against the stack's Dovecot and
// Postfix, whose certificates are signed by the stack's own CA. A wrong
// IMAP port is reported with its fix as soon as the IMAP section is
// answered, before any SMTP question; corrected through "edit", the
// server's unknown authority brings the CA question, still before SMTP;
// SMTP then trusts the same CA without asking, both logins pass once the
// account is named, and the file is written with tls_ca_file.
func TestInitEarlyProbeUnderTmux(t *testing.T) {
	parallel(t)
	st := e2e.Require(t)
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed (scripts/e2e-stack.sh install adds it): the real-terminal init test needs it")
	}
	const user = "ada@example.test"
	pass := st.Password(t, user)
	closed := strconv.Itoa(closedPort(t))
	dir := t.TempDir()
	path := filepath.Join(dir, "config.toml")
	imaps := net.JoinHostPort(st.IMAPHost, strconv.Itoa(st.IMAPSPort))

	x := &tmux{t: t, socket: "ma-e2e-init-" + newTag()}
	it := &initTerm{t: t, x: x}
	// The pane outlives init (sh waits after it), so its last screen and
	// exit code can be read.
	cmd := []string{"sh", "-c", `"$@"; echo "init exited $?"; exec sleep 600`, "sh", "env", "-u", "ACCESSIBLE", "HOME=" + dir, "XDG_CONFIG_HOME=" + filepath.Join(dir, "config"),
		"XDG_STATE_HOME=" + filepath.Join(dir, "state"), passwordEnv + "=" + pass, "MA_E2E_INIT_NO_KEY=",
		binary, "--config", path, "init", "--provider", "generic", "--no-doctor", "--password-env", passwordEnv}
	x.must(append([]string{"new-session", "-d", "-s", "init", "-x", "100", "-y", "40", "--"}, cmd...)...)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("init screen:\n%s", it.transcript())
		}
		_, _ = x.run("kill-server")
	})

	it.answer("Email address", user)
	it.answer("Your name", "Ada Lovelace")
	it.answer("Use these settings?", "e")
	it.answer("IMAP host", "127.0.0.1:"+closed) // not a usual port: security is asked
	it.answer("IMAP security", "ssl")
	it.answer("IMAP login name", "")

	it.waitAsked("What now?")
	screen := it.transcript()
	for _, want := range []string{"✗ IMAP: imap dial 127.0.0.1:" + closed, "fix: nothing listens on 127.0.0.1:" + closed} {
		if !strings.Contains(screen, want) {
			t.Errorf("the screen lacks %q:\n%s", want, screen)
		}
	}
	if strings.Contains(screen, "SMTP host") {
		t.Errorf("an SMTP question came before the IMAP failure was reported:\n%s", screen)
	}
	it.answer("What now?", "") // edit (the default)
	it.answer("IMAP host", "") // 127.0.0.1, as typed
	it.answer("IMAP security", "")
	it.answer("IMAP port", strconv.Itoa(st.IMAPSPort))
	it.answer("IMAP login name", "")

	it.waitAsked("Path to the CA certificate")
	screen = it.transcript()
	if !strings.Contains(screen, "✗ IMAP: the certificate of "+imaps+" is not signed by an authority this system trusts") {
		t.Errorf("the unknown authority was not reported:\n%s", screen)
	}
	if strings.Contains(screen, "SMTP host") {
		t.Errorf("an SMTP question came before the IMAP CA question:\n%s", screen)
	}
	it.answer("Path to the CA certificate", st.CAFile)
	it.answer("SMTP host", "smtp://"+st.SMTPAddr()) // a URL: starttls and the port
	it.answer("SMTP login name", "")
	it.answer("Use these settings?", "")
	it.answer("Account name", "")
	it.answer("Model provider", "")
	it.answer("Read the Gemini API key from", "")
	it.answer("Environment variable", "MA_E2E_INIT_NO_KEY")
	it.answer("Gemini model", "")
	it.answer("Mode", "")
	eventually(t, waitShort, "init ends", func() (bool, string) {
		return strings.Contains(it.transcript(), "init exited "), "screen:\n" + it.transcript()
	})

	screen = it.transcript()
	for _, want := range []string{
		"✓ IMAP: " + imaps + " answers (implicit TLS, certificate verified)",
		"✓ SMTP: " + st.SMTPAddr() + " answers (STARTTLS, certificate verified)",
		"trusting the CA in " + st.CAFile,
		"✓ IMAP: logged in to " + imaps + " as " + user,
		"✓ SMTP: logged in to " + st.SMTPAddr() + " as " + user,
		"Wrote " + path,
		"init exited 0",
	} {
		if !strings.Contains(screen, want) {
			t.Errorf("the screen lacks %q:\n%s", want, screen)
		}
	}
	if n := it.echoes("Path to the CA certificate"); n != 1 {
		t.Errorf("the CA was answered %d times, want once (SMTP reuses it):\n%s", n, screen)
	}
	if strings.Contains(screen, pass) {
		t.Error("the password reached the screen")
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("config not written: %v", err)
	}
	if n := strings.Count(string(raw), "tls_ca_file = \""+st.CAFile+"\""); n < 1 {
		t.Errorf("the config does not name the CA:\n%s", raw)
	}
}
