package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mailagent/mailagent/internal/app/api"
	"github.com/mailagent/mailagent/internal/llm/geminitest"
	"github.com/mailagent/mailagent/store"
)

// modelGate holds every model call until released: a slow model, so that
// a triage is caught in the middle of its run.
type modelGate struct {
	next     geminitest.Handler
	off      atomic.Bool // calls pass straight through
	entered  chan struct{}
	enterOne sync.Once
	release  chan struct{}
	relOne   sync.Once
}

func newModelGate(next geminitest.Handler) *modelGate {
	return &modelGate{next: next, entered: make(chan struct{}), release: make(chan struct{})}
}

func (g *modelGate) handle(req *geminitest.Request) geminitest.Reply {
	if g.off.Load() {
		return g.next(req)
	}
	g.enterOne.Do(func() { close(g.entered) })
	select {
	case <-g.release:
	case <-time.After(60 * time.Second): // a test that forgot to release
	}
	return g.next(req)
}

func (g *modelGate) wait(t *testing.T) {
	t.Helper()
	select {
	case <-g.entered:
	case <-time.After(30 * time.Second):
		t.Fatal("no model call: the run never got going")
	}
}

func (g *modelGate) open() { g.relOne.Do(func() { close(g.release) }) }

// running is a command line started in process in the background.
type running struct {
	stdout, stderr *lockedBuffer
	done           chan int
	code           int
	finished       bool
}

func (h *harness) start(args ...string) *running {
	r := &running{stdout: &lockedBuffer{}, stderr: &lockedBuffer{}, done: make(chan int, 1)}
	go func() {
		r.done <- Main(append([]string{"--config", h.cfgPath}, args...), strings.NewReader(""), r.stdout, r.stderr)
	}()
	return r
}

// wait returns the exit code.
func (r *running) wait(t *testing.T) int {
	t.Helper()
	if r.finished {
		return r.code
	}
	select {
	case r.code = <-r.done:
		r.finished = true
		return r.code
	case <-time.After(60 * time.Second):
		t.Fatalf("the command did not finish; stderr so far: %s", r.stderr.String())
		return -1
	}
}

// exited reports whether it has finished (without waiting).
func (r *running) exited() bool {
	if r.finished {
		return true
	}
	select {
	case r.code = <-r.done:
		r.finished = true
		return true
	default:
		return false
	}
}

func holderLine(command string) string {
	return fmt.Sprintf("a %s (pid %d) holds the state database", command, os.Getpid())
}

// statusJSON runs status --json.
func statusJSON(t *testing.T, h *harness) api.Status {
	t.Helper()
	out, stderr, code := h.run("status", "--json")
	if code != 0 {
		t.Fatalf("status --json: exit %d: %s", code, stderr)
	}
	var s api.Status
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("status --json: %v\n%s", err, out)
	}
	return s
}

// TestWatchWaitsForTriage: a triage holds the database (no watcher; its
// model is slow). watch started meanwhile does not exit 4: it says once
// what holds the database and waits; status and queue list work through
// the triage's socket; a second triage waits too. When the first triage
// ends, watch starts and the second triage runs through it. The other
// order (watch first, then triage through its socket) is
// TestCommandsAlongsideWatch.
func TestWatchWaitsForTriage(t *testing.T) {
	t.Parallel()
	gate := newModelGate(compromisedModel)
	h := newHarness(t, gate.handle, "")
	h.deliver(rawMail("Bob <bob@example.org>", "Lunch", "Lunch on Friday?"))

	tri := h.start("triage")
	gate.wait(t) // the triage holds the database, its model call hangs

	wstderr, stop := startWatch(t, h, true)
	want := holderLine("triage") + "; watching starts when it finishes"
	eventually(t, "watch says what it waits for", func() bool { return strings.Contains(wstderr.String(), want) })

	out, stderr, code := h.run("status")
	if code != 0 || !strings.Contains(out, fmt.Sprintf("a triage (pid %d) holds the database and serves the other commands", os.Getpid())) {
		t.Fatalf("status during triage: exit %d %q %q; want it through the triage's socket", code, out, stderr)
	}
	if s := statusJSON(t, h); s.Watcher || s.PID != os.Getpid() {
		t.Errorf("status --json during triage: %+v, want no watcher and the triage's pid", s)
	}
	if out, stderr, code := h.run("queue", "list", "--json"); code != 0 || !strings.HasPrefix(strings.TrimSpace(out), "[") {
		t.Fatalf("queue list during triage: exit %d %q %q", code, out, stderr)
	}

	tri2 := h.start("triage", "--redo")
	eventually(t, "the second triage says what it waits for", func() bool {
		return strings.Contains(tri2.stderr.String(), holderLine("triage")+"; triage starts when it finishes")
	})
	if tri2.exited() {
		t.Fatalf("second triage: exit %d: %s; want it waiting", tri2.code, tri2.stderr.String())
	}
	if strings.Contains(wstderr.String(), "personal: idle") {
		t.Fatal("watch started while the triage held the database")
	}

	gate.open()
	if code := tri.wait(t); code != 0 {
		t.Fatalf("triage: exit %d: %s", code, tri.stderr.String())
	}
	eventually(t, "watch starts once the triage is done", func() bool { return strings.Contains(wstderr.String(), "personal: idle") })
	if s := statusJSON(t, h); !s.Watcher {
		t.Errorf("status after the triage: %+v, want the watcher", s)
	}
	if code := tri2.wait(t); code != 0 {
		t.Fatalf("second triage: exit %d: %s", code, tri2.stderr.String())
	}
	if n := strings.Count(wstderr.String(), want); n != 1 {
		t.Errorf("watch said what it waits for %d times, want once:\n%s", n, wstderr.String())
	}
	if err := stop(); err != nil {
		t.Fatalf("watch: %v", err)
	}
	for _, r := range []*running{tri, tri2} {
		if strings.Contains(r.stderr.String(), "locked") || strings.Contains(r.stderr.String(), "in use") {
			t.Errorf("a lock error reached the user: %s", r.stderr.String())
		}
	}
}

// TestWatchStartsBesideDryRun: a triage --dry-run or a replay in progress
// holds no lock (it works on a snapshot), so watch starts at once, in
// both orders; the dry run still sees the stored state.
func TestWatchStartsBesideDryRun(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"triage", "--dry-run", "--redo", "--json"}, {"replay", "--json"}} {
		t.Run(args[0]+" first", func(t *testing.T) {
			gate := newModelGate(compromisedModel)
			h := newHarness(t, gate.handle, "")
			h.deliver(rawMail("Bob <bob@example.org>", "Lunch", "Lunch on Friday?"))
			gate.off.Store(true)
			if _, stderr, code := h.run("watch", "--once"); code != 0 { // state exists
				t.Fatalf("watch --once: %d %s", code, stderr)
			}
			gate.off.Store(false)
			gate2 := gate
			h.deliver(rawMail("Carol <carol@example.org>", "Question", "What time?"))

			dry := h.start(args...)
			gate2.wait(t)
			wstderr, stop := startWatch(t, h, true)
			// Started: its socket answers as the watcher (its first message
			// waits on the same slow model, so it is not idle yet).
			eventually(t, "watch starts beside the dry run", func() bool {
				c, err := api.Dial(context.Background(), api.SocketPath(h.dir+"/state"))
				if err != nil {
					return false
				}
				defer func() { _ = c.Close() }()
				s, err := c.Status(context.Background())
				return err == nil && s.Watcher
			})
			if strings.Contains(wstderr.String(), "holds the state database") {
				t.Errorf("watch waited for a dry run: %s", wstderr.String())
			}
			gate2.open()
			if code := dry.wait(t); code != 0 && code != ExitPartial {
				t.Fatalf("dry run: exit %d: %s", code, dry.stderr.String())
			}
			if args[0] == "triage" {
				if got := decodeLines(t, dry.stdout.String()); len(got) != 2 {
					t.Errorf("dry run: %d records, want both messages: %v", len(got), got)
				}
			}
			if err := stop(); err != nil {
				t.Fatal(err)
			}
			noSnapshotsLeft(t, h)
		})
	}
	t.Run("watch first", func(t *testing.T) {
		h := newHarness(t, compromisedModel, "")
		h.deliver(rawMail("Bob <bob@example.org>", "Lunch", "Lunch on Friday?"))
		wstderr, stop := startWatch(t, h, true)
		eventually(t, "watch is idle", func() bool { return strings.Contains(wstderr.String(), "personal: idle") })
		out, stderr, code := h.run("triage", "--dry-run", "--redo", "--json")
		if code != 0 && code != ExitPartial {
			t.Fatalf("dry run beside watch: exit %d: %s", code, stderr)
		}
		if got := decodeLines(t, out); len(got) != 1 {
			t.Errorf("dry run beside watch: %v", got)
		}
		if err := stop(); err != nil {
			t.Fatal(err)
		}
	})
}

// noSnapshotsLeft: the dry runs removed their private copies.
func noSnapshotsLeft(t *testing.T, h *harness) {
	t.Helper()
	ents, err := os.ReadDir(h.dir + "/state")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".snapshot-") {
			t.Errorf("snapshot left behind: %s", e.Name())
		}
	}
}

// TestApproveUndoWindowBesideOthers: with no watcher, a CLI approval
// waiting out its undo window holds the database, so it serves the
// socket meanwhile: status and queue list work through it, a watch
// started meanwhile says what it waits for and starts once the reply has
// gone, and the reply goes exactly once. (Watch first, then approve, is
// TestApproveUndoWindowWithWatcher.)
func TestApproveUndoWindowBesideOthers(t *testing.T) {
	t.Parallel()
	h := newHarness(t, compromisedModel, "[policy]\napproval_delay = \"4s\"\n")
	id := queuedFromBob(t, h, "Call on Thursday", "Can we move our call to Thursday?")

	ap := h.start("queue", "approve", id, "--yes")
	eventually(t, "the approval waits out its window", func() bool { return strings.Contains(ap.stderr.String(), "sending in") })

	out, stderr, code := h.run("status")
	if code != 0 || !strings.Contains(out, fmt.Sprintf("a queue approve (pid %d) holds the database", os.Getpid())) {
		t.Fatalf("status in the undo window: exit %d %q %q", code, out, stderr)
	}
	if s := itemStatus(t, h, id); s != store.QueueApproved {
		t.Errorf("queue show in the window: %s, want approved", s)
	}
	wstderr, stop := startWatch(t, h, true)
	eventually(t, "watch says what it waits for", func() bool {
		return strings.Contains(wstderr.String(), holderLine("queue approve")+"; watching starts when it finishes")
	})
	if code := ap.wait(t); code != 0 || !strings.Contains(ap.stderr.String(), id+": sent to") {
		t.Fatalf("approve: exit %d: %s", code, ap.stderr.String())
	}
	eventually(t, "watch starts after the approval", func() bool { return strings.Contains(wstderr.String(), "personal: idle") })
	time.Sleep(500 * time.Millisecond) // a second send, if any, would happen now
	if n := len(h.smtp.Messages()); n != 1 {
		t.Fatalf("sends: %d, want exactly 1", n)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

// TestApproveUndoWindowCancelThroughHolder: the same approval cancelled
// from another command during the window (through the approving
// process's socket) sends nothing and hands the item back; approvals of
// the same draft from other commands meanwhile never make a second send.
func TestApproveUndoWindowCancelThroughHolder(t *testing.T) {
	t.Parallel()
	h := newHarness(t, compromisedModel, "[policy]\napproval_delay = \"4s\"\n")
	id := queuedFromBob(t, h, "Call on Thursday", "Can we move our call to Thursday?")

	ap := h.start("queue", "approve", id, "--yes")
	eventually(t, "the approval waits out its window", func() bool { return strings.Contains(ap.stderr.String(), "sending in") })
	tried, through := 0, 0
	const approvals = 3
	for range approvals { // the same draft approved again from elsewhere: one window, one send at most
		tried++
		if _, _, code := h.run("queue", "approve", id, "--yes"); code == 0 {
			through++
			t.Errorf("a second approval of %s in its window succeeded", id)
		}
	}
	if _, stderr, code := h.run("queue", "cancel", id); code != 0 {
		t.Fatalf("queue cancel through the holder: exit %d: %s", code, stderr)
	}
	code := ap.wait(t)
	if code == 0 || !strings.Contains(ap.stderr.String(), "back in the queue") {
		t.Fatalf("approve after a cancel: exit %d %q; want not sent, back in the queue", code, ap.stderr.String())
	}
	time.Sleep(500 * time.Millisecond)
	tried++
	if n := len(h.smtp.Messages()); n != 0 {
		through++
		t.Errorf("sent %d after a cancel", n)
	}
	if s := itemStatus(t, h, id); s != store.QueuePending {
		t.Errorf("after cancel: %s, want pending", s)
	}
	t.Logf("extra approvals and sends around one undo window: %d tried, %d got through", tried, through)
	if tried != approvals+1 || through != 0 { // the approvals and the send after the cancel
		t.Errorf("%d of %d got through, want 0", through, tried)
	}

	// Positive control: with no approval in its window (the defence: the
	// item is approved already), the same approval from another command
	// is accepted and the reply goes, exactly once.
	if _, stderr, code := h.run("queue", "approve", id, "--yes"); code != 0 {
		t.Errorf("positive control: an approval with no window open: exit %d: %s; the approvals above do not test the window", code, stderr)
	}
	eventually(t, "the control's reply is sent", func() bool { return len(h.smtp.Messages()) == 1 })
}
