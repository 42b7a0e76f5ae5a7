package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestDemoApproveThenQuitUnderTmux is the newcomer's first session in a
// real terminal: `mailagent demo`, approve a draft, quit at once, inside
// the undo window. The approved reply is sent all the same (the demo
// says it waits for it), the outside world's list names it, and the
// demo does not advise `mailagent review`, which cannot see its state.
func TestDemoApproveThenQuitUnderTmux(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	env := []string{"GEMINI_API_KEY=", "HOME=" + dir, "XDG_STATE_HOME=" + dir, "XDG_CONFIG_HOME=" + dir}
	x := startTmuxIn(t, dir, 120, 40, env, "demo")
	x.waitText("watcher connected")
	x.keys("/")
	x.must("send-keys", "-t", "ma", "-l", "Katherine")
	x.keys("Enter")
	x.waitText("Intro: Ada, meet Katherine")
	x.keys("a")
	x.waitText("sending in")
	x.keys("q")
	x.waitText("the outside world received")
	if got := x.exitStatus(); got != "0" {
		t.Fatalf("demo exit status %s, want 0", got)
	}
	screen := x.screen()
	joined := strings.Join(strings.Fields(screen), " ")
	for _, want := range []string{"sending 1 reply you approved when the undo window ends",
		"the outside world received 2 message(s)", `"Re: Intro: Ada, meet Katherine" (approved by you)`} {
		if !strings.Contains(joined, want) {
			t.Errorf("the terminal lacks %q:\n%s", want, screen)
		}
	}
	if strings.Contains(screen, "mailagent review") {
		t.Errorf("the demo advises `mailagent review`, which cannot see its state:\n%s", screen)
	}
}

// TestDemoJSONOnATerminal: `demo --json` in a terminal prints the JSON
// report (it implies --no-tui) instead of opening the review.
func TestDemoJSONOnATerminal(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	x := startTmuxIn(t, dir, 200, 50, []string{"GEMINI_API_KEY=", "HOME=" + dir, "XDG_STATE_HOME=" + dir}, "demo", "--json")
	if got := x.exitStatus(); got != "0" {
		t.Fatalf("demo --json exit status %s, want 0:\n%s", got, x.screen())
	}
	// The program has ended, but tmux may still be reading its last
	// output from the terminal: look until the report is whole.
	var rep DemoReport
	var screen string
	x.waitFor("the whole JSON report", func(string) bool {
		out, err := x.run("capture-pane", "-p", "-J", "-S", "-", "-t", "ma") // with the scrollback
		if err != nil {
			t.Fatal(err)
		}
		screen = out
		start := strings.Index(screen, "{")
		end := strings.LastIndex(screen, "}") // the pane's last line may be tmux's own
		if start < 0 || end < start {
			return false
		}
		rep = DemoReport{}
		return json.Unmarshal([]byte(screen[start:end+1]), &rep) == nil && len(rep.Outcomes) > 0
	})
	if strings.Contains(screen, "watcher connected") {
		t.Fatalf("demo --json opened the review:\n%s", screen)
	}
}
