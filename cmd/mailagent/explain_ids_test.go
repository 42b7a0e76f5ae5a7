package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/internal/app/review"
	"github.com/mailagent/mailagent/store"
)

// TestExplainAcceptsEveryID: explain resolves each kind of id the product
// prints to the same trace: the Message-ID bare and in brackets, the trace
// id, the queue id, the approval's outbox id, and what `queue show`
// prints.
func TestExplainAcceptsEveryID(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
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
		{"nobody@nowhere.example", "a followup id (fu_…) or a memory id (mem_…)"},
		{"fu_0000000000000000", "no followup"},
		{"mem_0000000000000000", "no memory record"},
		{"mem_../\x1b[2J", "no memory record"},
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

// TestExplainFollowupAndMemoryIDs: explain takes a followup id (its state
// and deadline, then the message that set its state) and a memory id (the
// record, then the queue item it was learned from); --json is the same
// ExplainJSON as for the message itself. A record typed by hand has no
// message: the text form says so, --json is a usage error pointing at
// `memory show`. Hostile record text never reaches the terminal raw.
func TestExplainFollowupAndMemoryIDs(t *testing.T) {
	t.Parallel()
	h := newHarness(t, ownerLoopModel, "")
	h.deliver(rawMail("Carol <carol@example.org>", "Lunch", "Lunch next week?", "Message-ID: <lunch-x@example.org>"))
	h.watchOnce(t)
	explainJSON := func(ref string) ExplainJSON {
		t.Helper()
		out, stderr, code := h.run("explain", ref, "--json")
		if code != 0 {
			t.Fatalf("explain %s --json: exit %d: %s", ref, code, stderr)
		}
		var e ExplainJSON
		if err := json.Unmarshal([]byte(out), &e); err != nil {
			t.Fatalf("explain %s --json: %v\n%s", ref, err, out)
		}
		return e
	}
	want := explainJSON("lunch-x@example.org").Trace.TraceID

	// A followup.
	out, stderr, code := h.run("followups", "--state", "all", "--json")
	var fus []FollowupJSON
	if code != 0 || json.Unmarshal([]byte(out), &fus) != nil || len(fus) != 1 || !strings.HasPrefix(fus[0].ID, "fu_") {
		t.Fatalf("followups: exit %d %s\n%s", code, stderr, out)
	}
	out, stderr, code = h.run("explain", fus[0].ID)
	if code != 0 {
		t.Fatalf("explain %s: exit %d: %s", fus[0].ID, code, stderr)
	}
	for _, w := range []string{"followup " + fus[0].ID + "  state needs_reply, deadline ", "with carol@example.org; subject Lunch",
		"set by <lunch-x@example.org>:", "trace " + want, "message-id <lunch-x@example.org>", "\ndecision "} {
		if !strings.Contains(out, w) {
			t.Errorf("explain %s lacks %q:\n%s", fus[0].ID, w, out)
		}
	}
	if got := explainJSON(fus[0].ID).Trace.TraceID; got != want {
		t.Errorf("explain %s --json: trace %s, want %s", fus[0].ID, got, want)
	}

	// A memory record learned from the owner's edit of the draft.
	var qid string
	for _, q := range queueItems(t, h) {
		if q.Subject == "Lunch" {
			qid = q.ID
		}
	}
	if qid == "" {
		t.Fatal("no queued draft")
	}
	var sout, serr bytes.Buffer
	f := newFactory(strings.NewReader(""), &sout, &serr)
	f.ConfigPath = h.cfgPath
	defer f.Close()
	b := &review.Backend{Open: f.Service, Now: time.Now, Log: slog.New(slog.DiscardHandler)}
	if err := b.Approve(context.Background(), qid, "Sure, Tuesday.\n\nBest,\nAda"); err != nil {
		t.Fatal(err)
	}
	learned := b.LastLearned(qid)
	if len(learned) == 0 {
		t.Fatal("the approval taught nothing")
	}
	mem := learned[0].ID
	out, stderr, code = h.run("explain", mem)
	if code != 0 {
		t.Fatalf("explain %s: exit %d: %s", mem, code, stderr)
	}
	for _, w := range []string{"memory " + mem + "  ", "source edit:" + qid, "learned from the owner's edit of " + qid + ":", "trace " + want} {
		if !strings.Contains(out, w) {
			t.Errorf("explain %s lacks %q:\n%s", mem, w, out)
		}
	}
	if got := explainJSON(mem).Trace.TraceID; got != want {
		t.Errorf("explain %s --json: trace %s, want %s", mem, got, want)
	}

	// A record typed by hand, with hostile text.
	added, stderr, code := h.run("memory", "add", "--kind", "preference", "answer in German\x1b]0;pwned\x07 \u202egro")
	if code != 0 {
		t.Fatalf("memory add: exit %d: %s", code, stderr)
	}
	manual := strings.TrimSpace(added)
	out, stderr, code = h.run("explain", manual)
	if code != 0 || !strings.Contains(out, "memory "+manual) || !strings.Contains(out, "no message to explain: it was typed with `mailagent memory add`") {
		t.Errorf("explain %s: exit %d %s\n%s", manual, code, stderr, out)
	}
	if strings.ContainsRune(out, 0x1b) || strings.ContainsRune(out, '\u202e') {
		t.Errorf("explain %s: hostile record text reached the terminal: %q", manual, out)
	}
	if _, stderr, code := h.run("explain", manual, "--json"); code != ExitUsage || !strings.Contains(stderr, "memory show "+manual+" --json") {
		t.Errorf("explain %s --json: exit %d %q; want %d pointing at memory show", manual, code, stderr, ExitUsage)
	}
}
