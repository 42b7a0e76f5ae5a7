package tui

import (
	"fmt"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/mailagent/mailagent/tui/styles"
)

// manyQueue is a queue longer than any window, all at one risk so the
// order is by age: q00 first.
func manyQueue(n int) []Item {
	items := make([]Item, n)
	for i := range items {
		items[i] = draft(fmt.Sprintf("q%02d", i), fmt.Sprintf("s%d@example.com", i), fmt.Sprintf("Subject %d", i), "low", time.Duration(i+1)*time.Minute)
	}
	return items
}

func cursorOf(m *Model) int { return m.lists[m.tab].cursor }

func TestVimKeysMoveTheCursor(t *testing.T) {
	t.Parallel()
	m := newModel(t, newFake(manyQueue(60)...), Options{})
	send(t, m, tea.WindowSizeMsg{Width: 80, Height: 24})
	half := m.c.bodyHeight() / 2
	steps := []struct {
		keys []string
		want int
	}{
		{keys: []string{"G"}, want: 59},
		{keys: []string{"g", "g"}, want: 0},
		{keys: []string{"ctrl+d"}, want: half},
		{keys: []string{"ctrl+d"}, want: 2 * half},
		{keys: []string{"ctrl+u"}, want: half},
		{keys: []string{"j", "g", "j"}, want: half + 2}, // a g between other keys is forgotten
		{keys: []string{"g", "g"}, want: 0},
	}
	for _, s := range steps {
		send(t, m, press(s.keys...)...)
		if got := cursorOf(m); got != s.want {
			t.Fatalf("after %v: cursor got %d, want %d", s.keys, got, s.want)
		}
	}
	if m.mode() != modeNormal {
		t.Fatalf("gg opened a prompt (mode %d): a lone g must not act", m.mode())
	}
	if got := m.position(); got != "1/60" {
		t.Fatalf("position: got %q, want 1/60", got)
	}
	send(t, m, press("G")...)
	if got := m.position(); got != "60/60" || !strings.Contains(m.View().Content, "60/60") {
		t.Fatalf("position at the bottom: got %q, want 60/60 on screen", got)
	}
}

func TestRegenerateIsCapitalR(t *testing.T) {
	t.Parallel()
	f := newFake(sampleQueue()...)
	m := newModel(t, f, Options{})
	send(t, m, press("g")...)
	if m.mode() != modeNormal {
		t.Fatal("a lone g opened a prompt")
	}
	send(t, m, press("R")...)
	if m.mode() != modePrompt || m.c.prompt.kind != promptRegenerate {
		t.Fatalf("R: got mode %d prompt %d, want the regenerate prompt", m.mode(), m.c.prompt.kind)
	}
}

func TestDetailScrollKeys(t *testing.T) {
	t.Parallel()
	it := draft("long", "a@example.com", "Long", "low", time.Minute)
	it.Draft = strings.Repeat("line of the draft\n", 200)
	m := newModel(t, newFake(it), Options{})
	send(t, m, tea.WindowSizeMsg{Width: 80, Height: 24})
	send(t, m, press("enter", "G")...)
	if !m.detail.viewport.AtBottom() {
		t.Fatal("G in the detail view: not at the bottom")
	}
	send(t, m, press("g", "g")...)
	if !m.detail.viewport.AtTop() {
		t.Fatal("gg in the detail view: not at the top")
	}
	send(t, m, press("ctrl+d")...)
	if got, want := m.detail.viewport.YOffset(), m.c.bodyHeight()/2; got != want {
		t.Fatalf("ctrl+d in the detail view: offset got %d, want %d", got, want)
	}
	if got, want := m.position(), fmt.Sprintf("%d/%d", m.c.bodyHeight()/2+1, m.detail.viewport.TotalLineCount()); got != want {
		t.Fatalf("detail position: got %q, want %q", got, want)
	}
	send(t, m, press("ctrl+u")...)
	if !m.detail.viewport.AtTop() {
		t.Fatal("ctrl+u in the detail view: not back at the top")
	}
}

func TestQAndEscGoBackBeforeQuitting(t *testing.T) {
	t.Parallel()
	for _, back := range []string{"q", "esc"} {
		t.Run(back, func(t *testing.T) {
			m := newModel(t, newFake(sampleQueue()...), Options{})
			send(t, m, press("3", "1", "enter")...)
			if m.tab != tabDetail {
				t.Fatalf("enter: tab %d, want detail", m.tab)
			}
			_, cmd := m.Update(press(back)[0])
			if m.tab != tabQueue {
				t.Fatalf("%s in the detail view: tab %d, want the queue", back, m.tab)
			}
			if cmd != nil {
				if _, quit := cmd().(tea.QuitMsg); quit {
					t.Fatalf("%s in the detail view quit the program", back)
				}
			}
			_, cmd = m.Update(press(back)[0])
			quit := false
			if cmd != nil {
				_, quit = cmd().(tea.QuitMsg)
			}
			if wantQuit := back == "q"; quit != wantQuit {
				t.Fatalf("%s in the list: quit %v, want %v", back, quit, wantQuit)
			}
		})
	}
	m := newModel(t, newFake(sampleQueue()...), Options{})
	send(t, m, press("enter")...)
	_, cmd := m.Update(press("ctrl+c")[0])
	if cmd == nil {
		t.Fatal("ctrl+c in the detail view: no command, want quit")
	}
	if _, quit := cmd().(tea.QuitMsg); !quit {
		t.Fatal("ctrl+c in the detail view did not quit")
	}
}

// hintBar is the last line of the frame.
func hintBar(m *Model) string {
	lines := strings.Split(m.View().Content, "\n")
	return lines[len(lines)-1]
}

func TestOnlyApplicableActionsOffered(t *testing.T) {
	t.Parallel()
	items := []Item{
		draft("d", "a@example.com", "Draft", "low", time.Minute),
		{ID: "sent", Kind: KindSent, Status: StatusSent, Subject: "Sent", SendAt: fixedNow.Add(-time.Hour), Draft: "x"},
		{ID: "sending", Kind: KindSent, Status: StatusSending, Subject: "Soon", SendAt: fixedNow.Add(time.Minute), Draft: "x"},
		{ID: "nr", Kind: KindNeedsReview, Status: StatusPending, Subject: "NR", Received: fixedNow},
		{ID: "notify", Kind: KindNotify, Status: StatusPending, Subject: "Note", Received: fixedNow.Add(-time.Hour)},
	}
	actions := []string{"approve", "edit", "reject", "regenerate", "snooze", "unsnooze", "try again", "cancel send"}
	tests := []struct {
		name string
		keys []string
		want []string // the actions offered
	}{
		{name: "queued draft", keys: []string{"1"}, want: []string{"approve", "edit", "reject", "regenerate", "snooze"}},
		{name: "queued draft in detail", keys: []string{"1", "enter"}, want: []string{"approve", "edit", "reject", "regenerate", "snooze"}},
		{name: "pending send", keys: []string{"4"}, want: []string{"cancel send"}},
		{name: "sent item", keys: []string{"4", "j"}, want: nil},
		{name: "sent item in detail", keys: []string{"4", "j", "enter"}, want: nil},
		{name: "needs review", keys: []string{"3"}, want: []string{"edit", "reject", "try again"}},
		{name: "notify", keys: []string{"3", "j"}, want: []string{"reject"}}, // dismisses it
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newModel(t, newFake(items...), Options{NoColor: true})
			send(t, m, tea.WindowSizeMsg{Width: 200, Height: 30})
			send(t, m, press(tt.keys...)...)
			bar := hintBar(m)
			for _, a := range actions {
				offered := strings.Contains(bar, " "+a)
				want := false
				for _, w := range tt.want {
					want = want || w == a
				}
				if offered != want {
					t.Errorf("%q offered %v, want %v; bar: %q", a, offered, want, bar)
				}
			}
		})
	}
}

func TestHintBarKeepsHelpAndQuit(t *testing.T) {
	t.Parallel()
	for _, size := range []struct{ w, h int }{{80, 24}, {60, 20}, {40, 10}} {
		for _, keys := range [][]string{{"1"}, {"1", "enter"}, {"3"}, {"4"}} {
			m := newModel(t, newFake(goldenItems()...), Options{NoColor: true})
			send(t, m, tea.WindowSizeMsg{Width: size.w, Height: size.h})
			send(t, m, press(keys...)...)
			bar := hintBar(m)
			back := "q quit"
			if m.tab == tabDetail {
				back = "q/esc back"
			}
			if !strings.Contains(bar, "? help") || !strings.Contains(bar, back) {
				t.Errorf("%dx%d %v: hint bar %q lacks \"? help\" or %q", size.w, size.h, keys, bar, back)
			}
			if strings.Contains(bar, "…") {
				t.Errorf("%dx%d %v: hint bar cut mid-hint: %q", size.w, size.h, keys, bar)
			}
		}
	}
}

func TestColumnsGiveWayBySubject(t *testing.T) {
	t.Parallel()
	subject := "Quarterly planning for the team"
	it := draft("d", "a@example.com", subject, "low", time.Minute)
	it.Intents = []string{"scheduling"}
	for _, size := range []struct{ w, h int }{{80, 24}, {60, 20}} {
		m := newModel(t, newFake(it), Options{NoColor: true})
		send(t, m, tea.WindowSizeMsg{Width: size.w, Height: size.h})
		var subjectW, intentW int
		for _, c := range m.lists[tabQueue].columns(nil) {
			switch c.text {
			case "SUBJECT":
				subjectW = c.width
			case "INTENT":
				intentW = c.width
			}
		}
		if subjectW < 24 {
			t.Errorf("%dx%d: SUBJECT %d cells, want at least 24", size.w, size.h, subjectW)
		}
		if intentW > subjectW/2 {
			t.Errorf("%dx%d: INTENT %d cells beside SUBJECT %d: INTENT must give way first", size.w, size.h, intentW, subjectW)
		}
		frame := m.View().Content
		if size.w == 80 && !strings.Contains(frame, subject) {
			t.Errorf("80 columns: subject %q cut:\n%s", subject, frame)
		}
		// Every tab keeps its number and count; the selected one its
		// whole label; Detail (no count) may shrink to its number.
		tabs := strings.Split(frame, "\n")[0]
		for _, label := range []string{"[1 Queue (1)]", " 2 ", "3 Attention (0)", "4 Sent (0)", "5 Decided (0)"} {
			if !strings.Contains(tabs, label) {
				t.Errorf("%dx%d: tab bar %q lacks %q", size.w, size.h, tabs, label)
			}
		}
		if strings.Contains(tabs, "…") || size.w == 80 && !strings.Contains(tabs, "2 Detail") {
			t.Errorf("%dx%d: tab bar %q cut, or Detail's title lost at 80 columns", size.w, size.h, tabs)
		}
	}
}

func TestDetailWrapsAtWords(t *testing.T) {
	t.Parallel()
	it := draft("d", "a@example.com", "Words", "low", time.Minute)
	it.Draft = strings.TrimSpace(strings.Repeat("wrapping words politely ", 20))
	m := newModel(t, newFake(it), Options{NoColor: true})
	send(t, m, tea.WindowSizeMsg{Width: 60, Height: 40})
	send(t, m, press("enter")...)
	text := ansi.Strip(m.detail.text(&m.c.items["d"].item))
	seen := 0
	for _, l := range strings.Split(text, "\n") {
		if !strings.Contains(l, "wrapping") && !strings.Contains(l, "politely") {
			continue
		}
		seen++
		if w := ansi.StringWidth(l); w > 60 {
			t.Errorf("line %q: %d cells, want at most 60", l, w)
		}
		if !strings.HasPrefix(l, bodyIndent) {
			t.Errorf("line %q: want the body indent", l)
		}
		for _, word := range strings.Fields(l) {
			if word != "wrapping" && word != "words" && word != "politely" {
				t.Errorf("word cut: %q in line %q", word, l)
			}
		}
	}
	if seen < 3 {
		t.Fatalf("draft of 60 words: got %d lines, want it wrapped over at least 3:\n%s", seen, text)
	}
}

func TestFlashClearedOnViewChange(t *testing.T) {
	t.Parallel()
	m := newModel(t, newFake(sampleQueue()...), Options{})
	send(t, m, press("4", "a")...) // approve on the sent view: refused with a note
	if m.c.note == "" {
		t.Fatal("approve on the sent view left no note")
	}
	send(t, m, press("1")...)
	if m.c.note != "" {
		t.Fatalf("note survived the view change: %q", m.c.note)
	}
	m.c.setNote("flash")
	send(t, m, press("enter")...)
	if m.c.note != "" {
		t.Fatalf("note survived opening the detail view: %q", m.c.note)
	}
}

func TestSnoozedVisibleAndUnsnooze(t *testing.T) {
	t.Parallel()
	snz := draft("snz", "z@example.com", "Later", "high", time.Minute)
	snz.Status = StatusSnoozed
	f := newFake(append(sampleQueue(), snz)...)
	m := newModel(t, f, Options{NoColor: true})
	ids := rowIDs(m, tabQueue)
	if len(ids) != 5 || ids[4] != "snz" {
		t.Fatalf("queue: got %v, want the snoozed draft last", ids)
	}
	if !strings.Contains(m.View().Content, "(snoozed) Later") {
		t.Fatalf("snoozed draft not marked:\n%s", m.View().Content)
	}
	send(t, m, press("u")...) // on a pending draft: refused
	if calls := f.callsOf("Snooze"); len(calls) != 0 {
		t.Fatalf("u on a pending draft: Snooze calls %+v, want none", calls)
	}
	send(t, m, press("G")...)
	if !strings.Contains(hintBar(m), "u unsnooze") {
		t.Fatalf("hint bar on a snoozed draft lacks unsnooze: %q", hintBar(m))
	}
	send(t, m, press("u")...)
	calls := f.callsOf("Snooze")
	if len(calls) != 1 || calls[0].id != "snz" || calls[0].until.After(fixedNow) {
		t.Fatalf("unsnooze: Snooze calls %+v, want one for snz until now", calls)
	}
}

func TestSnoozeTomorrowAccepted(t *testing.T) {
	t.Parallel()
	// The prompt offers "tomorrow"; it must parse.
	got, err := ParseSnooze("tomorrow", fixedNow)
	if err != nil || !got.After(fixedNow) {
		t.Fatalf("ParseSnooze(tomorrow): got %v, %v", got, err)
	}
}

func TestPaletteFollowsBackground(t *testing.T) {
	t.Parallel()
	m := newModel(t, newFake(sampleQueue()...), Options{})
	if !m.c.st.Dark {
		t.Fatal("default palette: want the dark one")
	}
	send(t, m, tea.BackgroundColorMsg{Color: lightBg{}})
	if m.c.st.Dark {
		t.Fatal("light background: palette still dark")
	}
	dark, light := styles.ForBackground(false, false, true), styles.ForBackground(false, false, false)
	if dark.RiskLow.Render("x") == light.RiskLow.Render("x") {
		t.Fatal("light and dark palettes draw risk low alike")
	}
	plain := newModel(t, newFake(sampleQueue()...), Options{NoColor: true})
	send(t, plain, tea.BackgroundColorMsg{Color: lightBg{}})
	if strings.Contains(plain.View().Content, "\x1b") {
		t.Fatal("NO_COLOR frame has escapes after a background report")
	}
}

// lightBg is a white terminal background.
type lightBg struct{}

func (lightBg) RGBA() (r, g, b, a uint32) { return 0xffff, 0xffff, 0xffff, 0xffff }
