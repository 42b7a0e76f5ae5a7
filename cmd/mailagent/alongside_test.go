package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mailagent/mailagent/internal/app/api"
	"github.com/mailagent/mailagent/store"
)

// startWatch runs `watch` in process until the test ends, and waits for
// its socket to answer.
func (h *harness) startWatch(t *testing.T) *api.Client {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var out, errb bytes.Buffer
	f := newFactory(strings.NewReader(""), &out, &errb)
	f.ConfigPath = h.cfgPath
	done := make(chan error, 1)
	go func() { done <- watchRun(ctx, f, &WatchOptions{}) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("watch returned %v, want nil after cancel", err)
			}
		case <-time.After(20 * time.Second):
			t.Error("watch did not stop after cancel")
		}
		f.Close()
	})
	cfg, err := f.Config()
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := api.Dial(ctx, api.SocketPath(cfg.StateDir))
		if err == nil {
			t.Cleanup(func() { _ = c.Close() })
			return c
		}
		select {
		case err := <-done:
			t.Fatalf("watch exited early: %v\n%s", err, errb.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("socket never answered: %v", err)
		}
		time.Sleep(20 * time.Millisecond) // polling for a server to come up, not asserting on time
	}
}

// waitFor waits for an event of the given kind.
func waitFor(t *testing.T, ch <-chan agentEvent, kind string) agentEvent {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatalf("event stream closed while waiting for %s", kind)
			}
			if ev.Kind == kind {
				return ev
			}
		case <-timeout:
			t.Fatalf("no %s event", kind)
		}
	}
}

func TestCommandsAlongsideWatch(t *testing.T) {
	t.Parallel()
	h := newHarness(t, compromisedModel, "")
	c := h.startWatch(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events, err := c.Events(ctx)
	if err != nil {
		t.Fatal(err)
	}

	// New mail arrives while watch IDLEs; its draft shows up as an event.
	h.deliver(rawMail("Carol <carol@example.org>", "Lunch", "Lunch next week?"))
	ev := waitFor(t, events, "queue_added")
	waitFor(t, events, "message_done") // the trace is written last

	// Every other command works while watch holds the database.
	stdout, stderr, code := h.run("queue", "list", "--json")
	if code != 0 {
		t.Fatalf("queue list: %d %s", code, stderr)
	}
	var items []store.QueueItem
	if err := json.Unmarshal([]byte(stdout), &items); err != nil {
		t.Fatalf("queue list --json: %v\n%s", err, stdout)
	}
	if len(items) != 1 || items[0].ID != ev.ID || items[0].Status != store.QueuePending {
		t.Fatalf("queue: got %+v, want the one pending draft %s", items, ev.ID)
	}
	for _, args := range [][]string{{"contacts", "list", "--json"}, {"status", "--json"}, {"explain", items[0].MessageID}, {"queue", "show", ev.ID}} {
		if _, stderr, code := h.run(args...); code != 0 {
			t.Errorf("%v: exit %d: %s", args, code, stderr)
		}
	}
	// triage works too: its records go through the watcher's socket.
	h.deliver(rawMail("Dan <dan@example.org>", "Question", "What time?"))
	waitFor(t, events, "message_done")
	stdout, stderr, code = h.run("triage", "--json", "--redo", "--limit", "1")
	if code != 0 {
		t.Fatalf("triage alongside watch: %d %s", code, stderr)
	}
	if got := decodeLines(t, stdout); len(got) != 1 || got["Question"].TraceID == "" {
		t.Errorf("triage alongside watch: got %v", got)
	}
	stdout, _, _ = h.run("status", "--json")
	var st api.Status
	if err := json.Unmarshal([]byte(stdout), &st); err != nil || !st.Watcher {
		t.Errorf("status: got %+v (%v), want a running watcher", st, err)
	}

	// Two approvals at once (two CLIs, say) send exactly once.
	var wg sync.WaitGroup
	codes := make([]int, 4)
	for i := range codes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _, codes[i] = h.run("queue", "approve", "--yes", ev.ID) // carol is new: --yes, as a script would
		}()
	}
	wg.Wait()
	ok := 0
	for _, c := range codes {
		if c == 0 {
			ok++
		} else if c != ExitNotSent { // the others sent nothing, and say so
			t.Errorf("approve: exit %d, want 0 or %d", c, ExitNotSent)
		}
	}
	if ok != 1 {
		t.Errorf("approvals that succeeded: got %d, want 1 (codes %v)", ok, codes)
	}
	if err := h.smtp.WaitFor(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if n := len(h.smtp.Messages()); n != 1 {
		t.Errorf("sent %d messages, want 1", n)
	}
	waitFor(t, events, "sent")
	d, err := c.QueueItem(ctx, ev.ID)
	if err != nil {
		t.Fatal(err)
	}
	if d.Item.Status != store.QueueSent {
		t.Errorf("item status: got %s, want sent", d.Item.Status)
	}
	// The IMAP draft was removed once the reply went out.
	drafts, _ := h.imap.Messages(ctx, ownerAddr, "Drafts")
	for _, d := range drafts {
		if strings.Contains(string(d.Raw), "Subject: Re: Lunch") {
			t.Errorf("the approved draft is still in Drafts (uid %d)", d.UID)
		}
	}
	if len(drafts) != 1 {
		t.Errorf("Drafts: got %d messages, want 1 (Dan's, still queued)", len(drafts))
	}
	if _, err := c.Approve(ctx, ev.ID, ""); !errors.Is(err, errNotActionable) {
		t.Errorf("third approve: got %v, want not actionable", err)
	}
}
