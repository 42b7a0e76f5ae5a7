package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mailagent/mailagent/internal/llm"
	"github.com/mailagent/mailagent/prompts"
	"github.com/mailagent/mailagent/store"
)

// followingModel is the fake model of the learning benchmark: it
// classifies everything as an information request, and its drafts follow what the
// prompt says the owner taught (a sign-off, German for a contact); its
// style distillation reads the sign-off off the edits.
type followingModel struct {
	mu      sync.Mutex
	drafts  []string // prompts of draft calls (system + user)
	answers []string // the draft bodies returned
}

func (m *followingModel) Generate(_ context.Context, req llm.Request) (*llm.Response, error) {
	var v any
	props := req.Schema.Properties
	prompt := req.System + "\n" + req.Prompt
	switch {
	case props["intents"] != nil:
		v = okClass()
	case props["rules"] != nil:
		var rules []string
		if strings.Contains(req.Prompt, `signs off with \"Best, Ada\"`) || strings.Contains(req.Prompt, `signs off with "Best, Ada"`) {
			rules = append(rules, "Signs off with 'Best, Ada'")
		}
		if strings.Contains(req.Prompt, "no exclamation marks") {
			rules = append(rules, "Never uses exclamation marks")
		}
		v = map[string]any{"rules": rules}
	default:
		body := "Thanks, Tuesday works!"
		if strings.Contains(prompt, "German") {
			body = "Danke, Dienstag passt!"
		}
		if strings.Contains(prompt, "Never uses exclamation marks") || strings.Contains(prompt, "uses no exclamation marks") {
			body = strings.ReplaceAll(body, "!", ".")
		}
		if strings.Contains(prompt, "Best, Ada") {
			body += "\n\nBest,\nAda"
		}
		m.mu.Lock()
		m.drafts = append(m.drafts, prompt)
		m.answers = append(m.answers, body)
		m.mu.Unlock()
		v = map[string]any{"body": body, "tone": "brief", "needs_owner_input": false}
	}
	b, _ := json.Marshal(v)
	return &llm.Response{Text: string(b), Model: "fake"}, nil
}

// TestLearningReplay replays a scripted sequence of owner corrections on
// fixed threads and checks that later prompts and drafts change: the
// owner's sign-off and "no exclamation marks" first for the contacts
// whose drafts were edited, then (once style is distilled) for a new
// contact; Carol's German rule only for Carol. Its log is the table in
// BENCHMARKS.md (go test ./agent -run TestLearningReplay -v).
func TestLearningReplay(t *testing.T) {
	t.Parallel()
	model := &followingModel{}
	p, st, _ := newTestPipeline(t, &recordingModel{}, "review")
	ps, _ := testPrompts()
	p.Classifier = &LLMClassifier{Model: model, Prompts: ps}
	p.Actor.Drafter = &LLMDrafter{Model: model, Prompts: ps}
	p.Actor.Memory, p.Actor.Learner = st, &Learner{Model: model, Prompts: ps}
	ctx := context.Background()
	contacts := []string{"bob@example.org", "carol@example.org", "dan@example.org"}
	draftFor := func(who string, round int) (*store.QueueItem, string, string) {
		q := queueOne(t, p, who, fmt.Sprintf("Round %d", round))
		model.mu.Lock()
		defer model.mu.Unlock()
		return q, model.drafts[len(model.drafts)-1], model.answers[len(model.answers)-1]
	}
	row := func(round int, who, prompt, draft string) {
		t.Logf("| %d | %s | %v | %v | %v | %d | %q |", round, who, strings.Contains(prompt, "Best, Ada"), strings.Contains(prompt, "German"),
			strings.HasSuffix(draft, "Best,\nAda"), EstimateTokens(prompt), strings.ReplaceAll(draft, "\n", " "))
	}
	t.Log("| round | contact | sign-off in prompt | German in prompt | draft signed | prompt tokens | draft |")
	// Round 1: nothing learned yet. The owner edits each draft (sign-off,
	// no exclamation mark) and rejects Carol's with a reason.
	for _, who := range contacts {
		q, prompt, draft := draftFor(who, 1)
		row(1, who, prompt, draft)
		if strings.Contains(prompt, "Best, Ada") {
			t.Errorf("round 1 %s: learned memory before any correction", who)
		}
		if who == "carol@example.org" {
			if err := p.Reject(ctx, q.ID, "answer Carol in German"); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if _, err := p.Approve(ctx, q.ID, "Thanks, Tuesday works.\n\nBest,\nAda"); err != nil {
			t.Fatal(err)
		}
	}
	// Carol's next draft is edited too: the third edit distills style.
	q, prompt, draft := draftFor("carol@example.org", 2)
	row(2, "carol@example.org", prompt, draft)
	if !strings.Contains(prompt, "German") || !strings.HasPrefix(draft, "Danke") {
		t.Errorf("round 2 Carol: the rejection reason did not change the draft: %q", draft)
	}
	if _, err := p.Approve(ctx, q.ID, "Danke, Dienstag passt.\n\nBest,\nAda"); err != nil {
		t.Fatal(err)
	}
	style, _ := st.ListMemory(store.MemoryFilter{Account: "a", Kind: store.MemoryStyle})
	t.Logf("style records distilled after 3 edits: %d", len(style))
	if len(style) == 0 {
		t.Fatal("no style distilled after three edits")
	}
	// Round 3: the edited contacts and a new one all get the owner's
	// sign-off; only Carol gets German.
	for _, who := range append(contacts, "eve@example.org") {
		_, prompt, draft := draftFor(who, 3)
		row(3, who, prompt, draft)
		if !strings.HasSuffix(draft, "Best,\nAda") || strings.Contains(draft, "!") {
			t.Errorf("round 3 %s: draft does not follow the learned style: %q", who, draft)
		}
		if german := strings.Contains(prompt, "German"); german != (who == "carol@example.org") {
			t.Errorf("round 3 %s: German rule in prompt = %v", who, german)
		}
	}
}

// TestMemoryTokenGrowth reports how many tokens of learned memory a draft
// prompt carries as the records grow, and checks it stays within the
// budget: selection, not truncation, keeps it flat.
func TestMemoryTokenGrowth(t *testing.T) {
	t.Parallel()
	t.Log("| records | memory tokens in prompt | records selected | whole prompt tokens |")
	ps, _ := testPrompts()
	now := time.Now()
	for _, n := range []int{0, 10, 100, 1000} {
		var recs []store.MemoryRecord
		for i := range n {
			who := []string{"bob@example.org", "carol@example.org", "", "@example.org"}[i%4]
			kind := store.MemoryFact
			if who == "" && i%8 == 2 {
				kind = store.MemoryStyle
			}
			recs = append(recs, store.MemoryRecord{Account: "a", Kind: kind, Contact: who, Created: now.Add(time.Duration(i) * time.Second),
				Text: fmt.Sprintf("record %d: the owner prefers short replies and mornings for meetings", i)})
		}
		var exs []store.Example
		// Half the examples are Bob's own, half another contact's (used
		// because this draft is bound for the queue: OtherContacts).
		for i := range min(n, 20) {
			exs = append(exs, store.Example{Account: "a", Kind: store.ExampleApproved, Contact: []string{"bob@example.org", "dan@example.org"}[i%2],
				Intents: []string{"scheduling"}, Text: strings.Repeat("An approved reply of a few sentences. ", 6), Created: now.Add(time.Duration(i) * time.Second)})
		}
		m := SelectMemory(MemoryQuery{Account: "a", Contact: "bob@example.org", Intents: []string{"scheduling"}, Now: now, OtherContacts: true}, recs, exs)
		d := prompts.DraftData{Owner: prompts.Owner{Name: "Ada", Email: "ada@example.com"}, Boundary: prompts.NewBoundary(),
			From: "Bob <bob@example.org>", Subject: "Meeting", Body: "Can we meet on Tuesday?", Intents: []string{"scheduling"}, Memory: m}
		sys, user, err := ps.Draft(d)
		if err != nil {
			t.Fatal(err)
		}
		got := MemoryTokens(m)
		t.Logf("| %d | %d | %d (%d examples) | %d |", n, got, len(m.Records)+len(m.Style)+len(m.Examples)+len(m.OwnerReplies), len(m.Examples), EstimateTokens(sys+user))
		if n > 0 && len(m.Examples) == 0 {
			t.Errorf("%d records: no example selected", n)
		}
		if got > DefaultMemoryBudget {
			t.Errorf("%d records: %d memory tokens, budget %d", n, got, DefaultMemoryBudget)
		}
		for _, r := range m.Records {
			if strings.Contains(r, "carol@") {
				t.Errorf("%d records: Carol's record selected for Bob", n)
			}
		}
	}
}

func BenchmarkSelectMemory(b *testing.B) {
	now := time.Now()
	var recs []store.MemoryRecord
	for i := range 1000 {
		recs = append(recs, store.MemoryRecord{Account: "a", Kind: store.MemoryFact, Contact: fmt.Sprintf("c%d@example.org", i%50),
			Created: now.Add(time.Duration(i) * time.Second), Text: "the owner prefers short replies and mornings for meetings"})
	}
	for b.Loop() {
		SelectMemory(MemoryQuery{Account: "a", Contact: "c7@example.org", Now: now}, recs, nil)
	}
}
