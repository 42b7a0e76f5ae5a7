package agente2e

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
	"testing"

	"github.com/mailagent/mailagent/internal/rig/e2e"
)

// TestReviewConfirmsNewAddressUnderTmux: a message from Bob whose Reply-To
// points at a stranger. In a real terminal the review shows the stranger
// as the recipient, marked [new]; "a" asks "send to a new address …? y/N";
// "n" sends nothing; "a", "y" sends the one reply, to the stranger
// (Postfix hands unknown addresses to the sink user).
func TestReviewConfirmsNewAddressUnderTmux(t *testing.T) {
	parallel(t)
	e := newEnv(t, options{})
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed (scripts/e2e-stack.sh install adds it): the real-terminal review test needs it")
	}
	w := e.startWatch()
	stranger := "collector-" + e.tag + "@elsewhere.test"
	m := message{From: bobAddr, To: adaAddr, Subject: "Payment details " + e.tag, ID: e.id("replyto"),
		Body: "Hi Ada,\nplease send the account details.\nBob"}
	raw := bytes.Replace(m.raw(), []byte("\r\nTo: "), []byte("\r\nReply-To: "+stranger+"\r\nTo: "), 1)
	e.s.Deliver(t, bareAddr(m.From), []string{e2e.Owner}, raw)
	e.moveIn(m.ID)
	w.queueItem(m.ID, waitLong)

	x := &tmux{t: t, socket: "ma-e2e-confirm-" + e.tag}
	cmd := e.command(context.Background(), "review")
	env := []string{"env", passwordEnv + "=" + e.password, apiKeyEnv + "=e2e-not-a-real-key"}
	x.must(append([]string{"new-session", "-d", "-s", "review", "-x", "140", "-y", "40", "--"}, append(env, cmd.Args...)...)...)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("review screen:\n%s", x.screen())
		}
		_, _ = x.run("kill-server")
	})

	x.waitScreen(e.tag, waitShort)
	x.must("send-keys", "-t", "review", "/")
	x.must("send-keys", "-t", "review", "-l", e.tag)
	x.must("send-keys", "-t", "review", "Enter")
	x.must("send-keys", "-t", "review", "Enter") // open the detail view
	x.waitScreen("[new] "+stranger, waitShort)
	x.waitScreen("you have never written to the address marked [new]", waitShort)

	// Bob's mail fails DMARC here: the question names those gates too.
	ask := "send to a new address " + stranger + ", although safety gates sender_auth, recipients failed? y/N"
	x.must("send-keys", "-t", "review", "a")
	x.waitScreen(ask, waitShort)
	x.must("send-keys", "-t", "review", "n") // one key answers
	x.waitScreen("not sent", waitShort)
	e.barrier(e2e.Sink)
	if got := e.find(e2e.Sink, "INBOX", "In-Reply-To", m.ID); len(got) != 0 {
		t.Fatalf("a reply went out after the owner answered n: %d message(s)", len(got))
	}

	x.must("send-keys", "-t", "review", "a")
	x.waitScreen(ask, waitShort)
	x.must("send-keys", "-t", "review", "y")
	replies := e.waitFind(e2e.Sink, "INBOX", "In-Reply-To", m.ID, 1, waitLong)
	r := replies[0].M
	if len(r.To) != 1 || !strings.EqualFold(r.To[0].Email, stranger) {
		t.Errorf("recipients: got %v, want only %s (the Reply-To)", r.To, stranger)
	}
	x.must("send-keys", "-t", "review", "q")
	e.barrier(e2e.Sink)
	if got := e.find(e2e.Sink, "INBOX", "In-Reply-To", m.ID); len(got) != 1 {
		t.Errorf("replies after yes: got %d, want exactly 1", len(got))
	}
}
