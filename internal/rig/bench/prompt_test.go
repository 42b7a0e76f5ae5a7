package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/internal/llm"
	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/prompts"
	"github.com/mailagent/mailagent/store"
)

// charsPerToken is the estimate used for token counts: Gemini's
// documentation gives "about 4 characters per token" for English text. It
// is an estimate, not a count (no network here to call CountTokens).
const charsPerToken = 4

// corpusPrompt is one corpus message's classify prompt, or its route when
// it never reaches the model.
type corpusPrompt struct {
	file  string
	route string
	req   agent.ClassifyRequest // as the pipeline built it
	sys   int                   // system prompt, in characters (runes)
	user  int                   // user prompt, in characters (runes)
}

func (p corpusPrompt) tokens() int { return (p.sys + p.user + charsPerToken - 1) / charsPerToken }

// recorder is the pipeline's Classifier: it keeps the ClassifyRequest the
// pipeline built, then classifies with the product's LLMClassifier, whose
// fake model keeps the rendered prompt and answers "ignore".
type recorder struct {
	inner     agent.LLMClassifier
	req       agent.ClassifyRequest
	sys, user string
	calls     int
}

func newRecorder(ps *prompts.Set) *recorder {
	r := &recorder{}
	r.inner = agent.LLMClassifier{Prompts: ps, Model: llm.ModelFunc(func(_ context.Context, req llm.Request) (*llm.Response, error) {
		r.sys, r.user = req.System, req.Prompt
		return &llm.Response{Text: IgnoreClassification, FinishReason: "STOP"}, nil
	})}
	return r
}

func (r *recorder) Classify(ctx context.Context, req agent.ClassifyRequest) (store.Classification, llm.CallInfo, error) {
	r.req = req
	r.calls++
	return r.inner.Classify(ctx, req)
}

// stateDir is a fresh directory for the benchmark's state database, on
// tmpfs when there is one: the database only feeds thread context back to
// the pipeline, and its fsyncs are not what this benchmark measures.
func stateDir(tb testing.TB) string {
	tb.Helper()
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		if d, err := os.MkdirTemp("/dev/shm", "mailagent-prompt-bench-"); err == nil {
			tb.Cleanup(func() { _ = os.RemoveAll(d) })
			return d
		}
	}
	return tb.TempDir()
}

// renderCorpusPrompts runs every SpamAssassin message, in corpus order,
// through the product's own agent.Pipeline.Triage (parse, thread, route,
// classify with the default llm.max_body_chars, decide) over a real state
// database, and keeps, for each message that reaches the model, the
// ClassifyRequest the pipeline built and the prompt LLMClassifier rendered
// from it. Nothing here rebuilds the request: field caps, thread context
// and body trimming are the pipeline's.
func renderCorpusPrompts(tb testing.TB) []corpusPrompt {
	tb.Helper()
	files, err := CorpusFiles(SpamAssassinDirs...)
	if errors.Is(err, ErrNoCorpus) {
		tb.Skipf("needs the shared corpora: %v", err)
	}
	if err != nil {
		tb.Fatal(err)
	}
	ps, err := prompts.Load("")
	if err != nil {
		tb.Fatal(err)
	}
	st, err := store.Open(filepath.Join(stateDir(tb), "mailagent.db"), store.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = st.Close() })
	rec := newRecorder(ps)
	const account = "bench"
	p := &agent.Pipeline{
		Store:      st,
		Classifier: rec,
		Threader:   mail.NewThreader(),
		Accounts: map[string]agent.Account{account: {
			Name:  account,
			Owner: agent.Owner{Name: "Bench Owner", Addresses: []string{"owner@example.test"}},
		}},
		// MaxBodyChars 0: agent.DefaultMaxBodyChars, as with no llm.max_body_chars set.
	}
	ctx := context.Background()
	out := make([]corpusPrompt, 0, len(files))
	for i, f := range files {
		raw, err := ReadMessage(f)
		if err != nil {
			tb.Fatal(err)
		}
		calls := rec.calls
		o, err := p.Triage(ctx, agent.Input{
			Key: store.MessageKey{Account: account, Mailbox: "corpus", UIDValidity: 1, UID: uint32(i + 1)},
			Raw: raw,
		}, false)
		if err != nil {
			tb.Fatalf("%s: triage: %v", f, err)
		}
		cp := corpusPrompt{file: f, route: o.Record.Route}
		switch rec.calls - calls {
		case 0:
		case 1:
			cp.req = rec.req
			cp.sys, cp.user = utf8.RuneCountInString(rec.sys), utf8.RuneCountInString(rec.user)
		default:
			tb.Fatalf("%s: %d classify calls, want at most 1", f, rec.calls-calls)
		}
		if o.Record.State == store.StateNeedsReview {
			tb.Fatalf("%s: needs_review: %s", f, o.Record.Error)
		}
		out = append(out, cp)
	}
	return out
}

// fieldSizes lists what the parts of a request weigh in the rendered
// prompt, in characters, largest first.
func fieldSizes(p corpusPrompt) string {
	r := p.req
	thread := 0
	for _, t := range r.Thread {
		thread += utf8.RuneCountInString(t.From) + utf8.RuneCountInString(t.Subject) + utf8.RuneCountInString(t.Date) + utf8.RuneCountInString(t.Text)
	}
	atts := 0
	for _, a := range r.Attachments {
		atts += utf8.RuneCountInString(a)
	}
	type field struct {
		name string
		n    int
	}
	fs := []field{
		{"body", utf8.RuneCountInString(r.Body)},
		{fmt.Sprintf("thread(%d msgs)", len(r.Thread)), thread},
		{"from", utf8.RuneCountInString(r.From)},
		{"to", utf8.RuneCountInString(r.To)},
		{"subject", utf8.RuneCountInString(r.Subject)},
		{"date", utf8.RuneCountInString(r.Date)},
		{fmt.Sprintf("attachments(%d lines)", len(r.Attachments)), atts},
	}
	fixed := p.sys + p.user
	for _, f := range fs {
		fixed -= f.n
	}
	fs = append(fs, field{"instructions+owner+markers", fixed})
	slices.SortStableFunc(fs, func(a, b field) int { return b.n - a.n })
	parts := make([]string, len(fs))
	for i, f := range fs {
		parts[i] = fmt.Sprintf("%s %d", f.name, f.n)
	}
	return strings.Join(parts, ", ")
}

// BenchmarkClassifyPrompt runs every SpamAssassin message through the
// pipeline (see renderCorpusPrompts), reports the distribution of classify
// prompt sizes in estimated tokens (characters / 4) and how many messages
// never reach the model because of their route, and logs what makes the
// largest prompts large. One iteration renders one recorded request with
// LLMClassifier (fresh boundary; the fake model's canned answer is
// validated too).
//
//	go test -run x -bench ClassifyPrompt -benchtime 1000x -v ./internal/rig/bench
func BenchmarkClassifyPrompt(b *testing.B) {
	all := renderCorpusPrompts(b)
	routes := map[string]int{}
	var external []corpusPrompt
	for _, p := range all {
		routes[p.route]++
		if p.sys+p.user > 0 {
			external = append(external, p)
		}
	}
	if len(external) == 0 {
		b.Fatal("no message reached the model")
	}
	slices.SortStableFunc(external, func(a, c corpusPrompt) int { return a.tokens() - c.tokens() })
	tokens := make([]int, len(external))
	over := 0
	for i, p := range external {
		tokens[i] = p.tokens()
		if tokens[i] > 1500 {
			over++
		}
	}
	ps, err := prompts.Load("")
	if err != nil {
		b.Fatal(err)
	}
	c := newRecorder(ps)
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, _, err := c.Classify(ctx, external[i%len(external)].req); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(len(all)), "messages")
	b.ReportMetric(float64(len(tokens)), "to-model")
	b.ReportMetric(float64(len(all)-len(tokens)), "never-model")
	b.ReportMetric(float64(Percentile(tokens, 50)), "p50-tok")
	b.ReportMetric(float64(Percentile(tokens, 95)), "p95-tok")
	b.ReportMetric(float64(Percentile(tokens, 100)), "max-tok")
	b.ReportMetric(float64(over), "over-1500")
	b.Logf("routes over %d messages: %v; prompt tokens (chars/4) min %d, p50 %d, p95 %d, max %d; %d prompts over 1,500; body cap %d chars (agent.DefaultMaxBodyChars)",
		len(all), routes, Percentile(tokens, 0), Percentile(tokens, 50), Percentile(tokens, 95), Percentile(tokens, 100), over, agent.DefaultMaxBodyChars)
	// What makes the largest prompts large: chars per field.
	for _, p := range external[max(0, len(external)-5):] {
		rel := p.file
		if root, err := RepoRoot(); err == nil {
			if r, err := filepath.Rel(filepath.Join(root, "..", "shared", "corpora"), p.file); err == nil {
				rel = r
			}
		}
		b.Logf("%d tokens (%d chars): %s: %s", p.tokens(), p.sys+p.user, rel, fieldSizes(p))
	}
}
