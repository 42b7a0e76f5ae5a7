package bench

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/prompts"
)

// Limits copied from agent/pipeline.go (unexported there): the stored
// excerpt, and how many earlier thread messages a prompt shows.
const (
	excerptChars  = 2000
	threadContext = 3
	maxBodyChars  = 8000 // llm.max_body_chars default
)

// charsPerToken is the estimate used for token counts: Gemini's
// documentation gives "about 4 characters per token" for English text. It
// is an estimate, not a count (no network here to call CountTokens).
const charsPerToken = 4

// corpusPrompt is one corpus message's classify prompt, or its route when
// it never reaches the model.
type corpusPrompt struct {
	route string
	data  prompts.ClassifyData
	chars int // system + user prompt, in characters (runes)
}

// renderCorpusPrompts routes every SpamAssassin message and renders the
// classify prompt of the external ones exactly as agent.Pipeline.classify
// builds it: owner, up to 3 earlier messages of the thread (excerpts of
// the messages seen before it, in corpus order), From/To/Subject/Date,
// body = TrimText(CleanText, 8000), attachment lines.
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
	owner := agent.Owner{Name: "Bench Owner", Addresses: []string{"owner@example.test"}}
	th := mail.NewThreader()
	threads := map[string][]prompts.ThreadMessage{}
	out := make([]corpusPrompt, 0, len(files))
	for _, f := range files {
		raw, err := ReadMessage(f)
		if err != nil {
			tb.Fatal(err)
		}
		m := mail.Parse(raw)
		tid, merged := th.Add(mail.InputOf(m))
		for _, old := range merged {
			threads[tid] = append(threads[tid], threads[old]...)
			delete(threads, old)
		}
		r := agent.Route(m, owner, false, nil)
		cp := corpusPrompt{route: r.Route}
		if r.Route == agent.RouteExternal {
			prev := threads[tid]
			if len(prev) > threadContext {
				prev = prev[len(prev)-threadContext:]
			}
			d := prompts.ClassifyData{
				Owner: prompts.Owner{Name: owner.Name, Email: owner.Addresses[0]}, Boundary: prompts.NewBoundary(),
				Thread: slices.Clone(prev), From: formatAddr(m.From), To: formatAddrs(m.To), Subject: m.Subject,
				Body: prompts.TrimText(m.CleanText, maxBodyChars), Route: r.Route,
			}
			if !m.Date.IsZero() {
				d.Date = m.Date.Format(time.RFC1123Z)
			}
			for _, a := range m.Attachments {
				d.Attachments = append(d.Attachments, fmt.Sprintf("%s (%s, %d bytes)", a.Filename, a.ContentType, a.Size))
			}
			sys, user, err := ps.Classify(d)
			if err != nil {
				tb.Fatalf("%s: render: %v", f, err)
			}
			cp.data = d
			cp.chars = utf8.RuneCountInString(sys) + utf8.RuneCountInString(user)
		}
		out = append(out, cp)
		tm := prompts.ThreadMessage{From: formatAddr(m.From), Subject: m.Subject,
			Text: prompts.TrimText(prompts.TrimText(m.CleanText, excerptChars), prompts.ExcerptLimit)}
		if !m.Date.IsZero() {
			tm.Date = m.Date.Format(time.RFC1123Z)
		}
		threads[tid] = append(threads[tid], tm)
	}
	return out
}

// formatAddr and formatAddrs mirror agent's unexported formatAddress(es).
func formatAddr(a mail.Address) string {
	if a.Name == "" {
		return a.Email
	}
	return fmt.Sprintf("%s <%s>", a.Name, a.Email)
}

func formatAddrs(as []mail.Address) string {
	s := ""
	for i, a := range as {
		if i > 0 {
			s += ", "
		}
		s += formatAddr(a)
	}
	return s
}

// BenchmarkClassifyPrompt renders the classify prompt of every external
// SpamAssassin message (one render per iteration) and reports the
// distribution of prompt sizes in estimated tokens (characters / 4), and
// how many messages never reach the model because of their route.
//
//	go test -run x -bench ClassifyPrompt -benchtime 1x ./internal/bench
func BenchmarkClassifyPrompt(b *testing.B) {
	all := renderCorpusPrompts(b)
	routes := map[string]int{}
	var tokens []int
	var external []prompts.ClassifyData
	for _, p := range all {
		routes[p.route]++
		if p.route == agent.RouteExternal {
			tokens = append(tokens, (p.chars+charsPerToken-1)/charsPerToken)
			external = append(external, p.data)
		}
	}
	if len(external) == 0 {
		b.Fatal("no external message in the corpus")
	}
	slices.Sort(tokens)
	over := 0
	for _, t := range tokens {
		if t > 1500 {
			over++
		}
	}
	ps, err := prompts.Load("")
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		d := external[i%len(external)]
		d.Boundary = prompts.NewBoundary()
		if _, _, err := ps.Classify(d); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(all)), "messages")
	b.ReportMetric(float64(len(tokens)), "to-model")
	b.ReportMetric(float64(len(all)-len(tokens)), "never-model")
	b.ReportMetric(float64(Percentile(tokens, 50)), "p50-tok")
	b.ReportMetric(float64(Percentile(tokens, 95)), "p95-tok")
	b.ReportMetric(float64(Percentile(tokens, 100)), "max-tok")
	b.ReportMetric(float64(over), "over-1500")
	b.Logf("routes over %d messages: %v; prompt tokens (chars/4) min %d, p50 %d, p95 %d, max %d; %d prompts over 1,500",
		len(all), routes, Percentile(tokens, 0), Percentile(tokens, 50), Percentile(tokens, 95), Percentile(tokens, 100), over)
	// What a smaller llm.max_body_chars would give: the same prompts with
	// the body trimmed further.
	for _, limit := range []int{6000, 4000, 3000} {
		var ts []int
		for _, d := range external {
			d.Body = prompts.TrimText(d.Body, limit)
			d.Boundary = prompts.NewBoundary()
			sys, user, err := ps.Classify(d)
			if err != nil {
				b.Fatal(err)
			}
			n := utf8.RuneCountInString(sys) + utf8.RuneCountInString(user)
			ts = append(ts, (n+charsPerToken-1)/charsPerToken)
		}
		slices.Sort(ts)
		b.Logf("with max_body_chars = %d: p50 %d, p95 %d, max %d", limit, Percentile(ts, 50), Percentile(ts, 95), Percentile(ts, 100))
	}
}
