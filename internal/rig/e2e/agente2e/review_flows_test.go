package agente2e

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/mailagent/mailagent/internal/rig/e2e"
	"github.com/mailagent/mailagent/store"
)

// startReview runs `mailagent review` for e in a private tmux server at
// 120x35 and narrows every list to this test's mail (the INBOX is shared).
func startReview(t *testing.T, e *env) *tmux {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed (scripts/e2e-stack.sh install adds it): the real-terminal review flows need it")
	}
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
	return x
}

func (x *tmux) keys(keys ...string) {
	x.t.Helper()
	for _, k := range keys {
		x.must("send-keys", "-t", "review", k)
	}
}

// scrollUpTo presses ctrl-u, a half page at a time, until the screen
// shows text; the test fails when it never does.
func (x *tmux) scrollUpTo(text string) {
	x.t.Helper()
	for range 40 {
		s := x.screen()
		if strings.Contains(s, text) {
			return
		}
		x.keys("C-u")
		time.Sleep(300 * time.Millisecond)
	}
	x.t.Fatalf("the review screen never showed %q scrolling up:\n%s", text, x.screen())
}

func (x *tmux) text(s string) {
	x.t.Helper()
	x.must("send-keys", "-t", "review", "-l", s)
}

// filter narrows the list to this test's mail.
func (x *tmux) filter(tag string) {
	x.t.Helper()
	x.keys("/")
	x.text(tag)
	x.keys("Enter")
}

// TestReviewUndoAndSnoozeUnderTmux drives the review TUI in a real
// terminal beside a running watcher: "a" shows the undo countdown
// (policy.approval_delay, 5s by default) and "c" within it puts the draft
// back unsent; "s tomorrow" snoozes it and "u" brings it back; "a" again
// lets the countdown run out and Bob gets exactly one reply.
func TestReviewUndoAndSnoozeUnderTmux(t *testing.T) {
	parallel(t)
	e := newEnv(t, options{})
	e.seedSent(bobAddr) // known: "a" asks nothing
	w := e.startWatch()
	m := message{From: bobAddr, To: adaAddr, Subject: "Undo window " + e.tag, ID: e.id("undo"),
		Body: "Hi Ada,\ncould you confirm the numbers?\nBob"}
	e.deliver(m)
	item := w.queueItem(m.ID, waitLong)
	status := func() string {
		d, err := w.client.QueueItem(context.Background(), item.ID)
		if err != nil {
			return err.Error()
		}
		return d.Item.Status
	}

	x := startReview(t, e)
	x.waitScreen(e.tag, waitShort)
	x.filter(e.tag)
	x.keys("a")
	x.waitScreen("sending in", waitShort)
	x.waitScreen("c cancels", waitShort)
	x.keys("c")
	x.waitScreen("back in the queue", waitShort)
	if got := status(); got != store.QueuePending {
		t.Fatalf("after c in the undo window: %s, want pending", got)
	}
	e.barrier(e2e.Bob)
	if got := e.find(e2e.Bob, "INBOX", "In-Reply-To", m.ID); len(got) != 0 {
		t.Fatalf("a cancelled approval reached Bob (%d replies)", len(got))
	}

	x.keys("s")
	x.text("tomorrow")
	x.keys("Enter")
	x.waitScreen("(snoozed)", waitShort)
	eventually(t, waitShort, "item snoozed", func() (bool, string) { s := status(); return s == store.QueueSnoozed, s })
	x.keys("u")
	x.waitScreen("unsnoozed", waitShort)
	eventually(t, waitShort, "item pending again", func() (bool, string) { s := status(); return s == store.QueuePending, s })

	x.keys("a")
	x.waitScreen("sending in", waitShort)
	e.waitFind(e2e.Bob, "INBOX", "In-Reply-To", m.ID, 1, waitLong)
	eventually(t, waitShort, "item sent", func() (bool, string) { s := status(); return s == store.QueueSent, s })
	x.keys("q")
	e.barrier(e2e.Bob)
	if got := e.find(e2e.Bob, "INBOX", "In-Reply-To", m.ID); len(got) != 1 {
		t.Errorf("bob's INBOX: %d replies to %s, want exactly 1", len(got), m.ID)
	}
}

// TestReviewSentDetailUnderTmux: the detail of a reply the agent sent on
// its own, opened in a real terminal, names its recipient as "Sent to"
// (never "From"), whose mail it answers, the ids explain takes, the
// thread, the gates and the text sent; view 5 lists the decision.
func TestReviewSentDetailUnderTmux(t *testing.T) {
	parallel(t)
	e := newEnv(t, options{Mode: "auto", Model: autoModel})
	e.seedSent(bobAddr)
	w := e.startWatch()
	m := message{From: bobAddr, To: adaAddr, Subject: "Thursday meeting [auto] detail " + e.tag, ID: e.id("sentdetail"),
		Body: "Hi Ada,\ndoes Thursday work?\nBob"}
	e.deliver(m)
	e.waitFind(e2e.Bob, "INBOX", "In-Reply-To", m.ID, 1, waitLong)
	w.waitIdle()

	x := startReview(t, e)
	x.keys("4")
	x.waitScreen(e.tag, waitShort)
	x.filter(e.tag)
	x.keys("Enter")
	for _, want := range []string{"Sent to:    " + e2e.Bob, "Answering:  Bob <" + e2e.Bob + ">", "Message-ID: " + m.ID, "Trace:      tr_", "Thread (1)", "sent by the agent on its own"} {
		x.waitScreen(want, waitShort)
	}
	if s := x.screen(); strings.Contains(s, "From:") {
		t.Errorf("the detail of a sent reply labels someone From:\n%s", s)
	}
	// The detail ends with the trace's steps: G shows them, and the text
	// sent and the gates are found scrolling up from there (ctrl-u).
	x.keys("G")
	x.waitScreen("--steps", waitShort)
	for _, want := range []string{"Thursday works.", "── Sent reply ──", "known_contact", "── Gates ──"} {
		x.scrollUpTo(want)
	}
	x.keys("q", "5")
	x.waitScreen("auto_send", waitShort)
	x.keys("q")
}
