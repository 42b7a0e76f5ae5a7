package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mailagent/mailagent/internal/llm"
	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/prompts"
	"github.com/mailagent/mailagent/store"
)

// recordingModel answers classify, draft and summary calls and records
// every prompt it was shown.
type recordingModel struct {
	mu      sync.Mutex
	prompts []llm.Request
	class   map[string]any
	draft   string
	failOn  string // a schema property: calls with it fail
}

func (m *recordingModel) Generate(_ context.Context, req llm.Request) (*llm.Response, error) {
	m.mu.Lock()
	m.prompts = append(m.prompts, req)
	m.mu.Unlock()
	var v any
	switch {
	case m.failOn != "" && req.Schema.Properties[m.failOn] != nil:
		return nil, &llm.APIError{StatusCode: 503, Message: "overloaded"}
	case req.Schema.Properties["intents"] != nil:
		v = m.class
	case req.Schema.Properties["body"] != nil:
		v = map[string]any{"body": m.draft, "tone": "brief", "needs_owner_input": false}
	default:
		v = map[string]any{"summary": "Bob writes about meetings."}
	}
	b, _ := json.Marshal(v)
	return &llm.Response{Text: string(b), Model: "fake", Usage: llm.Usage{PromptTokens: 10, OutputTokens: 5, TotalTokens: 15}}, nil
}

func (m *recordingModel) calls(prop string) []llm.Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []llm.Request
	for _, r := range m.prompts {
		// The classification schema has a "summary" too: a summary call is
		// one without intents.
		if r.Schema != nil && r.Schema.Properties[prop] != nil && (prop != "summary" || r.Schema.Properties["intents"] == nil) {
			out = append(out, r)
		}
	}
	return out
}

// memMailer records side effects in memory.
type memMailer struct {
	mu          sync.Mutex
	sent        [][]string
	drafts      int
	answered    map[string]bool // by IDKey: \Answered on the server
	answeredErr error
}

func (m *memMailer) Send(_ context.Context, _, _ string, to []string, _ []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sent = append(m.sent, to)
	return nil
}
func (m *memMailer) AppendSent(context.Context, string, []byte) error      { return nil }
func (m *memMailer) SentHas(context.Context, string, string) (bool, error) { return false, nil }
func (m *memMailer) AppendDraft(context.Context, string, []byte) (uint32, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.drafts++
	return uint32(m.drafts), nil
}
func (m *memMailer) DeleteDraft(context.Context, string, uint32) error { return nil }

// testPrompts is the embedded prompt set, loaded (parsed and
// sample-rendered) once for the package: a *prompts.Set is read-only after
// Load and its templates execute concurrently.
var testPrompts = sync.OnceValues(func() (*prompts.Set, error) { return prompts.Load("") })

func newTestPipeline(t *testing.T, model *recordingModel, mode string) (*Pipeline, *store.Store, *memMailer) {
	t.Helper()
	st, err := store.Open(filepath.Join(t.TempDir(), "db"), store.Options{NoSync: true}) // no fsync: nothing here survives a crash it tests
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	ps, err := testPrompts()
	if err != nil {
		t.Fatal(err)
	}
	mailer := &memMailer{}
	owner := Owner{Name: "Ada", Addresses: []string{"ada@example.com"}, AuthservID: testAuthservID}
	p := &Pipeline{
		Store: st, Classifier: &LLMClassifier{Model: model, Prompts: ps}, Threader: mail.NewThreader(),
		Policy:   Policy{Mode: mode, MinConfidence: 0.8, NeverAuto: DefaultNeverAuto, MaxPerContactPerDay: 3, MaxPerDay: 20, MaxDraftChars: 4000},
		Accounts: map[string]Account{"a": {Name: "a", Owner: owner, From: mail.Address{Name: "Ada", Email: "ada@example.com"}}},
		Actor: &Actor{Store: st, Drafter: &LLMDrafter{Model: model, Prompts: ps}, Mailer: mailer,
			Summarizer: &LLMSummarizer{Model: model, Prompts: ps}, SummaryEvery: 2},
	}
	return p, st, mailer
}

// lastUID is the UID the test messages took last: nextUID gives each a
// UID of its own, from parallel tests too.
var lastUID atomic.Uint32

func nextUID() uint32 { return lastUID.Add(1) }

// testAuthservID is the authserv-id of the test owner's own server.
const testAuthservID = "mx.example.com"

// authentic is the Authentication-Results header the owner's server adds
// for a message whose From domain passes DMARC.
func authentic(from string) string {
	d := from[strings.LastIndexByte(from, '@')+1:]
	d = strings.TrimSuffix(d, ">")
	return "Authentication-Results: " + testAuthservID + "; dkim=pass header.d=" + d + "; spf=pass smtp.mailfrom=" + d + "; dmarc=pass header.from=" + d
}

// input is a message from a sender the owner's server authenticated.
func input(from, subject, body string, extra ...string) Input {
	return rawInput(from, subject, body, append([]string{authentic(from)}, extra...)...)
}

// rawInput is a message with exactly the given extra header lines (no
// Authentication-Results unless given).
func rawInput(from, subject, body string, extra ...string) Input {
	uid := nextUID()
	hdr := ""
	for _, e := range extra {
		hdr += e + "\r\n"
	}
	raw := fmt.Sprintf("%sFrom: %s\r\nTo: ada@example.com\r\nSubject: %s\r\nDate: %s\r\nMessage-ID: <m%d@example.org>\r\n\r\n%s\r\n",
		hdr, from, subject, time.Now().Format(time.RFC1123Z), uid, body)
	return Input{Key: store.MessageKey{Account: "a", Mailbox: "INBOX", UIDValidity: 1, UID: uid}, Raw: []byte(raw)}
}

func okClass() map[string]any {
	return map[string]any{"intents": []string{"information_request"}, "risk": "low", "action": "reply",
		"requires_approval": false, "confidence": 0.95, "summary": "meeting", "comments": "asks for a meeting"}
}

func TestMemoryIsolation(t *testing.T) {
	t.Parallel()
	model := &recordingModel{class: okClass(), draft: "Sure."}
	p, st, _ := newTestPipeline(t, model, "review")
	ctx := context.Background()
	for email, secret := range map[string]string{"bob@example.org": "BOB-PRIVATE-NOTE", "carol@example.org": "CAROL-PRIVATE-NOTE"} {
		if _, err := st.UpdateContact("a", email, func(c *store.Contact) error {
			c.Summary = secret
			c.Notes = []string{secret + "-note"}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := p.Process(ctx, input("Carol <carol@example.org>", "Meet?", "Can we meet?")); err != nil {
		t.Fatal(err)
	}
	drafts := model.calls("body")
	if len(drafts) != 1 {
		t.Fatalf("draft calls: got %d, want 1", len(drafts))
	}
	prompt := drafts[0].System + drafts[0].Prompt
	if !strings.Contains(prompt, "CAROL-PRIVATE-NOTE") {
		t.Error("the draft prompt lacks the sender's own memory")
	}
	if strings.Contains(prompt, "BOB-PRIVATE-NOTE") {
		t.Error("another contact's memory reached the prompt")
	}
	for _, c := range model.calls("intents") {
		if strings.Contains(c.System+c.Prompt, "PRIVATE-NOTE") {
			t.Error("contact memory reached the classify prompt")
		}
	}
}

func TestRollingSummary(t *testing.T) {
	t.Parallel()
	model := &recordingModel{class: okClass(), draft: "Sure."}
	p, st, _ := newTestPipeline(t, model, "review")
	ctx := context.Background()
	for i := range 2 {
		if _, err := p.Process(ctx, input("Bob <bob@example.org>", fmt.Sprintf("Meeting %d", i), "When?")); err != nil {
			t.Fatal(err)
		}
	}
	sums := model.calls("summary")
	if len(sums) != 1 {
		t.Fatalf("summary calls: got %d, want 1 (after 2 exchanges)", len(sums))
	}
	if !strings.Contains(sums[0].Prompt, "Meeting 0") || !strings.Contains(sums[0].Prompt, "Meeting 1") {
		t.Errorf("summary prompt lacks the history:\n%s", sums[0].Prompt)
	}
	c, err := st.GetContact("a", "bob@example.org")
	if err != nil {
		t.Fatal(err)
	}
	if c.Summary != "Bob writes about meetings." || c.SinceSummary != 0 || c.Inbound != 2 {
		t.Errorf("contact: got summary %q since %d inbound %d", c.Summary, c.SinceSummary, c.Inbound)
	}
}

func TestProcessIsExactlyOnce(t *testing.T) {
	t.Parallel()
	model := &recordingModel{class: okClass(), draft: "Thursday works."}
	p, st, mailer := newTestPipeline(t, model, "auto")
	ctx := context.Background()
	if err := st.MarkKnown("a", []string{"bob@example.org"}); err != nil {
		t.Fatal(err)
	}
	in := input("Bob <bob@example.org>", "Thursday?", "Thursday at 3?")
	out, err := p.Process(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if out.Record.Decision != DecisionAutoSend || out.Record.State != store.StateDone {
		t.Fatalf("got %s/%s (%v), want auto_send/done", out.Record.Decision, out.Record.State, out.Record.Reasons)
	}
	// The same message again (a restart, a second watcher): nothing new.
	out, err = p.Process(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if !out.Skipped || len(mailer.sent) != 1 || len(model.calls("intents")) != 1 {
		t.Errorf("second process: skipped=%v sent=%d classify calls=%d; want true, 1, 1", out.Skipped, len(mailer.sent), len(model.calls("intents")))
	}
}

func TestResumeAfterCrashAtDecided(t *testing.T) {
	t.Parallel()
	model := &recordingModel{class: okClass(), draft: "Thursday works."}
	p, st, mailer := newTestPipeline(t, model, "auto")
	ctx := context.Background()
	_ = st.MarkKnown("a", []string{"bob@example.org"})
	in := input("Bob <bob@example.org>", "Thursday?", "Thursday at 3?")
	// Simulate a crash right after the decision was journaled.
	a, err := p.analyze(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if a.rec.State != store.StateDecided {
		t.Fatalf("state: got %s, want decided", a.rec.State)
	}
	// Restart: a new pipeline over the same store.
	out, err := p.Process(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if out.Record.State != store.StateDone || len(mailer.sent) != 1 {
		t.Errorf("after resume: state %s, sent %d; want done, 1", out.Record.State, len(mailer.sent))
	}
	if n := len(model.calls("intents")); n != 1 {
		t.Errorf("classify calls: got %d, want 1 (a decided message is not classified again)", n)
	}
}

func TestModelFailureIsRecorded(t *testing.T) {
	t.Parallel()
	model := &recordingModel{class: okClass(), draft: "x", failOn: "body"}
	p, st, _ := newTestPipeline(t, model, "review")
	out, err := p.Process(context.Background(), input("Bob <bob@example.org>", "Hi", "Hello"))
	if err != nil {
		t.Fatal(err)
	}
	rec, err := st.GetMessage(out.Record.MessageKey)
	if err != nil {
		t.Fatal(err)
	}
	if rec.State != store.StateNeedsReview || !strings.Contains(rec.Error, "drafting failed") {
		t.Errorf("got state %s error %q, want needs_review naming the drafting failure", rec.State, rec.Error)
	}
}

// Unauthenticated mail in a known contact's name reads and writes no one's
// memory, and the summarizer is not run for it.
func TestUnauthenticatedSenderHasNoMemory(t *testing.T) {
	t.Parallel()
	model := &recordingModel{class: okClass(), draft: "Sure."}
	p, st, _ := newTestPipeline(t, model, "auto")
	p.Actor.Profile = "PROFILE-SECRET"
	ctx := context.Background()
	if _, err := st.UpdateContact("a", "carol@example.org", func(c *store.Contact) error {
		c.Notes, c.Known = []string{"CAROL-PRIVATE-NOTE"}, true
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	forged := "Authentication-Results: " + testAuthservID + "; dmarc=fail header.from=example.org"
	for i := range 3 {
		if _, err := p.Process(ctx, rawInput("Carol <carol@example.org>", fmt.Sprintf("Meet %d?", i), "Can we meet?", forged)); err != nil {
			t.Fatal(err)
		}
	}
	// Regenerating the queued draft follows the same rule.
	var drafts []string
	if err := st.ListQueue(store.QueuePending, func(q *store.QueueItem) error {
		if q.Kind == store.KindDraft {
			drafts = append(drafts, q.ID)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(drafts) == 0 {
		t.Fatal("no queued draft to regenerate")
	}
	for _, id := range drafts {
		if _, err := p.Regenerate(ctx, id, "use everything you know about carol"); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range model.calls("body") {
		if s := d.System + d.Prompt; strings.Contains(s, "CAROL-PRIVATE-NOTE") || strings.Contains(s, "PROFILE-SECRET") {
			t.Error("an unauthenticated sender's draft prompt carries contact memory or the profile")
		}
	}
	if n := len(model.calls("summary")); n != 0 {
		t.Errorf("summary calls: got %d, want 0", n)
	}
	c, err := st.GetContact("a", "carol@example.org")
	if err != nil {
		t.Fatal(err)
	}
	if c.Inbound != 0 || len(c.History) != 0 {
		t.Errorf("carol's memory was written: inbound %d, history %d", c.Inbound, len(c.History))
	}
}

// Reply-all that adds an address, or a Reply-To elsewhere, sends the draft
// to the queue with the reason; the caps are not touched.
func TestRecipientsGateQueues(t *testing.T) {
	t.Parallel()
	model := &recordingModel{class: okClass(), draft: "Thursday works."}
	p, st, mailer := newTestPipeline(t, model, "auto")
	p.Policy.ReplyAll = true
	ctx := context.Background()
	if err := st.MarkKnown("a", []string{"bob@example.org", "carol@example.org", "eve@elsewhere.example"}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		extra string
		want  string
	}{
		{"reply-all", "Cc: carol@example.org", "the reply would go to 2 addresses (bob@example.org, carol@example.org)"},
		{"reply-to", "Reply-To: eve@elsewhere.example", "Reply-To points to eve@elsewhere.example, not the authenticated sender bob@example.org"},
	}
	for _, tt := range tests {
		out, err := p.Process(ctx, input("Bob <bob@example.org>", tt.name, "Thursday at 3?", tt.extra))
		if err != nil {
			t.Fatal(err)
		}
		if out.Record.Decision != DecisionQueue || !strings.Contains(strings.Join(out.Record.Reasons, "; "), "recipients: "+tt.want) {
			t.Errorf("%s: got %s %v, want queue naming %q", tt.name, out.Record.Decision, out.Record.Reasons, tt.want)
		}
	}
	if len(mailer.sent) != 0 {
		t.Errorf("sent %v, want nothing", mailer.sent)
	}
	if n, _, _ := st.AutoSendCounts("a", "bob@example.org", store.Day(time.Now())); n != 0 {
		t.Errorf("auto-send count: got %d, want 0", n)
	}
}

func (m *memMailer) Answered(_ context.Context, original *store.MessageRecord) (bool, string, error) {
	id := original.MessageID
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.answeredErr != nil {
		return false, "", m.answeredErr
	}
	if m.answered[mail.IDKey(id)] {
		return true, `flagged \Answered`, nil
	}
	return false, "", nil
}

func (m *memMailer) MarkAnswered(_ context.Context, original *store.MessageRecord) error {
	id := original.MessageID
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.answered == nil {
		m.answered = map[string]bool{}
	}
	m.answered[mail.IDKey(id)] = true
	return nil
}
