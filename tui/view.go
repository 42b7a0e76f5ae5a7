package tui

import (
	"fmt"
	"strings"

	"charm.land/bubbles/v2/key"
	"github.com/charmbracelet/x/ansi"
)

// viewKeys are the keys of what receives them now: the prompt box or
// the inline editor, else the view shown (the follow-ups view, the
// detail view, a list). The help overlay lists these too.
func (m *Model) viewKeys() viewKeys {
	switch m.mode() {
	case modePrompt:
		return m.c.prompt.keys()
	case modeInlineEdit:
		return m.editor.keys()
	}
	if m.fu.open {
		return m.fu.keys()
	}
	if m.tab == tabDetail {
		return m.detail.keys()
	}
	return m.lists[m.tab].keys()
}

// applicable reports whether binding b can act on the selected item (or,
// for keys that act on no item, always). The hint bar offers only these.
func (m *Model) applicable(b key.Binding, it *Item) bool {
	k := m.c.keys
	is := func(o key.Binding) bool { return b.Help() == o.Help() }
	switch {
	case is(k.Approve):
		return it != nil && canReview(it) == nil && (it.Draft != "" || it.Final != "")
	case is(k.Regenerate):
		return it != nil && canRegenerate(it) == nil
	case is(k.Edit):
		return it != nil && canReview(it) == nil
	case is(k.Reject), is(k.Snooze):
		return it != nil && canDismiss(it) == nil
	case is(k.Unsnooze):
		return it != nil && canUnsnooze(it) == nil
	case is(k.Retry):
		return it != nil && (it.Kind == KindNeedsReview || it.Status == StatusFailed)
	case is(k.Cancel):
		return it != nil && canCancel(it, m.c.now()) == nil
	case is(k.Open):
		return it != nil
	case is(k.Followups):
		_, ok := m.c.backend.(FollowupBackend)
		return ok
	case is(k.Unsubscribe):
		return m.canUnsubscribe(it)
	case is(k.Forget):
		return m.forgettable()
	case is(k.Accept), is(k.Decline), is(k.Tentative):
		return m.rsvpOffered(it)
	case is(k.FollowupNudge), is(k.FollowupSnooze), is(k.FollowupDone):
		return m.fu.selectedRow()
	}
	return true
}

// shortHelp is the hint bar: the keys that apply to the selected item,
// then "? help" and "q quit" (or "q/esc back" in the detail view), which
// stay visible at any width: other hints are trimmed first, from the end.
func (m *Model) shortHelp() string {
	keys := m.viewKeys().short
	var tail []key.Binding
	if m.mode() == modeNormal && m.fu.open {
		// q and esc go back to the list here, like in the detail view.
		var others []key.Binding
		for _, b := range keys[:len(keys)-1] {
			if m.applicable(b, nil) {
				others = append(others, b)
			}
		}
		keys, tail = others, []key.Binding{m.c.keys.FollowupBack, m.c.keys.Help}
	} else if m.mode() == modeNormal {
		it, _ := m.selected()
		var others []key.Binding
		for _, b := range keys {
			if m.applicable(b, it) {
				others = append(others, b)
			}
		}
		keys = others
		tail = []key.Binding{m.c.keys.Help, m.c.keys.Quit}
		if m.tab == tabDetail {
			tail = []key.Binding{m.c.keys.Help}
			if n := len(keys); n > 0 && keys[n-1].Help() == m.detail.back.Help() {
				keys, tail = keys[:n-1], []key.Binding{m.detail.back, m.c.keys.Help}
			}
		}
	}
	return m.help.hintBar(keys, tail)
}

// render draws the whole frame: tab bar, body, note or prompt, status line
// and short help, exactly m.c.height lines of at most m.c.width cells.
func (m *Model) render() string {
	h := m.c.bodyHeight() + 1 // the column header belongs to the body
	body := m.active().body(h)

	notes := m.noteLines()
	h = max(1, h-(len(notes)-1)) // an error of several lines takes body rows
	var b strings.Builder
	b.Grow((m.c.width + 16) * (m.c.height + 1))
	m.writeLine(&b, m.renderTabs())
	for i := range h {
		line := ""
		if i < len(body) {
			line = body[i]
		}
		m.writeLine(&b, line)
	}
	for _, n := range notes {
		m.writeLine(&b, n)
	}
	m.writeLine(&b, m.renderStatus())
	b.WriteString(m.c.fitLine(m.shortHelp()))
	return b.String()
}

func (m *Model) writeLine(b *strings.Builder, s string) {
	b.WriteString(m.c.fitLine(s))
	b.WriteByte('\n')
}

// tabShort are the tab titles used when the full ones do not fit.
var tabShort = [numTabs]string{"Queue", "Detail", "Attention", "Sent", "Decided"}

// tabLayout is one way of drawing the tab bar, from the widest to the
// narrowest.
type tabLayout struct {
	titles *[numTabs]string
	name   bool // "mailagent" first
	// What the other tabs show: their counts, their titles, and the
	// title of the Detail tab (which has no count, so it goes first).
	counts, labels, detail bool
}

var tabLayouts = []tabLayout{
	{&tabTitles, true, true, true, true},
	{&tabShort, true, true, true, true},
	{&tabShort, false, true, true, true},
	{&tabShort, false, true, true, false},
	{&tabShort, false, true, false, false},
	{&tabShort, false, false, false, false},
}

// renderTabs draws the tab bar. When it does not fit, the full titles
// give way to short ones, then the app name goes, then the other tabs'
// titles (Detail's first) and last their counts; their numbers, the keys
// that select them, stay. The selected tab's label is always whole, with
// its count.
func (m *Model) renderTabs() string {
	from := tabsFrom{width: m.c.width, tab: m.tab}
	for t := range numTabs {
		if t != tabDetail {
			from.counts[t] = len(m.lists[t].rows)
		}
	}
	if m.tabs.bar != "" && m.tabs.from == from {
		return m.tabs.bar
	}
	var s string
	for _, l := range tabLayouts {
		if s = m.tabBar(l); ansi.StringWidth(s) <= m.c.width {
			break
		}
	}
	m.tabs.from, m.tabs.bar = from, s
	return s
}

// tabsFrom is what the tab bar is drawn from, besides the styles (a
// change of styles draws it again).
type tabsFrom struct {
	width  int
	tab    tab
	counts [numTabs]int
}

func (m *Model) tabBar(l tabLayout) string {
	var b strings.Builder
	if l.name {
		b.WriteString(m.c.st.Title.Render("mailagent"))
		b.WriteString(" ")
	}
	for t := range numTabs {
		label := fmt.Sprintf("%d", t+1)
		if t == m.tab || l.labels && (t != tabDetail || l.detail) {
			label += " " + l.titles[t]
		}
		if t != tabDetail && (t == m.tab || l.counts) {
			label += fmt.Sprintf(" (%d)", len(m.lists[t].rows))
		}
		switch {
		case t == m.tab && m.c.st.Plain:
			b.WriteString("[" + label + "]")
		case t == m.tab:
			b.WriteString(m.c.st.TabActive.Render(label))
		case m.c.st.Plain:
			b.WriteString(" " + label + " ")
		default:
			b.WriteString(m.c.st.TabInactive.Render(label))
		}
	}
	return b.String()
}

// position is the scroll indicator of the view shown: the selected row
// of a list, or the top line of the detail view, over the total
// ("12/340"); nothing while editing.
func (m *Model) position() string { return m.active().position() }

func (m *Model) renderNote() string {
	switch {
	case m.mode() == modePrompt:
		return m.c.st.Prompt.Render("") + m.c.prompt.view()
	case m.mode() == modeInlineEdit:
		return m.c.st.Muted.Render("editing the draft: ctrl+s saves, esc cancels")
	case m.exit.pending:
		return m.c.st.Success.Render(m.quitNote()) // quit.go
	case m.c.note == "" && m.undo.note(m.c) != "":
		return m.c.st.Success.Render(m.undo.note(m.c))
	case m.c.note != "" && m.c.noteErr:
		prefix := ""
		if m.c.st.Plain {
			prefix = "error: "
		}
		return m.c.st.Error.Render(prefix + clean(m.c.note))
	case m.c.note != "":
		return m.c.st.Success.Render(m.keepAnswers(clean(m.c.note)))
	case m.c.filter != "":
		return m.c.st.Muted.Render(fmt.Sprintf("%sfilter %q (esc clears)", m.c.st.Glyphs.FilterMrk, m.c.filter))
	}
	return ""
}

// maxErrLines bounds the lines an error note may take from the body.
const maxErrLines = 3

// noteLines is the note line, except that an error wider than the window
// (a failed approval's reason, say) is wrapped onto up to maxErrLines
// lines instead of being cut: the owner must be able to read why.
func (m *Model) noteLines() []string {
	if m.mode() != modeNormal || m.exit.pending || m.c.note == "" || !m.c.noteErr || m.c.width <= 0 {
		return []string{m.renderNote()}
	}
	prefix := ""
	if m.c.st.Plain {
		prefix = "error: "
	}
	text := prefix + clean(m.c.note)
	if ansi.StringWidth(text) <= m.c.width {
		return []string{m.renderNote()}
	}
	lines := strings.Split(ansi.Wrap(text, m.c.width, " "), "\n")
	if len(lines) > maxErrLines {
		lines = lines[:maxErrLines]
		last := lines[maxErrLines-1]
		lines[maxErrLines-1] = ansi.Truncate(last, max(1, m.c.width-1), "") + m.c.st.Glyphs.Ellipsis
	}
	for i, l := range lines {
		lines[i] = m.c.st.Error.Render(strings.TrimRight(l, " "))
	}
	return lines
}

// keepAnswers cuts a note that asks "…? y/N" (unsubscribe) and is wider
// than the window before its question mark, so the answers stay in
// sight.
func (m *Model) keepAnswers(note string) string {
	const ask = "? y/N"
	q, ok := strings.CutSuffix(note, ask)
	if !ok || ansi.StringWidth(note) <= m.c.width {
		return note
	}
	return ansi.Truncate(q, max(1, m.c.width-len(ask)), m.c.st.Glyphs.Ellipsis) + ask
}

func (m *Model) renderStatus() string {
	g := m.c.st.Glyphs
	var parts []string
	if p := m.position(); p != "" {
		parts = append(parts, m.c.st.StatusBar.Render(p))
	}
	switch {
	case m.conn.stat.WatcherConnected && m.conn.streamLost:
		parts = append(parts, m.c.st.Offline.Render(g.Offline+" live updates lost: reconnecting"))
	case m.conn.stat.WatcherConnected && m.conn.stat.Remote != "":
		parts = append(parts, m.c.st.Online.Render(g.Online+" watcher connected on "+clean(m.conn.stat.Remote)))
	case m.conn.stat.WatcherConnected:
		parts = append(parts, m.c.st.Online.Render(g.Online+" watcher connected"))
	case m.conn.stat.Remote != "":
		parts = append(parts, m.c.st.Offline.Render(g.Offline+" connection to "+clean(m.conn.stat.Remote)+" lost: reconnecting"))
	case m.conn.stat.Holder != "":
		parts = append(parts, m.c.st.Online.Render(g.Online+" served by "+clean(m.conn.stat.Holder)))
	default:
		// Whether a watcher ran earlier or never did, the owner's
		// question is the same: who sends what I approve? (review --help
		// uses the same words.)
		parts = append(parts, m.c.st.Offline.Render(g.Offline+" no watcher: actions run locally"))
	}
	for _, a := range m.conn.stat.Accounts {
		parts = append(parts, m.c.st.StatusBar.Render(clean(a.Name)+": "+clean(a.State)))
	}
	sent := fmt.Sprintf("auto-sent today %d", m.conn.stat.AutoSentToday)
	if m.conn.stat.AutoSendCap > 0 {
		sent += fmt.Sprintf("/%d", m.conn.stat.AutoSendCap)
	}
	parts = append(parts, m.c.st.StatusBar.Render(sent))
	if m.c.filter != "" && m.mode() != modePrompt {
		parts = append(parts, m.c.st.StatusBar.Render(g.FilterMrk+m.c.filter))
	}
	return strings.Join(parts, m.c.st.StatusBar.Render(g.Sep))
}
