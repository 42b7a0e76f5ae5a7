package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mailagent/mailagent/store"
)

// TestQueueSnoozeTomorrowAndUnsnooze: --for takes the words the TUI
// offers (tomorrow is 08:00 the next day), and unsnooze brings the item
// back at once; what cannot apply exits 2 and changes nothing.
func TestQueueSnoozeTomorrowAndUnsnooze(t *testing.T) {
	t.Parallel()
	h := newHarness(t, compromisedModel, "")
	id := queuedFromBob(t, h, "Tuesday?", "Can we meet on Tuesday?")
	if _, stderr, code := h.run("queue", "snooze", id, "--for", "tomorrow"); code != 0 || !strings.Contains(stderr, "unsnooze "+id) {
		t.Fatalf("snooze --for tomorrow: %d %q", code, stderr)
	}
	out, _, _ := h.run("queue", "show", id, "--json")
	var d struct {
		Item struct {
			Status      string     `json:"status"`
			SnoozeUntil *time.Time `json:"snooze_until"`
		} `json:"item"`
	}
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	now := time.Now()
	y, m, day := now.Date()
	want := time.Date(y, m, day+1, 8, 0, 0, 0, now.Location())
	if d.Item.Status != store.QueueSnoozed || d.Item.SnoozeUntil == nil || !d.Item.SnoozeUntil.Equal(want) {
		t.Fatalf("after snooze --for tomorrow: %s until %v, want snoozed until %v", d.Item.Status, d.Item.SnoozeUntil, want)
	}
	for _, bad := range []string{"yesterday", "-2h", "0d"} {
		if _, stderr, code := h.run("queue", "snooze", id, "--for", bad); code != ExitUsage || !strings.Contains(stderr, "--for") {
			t.Errorf("snooze --for %s: exit %d %q, want 2 naming --for", bad, code, stderr)
		}
	}
	if _, stderr, code := h.run("queue", "unsnooze", id); code != 0 || !strings.Contains(stderr, "back in the queue") {
		t.Fatalf("unsnooze: %d %q", code, stderr)
	}
	if got := itemStatus(t, h, id); got != store.QueuePending {
		t.Fatalf("after unsnooze: %s, want pending", got)
	}
	if _, _, code := h.run("queue", "unsnooze", id); code != ExitUsage {
		t.Errorf("unsnooze of a pending item: exit %d, want 2", code)
	}
	if _, _, code := h.run("queue", "unsnooze", "q_nosuch"); code != ExitUsage {
		t.Errorf("unsnooze of an unknown id: exit %d, want 2", code)
	}
}

// TestQueueEditFallback: with neither $VISUAL nor $EDITOR, edit uses vi
// when it is installed, else says what to set (or --text) and exits 2
// with the draft unchanged; --text needs no editor. An editor's final
// newline does not end up in the draft.
func TestQueueEditFallback(t *testing.T) {
	h := newHarness(t, compromisedModel, "")
	id := queuedFromBob(t, h, "Tuesday?", "Can we meet on Tuesday?")
	type texts struct{ Draft, Final string }
	draft := func() texts {
		t.Helper()
		out, _, _ := h.run("queue", "show", id, "--json")
		var d struct {
			Item struct {
				Draft string  `json:"draft"`
				Final *string `json:"final"`
			} `json:"item"`
		}
		if err := json.Unmarshal([]byte(out), &d); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		q := texts{Draft: d.Item.Draft}
		if d.Item.Final != nil {
			q.Final = *d.Item.Final
		}
		return q
	}
	before := draft()
	t.Setenv("VISUAL", "")
	t.Setenv("EDITOR", "")
	empty := t.TempDir()
	t.Setenv("PATH", empty)
	_, stderr, code := h.run("queue", "edit", id)
	if code != ExitUsage || !strings.Contains(stderr, "$EDITOR") || !strings.Contains(stderr, "--text") {
		t.Fatalf("edit without an editor: exit %d %q, want 2 naming $EDITOR and --text", code, stderr)
	}
	if got := draft(); got != before {
		t.Fatalf("a failed edit changed the item: %+v", got)
	}

	// A "vi" on PATH is used; it writes a line with its final newline.
	src := filepath.Join(t.TempDir(), "text")
	if err := os.WriteFile(src, []byte("Tuesday suits me.\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(empty, "vi"), []byte("#!/bin/sh\nexec /bin/cat "+src+" > \"$1\"\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := h.run("queue", "edit", id); code != 0 {
		t.Fatalf("edit with vi on PATH: %d %q", code, stderr)
	}
	if got := draft(); got.Final != "Tuesday suits me." {
		t.Fatalf("edited text: got %q, want it without the editor's final newline", got.Final)
	}
	if _, stderr, code := h.run("queue", "edit", id, "--text", "Wednesday, then.\n\nAda"); code != 0 {
		t.Fatalf("edit --text: %d %q", code, stderr)
	}
	if got := draft(); got.Final != "Wednesday, then.\n\nAda" {
		t.Fatalf("edit --text: got %q", got.Final)
	}
}

// TestDecisionsLists: what the agent did without asking is listed (the
// auto-reply to Bob with its reply, the archived newsletter), and what
// waits for approval is not.
func TestDecisionsLists(t *testing.T) {
	t.Parallel()
	h := newHarness(t, compromisedModel, autoPolicy)
	h.appendTo("Sent", bobKnown)
	h.deliver(rawMail("Bob <bob@example.org>", "Tuesday?", "Can we meet on Tuesday?"))
	h.deliver(rawMail("Carol <carol@example.net>", "Hello there", "Can we meet on Monday?"))
	h.deliver(rawMail("Shop <news@shop.example>", "Spring sale", "20% off everything", "List-Id: <sale.shop.example>"))
	if _, stderr, code := h.run("watch", "--once"); code != 0 {
		t.Fatalf("watch --once: %d %s", code, stderr)
	}
	out, stderr, code := h.run("decisions")
	if code != 0 {
		t.Fatalf("decisions: %d %s", code, stderr)
	}
	for _, want := range []string{"auto_send", "replied to bob@example.org", "archive", "Spring sale", "mailing list (List-Id)", "2 decisions", "mailagent explain"} {
		if !strings.Contains(out, want) {
			t.Errorf("decisions lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "Hello there") {
		t.Errorf("decisions lists a draft waiting for approval:\n%s", out)
	}
	out, _, code = h.run("decisions", "--json")
	var recs []map[string]any
	if err := json.Unmarshal([]byte(out), &recs); code != 0 || err != nil || len(recs) != 2 {
		t.Fatalf("decisions --json: exit %d, %v, %d records:\n%s", code, err, len(recs), out)
	}
	for _, r := range recs {
		reply, ok := r["reply"]
		if !ok {
			t.Errorf("record lacks reply: %v", r)
		}
		if (r["decision"] == "auto_send") != (reply != nil) {
			t.Errorf("%v: reply %v; want the reply exactly for auto_send", r["decision"], reply)
		}
	}
	if _, _, code := h.run("decisions", "--since", "soon"); code != ExitUsage {
		t.Errorf("decisions --since soon: exit %d, want 2", code)
	}
	if out, _, _ := h.run("decisions", "--since", "1h"); !strings.Contains(out, "2 decisions") {
		t.Errorf("decisions --since 1h (by when decided, not the mail's old Date):\n%s", out)
	}
}
