package tui

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"
)

// headerWidths returns each column of a list's header line by its title
// and its width in cells (up to the next title).
func headerWidths(header string) map[string]int {
	header = strings.TrimRight(header, " ")
	out := map[string]int{}
	var starts []int
	var names []string
	for i := 0; i < len(header); i++ {
		if header[i] != ' ' && (i == 0 || header[i-1] == ' ') {
			starts = append(starts, i)
			end := strings.IndexByte(header[i:], ' ')
			if end < 0 {
				end = len(header) - i
			}
			names = append(names, header[i:i+end])
		}
	}
	for k, n := range names {
		if k+1 < len(starts) {
			out[n] = starts[k+1] - starts[k] - 1
		} else {
			out[n] = len(header) - starts[k]
		}
	}
	return out
}

// paragraph joins the frame's lines from the one starting with first to
// the next blank one, each trimmed, and checks that every one of them
// starts with indent: a paragraph that wrapped keeps its indent.
func paragraph(t *testing.T, frame, first, indent string) string {
	t.Helper()
	var words []string
	in := false
	for _, l := range strings.Split(frame, "\n") {
		if !in && strings.HasPrefix(l, first) {
			in = true
		}
		if !in {
			continue
		}
		if strings.TrimSpace(l) == "" {
			break
		}
		if !strings.HasPrefix(l, indent) {
			t.Errorf("wrapped line lost its indent %q: %q", indent, l)
		}
		words = append(words, strings.TrimSpace(l))
	}
	if !in {
		t.Fatalf("no line starts with %q:\n%s", first, frame)
	}
	return strings.Join(words, " ")
}

// TestGoldenSmallLayouts: the main list and the detail view at 60×20 and
// 80×24 (the sizes issue 9 says the TUI is usable at) through the real
// program loop, kept in testdata/TestGoldenSmallLayouts (-update
// rewrites them), with what makes them usable asserted in code: help
// and quit (or back) on the hint bar, INTENT giving way before SUBJECT,
// and wrapped text that keeps its indent and never cuts a word.
func TestGoldenSmallLayouts(t *testing.T) {
	t.Parallel()
	for _, size := range []struct{ w, h int }{{60, 20}, {80, 24}} {
		t.Run(fmt.Sprintf("queue_%dx%d", size.w, size.h), func(t *testing.T) {
			got, _ := driveFrame(t, newFake(promptItems()...), size.w, size.h, goldenFrame{})
			checkFrame(t, got, size.w, size.h)
			lines := strings.Split(got, "\n")
			if last := lines[len(lines)-1]; !strings.Contains(last, "? help") || !strings.Contains(last, "q quit") {
				t.Errorf("hint bar %q lacks ? help or q quit", last)
			}
			cols := headerWidths(lines[1])
			if _, ok := cols["INTENT"]; ok {
				t.Errorf("%d columns: INTENT kept (%d cells) beside SUBJECT (%d): it must give way first", size.w, cols["INTENT"], cols["SUBJECT"])
			}
			if cols["SUBJECT"] < 24 {
				t.Errorf("%d columns: SUBJECT %d cells, want at least 24 (header %q)", size.w, cols["SUBJECT"], lines[1])
			}
			for _, s := range []string{"Account check", "Legal notice", "Contract renewal", "Lunch on Friday"} {
				if !strings.Contains(got, s) {
					t.Errorf("subject %q cut:\n%s", s, got)
				}
			}
			golden.RequireEqual(t, got)
		})
		t.Run(fmt.Sprintf("detail_%dx%d", size.w, size.h), func(t *testing.T) {
			// The long draft, scrolled half a page (ctrl+d) to its thread.
			got, fm := driveFrame(t, newFake(promptItems()...), size.w, size.h,
				goldenFrame{keys: []string{"j", "j", "j", "j", "enter", "ctrl+d"}})
			checkFrame(t, got, size.w, size.h)
			if fm.tab != tabDetail || fm.detail.id != "long" || fm.detail.viewport.YOffset() == 0 {
				t.Fatalf("want the long draft's detail scrolled down; tab %v id %q offset %d", fm.tab, fm.detail.id, fm.detail.viewport.YOffset())
			}
			if last := lastLine(got); !strings.Contains(last, "? help") || !strings.Contains(last, "q/esc back") {
				t.Errorf("hint bar %q lacks ? help or q/esc back", last)
			}
			want := "Could we move the quarterly planning meeting to Thursday afternoon? " +
				"The room on the third floor is booked, so I suggest the one next to the kitchen."
			if p := paragraph(t, got, bodyIndent+"Could we", bodyIndent); !strings.HasPrefix(p, want) {
				t.Errorf("the paragraph, its lines joined:\n%q\nwant it to start with\n%q (a word was cut or lost)", p, want)
			}
			golden.RequireEqual(t, got)
		})
		t.Run(fmt.Sprintf("detail_top_%dx%d", size.w, size.h), func(t *testing.T) {
			// A stranger's draft: its recipient line and the [new]
			// warning are the widest labels.
			got, _ := driveFrame(t, newFake(promptItems()...), size.w, size.h, goldenFrame{keys: []string{"enter"}})
			checkFrame(t, got, size.w, size.h)
			to := paragraph(t, got, "To:", "")
			for _, w := range []string{`[new] collect@evil.test (name "bob@bank.test" looks like an address)`, "you have never written to the address marked [new]"} {
				if !strings.Contains(to, w) {
					t.Errorf("the To: label, its lines joined: %q lacks %q (a word was cut)", to, w)
				}
			}
			lines := strings.Split(got, "\n")
			for i, l := range lines[1:] {
				if strings.HasPrefix(l, "From:") {
					break
				}
				if i > 0 && !strings.HasPrefix(l, labelIndent) {
					t.Errorf("a wrapped To: line lost the label indent: %q", l)
				}
			}
			golden.RequireEqual(t, got)
		})
	}
}

// TestSmallWindowKeysReachable: at 60×20 and 80×24, from the list and from
// the detail view, ? opens the help overlay listing how to quit (or go
// back), q in the detail view goes back to the list and q there quits;
// gg, G, ctrl+d and ctrl+u move by what the window holds.
func TestSmallWindowKeysReachable(t *testing.T) {
	t.Parallel()
	for _, size := range []struct{ w, h int }{{60, 20}, {80, 24}} {
		t.Run(fmt.Sprintf("%dx%d", size.w, size.h), func(t *testing.T) {
			m := newModel(t, newFake(manyQueue(40)...), Options{NoColor: true})
			send(t, m, tea.WindowSizeMsg{Width: size.w, Height: size.h})
			send(t, m, press("?")...)
			overlay := m.View().Content
			if !m.help.show || !strings.Contains(overlay, "q         quit") || !strings.Contains(overlay, "?         help") {
				t.Errorf("the list's help overlay lacks quit or help:\n%s", overlay)
			}
			send(t, m, press("?")...)
			half := m.c.bodyHeight() / 2
			for _, step := range []struct {
				keys []string
				want int
			}{
				{[]string{"G"}, 39},
				{[]string{"g", "g"}, 0},
				{[]string{"ctrl+d"}, half},
				{[]string{"ctrl+d"}, 2 * half},
				{[]string{"ctrl+u"}, half},
			} {
				send(t, m, press(step.keys...)...)
				if got := cursorOf(m); got != step.want {
					t.Errorf("%v: cursor %d, want %d", step.keys, got, step.want)
				}
				if pos := fmt.Sprintf("%d/40", step.want+1); !strings.Contains(m.renderStatus(), pos) {
					t.Errorf("%v: status line %q lacks %s", step.keys, m.renderStatus(), pos)
				}
			}
			send(t, m, press("enter", "?")...)
			overlay = m.View().Content
			for _, w := range []string{"q/esc", "ctrl+c"} {
				if !strings.Contains(overlay, w) {
					t.Errorf("the detail view's help overlay lacks %q:\n%s", w, overlay)
				}
			}
			send(t, m, press("q")...)
			if m.help.show || m.tab != tabDetail || quitted(m) {
				t.Fatalf("q in the detail's help overlay: overlay %v, tab %v, quit %v; want the overlay closed, still in the detail", m.help.show, m.tab, quitted(m))
			}
			send(t, m, press("q")...)
			if m.tab != tabQueue || quitted(m) {
				t.Fatalf("q in the detail view: tab %v, quit %v; want back in the list", m.tab, quitted(m))
			}
			if w := ansi.StringWidth(hintBar(m)); w > size.w {
				t.Errorf("hint bar %d cells wide", w)
			}
			_, cmd := m.Update(press("q")[0])
			if cmd == nil || !quitted(m) {
				t.Fatal("q in the list did not quit")
			}
		})
	}
}

// fullBackend has every optional interface: follow-ups, unsubscribe,
// invitations, and what an approval taught; its help overlay is the
// tallest there is.
type fullBackend struct{ *followupFake }

func (fullBackend) RSVP(context.Context, string, string) error { return nil }
func (fullBackend) LastLearned(string) []Learned               { return nil }
func (fullBackend) ForgetLearned(context.Context, []string) error {
	return nil
}

// TestGoldenHelpScrolls: with every optional key the help overlay of the
// list is taller than a 60×20 window; j, ctrl+d and G scroll it, the
// status line says where ("5/19", like the detail view), and between its
// top and its end every key of every group is shown, quit and help
// included. Where it fits (160×45) it does not move. The frames are
// kept in testdata/TestGoldenHelpScrolls (-update rewrites them).
func TestGoldenHelpScrolls(t *testing.T) {
	t.Parallel()
	for _, size := range goldenSizes {
		for _, v := range []struct {
			name string
			keys []string
		}{
			{"top", []string{"?"}},
			{"end", []string{"?", "G"}},
		} {
			t.Run(fmt.Sprintf("%s_%dx%d", v.name, size.w, size.h), func(t *testing.T) {
				b := fullBackend{&followupFake{fakeBackend: newFake(promptItems()...), rows: hostileFollowups()}}
				got, fm := driveFrame(t, b, size.w, size.h, goldenFrame{keys: v.keys})
				checkFrame(t, got, size.w, size.h)
				if !fm.help.show {
					t.Fatal("the overlay closed")
				}
				golden.RequireEqual(t, got)
			})
		}
		t.Run(fmt.Sprintf("every_key_%dx%d", size.w, size.h), func(t *testing.T) {
			b := fullBackend{&followupFake{fakeBackend: newFake(promptItems()...), rows: hostileFollowups()}}
			m := newModel(t, b, Options{NoColor: true})
			send(t, m, tea.WindowSizeMsg{Width: size.w, Height: size.h})
			send(t, m, press("?")...)
			total := len(m.help.full())
			fits := total <= m.c.bodyHeight()+1
			if size.w == 60 && fits {
				t.Fatalf("60×20: the overlay (%d lines) fits; the test needs one taller than the window", total)
			}
			seen := map[string]bool{}
			look := func() {
				body := strings.Split(m.View().Content, "\n")
				for _, l := range body[1 : len(body)-3] {
					seen[strings.Join(strings.Fields(l), " ")] = true
				}
			}
			look()
			for range total {
				before := m.help.top(total)
				send(t, m, press("j")...)
				look()
				if fits && m.help.top(total) != 0 {
					t.Fatal("an overlay that fits scrolled")
				}
				if !fits && m.help.top(total) == before && m.help.top(total)+m.c.bodyHeight()+1 < total {
					t.Fatalf("j did not scroll the overlay at line %d of %d", before+1, total)
				}
			}
			if !fits {
				if got, want := m.position(), fmt.Sprintf("%d/%d", total-m.c.bodyHeight(), total); got != want {
					t.Errorf("position at the end: %q, want %q", got, want)
				}
				send(t, m, press("ctrl+u")...)
				if m.help.top(total) == total-m.c.bodyHeight()-1 {
					t.Error("ctrl+u did not scroll up")
				}
				send(t, m, press("g", "g")...)
				if m.help.top(total) != 0 || !m.help.show {
					t.Errorf("gg: overlay at line %d (shown %v), want its top", m.help.top(total)+1, m.help.show)
				}
			} else if m.position() != "" {
				t.Errorf("an overlay that fits has a position: %q", m.position())
			}
			all := strings.Join(slices.Collect(maps.Keys(seen)), "\n")
			for _, g := range m.viewKeys().FullHelp() {
				for _, k := range m.c.supported(g) {
					if !regexp.MustCompile(regexp.QuoteMeta(k.Help().Key) + ` +` + regexp.QuoteMeta(k.Help().Desc)).MatchString(all) {
						t.Errorf("%q %q never shown while scrolling the overlay", k.Help().Key, k.Help().Desc)
					}
				}
			}
			send(t, m, press("q")...)
			if !quitted(m) {
				t.Error("q in the list's overlay did not quit, as its q quit line says")
			}
		})
	}
}

// TestGoldenStatusLines: the status line in each watcher state at 60, 80
// and 160 columns, as the frame draws it: the state is whole at every
// width (what is cut, from the end, is the counts). The lines are kept in
// testdata/TestGoldenStatusLines (-update rewrites them).
func TestGoldenStatusLines(t *testing.T) {
	t.Parallel()
	states := []struct {
		name  string
		set   func(m *Model)
		state string
	}{
		{"connected", func(m *Model) {}, "● watcher connected"},
		{"stream lost", func(m *Model) { m.conn.streamLost = true }, "○ live updates lost: reconnecting"},
		{"watcher gone", func(m *Model) { m.conn.stat.WatcherConnected = false; m.conn.stat.Accounts = nil }, "○ no watcher: actions run locally"},
		{"offline", func(m *Model) {
			m.conn.stat.WatcherConnected = false
			m.conn.stat.Accounts = nil
			m.conn.sawWatcher = false
		}, "○ no watcher: actions run locally"},
		{"held by a triage", func(m *Model) {
			m.conn.stat.WatcherConnected = false
			m.conn.stat.Accounts = nil
			m.conn.stat.Holder = "a triage (pid 4242)"
		}, "● served by a triage (pid 4242)"},
	}
	for _, size := range goldenSizes {
		t.Run(fmt.Sprintf("%dx%d", size.w, size.h), func(t *testing.T) {
			var out []string
			for _, s := range states {
				m := newModel(t, newFake(promptItems()...), Options{NoColor: true})
				send(t, m, tea.WindowSizeMsg{Width: size.w, Height: size.h})
				s.set(m)
				rows := strings.Split(m.View().Content, "\n")
				line := rows[len(rows)-2]
				if !strings.HasPrefix(line, "1/7 │ "+s.state) {
					t.Errorf("%s: status line %q, want it to start with the position and %q", s.name, line, s.state)
				}
				if w := ansi.StringWidth(line); w > size.w {
					t.Errorf("%s: %d cells", s.name, w)
				}
				out = append(out, line)
			}
			golden.RequireEqual(t, strings.Join(out, "\n")+"\n")
		})
	}
}
