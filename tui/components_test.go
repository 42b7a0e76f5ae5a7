package tui

import (
	"fmt"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
)

// Each component tested alone, over a Common of its own (no root
// model): what it draws, what its keys do, what it reports back.

// testCommon is a Common for one component: plain palette, the fixed
// clock, no ticks, w×h cells, items cached by id.
func testCommon(t *testing.T, b Backend, w, h int, items ...Item) *Common {
	t.Helper()
	c := newCommon(b, Options{NoColor: true, ASCII: true, Now: func() time.Time { return fixedNow }})
	t.Cleanup(c.close)
	c.ticks = false
	c.width, c.height = w, h
	for _, it := range items {
		c.items[it.ID] = newEntry(it)
	}
	return c
}

func keyOf(name string) tea.KeyPressMsg { return press(name)[0].(tea.KeyPressMsg) }

// A y/N question takes exactly one key: y or Y is yes, every other key
// is no, and a paste (the terminal's bracketed paste, text a hostile
// page may have put on the clipboard) answers nothing.
func TestPromptBoxYesNoTakesOneKey(t *testing.T) {
	t.Parallel()
	c := testCommon(t, newFake(), 80, 24)
	p := c.prompt
	for _, tc := range []struct {
		key string
		yes bool
	}{{"y", true}, {"Y", true}, {"n", false}, {"N", false}, {"enter", false}, {"esc", false}, {"q", false}, {" ", false}, {"ctrl+c", false}} {
		p.confirm("d1", "approve", "send to a new address x@y.test")
		if !p.active() || p.keys().short[0].Help().Key != "y" {
			t.Fatalf("%q: confirm did not open a y/N question (keys %v)", tc.key, p.keys().short)
		}
		_, a := p.update(tea.PasteMsg{Content: "y\n"})
		if a != nil || !p.active() {
			t.Fatalf("%q: a paste answered the question: %+v", tc.key, a)
		}
		_, a = p.update(keyOf(tc.key))
		if a == nil || p.active() {
			t.Fatalf("%q: one key did not answer the question (answer %v, open %v)", tc.key, a, p.active())
		}
		if got := strings.EqualFold(a.value, "y"); got != tc.yes || a.id != "d1" || a.confirmFor != "approve" || a.kind != promptConfirmNew {
			t.Errorf("%q: answer %+v, want yes=%v for d1/approve", tc.key, a, tc.yes)
		}
	}
}

func TestPromptBoxTextPrompts(t *testing.T) {
	t.Parallel()
	c := testCommon(t, newFake(), 80, 24, draft("d1", "a@example.com", "Hi", "low", time.Hour))
	p := c.prompt

	p.open(promptSnooze, "d1", "")
	if got := p.view(); !strings.Contains(got, "snooze for: ") {
		t.Fatalf("snooze prompt line %q", got)
	}
	var a *promptAnswer
	for _, k := range press(" 2d ", "enter") {
		_, a = p.update(k)
	}
	if a == nil || a.cancelled || a.value != "2d" || a.kind != promptSnooze || a.id != "d1" || p.active() {
		t.Fatalf("enter: answer %+v open %v, want 2d for d1 and closed", a, p.active())
	}

	p.open(promptReject, "d1", "")
	p.update(keyOf("x"))
	if _, a = p.update(keyOf("esc")); a == nil || !a.cancelled || p.active() {
		t.Fatalf("esc: answer %+v open %v, want a dropped prompt", a, p.active())
	}

	// The filter reports each change as it is typed, and only a change.
	p.open(promptFilter, "", "")
	if _, a = p.update(keyOf("k")); a == nil || !a.typed || a.value != "k" {
		t.Fatalf("typing k in the filter: %+v", a)
	}
	c.filter = "k"
	if _, a = p.update(tea.KeyPressMsg{Code: tea.KeyLeft}); a != nil {
		t.Fatalf("a key that changes nothing reported %+v", a)
	}
}

func TestPromptBoxQuestionOnNote(t *testing.T) {
	t.Parallel()
	c := testCommon(t, newFake(), 80, 24)
	p := c.prompt
	for _, tc := range []struct {
		key string
		yes bool
	}{{"y", true}, {"Y", true}, {"n", false}, {"enter", false}, {"U", false}} {
		ran := false
		p.askOnNote("unsubscribe with a mail to x@y.test", func() tea.Cmd { ran = true; return nil }, "nothing sent")
		if c.note != "unsubscribe with a mail to x@y.test? y/N" {
			t.Fatalf("note %q", c.note)
		}
		if _, ok := p.answerNote(tc.key); !ok || ran != tc.yes {
			t.Fatalf("%q: answered %v, yes ran %v; want %v", tc.key, ok, ran, tc.yes)
		}
		if !tc.yes && c.note != "nothing sent" {
			t.Errorf("%q: note %q, want nothing sent", tc.key, c.note)
		}
		if _, ok := p.answerNote("y"); ok {
			t.Fatalf("%q: a second key answered the same question again", tc.key)
		}
	}
}

// A list draws a window of its rows, whatever their number, and keeps
// the selection on the same item when the items change.
func TestListViewAlone(t *testing.T) {
	t.Parallel()
	var items []Item
	for i := range 10000 {
		items = append(items, draft(fmt.Sprintf("d%05d", i), "a@example.com", fmt.Sprintf("Subject %d", i), "low", time.Duration(i+1)*time.Minute))
	}
	c := testCommon(t, newFake(), 100, 30, items...)
	l := newListView(c, tabQueue)
	l.rebuild()
	if len(l.rows) != 10000 || l.rows[0].item.ID != "d00000" {
		t.Fatalf("rows %d, first %s; want 10000 newest first", len(l.rows), l.rows[0].item.ID)
	}
	h := c.bodyHeight() + 1
	if got := l.body(h); len(got) != h || !strings.Contains(got[0], "SUBJECT") || !strings.HasPrefix(got[1], c.st.Glyphs.Cursor) {
		t.Fatalf("body: %d lines (want %d), header %q, first %q", len(got), h, got[0], got[1])
	}
	l.update(scrollMsg(5000))
	if l.position() != "5001/10000" {
		t.Fatalf("position %s after 5000 down", l.position())
	}
	if got := l.body(h); !strings.Contains(strings.Join(got, "\n"), "Subject 5000 ") {
		t.Fatalf("the window does not follow the cursor:\n%s", strings.Join(got, "\n"))
	}
	// A new high-risk draft sorts first; the cursor stays on its item.
	hot := draft("hot", "b@example.com", "Urgent", "high", time.Second)
	c.items[hot.ID] = newEntry(hot)
	l.rebuild()
	if l.rows[0].item.ID != "hot" || l.rows[l.cursor].item.ID != "d05000" {
		t.Fatalf("after an insert: first %s, selected %s; want hot first and d05000 still selected", l.rows[0].item.ID, l.rows[l.cursor].item.ID)
	}
	l.update(scrollMsg(1 << 30))
	if l.position() != "10001/10001" || l.offset != len(l.rows)-c.bodyHeight() {
		t.Fatalf("bottom: position %s offset %d", l.position(), l.offset)
	}
	c.filter = "urgent"
	l.rebuild()
	if len(l.rows) != 1 || l.rows[0].item.ID != "hot" || l.cursor != 0 {
		t.Fatalf("filter: %d rows, cursor %d", len(l.rows), l.cursor)
	}
	c.filter = "nothing like this"
	l.rebuild()
	if got := strings.Join(l.body(h), "\n"); !strings.Contains(got, `nothing matches "nothing like this"`) || l.position() != "0/0" {
		t.Fatalf("empty filtered list: %s (%s)", got, l.position())
	}
}

// The decided list is the same component over the decided items: only
// those, newest first, with their decision and reasons.
func TestDecidedListAlone(t *testing.T) {
	t.Parallel()
	old := Item{ID: "x1", Kind: KindDecided, Status: StatusDone, Decision: "archive", Reasons: []string{"newsletter"}, Subject: "Weekly", Received: fixedNow.Add(-2 * time.Hour)}
	newer := Item{ID: "x2", Kind: KindDecided, Status: StatusDone, Decision: "ignore", Reasons: []string{"bulk"}, Subject: "Promo", Received: fixedNow.Add(-time.Hour)}
	c := testCommon(t, newFake(), 100, 12, old, newer, draft("d1", "a@example.com", "Hi", "low", time.Minute))
	l := newListView(c, tabDecided)
	l.rebuild()
	if len(l.rows) != 2 || l.rows[0].item.ID != "x2" || l.rows[1].item.ID != "x1" {
		t.Fatalf("decided rows %v", l.rows)
	}
	body := strings.Join(l.body(c.bodyHeight()+1), "\n")
	for _, want := range []string{"DECISION", "ignore", "bulk", "archive", "newsletter"} {
		if !strings.Contains(body, want) {
			t.Errorf("decided list lacks %q:\n%s", want, body)
		}
	}
	if strings.Contains(body, "Hi") {
		t.Errorf("a draft is in the decided list:\n%s", body)
	}
}

func TestDetailViewAlone(t *testing.T) {
	t.Parallel()
	it := draft("d1", "a@example.com", "Budget", "low", time.Hour)
	it.Thread[0].Text = strings.Repeat("line\n", 80)
	c := testCommon(t, newFake(), 80, 24, it)
	d := newDetailView(c)
	d.setSize()
	d.open("gone")
	if got := strings.Join(d.body(0), "\n"); !strings.Contains(got, "Nothing selected") {
		t.Fatalf("a missing item: %q", got)
	}
	d.open("d1")
	if p := d.position(); !strings.HasPrefix(p, "1/") {
		t.Fatalf("position %q, want the top", p)
	}
	d.update(scrollMsg(10))
	if p := d.position(); !strings.HasPrefix(p, "11/") {
		t.Fatalf("position %q after 10 down", p)
	}
	// The item changes in the cache: refresh shows it, never a copy.
	c.items["d1"].item.Subject = "Budget, revised"
	d.refresh()
	d.viewport.GotoTop()
	if got := strings.Join(d.body(0), "\n"); !strings.Contains(got, "Budget, revised") {
		t.Fatalf("refresh kept the old subject:\n%s", got)
	}
	if got := d.keys().short[len(d.keys().short)-1].Help().Key; got != "q/esc" {
		t.Errorf("the detail view's last hint is %q, want q/esc back", got)
	}
}

func TestFollowupViewAlone(t *testing.T) {
	t.Parallel()
	fb := &followupFake{fakeBackend: newFake(), rows: []Followup{
		{ID: "f1", State: "needs_reply", With: "a@example.com", Subject: "One", LastAt: fixedNow.Add(-time.Hour), Deadline: fixedNow.Add(time.Hour)},
		{ID: "f2", State: "awaiting_reply", With: "b@example.com", Subject: "Two", LastAt: fixedNow.Add(-time.Hour), Deadline: fixedNow.Add(-time.Hour)},
	}}
	c := testCommon(t, fb, 100, 20)
	f := newFollowupView(c)
	cmd, ok := f.show()
	if !ok || !f.open {
		t.Fatal("show did not open the view over a FollowupBackend")
	}
	if _, handled := f.update(cmd()); !handled || len(f.rows) != 2 {
		t.Fatalf("load: handled %v, %d rows", handled, len(f.rows))
	}
	f.key(keyOf("j"))
	f.key(keyOf("j")) // past the end: stays on the last row
	if f.position() != "2/2" {
		t.Fatalf("position %s", f.position())
	}
	body := strings.Join(f.body(c.bodyHeight()+1), "\n")
	if !strings.Contains(body, "Follow-ups (2)") || !strings.Contains(body, "overdue") {
		t.Fatalf("body:\n%s", body)
	}
	done := f.key(keyOf("d"))
	if done == nil {
		t.Fatal("d on a row did nothing")
	}
	msg := done()
	if got := fb.actions; len(got) != 1 || got[0] != "done f2" {
		t.Fatalf("d acted on %v, want done f2", got)
	}
	// Its result is the view's own message: the note and a reload of
	// both the rows and the items (a nudge queued a draft).
	if cmd, handled := f.update(msg); !handled || cmd == nil || c.note != "marked done" {
		t.Fatalf("done: handled %v cmd %v note %q", handled, cmd != nil, c.note)
	}
	f.key(keyOf("esc"))
	if f.open {
		t.Fatal("esc did not close the view")
	}

	plain := testCommon(t, newFake(), 100, 20)
	if _, ok := newFollowupView(plain).show(); ok {
		t.Fatal("the view opened without a FollowupBackend")
	}
}

func TestHelpViewAlone(t *testing.T) {
	t.Parallel()
	c := testCommon(t, newFake(), 60, 12)
	l := newListView(c, tabQueue)
	h := newHelpView(c, l.keys)
	h.setSize()
	h.open()
	lines := h.full()
	text := strings.Join(lines, "\n")
	// A plain backend: no follow-ups, unsubscribe, forget or RSVP keys.
	for _, k := range []string{c.keys.Followups.Help().Desc, c.keys.Unsubscribe.Help().Desc, c.keys.Forget.Help().Desc, c.keys.Accept.Help().Desc} {
		if strings.Contains(text, k) {
			t.Errorf("help lists %q, which this backend cannot do", k)
		}
	}
	if !strings.Contains(text, c.keys.Approve.Help().Desc) {
		t.Errorf("help lacks approve:\n%s", text)
	}
	if len(lines) <= c.bodyHeight()+1 {
		t.Fatalf("the overlay fits (%d lines); the test needs one that scrolls", len(lines))
	}
	h.scroll(1 << 30)
	if got, want := h.top(len(lines)), len(lines)-c.bodyHeight()-1; got != want {
		t.Fatalf("bottom: top %d, want %d", got, want)
	}
	h.scroll(-1 << 30)
	if h.top(len(lines)) != 0 || !strings.HasPrefix(h.position(), "1/") {
		t.Fatalf("top: %d %s", h.top(len(lines)), h.position())
	}
	if h.update(keyOf("q"), true) != helpStay || h.show {
		t.Fatal("q over a q/esc-back view must close the overlay, not quit")
	}
	h.open()
	if h.update(keyOf("q"), false) != helpQuit {
		t.Fatal("q over a list must quit")
	}
}

func TestInlineEditorAlone(t *testing.T) {
	t.Parallel()
	c := testCommon(t, newFake(), 80, 24, draft("d1", "a@example.com", "Budget", "low", time.Hour))
	e := newInlineEditor(c)
	e.setSize()
	e.start("d1", "Hello")
	if got := e.body(0)[0]; got != "Editing Budget" {
		t.Fatalf("title %q", got)
	}
	var d *editDone
	for _, k := range append(press("end", "!"), keyOf("ctrl+s")) {
		_, d = e.update(k)
	}
	if d == nil || !d.saved || d.text != "Hello!" || d.id != "d1" || e.open {
		t.Fatalf("ctrl+s: %+v open %v", d, e.open)
	}
	e.start("d1", "Hello")
	if _, d = e.update(keyOf("esc")); d == nil || d.saved || e.open {
		t.Fatalf("esc: %+v open %v", d, e.open)
	}
}

// The root gives each key to one component only: whatever is open on
// top of the queue takes "a", and the draft under the cursor is never
// approved behind it.
func TestRootRoutesEachKeyToOneComponent(t *testing.T) {
	t.Parallel()
	newBackend := func() *followupFake {
		return &followupFake{fakeBackend: newFake(draft("d1", "news@lists.example.org", "Weekly", "low", time.Hour)),
			rows: []Followup{{ID: "f1", State: "needs_reply", With: "a@example.com", Subject: "One", LastAt: fixedNow, Deadline: fixedNow}}}
	}
	for _, tc := range []struct {
		name  string
		open  []string
		check func(m *Model) string
	}{
		{"help overlay", []string{"?"}, func(m *Model) string {
			if !m.help.show {
				return "the overlay closed"
			}
			return ""
		}},
		{"follow-ups view", []string{"F"}, func(m *Model) string {
			if !m.fu.open {
				return "the view closed"
			}
			return ""
		}},
		{"text prompt", []string{"r"}, func(m *Model) string {
			if m.mode() != modePrompt || m.c.prompt.input.Value() != "a" {
				return "the reason did not get the key"
			}
			return ""
		}},
		{"y/N on the note line", []string{"U"}, func(m *Model) string {
			if m.c.note != "nothing sent" {
				return "the question was not answered no: " + m.c.note
			}
			return ""
		}},
		{"inline editor", []string{"e"}, func(m *Model) string {
			if m.mode() != modeInlineEdit || !strings.Contains(m.editor.editor.Value(), "a") {
				return "the editor did not get the key"
			}
			return ""
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBackend()
			m := newModel(t, b, Options{})
			send(t, m, press(tc.open...)...)
			send(t, m, press("a")...)
			if got := b.callsOf("Approve"); len(got) != 0 {
				t.Fatalf("a under the %s approved the draft: %v", tc.name, got)
			}
			if msg := tc.check(m); msg != "" {
				t.Fatal(msg)
			}
		})
	}
	// The control: with nothing open, the same key approves.
	b := newBackend()
	m := newModel(t, b, Options{})
	send(t, m, press("a")...)
	if len(b.callsOf("Approve")) != 1 {
		t.Fatalf("a on the queue did not approve: %v", b.callsOf("Approve"))
	}
}
