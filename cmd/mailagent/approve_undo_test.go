package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mailagent/mailagent/internal/llm"
	"github.com/mailagent/mailagent/internal/llm/geminitest"
	"github.com/mailagent/mailagent/store"
)

// bobKnown is the Sent-folder mail that makes Bob a known contact.
const bobKnown = "From: Ada Lovelace <ada@example.com>\nTo: Bob <bob@example.org>\nSubject: hello\nDate: Mon, 02 Nov 2026 09:00:00 +0000\nMessage-ID: <earlier@example.com>\n\nHi Bob\n"

// queuedFromBob queues one draft (review mode) and returns its id.
func queuedFromBob(t *testing.T, h *harness, subject, body string) string {
	t.Helper()
	h.appendTo("Sent", bobKnown)
	h.deliver(rawMail("Bob <bob@example.org>", subject, body))
	if _, stderr, code := h.run("watch", "--once"); code != 0 {
		t.Fatalf("watch --once: %d %s", code, stderr)
	}
	items := h.queue(t)
	if len(items) != 1 {
		t.Fatalf("queue: %d items, want 1", len(items))
	}
	return items[0].ID
}

// itemStatus reads an item's status through the CLI (the watcher may
// hold the database).
func itemStatus(t *testing.T, h *harness, id string) string {
	t.Helper()
	out, stderr, code := h.run("queue", "show", id, "--json")
	if code != 0 {
		t.Fatalf("queue show: %d %s", code, stderr)
	}
	var d struct{ Item store.QueueItem }
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatalf("queue show --json: %v\n%s", err, out)
	}
	return d.Item.Status
}

// highRiskModel calls every mail a high-risk financial matter and drafts
// a plain reply.
func highRiskModel(req *geminitest.Request) geminitest.Reply {
	props, _ := req.ResponseSchema()["properties"].(map[string]any)
	usage := llm.Usage{PromptTokens: 300, OutputTokens: 30, TotalTokens: 330}
	if _, ok := props["intents"]; ok {
		return geminitest.JSONReply(map[string]any{
			"intents": []string{"sensitive_legal_financial"}, "risk": "high", "action": "reply", "requires_approval": true,
			"confidence": 0.9, "summary": "an invoice", "comments": "money",
		}, usage)
	}
	return geminitest.JSONReply(map[string]any{"body": "Paid today.", "tone": "brief", "needs_owner_input": false}, usage)
}

// TestApproveRiskyDraftAsks: a draft whose safety gates failed for a
// reason a person should see (a high-risk, never-auto intent) is not
// approved off a terminal without --yes; the refusal names each gate.
func TestApproveRiskyDraftAsks(t *testing.T) {
	t.Parallel()
	h := newHarness(t, highRiskModel, "[policy]\napproval_delay = \"0s\"\n")
	id := queuedFromBob(t, h, "Overdue invoice", "Please pay the invoice by Friday.")
	_, stderr, code := h.run("queue", "approve", id)
	if code != ExitUsage || !strings.Contains(stderr, "gate never_auto failed: intent sensitive_legal_financial") ||
		!strings.Contains(stderr, "gate classification failed: risk is high") || !strings.Contains(stderr, "--yes") {
		t.Fatalf("approve of a high-risk draft off a terminal: %d %q; want a refusal naming the gates and --yes", code, stderr)
	}
	if strings.Contains(stderr, "never written to") {
		t.Errorf("Bob is known, yet the refusal calls him new: %q", stderr)
	}
	if n := len(h.smtp.Messages()); n != 0 {
		t.Fatalf("sent %d messages without a confirmation", n)
	}
	if _, stderr, code := h.run("queue", "approve", id, "--yes"); code != 0 {
		t.Fatalf("approve --yes: %d %s", code, stderr)
	}
	if n := len(h.smtp.Messages()); n != 1 {
		t.Fatalf("after --yes: %d messages, want 1", n)
	}
}

// TestApproveUndoWindowWithWatcher: with a watcher running, an approval
// waits policy.approval_delay; `queue cancel` within it sends nothing and
// hands the item back; approved again, the due timer sends it once.
func TestApproveUndoWindowWithWatcher(t *testing.T) {
	t.Parallel() // waits out real undo windows; shares nothing
	// The default window (5s): long enough for the cancel below to land
	// in it on a loaded machine.
	const delay = 5 * time.Second
	h := newHarness(t, compromisedModel, "[policy]\napproval_delay = \"5s\"\n")
	id := queuedFromBob(t, h, "Call on Thursday", "Can we move our call to Thursday?")
	stderrW, stop := startWatch(t, h, true)
	eventually(t, "the watcher is idle", func() bool { return strings.Contains(stderrW.String(), "personal: idle") })

	_, stderr, code := h.run("queue", "approve", id, "--yes")
	if code != 0 || !strings.Contains(stderr, "undo with `mailagent queue cancel "+id+"`") {
		t.Fatalf("approve: %d %q; want the undo hint", code, stderr)
	}
	if s := itemStatus(t, h, id); s != store.QueueApproved {
		t.Fatalf("in the window: %s, want approved", s)
	}
	if _, stderr, code := h.run("queue", "cancel", id); code != 0 {
		t.Fatalf("queue cancel in the window: %d %s", code, stderr)
	}
	time.Sleep(delay + time.Second) // the window passes: a send would happen now
	if n := len(h.smtp.Messages()); n != 0 {
		t.Fatalf("a cancelled approval was sent (%d)", n)
	}
	if s := itemStatus(t, h, id); s != store.QueuePending {
		t.Fatalf("after cancel: %s, want pending", s)
	}

	if _, stderr, code := h.run("queue", "approve", id, "--yes"); code != 0 {
		t.Fatalf("approve again: %d %s", code, stderr)
	}
	if n := len(h.smtp.Messages()); n != 0 {
		t.Fatalf("sent at once (%d): the undo window was skipped", n)
	}
	eventually(t, "the due timer sends the reply", func() bool { return len(h.smtp.Messages()) > 0 })
	time.Sleep(500 * time.Millisecond)
	if n := len(h.smtp.Messages()); n != 1 {
		t.Fatalf("sends: %d, want exactly 1", n)
	}
	_, stderr, code = h.run("queue", "cancel", id)
	if code == 0 || !strings.Contains(stderr, "too late") {
		t.Fatalf("cancel after the send: %d %q; want too late", code, stderr)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

// TestApproveUndoWindowWithoutWatcher: with no watcher (no due timer),
// queue approve waits out the window itself, says so, and sends once.
func TestApproveUndoWindowWithoutWatcher(t *testing.T) {
	t.Parallel()
	h := newHarness(t, compromisedModel, "[policy]\napproval_delay = \"1s\"\n")
	id := queuedFromBob(t, h, "Call on Thursday", "Can we move our call to Thursday?")
	start := time.Now()
	_, stderr, code := h.run("queue", "approve", id, "--yes")
	if code != 0 || !strings.Contains(stderr, id+": sending in 1s; press Ctrl-C to cancel") || !strings.Contains(stderr, id+": sent to") {
		t.Fatalf("approve: %d %q", code, stderr)
	}
	if took := time.Since(start); took < time.Second {
		t.Fatalf("sent after %v: the undo window was skipped", took)
	}
	if n := len(h.smtp.Messages()); n != 1 {
		t.Fatalf("sends: %d, want 1", n)
	}
}

// TestApproveSentItemSendsNothing: approving an item that was already
// sent sends nothing again and exits 7 (an approval that sent nothing),
// not 2 (the command line was right); rejecting it is still refused as
// before (2: the action does not apply), and both
// name `queue show ID`.
func TestApproveSentItemSendsNothing(t *testing.T) {
	t.Parallel()
	h := newHarness(t, compromisedModel, "[policy]\napproval_delay = \"0s\"\n")
	id := queuedFromBob(t, h, "Call on Thursday", "Can we move our call to Thursday?")
	if _, stderr, code := h.run("queue", "approve", id, "--yes"); code != 0 {
		t.Fatalf("approve: %d %s", code, stderr)
	}
	_, stderr, code := h.run("queue", "approve", id, "--yes")
	if code != ExitNotSent || !strings.Contains(stderr, "mailagent queue show "+id) {
		t.Errorf("approve again: exit %d %q; want %d and the way to see it", code, stderr, ExitNotSent)
	}
	_, stderr, code = h.run("queue", "reject", id)
	if code != ExitUsage || !strings.Contains(stderr, "mailagent queue show "+id) {
		t.Errorf("reject a sent item: exit %d %q; want %d and the way to see it", code, stderr, ExitUsage)
	}
	if n := len(h.smtp.Messages()); n != 1 {
		t.Fatalf("sends: %d, want exactly 1", n)
	}
}
