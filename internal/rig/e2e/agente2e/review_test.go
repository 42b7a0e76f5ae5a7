package agente2e

import (
	"context"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mailagent/mailagent/internal/rig/e2e"
	"github.com/mailagent/mailagent/store"
)

// tmux drives a private tmux server (its own -L socket), so nothing
// touches the user's sessions.
type tmux struct {
	t      *testing.T
	socket string
}

func (x *tmux) run(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "tmux", append([]string{"-L", x.socket}, args...)...).CombinedOutput()
	return string(out), err
}

func (x *tmux) must(args ...string) string {
	x.t.Helper()
	out, err := x.run(args...)
	if err != nil {
		x.t.Fatalf("tmux %v: %v\n%s", args, err, out)
	}
	return out
}

func (x *tmux) screen() string {
	out, _ := x.run("capture-pane", "-p", "-t", "review")
	return out
}

// waitScreen waits until the pane shows text.
func (x *tmux) waitScreen(text string, timeout time.Duration) {
	x.t.Helper()
	eventually(x.t, timeout, "the review screen shows "+text, func() (bool, string) {
		s := x.screen()
		return strings.Contains(s, text), "screen:\n" + s
	})
}

// TestReviewApproveUnderTmux runs `mailagent review` in a real terminal
// (tmux, 120x35) next to a running watcher: the queued draft shows up,
// "a" approves it, and Bob receives exactly one correctly threaded reply.
func TestReviewApproveUnderTmux(t *testing.T) {
	parallel(t)
	e := newEnv(t, options{})
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed (scripts/e2e-stack.sh install adds it): the real-terminal review test needs it")
	}
	// Bob is a known contact, so "a" sends at once (a new address asks
	// first: TestReviewConfirmsNewAddressUnderTmux).
	e.seedSent(bobAddr)
	w := e.startWatch()
	m := message{From: bobAddr, To: adaAddr, Subject: "Budget review " + e.tag, ID: e.id("review"),
		Body: "Hi Ada,\ncan you confirm the budget numbers by Friday?\nBob"}
	e.deliver(m)
	item := w.queueItem(m.ID, waitLong)

	x := &tmux{t: t, socket: "ma-e2e-" + e.tag}
	cmd := e.command(context.Background(), "review")
	env := []string{"env", passwordEnv + "=" + e.password, apiKeyEnv + "=e2e-not-a-real-key"}
	x.must(append([]string{"new-session", "-d", "-s", "review", "-x", "120", "-y", "35", "--"}, append(env, cmd.Args...)...)...)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("review screen:\n%s", x.screen())
		}
		_, _ = x.run("kill-server")
	})

	x.waitScreen(e.tag, waitShort)
	// Narrow the list to this test's item (other mail may be queued too),
	// then approve it.
	x.must("send-keys", "-t", "review", "/")
	x.must("send-keys", "-t", "review", "-l", e.tag)
	x.must("send-keys", "-t", "review", "Enter")
	x.must("send-keys", "-t", "review", "a")

	replies := e.waitFind(e2e.Bob, "INBOX", "In-Reply-To", m.ID, 1, waitLong)
	r := replies[0].M
	if !slices.Equal(r.InReplyTo, []string{m.ID}) {
		t.Errorf("In-Reply-To: got %v, want [%s]", r.InReplyTo, m.ID)
	}
	if n := len(r.References); n == 0 || r.References[n-1] != m.ID {
		t.Errorf("References: got %v, want it to end with %s", r.References, m.ID)
	}
	if want := "Re: " + m.Subject; r.Subject != want {
		t.Errorf("Subject: got %q, want %q", r.Subject, want)
	}
	if len(r.To) != 1 || !strings.EqualFold(r.To[0].Email, e2e.Bob) || len(r.Cc) != 0 {
		t.Errorf("recipients: got To %v Cc %v, want To bob only", r.To, r.Cc)
	}
	if got := r.HeaderValue("Auto-Submitted"); got != "" {
		t.Errorf("Auto-Submitted: got %q on a reply the owner approved, want none", got)
	}
	eventually(t, waitShort, "queue item "+item.ID+" sent", func() (bool, string) {
		d, err := w.client.QueueItem(context.Background(), item.ID)
		if err != nil {
			return false, err.Error()
		}
		return d.Item.Status == store.QueueSent, d.Item.Status
	})
	x.must("send-keys", "-t", "review", "q")

	e.barrier(e2e.Bob)
	if got := e.find(e2e.Bob, "INBOX", "In-Reply-To", m.ID); len(got) != 1 {
		t.Errorf("bob's INBOX: got %d replies to %s, want exactly 1", len(got), m.ID)
	}
}
