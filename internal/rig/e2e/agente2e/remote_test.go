package agente2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/internal/app/api"
	"github.com/mailagent/mailagent/internal/rig/e2e"
	"github.com/mailagent/mailagent/store"
)

// remoteDraft starts a watcher and queues one draft answering Bob (a
// known contact, so approving needs no confirmation).
func remoteDraft(t *testing.T, e *env, name string) (*watcher, message, store.QueueItem) {
	t.Helper()
	e.seedSent(bobAddr)
	w := e.startWatch()
	m := message{From: bobAddr, To: adaAddr, Subject: "Remote " + name + " " + e.tag, ID: e.id(name),
		Body: "Hi Ada,\ncan you confirm the budget numbers by Friday?\nBob"}
	e.deliver(m)
	return w, m, w.queueItem(m.ID, waitLong)
}

// TestRemoteStatusQueueApprove: status, queue list and queue approve run
// on "another machine" (an empty state directory) against the watcher
// through a real ssh and sshd: the answers are the watcher's, and Bob
// gets exactly one reply.
func TestRemoteStatusQueueApprove(t *testing.T) {
	parallel(t)
	e := newEnv(t, options{})
	r := newRemote(t, e)
	w, m, item := remoteDraft(t, e, "approve")

	out, errs, code := r.run(r.ssh, "status", "--json")
	if code != 0 {
		t.Fatalf("status --remote: exit %d\n%s", code, errs)
	}
	var st struct {
		Watcher bool `json:"watcher"`
		PID     int  `json:"pid"`
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("status --json: %v\n%s", err, out)
	}
	if !st.Watcher || st.PID != w.pid() {
		t.Errorf("status over ssh: got watcher %v pid %d, want the watcher, pid %d", st.Watcher, st.PID, w.pid())
	}
	out, errs, code = r.run(r.ssh, "queue", "list", "--json")
	if code != 0 || !strings.Contains(out, item.ID) {
		t.Fatalf("queue list --remote: exit %d, want 0 listing %s\nstdout:\n%s\nstderr:\n%s", code, item.ID, out, errs)
	}
	// The other commands that talk to a watcher, over ssh too.
	for _, args := range [][]string{{"queue", "show", item.ID, "--json"}, {"explain", m.ID, "--json"}, {"decisions", "--json"},
		{"followups", "--json"}, {"digest", "--json"}} {
		out, errs, code := r.run(r.ssh, args...)
		if code != 0 || !json.Valid([]byte(out)) {
			t.Errorf("%v --remote: exit %d, valid JSON %v\nstdout:\n%s\nstderr:\n%s", args, code, json.Valid([]byte(out)), out, errs)
		}
		if (args[0] == "queue" || args[0] == "explain") && !strings.Contains(out, m.ID) {
			t.Errorf("%v --remote does not show %s:\n%s", args, m.ID, out)
		}
	}
	if _, errs, code = r.run(r.ssh, "queue", "approve", item.ID, "--yes"); code != 0 {
		t.Fatalf("queue approve --remote: exit %d\n%s", code, errs)
	}
	e.waitFind(e2e.Bob, "INBOX", "In-Reply-To", m.ID, 1, waitLong)
	e.barrier(e2e.Bob)
	if got := e.find(e2e.Bob, "INBOX", "In-Reply-To", m.ID); len(got) != 1 {
		t.Errorf("bob's INBOX: got %d replies, want exactly 1", len(got))
	}
	if n := r.sessions(); n < 8 {
		t.Errorf("sshd started serve --stdio %d times, want one per command at least (8): the commands did not go through ssh", n)
	}
	// The commands that need this machine's database refuse --remote.
	for _, args := range [][]string{{"triage", "--dry-run"}, {"watch", "--once"}, {"doctor"}, {"serve", "--stdio"}} {
		runs := r.sshRuns()
		_, errs, code := r.run(r.ssh, args...)
		if code != 2 || !strings.Contains(errs, "--remote") {
			t.Errorf("%v --remote: exit %d, want 2 saying it does not take --remote\n%s", args, code, errs)
		}
		if r.sshRuns() != runs {
			t.Errorf("%v --remote ran ssh", args)
		}
	}
}

// TestRemoteUnknownHostKeyRefused: a host key that known_hosts does not
// hold is refused by ssh itself (StrictHostKeyChecking=yes): exit 3 with
// ssh's words, and sshd never starts serve.
func TestRemoteUnknownHostKeyRefused(t *testing.T) {
	parallel(t)
	e := newEnv(t, options{})
	r := newRemote(t, e)
	e.startWatch()
	other := filepath.Join(r.dir, "other_host")
	if b, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", other).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v\n%s", err, b)
	}
	pub, err := os.ReadFile(other + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	line, _ := os.ReadFile(r.knownHosts)
	hostPart := strings.Fields(string(line))[0]
	kh := filepath.Join(r.dir, "wrong_known_hosts")
	f := strings.Fields(string(pub))
	if err := os.WriteFile(kh, []byte(hostPart+" "+f[0]+" "+f[1]+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ssh := r.writeSSH("ssh-wrong-key", kh)
	_, errs, code := r.run(ssh, "status")
	if code != 3 {
		t.Errorf("status with a wrong host key: exit %d, want 3\n%s", code, errs)
	}
	if !strings.Contains(errs, "HOST IDENTIFICATION HAS CHANGED") && !strings.Contains(errs, "Host key verification failed") {
		t.Errorf("stderr does not say ssh refused the host key:\n%s", errs)
	}
	if n := r.sessions(); n != 0 {
		t.Errorf("sshd started serve %d times despite the refused host key", n)
	}
	// The control: the right known_hosts gets through.
	if _, errs, code := r.run(r.ssh, "status"); code != 0 {
		t.Errorf("control: status with the right host key: exit %d\n%s", code, errs)
	}
}

// TestRemoteEventsResumeAfterCut: the event stream over ssh survives the
// sshd session being killed: the client reports the watcher gone, cannot
// reconnect while ssh fails, gets what happened meanwhile when it can
// (Last-Event-ID, no reset), and reports the watcher back.
func TestRemoteEventsResumeAfterCut(t *testing.T) {
	parallel(t)
	e := newEnv(t, options{})
	r := newRemote(t, e)
	e.seedSent(bobAddr)
	w := e.startWatch()
	c := r.dial()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	evs, err := c.Events(ctx)
	if err != nil {
		t.Fatal(err)
	}
	next := func(what string, match func(agent.Event) bool) agent.Event {
		t.Helper()
		deadline := time.After(waitLong)
		for {
			select {
			case ev, ok := <-evs:
				if !ok {
					t.Fatalf("event stream closed waiting for %s", what)
				}
				if ev.Kind == api.EventReset {
					t.Fatalf("got a reset waiting for %s: the stream did not resume", what)
				}
				if match(ev) {
					return ev
				}
			case <-deadline:
				t.Fatalf("no %s within %v", what, waitLong)
			}
		}
	}
	kind := func(k string) func(agent.Event) bool { return func(ev agent.Event) bool { return ev.Kind == k } }

	r.touch(r.blockFile, true) // no reconnecting until the mail is in
	if n := r.cutAll(); n == 0 {
		t.Fatal("no sshd session to cut")
	}
	next("watcher_gone", kind(api.EventWatcherGone))
	m := message{From: bobAddr, To: adaAddr, Subject: "Remote events " + e.tag, ID: e.id("events"),
		Body: "Hi Ada,\nare we still on for the review?\nBob"}
	e.deliver(m)
	item := w.queueItem(m.ID, waitLong) // queued while the client was cut off
	r.touch(r.blockFile, false)
	next("watcher_back", kind(api.EventWatcherBack))
	next("queue_added "+item.ID, func(ev agent.Event) bool { return ev.Kind == "queue_added" && ev.ID == item.ID })
}

// TestRemoteApprovalCutMidway: the connection dies after the approval
// reached the watcher and before its answer came back. The client does
// not send it again; it re-reads the item and says what happened; Bob
// gets exactly one reply; approving again sends nothing more.
func TestRemoteApprovalCutMidway(t *testing.T) {
	parallel(t)
	e := newEnv(t, options{})
	r := newRemote(t, e)
	w, m, item := remoteDraft(t, e, "cut")
	c := r.dial()
	_ = c.Close()              // the approval takes a fresh connection…
	r.touch(r.delayFile, true) // …whose answers are held back
	before := len(r.pids())
	type result struct {
		q   *store.QueueItem
		err error
	}
	done := make(chan result, 1)
	go func() {
		q, err := c.Approve(context.Background(), item.ID, "")
		done <- result{q, err}
	}()
	eventually(t, waitShort, "the watcher has the approval", func() (bool, string) {
		d, err := w.client.QueueItem(context.Background(), item.ID)
		if err != nil {
			return false, err.Error()
		}
		return d.Item.Status != store.QueuePending, d.Item.Status
	})
	r.touch(r.delayFile, false)
	pids := r.pids()
	if len(pids) <= before {
		t.Fatal("the approval's connection did not start a serve")
	}
	if n := r.cutAll(); n == 0 {
		t.Fatal("no sshd session to cut")
	}
	var res result
	select {
	case res = <-done:
	case <-time.After(waitLong):
		t.Fatal("Approve did not return after the cut")
	}
	var lost *api.LostError
	if !errors.As(res.err, &lost) {
		t.Fatalf("Approve after a cut: got %v (%T), want a *api.LostError", res.err, res.err)
	}
	if lost.Item == nil || (lost.Item.Status != store.QueueApproved && lost.Item.Status != store.QueueSent) {
		t.Errorf("the re-read item: got %+v (read error %v), want approved or sent", lost.Item, lost.ReadErr)
	}
	msg := res.err.Error()
	if !strings.HasPrefix(msg, "connection lost during approval; the item's state is ") {
		t.Errorf("the owner is told %q, want it to start: connection lost during approval; the item's state is", msg)
	}
	t.Logf("the owner is told: %s", msg)
	e.waitFind(e2e.Bob, "INBOX", "In-Reply-To", m.ID, 1, waitLong)
	// Approving again, over ssh, sends nothing more.
	if _, err := r.dial().Approve(context.Background(), item.ID, ""); err == nil {
		t.Error("a second approval succeeded")
	}
	e.barrier(e2e.Bob)
	if got := e.find(e2e.Bob, "INBOX", "In-Reply-To", m.ID); len(got) != 1 {
		t.Errorf("bob's INBOX: got %d replies, want exactly 1 (nothing sent twice, nothing lost)", len(got))
	}
}

// TestRemoteReviewUnderTmux: `mailagent review --remote` in a real
// terminal approves the queued draft through ssh; Bob gets one reply.
func TestRemoteReviewUnderTmux(t *testing.T) {
	parallel(t)
	e := newEnv(t, options{})
	r := newRemote(t, e)
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed (scripts/e2e-stack.sh install adds it)")
	}
	w, m, item := remoteDraft(t, e, "tui")
	x := &tmux{t: t, socket: "ma-e2e-remote-" + e.tag}
	cmd := r.command(context.Background(), r.ssh, "review")
	env := []string{"env", passwordEnv + "=" + e.password, apiKeyEnv + "=e2e-not-a-real-key", "MAILAGENT_SSH=" + r.ssh}
	x.must(append([]string{"new-session", "-d", "-s", "review", "-x", "120", "-y", "35", "--"}, append(env, cmd.Args...)...)...)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("review screen:\n%s", x.screen())
			t.Logf("the client's log:\n%s", tail(filepath.Join(r.emptyState, "mailagent.log"), 30))
			t.Logf("serve and sshd pids: %v", r.pids())
		}
		_, _ = x.run("kill-server")
	})
	x.waitScreen(e.tag, waitShort)
	x.waitScreen("watcher connected on ssh://", waitShort)
	x.must("send-keys", "-t", "review", "/")
	x.must("send-keys", "-t", "review", "-l", e.tag)
	x.must("send-keys", "-t", "review", "Enter")
	x.must("send-keys", "-t", "review", "a")
	e.waitFind(e2e.Bob, "INBOX", "In-Reply-To", m.ID, 1, waitLong)
	eventually(t, waitShort, "queue item "+item.ID+" sent", func() (bool, string) {
		d, err := w.client.QueueItem(context.Background(), item.ID)
		if err != nil {
			return false, err.Error()
		}
		return d.Item.Status == store.QueueSent, d.Item.Status
	})
	// The connection dies: the status line says so (not that actions run
	// locally), and says connected again once ssh can reconnect.
	// The review's own connection may be between two sessions just now
	// (in CI once, none was registered at this point): wait for one.
	eventually(t, waitShort, "a live sshd session of the review", func() (bool, string) {
		return len(r.live()) > 0, fmt.Sprintf("pids %v", r.pids())
	})
	r.touch(r.blockFile, true)
	cut := r.cutAll()
	// A connection the review opened just before the block can register
	// its session after the cut: cut again until the screen says lost
	// (in CI once, the review stayed on such a connection).
	eventually(t, waitShort, "the review screen shows lost: reconnecting", func() (bool, string) {
		s := x.screen()
		if strings.Contains(s, "lost: reconnecting") {
			return true, ""
		}
		cut += r.cutAll()
		return false, "screen:\n" + s
	})
	if cut == 0 {
		t.Error("the screen says lost, but no sshd session was cut")
	}
	if s := x.screen(); strings.Contains(s, "actions run locally") {
		t.Errorf("the screen claims actions run locally over --remote:\n%s", s)
	}
	r.touch(r.blockFile, false)
	x.waitScreen("watcher connected on ssh://", waitShort)
	x.must("send-keys", "-t", "review", "q")
	e.barrier(e2e.Bob)
	if got := e.find(e2e.Bob, "INBOX", "In-Reply-To", m.ID); len(got) != 1 {
		t.Errorf("bob's INBOX: got %d replies, want exactly 1", len(got))
	}
	if r.sessions() == 0 {
		t.Error("review --remote never went through sshd")
	}
}

// TestRemoteHostileURLRefused: hostile --remote URLs given to the real
// binary are refused with exit 2 before ssh runs; nothing they carry runs
// on the host. The positive control is the same kind of URL with the
// validation off, through the real ssh and sshd: its shell command runs on
// the host (the marker file appears), so the validation is what stops it.
func TestRemoteHostileURLRefused(t *testing.T) {
	parallel(t)
	e := newEnv(t, options{})
	r := newRemote(t, e)
	marker := filepath.Join(r.dir, "pwned")
	target := r.target()
	hostPort := target.Host + ":" + strconv.Itoa(target.Port)
	userHost := target.User + "@" + hostPort
	hostile := []string{
		"ssh://-oProxyCommand=touch${IFS}" + marker,
		"ssh://-oProxyCommand=sh@" + hostPort,
		"ssh://" + userHost + "?command=" + url.QueryEscape("true;touch "+marker+";true"),
		"ssh://" + userHost + "?command=" + url.QueryEscape("$(touch "+marker+")"),
		"ssh://" + userHost + "?command=" + url.QueryEscape("true\ntouch "+marker),
		"ssh://" + userHost + "?command=" + url.QueryEscape("-oProxyCommand=touch "+marker),
		"ssh://" + userHost + " -oProxyCommand=touch",
		"ssh://" + userHost + "\n-oProxyCommand=touch",
		"ssh://" + target.User + ";touch@" + hostPort,
	}
	tried, through := 0, 0
	for _, raw := range hostile {
		tried++
		runs := r.sshRuns()
		cmd := exec.Command(binary, "--config", e.cfgPath, "--state-dir", r.emptyState, "--remote", raw, "status")
		cmd.Env = append(os.Environ(), "MAILAGENT_SSH="+r.ssh)
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		code := 0
		if errors.As(err, &exit) {
			code = exit.ExitCode()
		}
		_, statErr := os.Stat(marker)
		if code != 2 || r.sshRuns() != runs || statErr == nil {
			through++
			t.Errorf("%q: exit %d (want 2), ssh ran %d times, marker exists %v\n%s", raw, code, r.sshRuns()-runs, statErr == nil, out)
		}
	}
	t.Logf("hostile --remote through the binary: %d tried, %d through", tried, through)
	if through != 0 {
		t.Errorf("%d of %d hostile URLs got through", through, tried)
	}
}

// TestRemoteHostileURLLandsWithoutValidation is TestRemoteHostileURLRefused's
// positive control: the validation off, a shell command in the URL's
// command runs on the host through the real sshd. Not parallel: it flips
// api's package switch (SwitchOffRemoteValidationForTest), which the
// parallel remote tests read; Go runs the sequential tests first.
func TestRemoteHostileURLLandsWithoutValidation(t *testing.T) {
	e := newEnv(t, options{})
	r := newRemote(t, e)
	marker := filepath.Join(r.dir, "pwned")
	target := r.target()
	userHost := target.User + "@" + target.Host + ":" + strconv.Itoa(target.Port)
	e.startWatch()
	restore := api.SwitchOffRemoteValidationForTest()
	defer restore()
	bad, err := api.ParseRemote("ssh://"+userHost+"?command="+url.QueryEscape("touch "+marker+";"+r.serveCmd), "")
	if err != nil {
		t.Fatalf("control: refused with the validation off: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitShort)
	defer cancel()
	if c, err := api.DialRemote(ctx, bad, r.options()); err == nil {
		_ = c.Close()
	}
	if _, err := os.Stat(marker); err != nil {
		t.Errorf("control: the injected command did not run on the host (%v): the test shows nothing", err)
	}
}
