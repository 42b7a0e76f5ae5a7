package tui

import (
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
)

// TestDetailSteps: the detail shows a short Steps section (one line in,
// one line out per step, clipped to the width, hostile text cleaned) and
// the command that shows them whole; an item without snapshots shows none.
func TestDetailSteps(t *testing.T) {
	t.Parallel()
	it := draft("d", "a@example.com", "Steps", "low", time.Minute)
	it.TraceID = "tr_0123456789abcdef"
	it.Steps = []StepSnapshot{
		{Name: "classify", Input: "{\n  \"Body\": \"hello\x1b]0;pwned\x07 \u202eevil " + strings.Repeat("long ", 100) + "\"\n}",
			Output: `{"intents":["scheduling"]}` + "\x1b[2J"},
		{Name: "decide\x1b[31m", Input: "gate inputs", Output: "queue"},
	}
	plain := draft("p", "b@example.com", "Plain", "low", time.Minute)
	m := newModel(t, newFake(it, plain), Options{NoColor: true})
	send(t, m, tea.WindowSizeMsg{Width: 60, Height: 40})
	raw := m.detail.text(&m.c.items["d"].item)
	for _, bad := range []string{"\x1b]0;", "\x07", "\u202e", "\x1b[2J", "\x1b[31m"} {
		if strings.Contains(raw, bad) {
			t.Errorf("hostile %q reached the detail", bad)
		}
	}
	text := ansi.Strip(raw)
	_, steps, ok := strings.Cut(text, "Steps (2)")
	if !ok {
		t.Fatalf("no Steps section:\n%s", text)
	}
	for _, want := range []string{"classify", "in:  { \"Body\": \"hello", "out: {\"intents\":[\"scheduling\"]}", "decide", "out: queue",
		"mailagent explain tr_0123456789abcdef --steps"} {
		if !strings.Contains(steps, want) {
			t.Errorf("Steps lacks %q:\n%s", want, steps)
		}
	}
	lines := strings.Split(strings.TrimSpace(steps), "\n")
	if len(lines) > 8 {
		t.Errorf("Steps is %d lines, want it short:\n%s", len(lines), steps)
	}
	for _, l := range lines {
		if w := ansi.StringWidth(l); w > 60 {
			t.Errorf("line %q: %d cells, want at most 60", l, w)
		}
	}
	if strings.Contains(ansi.Strip(m.detail.text(&m.c.items["p"].item)), "Steps (") {
		t.Error("an item without snapshots shows a Steps section")
	}
}
