package agente2e

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestReviewFollowsWatcherUnderTmux runs `mailagent review` in a real
// terminal next to a watcher, then stops the watcher (SIGTERM) and kills
// it (SIGKILL): each time the status line says so within 2 s, and says
// "watcher connected" again within 2 s of a new watcher answering.
func TestReviewFollowsWatcherUnderTmux(t *testing.T) {
	parallel(t)
	e := newEnv(t, options{})
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed (scripts/e2e-stack.sh install adds it): the real-terminal review test needs it")
	}
	w := e.startWatch()

	x := &tmux{t: t, socket: "ma-e2e-w-" + e.tag}
	cmd := e.command(context.Background(), "review")
	env := []string{"env", passwordEnv + "=" + e.password, apiKeyEnv + "=e2e-not-a-real-key"}
	x.must(append([]string{"new-session", "-d", "-s", "review", "-x", "120", "-y", "35", "--"}, append(env, cmd.Args...)...)...)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("review screen:\n%s", x.screen())
		}
		_, _ = x.run("kill-server")
	})
	x.waitScreen("watcher connected", waitShort)

	for _, stop := range []struct {
		name string
		do   func(*watcher)
	}{{"SIGTERM", (*watcher).stop}, {"SIGKILL", (*watcher).kill9}} {
		stop.do(w)
		start := time.Now()
		x.waitScreen("no watcher: actions run locally", 2*time.Second)
		t.Logf("%s: watcher gone shown after %s", stop.name, time.Since(start))
		if s := x.screen(); strings.Contains(s, "syncing") {
			t.Errorf("%s: a stale sync state is shown without a watcher:\n%s", stop.name, s)
		}

		// review holds no lock: a new watcher starts, and is seen.
		w = e.startWatch() // returns once its socket answers
		start = time.Now()
		x.waitScreen("watcher connected", 2*time.Second)
		t.Logf("%s: watcher back shown after %s", stop.name, time.Since(start))
	}
	x.must("send-keys", "-t", "review", "q")
}
