package tui

import (
	"fmt"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"
	"github.com/charmbracelet/x/exp/teatest/v2"
)

// hostileFollowups are tracked threads with text that must not reach the
// terminal as it is: escape sequences, bidi overrides, a subject far
// wider than any screen, CJK and emoji.
func hostileFollowups() []Followup {
	return []Followup{
		{ID: "fu_a", State: "awaiting_reply", With: "carol@example.org", Subject: "Report\x1b]0;pwned\x07\x1b[2J due",
			LastAt: fixedNow.Add(-80 * time.Hour), Deadline: fixedNow.Add(-8 * time.Hour), Tier: "reminded"},
		{ID: "fu_b", State: "needs_reply", With: "evil\u202egro.elpmaxe@bob", Subject: "Budget \u202etxt.exe",
			LastAt: fixedNow.Add(-time.Hour), Deadline: fixedNow.Add(71 * time.Hour)},
		{ID: "fu_c", State: "needs_reply", With: "山田太郎 <taro@example.jp>, 🙂 dan@example.org",
			Subject: "会議の議事録と来週の予定について 🙂 " + strings.Repeat("a very long subject that goes on ", 12),
			LastAt:  fixedNow.Add(-26 * time.Hour), Deadline: fixedNow.Add(2 * time.Hour), Tier: "nudged"},
	}
}

// decidedItems are what the agent decided without asking.
func decidedItems() []Item {
	return []Item{
		{ID: "nr:tr_1", Kind: KindDecided, Status: StatusDone, Account: "work", Received: fixedNow.Add(-3 * time.Hour),
			From: Address{Name: "News", Email: "news@lists.example.org"}, Subject: "Weekly digest \x1b[31mRED\x1b[0m",
			Decision: "archive", Reasons: []string{"bulk mail (List-Unsubscribe)"}, MessageID: "<d1@lists.example.org>", TraceID: "tr_1"},
		{ID: "nr:tr_2", Kind: KindDecided, Status: StatusDone, Account: "work", Received: fixedNow.Add(-5 * time.Hour),
			From: Address{Email: "noreply@shop.example"}, Subject: "Your order has shipped \u202etxt.exe",
			Decision: "ignore", Reasons: []string{"automated notification", "no reply expected"}, Summary: "a shipping notice", TraceID: "tr_2"},
		{ID: "nr:tr_3", Kind: KindDecided, Status: StatusDone, Account: "work", Received: fixedNow.Add(-26 * time.Hour),
			From: Address{Name: "山田太郎", Email: "taro@example.jp"}, Subject: "会議の議事録 " + strings.Repeat("and a very long subject ", 10),
			Decision: "notify", Reasons: []string{"rule: notify on a new thread from a colleague"}, TraceID: "tr_3"},
	}
}

// TestGoldenFollowupsAndDecided drives the real program loop (teatest) to
// the follow-ups view (F), its help overlay, the Decided view (5) and a
// decided message's detail at 80×24, 160×45 and 60×20, and compares the
// frames with testdata/TestGoldenFollowupsAndDecided/* (-update rewrites
// them). Every frame is exactly the window, hostile text never reaches
// it, and help and quit (or back) stay on the hint bar.
func TestGoldenFollowupsAndDecided(t *testing.T) {
	t.Parallel()
	views := []struct {
		name string
		keys []string
		// want are texts the frame must show at every size.
		want []string
	}{
		{name: "queue_help", keys: []string{"?"}, want: []string{"F follow-ups", "U unsubscribe"}},
		{name: "followups", keys: []string{"F"}, want: []string{"Follow-ups (3)", "awaiting-reply", "overdue", "n nudge"}},
		{name: "followups_help", keys: []string{"F", "?"}, want: []string{"n nudge", "snooze 1d", "done", "reload", "q/esc back"}},
		{name: "followups_cursor_last", keys: []string{"F", "j", "j"}, want: []string{"3/3"}},
		{name: "decided", keys: []string{"5"}, want: []string{"[5 ", "archive", "ignore", "notify", "Weekly digest"}},
		{name: "decided_detail", keys: []string{"5", "enter"}},
	}
	for _, size := range []struct{ w, h int }{{80, 24}, {160, 45}, {60, 20}} {
		for _, v := range views {
			t.Run(fmt.Sprintf("%s_%dx%d", v.name, size.w, size.h), func(t *testing.T) {
				fb := &followupFake{fakeBackend: newFake(append(goldenItems(), decidedItems()...)...), rows: hostileFollowups()}
				m := New(fb, Options{NoColor: true, Now: func() time.Time { return fixedNow }})
				t.Cleanup(m.c.close)
				h := &hook{ch: make(chan tea.Msg, 64)}
				tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(size.w, size.h), teatest.WithProgramOptions(watch(h.ch), tea.WithFPS(goldenFPS)))
				h.waitFor(t, "the initial load", func(msg tea.Msg) bool { _, ok := msg.(loadedMsg); return ok })
				for _, k := range press(v.keys...) {
					tm.Send(k)
					if k, ok := k.(tea.KeyPressMsg); ok && k.String() == "F" {
						h.waitFor(t, "the follow-ups", func(msg tea.Msg) bool { _, ok := msg.(followupsLoadedMsg); return ok })
					}
				}
				fm := finalModel(t, tm)
				got := fm.View().Content
				if strings.Contains(got, "\x1b") || strings.Contains(got, "\u202e") || strings.Contains(got, "pwned\a") {
					t.Fatalf("hostile text or an escape sequence reached the frame:\n%q", got)
				}
				lines := strings.Split(got, "\n")
				if len(lines) != size.h {
					t.Errorf("frame height: got %d lines, want %d", len(lines), size.h)
				}
				for i, l := range lines {
					if w := ansi.StringWidth(l); w > size.w {
						t.Errorf("line %d: got %d cells, want at most %d: %q", i, w, size.w, l)
					}
				}
				last := lines[len(lines)-1]
				if !strings.Contains(last, "? help") || !strings.Contains(last, "q quit") && !strings.Contains(last, "q/esc back") {
					t.Errorf("hint bar lost help or quit/back: %q", last)
				}
				if v.name == "decided" && size.w >= 90 && !strings.Contains(got, "bulk mail (List-Unsubscribe)") {
					t.Errorf("the Decided view lacks why:\n%s", got)
				}
				for _, w := range v.want {
					if !strings.Contains(got, w) {
						t.Errorf("frame lacks %q:\n%s", w, got)
					}
				}
				golden.RequireEqual(t, got)
			})
		}
	}
}

// TestFollowupRowsByDisplayWidth: a row of CJK and emoji text is cut by
// display width at every width, so the DUE column lines up under its
// header in every row.
func TestFollowupRowsByDisplayWidth(t *testing.T) {
	t.Parallel()
	for _, w := range []int{60, 80, 120, 160} {
		m := newModel(t, &followupFake{fakeBackend: newFake(), rows: hostileFollowups()}, Options{NoColor: true})
		send(t, m, tea.WindowSizeMsg{Width: w, Height: 20})
		send(t, m, press("F")...)
		lines := m.fu.body(10)
		col := strings.Index(lines[1], "DUE")
		if col < 0 {
			t.Fatalf("width %d: no DUE header: %q", w, lines[1])
		}
		at := ansi.StringWidth(lines[1][:col])
		for _, l := range lines[2:] {
			if ansi.StringWidth(l) > w {
				t.Errorf("width %d: row is %d cells: %q", w, ansi.StringWidth(l), l)
			}
			cut := ansi.Cut(l, at, at+7)
			if !strings.HasPrefix(cut, "overdue") && !strings.HasPrefix(cut, "Mar") {
				t.Errorf("width %d: DUE not under its header (%q) in %q", w, cut, l)
			}
		}
	}
}

// TestKeysOfferedWhereTheyApply: F and U are on the hint bar and in the
// help overlay only with a backend that has them, U only on a queue item
// (not on a sent reply), and the follow-ups view offers its own keys,
// n/s/d only when there is a thread, with q/esc back and ? help.
func TestKeysOfferedWhereTheyApply(t *testing.T) {
	t.Parallel()
	wide := tea.WindowSizeMsg{Width: 300, Height: 30}
	t.Run("with followups and unsubscribe", func(t *testing.T) {
		fb := &followupFake{fakeBackend: newFake(goldenItems()...), rows: hostileFollowups()}
		m := newModel(t, fb, Options{NoColor: true})
		send(t, m, wide)
		if h := m.shortHelp(); !strings.Contains(h, "U unsubscribe") || !strings.Contains(h, "F follow-ups") {
			t.Errorf("queue hint bar: got %q, want U and F", h)
		}
		send(t, m, press("4")...)
		if h := m.shortHelp(); strings.Contains(h, "unsubscribe") || !strings.Contains(h, "F follow-ups") {
			t.Errorf("sent hint bar: got %q, want F and no U", h)
		}
		send(t, m, press("U")...)
		if len(fb.actions) != 0 {
			t.Errorf("U on a sent reply asked the backend: %v", fb.actions)
		}
		send(t, m, press("1", "?")...)
		help := m.View().Content
		for _, want := range []string{"F follow-ups", "U unsubscribe"} {
			if !strings.Contains(help, want) {
				t.Errorf("help overlay lacks %q:\n%s", want, help)
			}
		}
		send(t, m, press("?", "F")...)
		h := m.shortHelp()
		for _, want := range []string{"n nudge", "s snooze 1d", "d done", "r reload", "q/esc back", "? help"} {
			if !strings.Contains(h, want) {
				t.Errorf("follow-ups hint bar lacks %q: %q", want, h)
			}
		}
		if strings.Contains(h, "approve") || strings.Contains(h, "q quit") {
			t.Errorf("follow-ups hint bar offers the list's keys: %q", h)
		}
		send(t, m, press("?")...)
		if !m.help.show || !strings.Contains(m.View().Content, "n nudge") {
			t.Fatalf("? in the follow-ups view did not show its keys:\n%s", m.View().Content)
		}
		send(t, m, press("?")...)
		fb.mu.Lock()
		fb.rows = nil
		fb.mu.Unlock()
		send(t, m, press("r")...)
		if h := m.shortHelp(); strings.Contains(h, "nudge") || strings.Contains(h, "done") || !strings.Contains(h, "r reload") {
			t.Errorf("empty follow-ups hint bar: got %q, want reload and no n/s/d", h)
		}
	})
	t.Run("without them", func(t *testing.T) {
		m := newModel(t, newFake(goldenItems()...), Options{NoColor: true})
		send(t, m, wide)
		if h := m.shortHelp(); strings.Contains(h, "unsubscribe") || strings.Contains(h, "follow-ups") {
			t.Errorf("hint bar offers what the backend lacks: %q", h)
		}
		send(t, m, press("?")...)
		if v := m.View().Content; strings.Contains(v, "unsubscribe") || strings.Contains(v, "follow-ups") {
			t.Errorf("help overlay lists what the backend lacks:\n%s", v)
		}
		send(t, m, press("?", "F")...)
		if m.fu.open {
			t.Error("F opened a follow-ups view the backend cannot fill")
		}
	})
}
