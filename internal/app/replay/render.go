package replay

import (
	"fmt"
	"html/template"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/guptarohit/asciigraph"

	"github.com/mailagent/mailagent/internal/llm"
	"github.com/mailagent/mailagent/internal/termsafe"
)

// Summary is a report with what it cost and how long it took, as the
// command shows it.
type Summary struct {
	Report
	Model string
	// Price is the list price used; PriceKnown is false for a model the
	// table does not know (USD is then not estimated).
	Price      llm.Price
	PriceKnown bool
	USD        float64
	// Policy describes the replayed policy (min_confidence and mode).
	MinConfidence float64
	WithDrafts    bool
	Elapsed       time.Duration // this run
	TotalElapsed  time.Duration // every run over these results
	Generated     time.Time
}

// NewSummary prices rep for model.
func NewSummary(rep Report, model string) Summary {
	s := Summary{Report: rep, Model: model}
	s.Price, s.PriceKnown = llm.PriceOf(model)
	if s.PriceKnown {
		s.USD = s.Price.Cost(rep.TokensIn, rep.TokensOut)
	}
	return s
}

// PriceText is the estimate in words: "$0.0123 at gemini-2.5-flash list
// price (…)" or "unknown".
func (s Summary) PriceText() string {
	if !s.PriceKnown {
		return "unknown (no list price for model " + s.Model + ")"
	}
	return fmt.Sprintf("$%.4f at %s list price ($%.3g in, $%.3g out per 1M tokens, as of %s)", s.USD, s.Model, s.Price.InPerM, s.Price.OutPerM, llm.PricesAsOf)
}

// Pct formats a ratio from Score ("-" when undefined).
func Pct(r float64) string {
	if r < 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", r*100)
}

// Rows is the summary as label/value rows for a terminal or plain table.
func (s Summary) Rows() [][2]string {
	nr := s.NeedsReply
	auto := s.Auto
	diff := fmt.Sprint(auto.AnsweredDifferently)
	if !auto.Compared {
		diff = "not measured (needs --drafts)"
	}
	rows := [][2]string{
		{"messages", fmt.Sprintf("%d replayed, %d incoming scored, %d need review (not scored)", s.Messages, s.Incoming, s.NeedsReview)},
		{"owner", fmt.Sprintf("replied to %d (median after %s), flagged %d, left unread %d, deleted %d, archived %d",
			s.Replied, s.MedianLatency.Round(time.Minute), s.Flagged, s.Unread, s.Deleted, s.Archived)},
		{"needs a reply", fmt.Sprintf("precision %s, recall %s (agent yes & owner replied %d, agent yes & owner silent %d, agent no & owner replied %d, both no %d)",
			Pct(nr.Precision), Pct(nr.Recall), nr.TP, nr.FP, nr.FN, nr.TN)},
		{"auto-sends", fmt.Sprintf("%d at min_confidence %.2f: owner also answered %d, answered very differently %s, never answered %d",
			auto.Total, s.MinConfidence, auto.AlsoAnswered, diff, auto.NeverAnswered)},
		{"UNWANTED", unwantedText(auto)},
		{"daily caps", fmt.Sprintf("%d would-be auto-sends turned into queue items by the caps (max_per_contact_per_day %d, max_per_day %d, simulated day by day in arrival order)",
			auto.CapLimited, s.MaxPerContactPerDay, s.MaxPerDay)},
	}
	if s.WithDrafts {
		rows = append(rows, [2]string{"drafts", fmt.Sprintf("%d compared with the owner's reply: mean similarity %.2f, median %.2f (%s; below %.2f counts as very different)",
			s.Report.Drafts.Compared, s.Report.Drafts.Mean, s.Report.Drafts.Median, SimilarityMeasure, VeryDifferent)})
	}
	rows = append(rows,
		[2]string{"cost", fmt.Sprintf("%d model calls, %d tokens in, %d out; %s", s.Calls, s.TokensIn, s.TokensOut, s.PriceText())},
		[2]string{"time", fmt.Sprintf("%s this run, %s in all", s.Elapsed.Round(time.Millisecond), s.TotalElapsed.Round(time.Millisecond))},
	)
	return rows
}

// WriteUnwanted writes at most limit of the unwanted auto-sends (the
// owner never answered them), then, with drafts, at most limit of those
// the owner answered very differently (0 = all), one a line, every field
// cleaned for a terminal.
func (s Summary) WriteUnwanted(w io.Writer, limit int) error {
	var b strings.Builder
	list := func(title string, items []AutoSent) {
		if len(items) == 0 {
			return
		}
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "%s (%d):\n", title, len(items))
		for i, u := range items {
			if limit > 0 && i == limit {
				fmt.Fprintf(&b, "  … and %d more (--json or --html lists them all)\n", len(items)-limit)
				break
			}
			fmt.Fprintf(&b, "  %s  %s: %s (confidence %.2f, %s)\n", u.Date.Format("2006-01-02"), termsafe.Line(u.From),
				termsafe.Line(u.Subject), u.Confidence, u.Why())
		}
	}
	list("Unwanted: auto-sends you never answered", s.Unwanted)
	list("Auto-sends you answered very differently", s.VeryDifferent)
	if b.Len() == 0 {
		return nil
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteThresholds writes the threshold table as plain text, and with plot
// an ASCII chart of auto-sends and unwanted ones against min_confidence.
func (s Summary) WriteThresholds(w io.Writer, plot bool) error {
	var b strings.Builder
	b.WriteString("min_confidence  auto-sends  unwanted (never answered)  queued by the caps\n")
	for _, r := range s.Thresholds {
		fmt.Fprintf(&b, "%14.2f  %10d  %8d  %26d\n", r.MinConfidence, r.AutoSends, r.Unwanted, r.CapLimited)
	}
	if plot && len(s.Thresholds) > 1 {
		all := make([]float64, len(s.Thresholds))
		bad := make([]float64, len(s.Thresholds))
		for i, r := range s.Thresholds {
			all[i], bad[i] = float64(r.AutoSends), float64(r.Unwanted)
		}
		g := asciigraph.PlotMany([][]float64{all, bad}, asciigraph.Height(8), asciigraph.Width(40), asciigraph.Precision(0),
			asciigraph.SeriesColors(asciigraph.Default, asciigraph.Red),
			asciigraph.Caption(fmt.Sprintf("auto-sends (top) and unwanted (red) for min_confidence %.2f → %.2f",
				s.Thresholds[0].MinConfidence, s.Thresholds[len(s.Thresholds)-1].MinConfidence)))
		b.WriteString("\n" + g + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// htmlReport: what a sender wrote (From, Subject) loses its control and
// format characters (ESC, BEL, bidi overrides) as on the terminal;
// html/template escapes only the markup, and the report is often read
// with cat or less too. Parsed on first use: parsing at start-up would
// cost every command (BENCHMARKS.md §9).
var htmlReport = sync.OnceValue(func() *template.Template { return newHTMLReport(termsafe.Line) })

// newHTMLReport builds the report's template with line cleaning a
// sender's text (a test builds it without, as its control).
func newHTMLReport(line func(string) string) *template.Template {
	return template.Must(template.New("replay").Funcs(template.FuncMap{
		"pct":  Pct,
		"line": line,
		"bar": func(n, max int) int {
			if max <= 0 {
				return 0
			}
			return n * 300 / max
		},
	}).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>mailagent replay</title>
<style>body{font-family:system-ui,sans-serif;max-width:60em;margin:2em auto;color:#222}
table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.3em .6em;text-align:left;vertical-align:top}
.bar{display:inline-block;height:.8em;background:#4a7}.bad{background:#c33}.head{font-size:1.4em;color:#c33}</style></head>
<body><h1>mailagent replay</h1>
<p>Generated {{.Generated.Format "2006-01-02 15:04 MST"}}, model {{.Model}}, policy min_confidence {{printf "%.2f" .MinConfidence}}.</p>
<p class="head">Unwanted auto-sends: {{.Auto.NeverAnswered}} of {{.Auto.Total}}</p>
<table>{{range .Rows}}<tr><th>{{index . 0}}</th><td>{{index . 1}}</td></tr>{{end}}</table>
<h2>Threshold table</h2>
<table><tr><th>min_confidence</th><th>auto-sends</th><th>unwanted</th><th>queued by the caps</th><th></th></tr>
{{$max := .MaxAuto}}{{range .Thresholds}}<tr><td>{{printf "%.2f" .MinConfidence}}</td><td>{{.AutoSends}}</td><td>{{.Unwanted}}</td><td>{{.CapLimited}}</td>
<td><span class="bar" style="width:{{bar .AutoSends $max}}px"></span><br><span class="bar bad" style="width:{{bar .Unwanted $max}}px"></span></td></tr>
{{end}}</table>
{{if .Unwanted}}<h2>Unwanted: auto-sends you never answered</h2>
<table><tr><th>date</th><th>from</th><th>subject</th><th>confidence</th></tr>
{{range .Unwanted}}<tr><td>{{.Date.Format "2006-01-02"}}</td><td>{{line .From}}</td><td>{{line .Subject}}</td><td>{{printf "%.2f" .Confidence}}</td></tr>
{{end}}</table>{{end}}
{{if .VeryDifferent}}<h2>Auto-sends you answered very differently</h2>
<table><tr><th>date</th><th>from</th><th>subject</th><th>confidence</th><th>similarity to your reply</th></tr>
{{range .VeryDifferent}}<tr><td>{{.Date.Format "2006-01-02"}}</td><td>{{line .From}}</td><td>{{line .Subject}}</td><td>{{printf "%.2f" .Confidence}}</td><td>{{printf "%.2f" .Similarity}}</td></tr>
{{end}}</table>{{end}}
<p>Draft similarity: {{.Measure}}. Its limits: word order, synonyms, negation and length are ignored.</p>
</body></html>
`))
}

// MaxAuto is the largest auto-send count of the threshold table.
func (s Summary) MaxAuto() int {
	m := 0
	for _, r := range s.Thresholds {
		m = max(m, r.AutoSends)
	}
	return m
}

// Measure names the similarity measure.
func (s Summary) Measure() string { return SimilarityMeasure }

// WriteHTML writes a self-contained HTML report (no scripts, no external
// resources; every value escaped by html/template, and what a sender
// wrote cleaned of control and format characters).
func (s Summary) WriteHTML(w io.Writer) error {
	return htmlReport().Execute(w, s)
}

// unwantedText is the headline: auto-sends the owner never answered.
func unwantedText(a AutoSplit) string {
	noun := "auto-sends"
	if a.NeverAnswered == 1 {
		noun = "auto-send"
	}
	return fmt.Sprintf("%d %s the owner never answered: mail the agent would have sent and the owner did not", a.NeverAnswered, noun)
}
