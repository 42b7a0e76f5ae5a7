package main

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/store"
)

// TestExplainAcceptsEveryID: explain resolves each kind of id the product
// prints to the same trace: the Message-ID bare and in brackets, the trace
// id, the queue id, the approval's outbox id, and what `queue show`
// prints.
func TestExplainAcceptsEveryID(t *testing.T) {
	h := newHarness(t, compromisedModel, "[policy]\napproval_delay = \"0s\"\n")
	id := queuedFromBob(t, h, "Call on Thursday", "Can we move our call to Thursday?")
	st := h.openStore(t)
	q, err := st.GetQueueItem(id)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := st.GetMessage(q.Message)
	if err != nil {
		t.Fatal(err)
	}
	_ = st.Close()
	if rec.TraceID == "" || q.MessageID == "" {
		t.Fatalf("fixture: trace %q, message-id %q", rec.TraceID, q.MessageID)
	}

	// What queue show prints, fed back to explain.
	show, stderr, code := h.run("queue", "show", id)
	if code != 0 {
		t.Fatalf("queue show: %d %s", code, stderr)
	}
	shownMID := regexp.MustCompile(`(?m)^message-id (\S+)$`).FindStringSubmatch(show)
	shownTrace := regexp.MustCompile(`(?m)^trace (tr_[0-9a-f]+)  \(mailagent explain tr_[0-9a-f]+\)$`).FindStringSubmatch(show)
	if shownMID == nil || shownTrace == nil {
		t.Fatalf("queue show prints no message-id or trace line:\n%s", show)
	}
	if shownTrace[1] != rec.TraceID {
		t.Fatalf("queue show: trace %s, want %s", shownTrace[1], rec.TraceID)
	}

	if _, stderr, code := h.run("queue", "approve", id, "--yes"); code != 0 {
		t.Fatalf("approve: %d %s", code, stderr)
	}
	refs := map[string]string{
		"message-id":            q.MessageID,
		"message-id in <>":      "<" + strings.Trim(q.MessageID, "<>") + ">",
		"trace id":              rec.TraceID,
		"queue id":              id,
		"outbox id":             agent.ApprovalOutboxID(id),
		"queue show message-id": shownMID[1],
		"queue show trace":      shownTrace[1],
	}
	for kind, ref := range refs {
		out, stderr, code := h.run("explain", ref, "--json")
		if code != 0 {
			t.Errorf("explain by %s (%q): %d %s", kind, ref, code, stderr)
			continue
		}
		var e ExplainJSON
		if err := json.Unmarshal([]byte(out), &e); err != nil || e.Trace.TraceID == "" {
			t.Errorf("explain by %s: %v\n%s", kind, err, out)
			continue
		}
		if e.Trace.TraceID != rec.TraceID {
			t.Errorf("explain by %s: trace %s, want %s", kind, e.Trace.TraceID, rec.TraceID)
		}
	}
}

// TestExplainAutoSendOutboxID: the outbox id of an automatic reply
// resolves to the message it answered.
func TestExplainAutoSendOutboxID(t *testing.T) {
	h := newHarness(t, compromisedModel, autoPolicy)
	h.appendTo("Sent", bobKnown)
	h.deliver(rawMail("Bob <bob@example.org>", "Call on Thursday", "Can we move our call to Thursday 3pm?",
		"References: <earlier@example.com>", "In-Reply-To: <earlier@example.com>"))
	if _, stderr, code := h.run("watch", "--once"); code != 0 {
		t.Fatalf("watch --once: %d %s", code, stderr)
	}
	st := h.openStore(t)
	var obs []*store.OutboxRecord
	_ = st.ListOutbox("", func(r *store.OutboxRecord) error { obs = append(obs, r); return nil })
	_ = st.Close()
	if len(obs) != 1 || obs[0].QueueID != "" {
		t.Fatalf("want one auto-send outbox record, got %+v", obs)
	}
	out, stderr, code := h.run("explain", obs[0].ID)
	if code != 0 || !strings.Contains(out, "decision auto_send") || !strings.Contains(out, "subject Call on Thursday") {
		t.Fatalf("explain %s: %d %s\n%s", obs[0].ID, code, stderr, out)
	}
}

// TestExplainUnknownIDsSayWhy: an id that names nothing is a usage error
// that says what kind of id it was and where such ids come from; a trace
// id of a dry run says plainly that dry runs keep no traces. Hostile ids
// are not echoed raw.
func TestExplainUnknownIDsSayWhy(t *testing.T) {
	h := newHarness(t, classifyReply, "")
	h.deliver(rawMail("Bob <bob@example.org>", "Quick question", "What time is the meeting?"))
	dry, stderr, code := h.run("triage", "--dry-run", "--json")
	if code != 0 {
		t.Fatalf("triage --dry-run: %d %s", code, stderr)
	}
	var line struct {
		TraceID string `json:"trace_id"`
	}
	if err := json.Unmarshal([]byte(strings.SplitN(dry, "\n", 2)[0]), &line); err != nil || !strings.HasPrefix(line.TraceID, "tr_") {
		t.Fatalf("triage --dry-run --json: no trace id (%v):\n%s", err, dry)
	}
	for _, tc := range []struct{ ref, want string }{
		{line.TraceID, "a dry run writes nothing, so its traces are not kept"},
		{"q_0000000000000000", "no queue item"},
		{"ob_0000000000000000", "no outbox record"},
		{"ob_q_0000000000000000", "no outbox record"},
		{"nobody@nowhere.example", "a queue id (q_…) or an outbox id (ob_…)"},
		{"q_../../etc\x1b]0;pwned\x07", "no queue item"},
	} {
		_, stderr, code := h.run("explain", tc.ref)
		if code != ExitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("explain %q: %d %q; want exit %d saying %q", tc.ref, code, stderr, ExitUsage, tc.want)
		}
		if strings.ContainsRune(stderr, 0x1b) {
			t.Errorf("explain %q: raw ESC on stderr", tc.ref)
		}
	}
}
