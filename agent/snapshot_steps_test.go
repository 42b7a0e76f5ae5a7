package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/mailagent/mailagent/agent/owner"
	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/store"
)

// snapOf returns the snapshot of the trace's last step called name.
func snapOf(t *testing.T, st *store.Store, traceID, name string) *store.StepSnapshot {
	t.Helper()
	tr := loadedTrace(t, st, traceID)
	var s *store.StepSnapshot
	found := false
	for _, step := range tr.Steps {
		if step.Name == name {
			s, found = step.Snapshot, true
		}
	}
	if !found {
		t.Fatalf("no %s step in %+v", name, tr.Steps)
	}
	if s == nil {
		t.Fatalf("the %s step has no snapshot", name)
	}
	for _, side := range []string{s.Input, s.Output} {
		if len(side) > store.SnapshotCap {
			t.Errorf("%s snapshot side of %d bytes, over the cap of %d", name, len(side), store.SnapshotCap)
		}
	}
	return s
}

func wantIn(t *testing.T, step, side, text string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(text, w) {
			t.Errorf("%s %s lacks %q:\n%s", step, side, w, text)
		}
	}
}

// TestOwnerStepSnapshot: the owner loop's step keeps the prompt
// variables in, and each turn's raw answer with what code made of it out
// (recorded, refused); the secret in the owner's mail is redacted.
func TestOwnerStepSnapshot(t *testing.T) {
	t.Parallel()
	p, st, _, model := newLearnPipeline(t, "review")
	p.Snapshots, p.Redactor = true, &wordRedactor{word: "SECRET-TOKEN-42"}
	model.turns = []map[string]any{
		turn(owner.ToolUpdateContext, store.MemoryPreference, "carol@example.org", "Answer Carol in German.", ""),
		// Not a contact this mail names, insisted on through the repair.
		turn(owner.ToolUpdateContext, store.MemoryFact, "mallory@evil.example", "Mallory is the boss.", ""),
		turn(owner.ToolUpdateContext, store.MemoryFact, "mallory@evil.example", "Mallory is the boss.", ""),
	}
	out, err := p.Process(context.Background(), ownerMsg("ada+agent@example.com", "", "Carol",
		"From now on answer Carol (carol@example.org) in German. My token is SECRET-TOKEN-42.", ownerAuth))
	if err != nil {
		t.Fatal(err)
	}
	s := snapOf(t, st, out.Record.TraceID, "owner")
	wantIn(t, "owner", "input", s.Input, `"mode": "instruction"`, "answer Carol (carol@example.org) in German", `"carol@example.org"`, `"max_steps": 6`)
	wantIn(t, "owner", "output", s.Output, `"turn": 1`, `"turn": 2`, `Answer Carol in German.`, "update_context: recorded",
		`refused: contact \"mallory@evil.example\" is not one this mail may name`, `"refused": 1`)
	if strings.Contains(s.Input+s.Output, "SECRET-TOKEN-42") {
		t.Error("the secret reached the owner snapshot")
	}
	if strings.Contains(s.Input, "MAILAGENT-") {
		t.Error("the owner snapshot keeps the prompt boundary")
	}
}

// TestOwnerStepSnapshotDelegate: a forward's loop shows the forwarded
// sender, the generate/propose turns, the draft and the queued item.
func TestOwnerStepSnapshotDelegate(t *testing.T) {
	t.Parallel()
	p, st, _, model := newLearnPipeline(t, "review")
	p.Snapshots, p.Redactor = true, &wordRedactor{word: "unused-secret"}
	model.draft = "Yes, coffee on Thursday is fine."
	model.turns = []map[string]any{turn(owner.ToolGenerateDraft, "", "", "", ""), turn(owner.ToolProposeSend, "", "", "", "")}
	out, err := p.Process(context.Background(), ownerMsg("ada+agent@example.com", "", "Fwd: Coffee", "Please say yes.\n\n---------- Forwarded message ---------\n"+
		"From: Sam Lee <sam@example.net>\nSubject: Coffee\nMessage-ID: <coffee@example.net>\n\nCoffee on Thursday?", ownerAuth))
	if err != nil {
		t.Fatal(err)
	}
	s := snapOf(t, st, out.Record.TraceID, "owner")
	wantIn(t, "owner", "input", s.Input, `"mode": "delegate"`, `"forwarded_from": "Sam Lee <sam@example.net>"`, "Coffee on Thursday?")
	wantIn(t, "owner", "output", s.Output, `"loop": 1`, "generate_reply_draft: drafted", "Yes, coffee on Thursday is fine.", "propose_send: queued q_")
}

// TestOwnerStepSnapshotCap: six turns whose answers are each larger than
// the cap still all show (each keeps a share of it), and no side goes over
// the cap.
func TestOwnerStepSnapshotCap(t *testing.T) {
	t.Parallel()
	p, st, _, model := newLearnPipeline(t, "review")
	p.Snapshots, p.Redactor = true, &wordRedactor{word: "unused-secret"}
	big := strings.Repeat("ä", store.SnapshotCap) // 2 bytes a rune: twice the cap
	for i := range owner.DefaultSteps {
		tt := turn(owner.ToolUpdateContext, store.MemoryFact, "", fmt.Sprintf("Fact number %d.", i+1), "")
		tt["instruction"] = big
		model.turns = append(model.turns, tt)
	}
	out, err := p.Process(context.Background(), ownerMsg("ada+agent@example.com", "", "Facts", strings.Repeat("A long instruction. ", 2000), ownerAuth))
	if err != nil {
		t.Fatal(err)
	}
	s := snapOf(t, st, out.Record.TraceID, "owner") // checks the cap
	var o struct {
		Turns []owner.Turn `json:"turns"`
	}
	if err := json.Unmarshal([]byte(s.Output), &o); err != nil {
		t.Fatalf("the output was cut by the cap instead of shared among the turns: %v\n%.300s", err, s.Output)
	}
	if len(o.Turns) != owner.DefaultSteps {
		t.Fatalf("turns shown: %d, want %d", len(o.Turns), owner.DefaultSteps)
	}
	for i, tn := range o.Turns {
		if !strings.Contains(tn.Answer, "…[cut ") || !strings.HasPrefix(tn.Result, "update_context: recorded") {
			t.Errorf("turn %d: answer %.80q…, result %q", i+1, tn.Answer, tn.Result)
		}
	}
}

// TestThreadStepSnapshot: a reply's thread step shows the parent it was
// joined by and the thread's other Message-IDs, never their text; a mail
// with no parent and a subject of its own starts a new thread.
func TestThreadStepSnapshot(t *testing.T) {
	t.Parallel()
	model := &recordingModel{class: okClass(), draft: "Sure."}
	p, st, _ := newTestPipeline(t, model, "review")
	p.Snapshots, p.Redactor = true, &wordRedactor{word: "unused-secret"}
	ctx := context.Background()
	first := input("Bob <bob@example.org>", "Budget", "PRIVATE-BODY-OF-BOB: the budget is 10k.")
	o1, err := p.Process(ctx, first)
	if err != nil {
		t.Fatal(err)
	}
	s := snapOf(t, st, o1.Record.TraceID, "thread")
	wantIn(t, "thread", "output", s.Output, "new thread", `"messages_in_thread": 1`)

	firstID := o1.Record.MessageID
	reply := input("Carol <carol@example.org>", "Re: Budget", "I agree.", "In-Reply-To: <"+firstID+">", "References: <"+firstID+">")
	o2, err := p.Process(ctx, reply)
	if err != nil {
		t.Fatal(err)
	}
	s = snapOf(t, st, o2.Record.TraceID, "thread")
	wantIn(t, "thread", "input", s.Input, firstID, `"references_count": 1`)
	wantIn(t, "thread", "output", s.Output, "joined by references to messages already seen", `"linked_parents": [`, firstID,
		`"messages_in_thread": 2`, o1.Record.ThreadID)
	if strings.Contains(s.Input+s.Output, "PRIVATE-BODY-OF-BOB") {
		t.Error("the thread snapshot holds another contact's text")
	}
}

// TestAnsweredStepSnapshot: a message already answered (\Answered on the
// server) shows the evidence found and where it was looked for.
func TestAnsweredStepSnapshot(t *testing.T) {
	t.Parallel()
	model := &recordingModel{class: okClass(), draft: "Sure."}
	p, st, mailer := newTestPipeline(t, model, "review")
	p.Snapshots, p.Redactor = true, &wordRedactor{word: "unused-secret"}
	in := input("Bob <bob@example.org>", "Answered", "Already answered elsewhere?")
	id := mail.IDKey(mail.Parse(in.Raw).MessageID)
	mailer.answered = map[string]bool{id: true}
	out, err := p.Process(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	s := snapOf(t, st, out.Record.TraceID, "answered")
	wantIn(t, "answered", "input", s.Input, id, `"mailbox": "INBOX"`, "Sent folder", `\\Answered`)
	wantIn(t, "answered", "output", s.Output, `"answered": true`, `"evidence": "`)
}

// archiver is a memMailer that carries out archive decisions.
type archiver struct {
	*memMailer
	archived []string
}

func (a *archiver) Archive(_ context.Context, _ string, k store.MessageKey, _ string) (string, error) {
	a.archived = append(a.archived, k.Mailbox)
	return fmt.Sprintf("moved to Archive (UID %d of %s)", k.UID, k.Mailbox), nil
}
func (a *archiver) Label(context.Context, string, store.MessageKey, string, []string) error {
	return nil
}
func (a *archiver) Labels(string, *store.MessageRecord) []string { return nil }

// TestMailboxStepSnapshot: an archive move shows the message (mailbox,
// UID) in and the change made out.
func TestMailboxStepSnapshot(t *testing.T) {
	t.Parallel()
	model := &recordingModel{class: okClass(), draft: "Sure."}
	p, st, mailer := newTestPipeline(t, model, "review")
	p.Snapshots, p.Redactor = true, &wordRedactor{word: "unused-secret"}
	arch := &archiver{memMailer: mailer}
	p.Actor.Mailer = arch
	in := input("News <news@lists.example.org>", "Weekly digest", "Top stories", "List-Id: <digest.lists.example.org>")
	out, err := p.Process(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if out.Record.Decision != DecisionArchive || len(arch.archived) != 1 {
		t.Fatalf("decision %s, archived %v; want archive, one move", out.Record.Decision, arch.archived)
	}
	s := snapOf(t, st, out.Record.TraceID, "mailbox")
	wantIn(t, "mailbox", "input", s.Input, `"decision": "archive"`, `"mailbox": "INBOX"`, fmt.Sprintf(`"uid": %d`, in.Key.UID))
	wantIn(t, "mailbox", "output", s.Output, fmt.Sprintf("moved to Archive (UID %d of INBOX)", in.Key.UID))
}

// TestResumeStepSnapshot: a message cut off after its decision shows the
// state found and what the restart resumes.
func TestResumeStepSnapshot(t *testing.T) {
	t.Parallel()
	model := &recordingModel{class: okClass(), draft: "Thursday works."}
	p, st, _ := newTestPipeline(t, model, "review")
	p.Snapshots, p.Redactor = true, &wordRedactor{word: "unused-secret"}
	ctx := context.Background()
	in := input("Bob <bob@example.org>", "Thursday?", "Thursday at 3?")
	if _, err := p.analyze(ctx, in); err != nil { // journaled as decided, then "crash"
		t.Fatal(err)
	}
	out, err := p.Process(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	s := snapOf(t, st, out.Record.TraceID, "resume")
	wantIn(t, "resume", "input", s.Input, `"state": "decided"`, `"decision": "queue"`)
	wantIn(t, "resume", "output", s.Output, "acting on decision queue", "not_run_again")
}

// TestOwnerStepSnapshotDelegateFinishedByCode: a delegation whose model
// says done at once is drafted and queued by code; the snapshot says so.
func TestOwnerStepSnapshotDelegateFinishedByCode(t *testing.T) {
	t.Parallel()
	p, st, _, model := newLearnPipeline(t, "review")
	p.Snapshots, p.Redactor = true, &wordRedactor{word: "unused-secret"}
	model.draft = "Happy to, see you Thursday."
	model.turns = []map[string]any{turn(owner.ToolDone, "", "", "", "")}
	out, err := p.Process(context.Background(), ownerMsg("ada+agent@example.com", "", "Fwd: Tea", "Say yes.\n\n---------- Forwarded message ---------\n"+
		"From: Sam Lee <sam@example.net>\nSubject: Tea\nMessage-ID: <tea@example.net>\n\nTea on Thursday?", ownerAuth))
	if err != nil {
		t.Fatal(err)
	}
	s := snapOf(t, st, out.Record.TraceID, "owner")
	wantIn(t, "owner", "output", s.Output, `"result": "done"`, "code: the loop ended without propose_send; queued q_", "Happy to, see you Thursday.")
}
