package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// cliEnv, set to 1, makes this test binary act as the mailagent command:
// the tmux tests run it in a real terminal, built exactly as the tests
// are (with -race under -race), without a go build of their own.
const cliEnv = "MAILAGENT_TEST_AS_CLI"

func init() {
	if os.Getenv(cliEnv) == "1" {
		os.Exit(Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
}

// tmuxTerm is a command in a real terminal: a private tmux server (its
// own -L socket, no config file), so nothing touches the user's
// sessions.
type tmuxTerm struct {
	t      *testing.T
	socket string
	// status is a file the pane's shell writes the program's exit status
	// to: tmux does not always reap the pane's process (a zombie, seen on
	// CI), and then never learns the status itself.
	status string
}

// startTmux runs `mailagent --config h.cfgPath args…` in a w×h terminal,
// with h's secrets in its environment and no service manager's
// variables (watch would stay quiet under one).
func startTmux(t *testing.T, h *harness, w, ht int, env []string, args ...string) *tmuxTerm {
	t.Helper()
	env = append([]string{"MA_TEST_IMAP_PASS=" + ownerPass, "MA_TEST_GEMINI_KEY=" + apiKey}, env...)
	return startTmuxIn(t, h.dir, w, ht, env, append([]string{"--config", h.cfgPath}, args...)...)
}

// startTmuxIn runs `mailagent args…` in a w×h terminal in dir, with env
// added to its environment.
func startTmuxIn(t *testing.T, dir string, w, ht int, env []string, args ...string) *tmuxTerm {
	t.Helper()
	needTmux(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	x := &tmuxTerm{t: t, socket: fmt.Sprintf("ma-tui-%d-%d", os.Getpid(), time.Now().UnixNano())}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("terminal at the end:\n%s", x.screen())
		}
		_, _ = x.run("kill-server")
	})
	cmd := []string{"env", "-u", "INVOCATION_ID", "-u", "LAUNCHD", "-u", "NO_COLOR", cliEnv + "=1"}
	cmd = append(append(cmd, env...), self)
	cmd = append(cmd, args...)
	cmd = x.recordExit(cmd)
	x.must(append([]string{"-f", "/dev/null", "new-session", "-d", "-s", "ma", "-c", dir,
		"-x", strconv.Itoa(w), "-y", strconv.Itoa(ht), "--"}, cmd...)...)
	// Keep the pane after the command ends: its last lines and its exit
	// are part of what the tests check.
	x.must("set-option", "-w", "-t", "ma", "remain-on-exit", "on")
	return x
}

// needTmux skips the test when tmux is not installed (CI installs it).
func needTmux(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed (apt-get install tmux): the real-terminal tests need it")
	}
}

func (x *tmuxTerm) run(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "tmux", append([]string{"-L", x.socket}, args...)...).CombinedOutput()
	return string(out), err
}

func (x *tmuxTerm) must(args ...string) string {
	x.t.Helper()
	out, err := x.run(args...)
	if err != nil {
		x.t.Fatalf("tmux %v: %v\n%s", args, err, out)
	}
	return out
}

// screen is what the terminal shows, one string per line.
func (x *tmuxTerm) screen() string {
	out, _ := x.run("capture-pane", "-p", "-J", "-t", "ma") // -J: a line the terminal wrapped is one
	return out
}

// keys presses keys (tmux key names: "Enter", "C-d", "q").
func (x *tmuxTerm) keys(keys ...string) {
	x.t.Helper()
	for _, k := range keys {
		x.must("send-keys", "-t", "ma", k)
	}
}

// waitFor waits until the screen satisfies ok, and returns it. The
// deadline is for a program that hangs, not a bound on its speed: the
// tmux tests run beside the package's other parallel tests, and
// TestDemoJSONOnATerminal failed once at 20 s in a whole-tree run.
func (x *tmuxTerm) waitFor(what string, ok func(screen string) bool) string {
	x.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	// Polling a terminal, not asserting on time: soon after a key at
	// first, then less often, as each look is a tmux process (some 10 ms
	// of CPU) and some waits outlast a 6 s undo window.
	pause := 20 * time.Millisecond
	for {
		s := x.screen()
		if ok(s) {
			return s
		}
		if time.Now().After(deadline) {
			x.t.Fatalf("the terminal never showed %s; it shows:\n%s", what, s)
		}
		time.Sleep(pause)
		pause = min(2*pause, 200*time.Millisecond)
	}
}

func (x *tmuxTerm) waitText(text string) string {
	x.t.Helper()
	return x.waitFor(strconv.Quote(text), func(s string) bool { return strings.Contains(s, text) })
}

// recordExit wraps cmd in a shell that writes its exit status to a file
// (x.status) once it ends. The shell traps SIGINT (a Ctrl-C the test
// types reaches the whole foreground group) so that it outlives the
// program to write the status; the program itself gets the default
// disposition, as a trapped signal is reset in a child. The shell then
// stays a second: Debian's tmux 3.3a marks a pane dead as soon as its
// process exits and drops what it had not yet read from the terminal,
// which lost the tail of `demo --json`'s report under load.
func (x *tmuxTerm) recordExit(cmd []string) []string {
	x.status = filepath.Join(x.t.TempDir(), "exit-status")
	return append([]string{"env", "MA_TMUX_STATUS=" + x.status, "sh", "-c", `trap : INT; "$@"; echo $? > "$MA_TMUX_STATUS"; sleep 1`, "sh"}, cmd...)
}

// exitStatus waits until the program in the pane has ended, and returns
// its exit status as the pane's shell recorded it.
func (x *tmuxTerm) exitStatus() string {
	x.t.Helper()
	status := ""
	x.waitFor("the program's exit status", func(string) bool {
		b, err := os.ReadFile(x.status)
		status = strings.TrimSpace(string(b))
		return err == nil && status != ""
	})
	return status
}

// dead reports whether the command in the pane has ended.
func (x *tmuxTerm) dead() bool {
	if b, err := os.ReadFile(x.status); err == nil && len(bytes.TrimSpace(b)) > 0 {
		return true
	}
	out, err := x.run("display-message", "-p", "-t", "ma", "#{pane_dead}")
	return err == nil && strings.TrimSpace(out) == "1"
}

// positionRE finds the review's scroll position at the start of its
// status line: "12/30 │ …".
var positionRE = regexp.MustCompile(`(?m)^(\d+)/(\d+) │`)

// screenPosition returns the screen's "row/rows" indicator, or "".
func screenPosition(screen string) string {
	m := positionRE.FindStringSubmatch(screen)
	if m == nil {
		return ""
	}
	return m[1] + "/" + m[2]
}

// screenRows splits a screen into its rows without the trailing empty ones
// tmux adds after the last.
func screenRows(screen string) []string {
	return strings.Split(strings.TrimRight(screen, "\n"), "\n")
}

// TestReviewSmallTerminalsUnderTmux runs `mailagent review` in a real
// terminal of 80×24 and of 60×20 over a queue of 30 drafts made by a
// real watch pass (imapmemserver, the Gemini fake). At each size the
// frame fills the terminal exactly (tab bar on the first row, hints on
// the last), the hint bar keeps "? help" and "q quit", ? opens help that
// says how to quit, G and gg jump to the last and first draft, ctrl-d and
// ctrl-u move half a window, enter opens a draft whose hints say
// "q/esc back", q goes back to the list and q again ends review with
// exit 0.
func TestReviewSmallTerminalsUnderTmux(t *testing.T) {
	t.Parallel()
	needTmux(t)
	h := newHarness(t, compromisedModel, "")
	const n = 30
	for i := range n {
		h.deliver(rawMail(fmt.Sprintf("Carol %02d <carol%02d@example.net>", i, i), fmt.Sprintf("Question %02d", i), "Can we meet on Monday?"))
	}
	if _, stderr, code := h.run("watch", "--once"); code != 0 {
		t.Fatalf("watch --once: exit %d\n%s", code, stderr)
	}
	for _, size := range []struct{ w, h int }{{80, 24}, {60, 20}} {
		t.Run(fmt.Sprintf("%dx%d", size.w, size.h), func(t *testing.T) {
			x := startTmux(t, h, size.w, size.h, nil, "review")
			pos := func(want string) {
				t.Helper()
				x.waitFor("position "+want, func(s string) bool { return screenPosition(s) == want })
			}
			s := x.waitFor("the queue of 30", func(s string) bool { return screenPosition(s) == "1/30" })
			rows := screenRows(s)
			if len(rows) != size.h {
				t.Errorf("the frame has %d rows, want the terminal's %d", len(rows), size.h)
			}
			if !strings.Contains(rows[0], "1 Queue (30)") {
				t.Errorf("first row %q is not the tab bar with the whole Queue label", rows[0])
			}
			if last := rows[len(rows)-1]; !strings.Contains(last, "? help") || !strings.Contains(last, "q quit") {
				t.Errorf("last row %q lacks ? help or q quit", last)
			}
			if !strings.Contains(s, "SUBJECT") || strings.Contains(s, "INTENT") || !strings.Contains(s, "Question ") {
				t.Errorf("at %d columns SUBJECT must stay and INTENT give way:\n%s", size.w, s)
			}

			// Help with every optional key (follow-ups, unsubscribe,
			// invitations) is taller than 20 rows: G scrolls it to its
			// end, where the view keys are.
			x.keys("?")
			x.waitText("half page down")
			x.keys("G")
			help := x.waitText("go to view")
			// The overlay's own rows, not the hint bar's "? help • q quit".
			hr := screenRows(help)
			body := strings.Join(hr[1:len(hr)-3], "\n")
			if !regexp.MustCompile(`\bq {2,}quit\b`).MatchString(body) || !regexp.MustCompile(`\? {2,}help\b`).MatchString(body) {
				t.Errorf("help does not say how to quit:\n%s", help)
			}
			x.keys("?")
			pos("1/30")

			half := (size.h - 5) / 2 // the list rows between tab bar and footer, halved
			x.keys("G")
			pos("30/30")
			x.keys("g", "g")
			pos("1/30")
			x.keys("C-d")
			pos(fmt.Sprintf("%d/30", 1+half))
			x.keys("C-d")
			pos(fmt.Sprintf("%d/30", 1+2*half))
			x.keys("C-u")
			pos(fmt.Sprintf("%d/30", 1+half))
			x.keys("g", "g")
			pos("1/30")

			x.keys("Enter")
			d := x.waitText("── Thread (1) ──")
			rows = screenRows(d)
			if last := rows[len(rows)-1]; !strings.Contains(last, "q/esc back") || !strings.Contains(last, "? help") {
				t.Errorf("the detail's last row %q lacks q/esc back or ? help", last)
			}
			if !strings.Contains(rows[0], "2 Detail") {
				t.Errorf("first row %q: not the tab bar on the Detail view", rows[0])
			}
			x.keys("q")
			s = x.waitFor("the list again", func(s string) bool { return screenPosition(s) == "1/30" && strings.Contains(s, "q quit") })
			if x.dead() {
				t.Fatalf("q in the detail view ended review:\n%s", s)
			}
			x.keys("q")
			if st := x.exitStatus(); st != "0" {
				t.Errorf("review exit status %q, want 0", st)
			}
		})
	}
}
