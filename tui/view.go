package tui

import (
	"fmt"
	"strings"

	"charm.land/bubbles/v2/key"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/mailagent/mailagent/internal/humantime"
)

// viewKeys is one view's help.KeyMap.
type viewKeys struct {
	short []key.Binding
	full  [][]key.Binding
}

// ShortHelp implements help.KeyMap.
func (v viewKeys) ShortHelp() []key.Binding { return v.short }

// FullHelp implements help.KeyMap.
func (v viewKeys) FullHelp() [][]key.Binding { return v.full }

func (m *Model) buildHelp() {
	k := m.keys
	nav := []key.Binding{k.Up, k.Down, k.HalfPageUp, k.HalfPageDown, k.PageUp, k.PageDown, k.Top, k.Bottom}
	tabs := []key.Binding{k.NextTab, k.PrevTab, k.GotoTab, k.Help, k.Quit}
	review := []key.Binding{k.Approve, k.Edit, k.Reject, k.Regenerate, k.Snooze, k.Unsnooze}
	// Keys that belong to no one view: the follow-ups view, unsubscribe
	// and forgetting what an approval taught (the last two only offered
	// when they apply; see applicable).
	extra := []key.Binding{k.Followups, k.Unsubscribe, k.Forget}
	// Answering an invitation: only on items that carry one (invite.go).
	rsvp := []key.Binding{k.Accept, k.Decline, k.Tentative}
	m.helpByTab[tabQueue] = viewKeys{
		short: []key.Binding{k.Approve, k.Cancel, k.Forget, k.Accept, k.Decline, k.Tentative, k.Edit, k.Reject, k.Regenerate, k.Snooze, k.Unsnooze, k.Open, k.Unsubscribe, k.Followups, k.Filter, k.NextTab},
		full:  [][]key.Binding{nav, review, {k.Cancel, k.Open, k.Filter, k.Back}, rsvp, extra, tabs},
	}
	m.helpByTab[tabDetail] = viewKeys{
		short: []key.Binding{k.Approve, k.Cancel, k.Forget, k.Accept, k.Decline, k.Tentative, k.Edit, k.Reject, k.Regenerate, k.Snooze, k.Unsnooze, k.Retry, k.Unsubscribe, k.Followups, m.detailBack},
		// q goes back here; ctrl+c is what quits.
		full: [][]key.Binding{nav, review, {k.Retry, k.Cancel, m.detailBack}, rsvp, extra,
			{k.NextTab, k.PrevTab, k.GotoTab, k.Help, key.NewBinding(key.WithKeys("ctrl+c"), key.WithHelp("ctrl+c", "quit"))}},
	}
	m.helpByTab[tabAttention] = viewKeys{
		short: []key.Binding{k.Retry, k.Approve, k.Cancel, k.Forget, k.Accept, k.Decline, k.Tentative, k.Edit, k.Reject, k.Open, k.Unsubscribe, k.Followups, k.Filter, k.NextTab},
		full:  [][]key.Binding{nav, {k.Retry, k.Reject, k.Approve, k.Edit, k.Cancel}, {k.Open, k.Filter, k.Back}, rsvp, extra, tabs},
	}
	m.helpByTab[tabSent] = viewKeys{
		short: []key.Binding{k.Cancel, k.Forget, k.Open, k.Followups, k.Filter, k.NextTab},
		full:  [][]key.Binding{nav, {k.Cancel}, {k.Open, k.Filter, k.Back}, {k.Followups, k.Forget}, tabs},
	}
	m.helpByTab[tabDecided] = viewKeys{
		short: []key.Binding{k.Forget, k.Open, k.Unsubscribe, k.Followups, k.Filter, k.NextTab},
		full:  [][]key.Binding{nav, {k.Open, k.Filter, k.Back}, extra, tabs},
	}
	fu := []key.Binding{k.FollowupNudge, k.FollowupSnooze, k.FollowupDone, k.Reload}
	m.followupKeys = viewKeys{
		short: append(fu[:len(fu):len(fu)], k.FollowupBack),
		full: [][]key.Binding{{k.Up, k.Down}, fu, {k.FollowupBack, k.Help,
			key.NewBinding(key.WithKeys("ctrl+c"), key.WithHelp("ctrl+c", "quit"))}},
	}
	m.promptKeys = viewKeys{short: []key.Binding{k.Submit, k.Back}, full: [][]key.Binding{{k.Submit, k.Back}}}
	yes := key.NewBinding(key.WithKeys("y"), key.WithHelp("y", "yes"))
	no := key.NewBinding(key.WithKeys("n", "esc"), key.WithHelp("n/esc", "no"))
	m.confirmKeys = viewKeys{short: []key.Binding{yes, no}, full: [][]key.Binding{{yes, no}}}
	m.editKeys = viewKeys{short: []key.Binding{k.Save, k.Back}, full: [][]key.Binding{{k.Save, k.Back}}}
}

func (m *Model) currentKeys() viewKeys {
	switch m.mode {
	case modePrompt:
		if m.prompt == promptConfirmNew {
			return m.confirmKeys
		}
		return m.promptKeys
	case modeInlineEdit:
		return m.editKeys
	}
	if m.fu.open {
		return m.followupKeys
	}
	return m.helpByTab[m.tab]
}

// fullHelp is the help overlay: the key groups side by side, in as many
// rows of groups as the width needs, so no binding is ever cut off.
func (m *Model) fullHelp() []string {
	h := m.help
	h.SetWidth(0)
	var lines []string
	var row [][]key.Binding
	flush := func() {
		if len(row) == 0 {
			return
		}
		if len(lines) > 0 {
			lines = append(lines, "")
		}
		lines = append(lines, strings.Split(h.FullHelpView(row), "\n")...)
		row = nil
	}
	for _, g := range m.currentKeys().FullHelp() {
		if g = m.supported(g); len(g) == 0 {
			continue
		}
		if len(row) > 0 && lipgloss.Width(h.FullHelpView(append(row[:len(row):len(row)], g))) > m.width { // widest line
			flush()
		}
		row = append(row, g)
	}
	flush()
	return lines
}

// helpTop is the overlay's first line shown: helpOffset, kept so that
// the last line is at the bottom of the body at most.
func (m *Model) helpTop(lines int) int {
	return max(0, min(m.helpOffset, lines-m.bodyHeight()-1))
}

// scrollHelp moves the overlay by n lines when it is taller than the
// window (60×20 with every optional key), so no key is out of reach.
func (m *Model) scrollHelp(n int) {
	m.helpOffset = m.helpTop(len(m.fullHelp())) + n
	m.helpOffset = m.helpTop(len(m.fullHelp()))
}

// supported drops the bindings whose action this backend lacks (the
// follow-ups view, unsubscribe, forgetting what an approval taught): the
// help overlay never lists a key that cannot work in this session.
func (m *Model) supported(g []key.Binding) []key.Binding {
	k := m.keys
	var out []key.Binding
	for _, b := range g {
		ok := true
		switch b.Help() {
		case k.Followups.Help():
			_, ok = m.backend.(FollowupBackend)
		case k.Unsubscribe.Help():
			_, ok = m.backend.(Unsubscriber)
		case k.Forget.Help():
			_, ok = m.backend.(Forgetter)
		case k.Accept.Help(), k.Decline.Help(), k.Tentative.Help():
			_, ok = m.backend.(Inviter)
		}
		if ok {
			out = append(out, b)
		}
	}
	return out
}

// applicable reports whether binding b can act on the selected item (or,
// for keys that act on no item, always). The hint bar offers only these.
func (m *Model) applicable(b key.Binding, it *Item) bool {
	k := m.keys
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
		return it != nil && canCancel(it, m.now()) == nil
	case is(k.Open):
		return it != nil
	case is(k.Followups):
		_, ok := m.backend.(FollowupBackend)
		return ok
	case is(k.Unsubscribe):
		return m.canUnsubscribe(it)
	case is(k.Forget):
		return m.forgettable()
	case is(k.Accept), is(k.Decline), is(k.Tentative):
		return m.rsvpOffered(it)
	case is(k.FollowupNudge), is(k.FollowupSnooze), is(k.FollowupDone):
		return m.fu.cursor >= 0 && m.fu.cursor < len(m.fu.rows)
	}
	return true
}

// shortHelp is the hint bar: the keys that apply to the selected item,
// then "? help" and "q quit" (or "q/esc back" in the detail view), which
// stay visible at any width: other hints are trimmed first, from the end.
func (m *Model) shortHelp() string {
	keys := m.currentKeys().short
	var tail []key.Binding
	if m.mode == modeNormal && m.fu.open {
		// q and esc go back to the list here, like in the detail view.
		var others []key.Binding
		for _, b := range keys[:len(keys)-1] {
			if m.applicable(b, nil) {
				others = append(others, b)
			}
		}
		keys, tail = others, []key.Binding{m.keys.FollowupBack, m.keys.Help}
	} else if m.mode == modeNormal {
		it, _ := m.selected()
		var others []key.Binding
		for _, b := range keys {
			if m.applicable(b, it) {
				others = append(others, b)
			}
		}
		keys = others
		tail = []key.Binding{m.keys.Help, m.keys.Quit}
		if m.tab == tabDetail {
			tail = []key.Binding{m.keys.Help}
			if n := len(keys); n > 0 && keys[n-1].Help() == m.detailBack.Help() {
				keys, tail = keys[:n-1], []key.Binding{m.detailBack, m.keys.Help}
			}
		}
	}
	h := m.help
	h.SetWidth(0) // we trim whole hints ourselves
	for n := len(keys); n >= 0; n-- {
		v := h.ShortHelpView(append(keys[:n:n], tail...))
		if ansi.StringWidth(v) <= m.width {
			return v
		}
	}
	return h.ShortHelpView(tail)
}

// render draws the whole frame: tab bar, body, note or prompt, status line
// and short help, exactly m.height lines of at most m.width cells.
func (m *Model) render() string {
	h := m.bodyHeight() + 1 // the column header belongs to the body
	var body []string
	switch {
	case m.showHelp:
		lines := m.fullHelp()
		body = lines[m.helpTop(len(lines)):]
	case m.fu.open:
		body = m.renderFollowups(h)
	case m.mode == modeInlineEdit:
		body = append([]string{m.st.Section.Render("Editing " + clean(m.editSubject()))}, strings.Split(m.editor.View(), "\n")...)
	case m.tab == tabDetail:
		body = strings.Split(m.viewport.View(), "\n")
	default:
		body = m.renderList(m.tab, h)
	}

	notes := m.noteLines()
	h = max(1, h-(len(notes)-1)) // an error of several lines takes body rows
	var b strings.Builder
	b.Grow((m.width + 16) * (m.height + 1))
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
	b.WriteString(m.fitLine(m.shortHelp()))
	return b.String()
}

func (m *Model) writeLine(b *strings.Builder, s string) {
	b.WriteString(m.fitLine(s))
	b.WriteByte('\n')
}

// fitLine cuts a (possibly styled) line to the window width.
func (m *Model) fitLine(s string) string {
	if ansi.StringWidth(s) <= m.width {
		return s
	}
	return ansi.Truncate(s, m.width, m.st.Glyphs.Ellipsis)
}

func (m *Model) editSubject() string {
	if e, ok := m.items[m.editID]; ok {
		return e.item.Subject
	}
	return ""
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
	var s string
	for _, l := range tabLayouts {
		if s = m.tabBar(l); ansi.StringWidth(s) <= m.width {
			return s
		}
	}
	return s
}

func (m *Model) tabBar(l tabLayout) string {
	var b strings.Builder
	if l.name {
		b.WriteString(m.st.Title.Render("mailagent"))
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
		case t == m.tab && m.st.Plain:
			b.WriteString("[" + label + "]")
		case t == m.tab:
			b.WriteString(m.st.TabActive.Render(label))
		case m.st.Plain:
			b.WriteString(" " + label + " ")
		default:
			b.WriteString(m.st.TabInactive.Render(label))
		}
	}
	return b.String()
}

// position is the scroll indicator: the selected row of a list, or the
// top line of the detail view, over the total ("12/340").
func (m *Model) position() string {
	if m.showHelp {
		// Like the detail view, only when there is more than fits.
		if n := len(m.fullHelp()); n > m.bodyHeight()+1 {
			return fmt.Sprintf("%d/%d", m.helpTop(n)+1, n)
		}
		return ""
	}
	if m.mode == modeInlineEdit {
		return ""
	}
	if m.fu.open {
		return fmt.Sprintf("%d/%d", min(m.fu.cursor+1, len(m.fu.rows)), len(m.fu.rows))
	}
	if m.tab == tabDetail {
		total := m.viewport.TotalLineCount()
		if total == 0 {
			return ""
		}
		return fmt.Sprintf("%d/%d", m.viewport.YOffset()+1, total)
	}
	ls := &m.lists[m.tab]
	if len(ls.rows) == 0 {
		return "0/0"
	}
	return fmt.Sprintf("%d/%d", ls.cursor+1, len(ls.rows))
}

func (m *Model) renderNote() string {
	switch {
	case m.mode == modePrompt:
		return m.st.Prompt.Render("") + m.promptView()
	case m.mode == modeInlineEdit:
		return m.st.Muted.Render("editing the draft: ctrl+s saves, esc cancels")
	case m.quitting:
		return m.st.Success.Render(m.quitNote()) // quit.go
	case m.note == "" && m.undoNote() != "":
		return m.st.Success.Render(m.undoNote())
	case m.note != "" && m.noteErr:
		prefix := ""
		if m.st.Plain {
			prefix = "error: "
		}
		return m.st.Error.Render(prefix + clean(m.note))
	case m.note != "":
		return m.st.Success.Render(m.keepAnswers(clean(m.note)))
	case m.filter != "":
		return m.st.Muted.Render(fmt.Sprintf("%sfilter %q (esc clears)", m.st.Glyphs.FilterMrk, m.filter))
	}
	return ""
}

// maxErrLines bounds the lines an error note may take from the body.
const maxErrLines = 3

// noteLines is the note line, except that an error wider than the window
// (a failed approval's reason, say) is wrapped onto up to maxErrLines
// lines instead of being cut: the owner must be able to read why.
func (m *Model) noteLines() []string {
	if m.mode != modeNormal || m.quitting || m.note == "" || !m.noteErr || m.width <= 0 {
		return []string{m.renderNote()}
	}
	prefix := ""
	if m.st.Plain {
		prefix = "error: "
	}
	text := prefix + clean(m.note)
	if ansi.StringWidth(text) <= m.width {
		return []string{m.renderNote()}
	}
	lines := strings.Split(ansi.Wrap(text, m.width, " "), "\n")
	if len(lines) > maxErrLines {
		lines = lines[:maxErrLines]
		last := lines[maxErrLines-1]
		lines[maxErrLines-1] = ansi.Truncate(last, max(1, m.width-1), "") + m.st.Glyphs.Ellipsis
	}
	for i, l := range lines {
		lines[i] = m.st.Error.Render(strings.TrimRight(l, " "))
	}
	return lines
}

// confirmSuffix ends every y/N question of the prompt line.
const confirmSuffix = "? y/N: "

// promptView is the prompt line's input. A y/N question (promptConfirmNew)
// has no use for the input's padding, and when it is wider than the
// window its text is cut before "? y/N: ", so the question mark, the
// answers and what the owner types stay in sight (the detail view has
// every address and gate).
func (m *Model) promptView() string {
	q, ok := strings.CutSuffix(m.input.Prompt, confirmSuffix)
	if m.prompt != promptConfirmNew || !ok {
		return m.input.View()
	}
	in := m.input
	in.SetWidth(4) // "yes" and the cursor
	in.Prompt = confirmSuffix
	room := m.width - ansi.StringWidth(in.View())
	in.Prompt = ansi.Truncate(q, max(room, 1), m.st.Glyphs.Ellipsis) + confirmSuffix
	return in.View()
}

// keepAnswers cuts a note that asks "…? y/N" (unsubscribe) and is wider
// than the window before its question mark, so the answers stay in
// sight.
func (m *Model) keepAnswers(note string) string {
	const ask = "? y/N"
	q, ok := strings.CutSuffix(note, ask)
	if !ok || ansi.StringWidth(note) <= m.width {
		return note
	}
	return ansi.Truncate(q, max(1, m.width-len(ask)), m.st.Glyphs.Ellipsis) + ask
}

// undoNote counts down the undo window of the send last started, an
// approval or an RSVP: "approved "X": sending in 4s, c cancels". It is
// empty once the reply has left (or was cancelled).
func (m *Model) undoNote() string {
	e, ok := m.items[m.undoID]
	if !ok || !awaitingSend(&e.item) {
		return ""
	}
	verb := m.undoVerb
	if verb == "" {
		verb = "approved"
	}
	if a, busy := m.busy[m.undoID]; busy {
		return a + " " + quote(clean(e.item.Subject)) + "…"
	}
	learned := ""
	if len(m.undoLearned) > 0 {
		_, forgets := m.backend.(Forgetter)
		texts := make([]string, 0, len(m.undoLearned))
		for _, l := range m.undoLearned {
			t := clean(l.Text)
			if !forgets { // the way to undo it without L
				t += " (undo: mailagent memory forget " + clean(l.ID) + ")"
			}
			texts = append(texts, t)
		}
		learned = "; learned: " + strings.Join(texts, "; ")
		if forgets {
			learned += " (L forgets)"
		}
	}
	now := m.now()
	if !e.item.SendAt.After(now) {
		return verb + " " + quote(clean(e.item.Subject)) + ": sending" + learned
	}
	return verb + " " + quote(clean(e.item.Subject)) + ": sending in " + countdown(e.item.SendAt.Sub(now)) + ", c cancels" + learned
}

func (m *Model) renderStatus() string {
	g := m.st.Glyphs
	var parts []string
	if p := m.position(); p != "" {
		parts = append(parts, m.st.StatusBar.Render(p))
	}
	switch {
	case m.stat.WatcherConnected && m.streamLost:
		parts = append(parts, m.st.Offline.Render(g.Offline+" live updates lost: reconnecting"))
	case m.stat.WatcherConnected:
		parts = append(parts, m.st.Online.Render(g.Online+" watcher connected"))
	case m.stat.Holder != "":
		parts = append(parts, m.st.Online.Render(g.Online+" served by "+clean(m.stat.Holder)))
	default:
		// Whether a watcher ran earlier or never did, the owner's
		// question is the same: who sends what I approve? (review --help
		// uses the same words.)
		parts = append(parts, m.st.Offline.Render(g.Offline+" no watcher: actions run locally"))
	}
	for _, a := range m.stat.Accounts {
		parts = append(parts, m.st.StatusBar.Render(clean(a.Name)+": "+clean(a.State)))
	}
	sent := fmt.Sprintf("auto-sent today %d", m.stat.AutoSentToday)
	if m.stat.AutoSendCap > 0 {
		sent += fmt.Sprintf("/%d", m.stat.AutoSendCap)
	}
	parts = append(parts, m.st.StatusBar.Render(sent))
	if m.filter != "" && m.mode != modePrompt {
		parts = append(parts, m.st.StatusBar.Render(g.FilterMrk+m.filter))
	}
	return strings.Join(parts, m.st.StatusBar.Render(g.Sep))
}

// --- lists ------------------------------------------------------------------

// column is one cell of a row: its text, width and optional style.
type column struct {
	text  string
	width int
	risk  string // non-empty: colour the cell by this risk
	err   bool   // colour the cell as an error
	isNew bool   // colour the cell as a new address
}

// renderList draws the column header and the rows that fit in h-1 lines.
// Only visible rows are formatted, whatever the length of the list.
func (m *Model) renderList(t tab, h int) []string {
	ls := &m.lists[t]
	lines := make([]string, 0, h)
	lines = append(lines, m.st.Header.Render(m.st.Glyphs.NoCursor+m.joinCells(m.columns(t, nil), false)))
	if len(ls.rows) == 0 {
		lines = append(lines, "", "  "+m.st.Muted.Render(m.emptyText(t)))
		return lines
	}
	end := min(len(ls.rows), ls.offset+h-1)
	for i := ls.offset; i < end; i++ {
		it := &ls.rows[i].item
		sel := i == ls.cursor
		cells := m.columns(t, it)
		line := m.joinCells(cells, !sel)
		if sel {
			line = m.st.RowSelected.Render(m.st.Glyphs.Cursor + m.padRight(line, m.width-len(m.st.Glyphs.Cursor)))
		} else {
			line = m.st.Row.Render(m.st.Glyphs.NoCursor + line)
		}
		lines = append(lines, line)
	}
	return lines
}

func (m *Model) emptyText(t tab) string {
	if m.filter != "" {
		return fmt.Sprintf("nothing matches %q", m.filter)
	}
	switch t {
	case tabQueue:
		return "No drafts waiting. New drafts appear here as they arrive."
	case tabAttention:
		return "Nothing needs attention."
	case tabDecided:
		return "The agent has decided nothing on its own recently."
	default:
		return "The agent has sent nothing recently."
	}
}

// columns lays out a row (or, with it == nil, the header) of list t.
func (m *Model) columns(t tab, it *Item) []column {
	w := m.width - 2 // the cursor glyph
	fromW := 14
	switch {
	case w >= 120:
		fromW = 24
	case w >= 90:
		fromW = 18
	}
	now := m.now()
	hdr := it == nil
	pick := func(header, value string) string {
		if hdr {
			return header
		}
		return value
	}
	flex := func(fixed []int, parts int) []int {
		rest := w
		for _, f := range fixed {
			rest -= f + 1
		}
		rest = max(rest, 8)
		if parts == 1 {
			return []int{rest}
		}
		a := rest * 60 / 100
		return []int{a, max(0, rest-a-1)}
	}
	var cols []column
	switch t {
	case tabQueue:
		// Columns give way by priority so that SUBJECT keeps room: first
		// CONF goes, then INTENT shrinks and goes, then FROM and TO
		// narrow. RISK stays: it is what the owner sorts by.
		intentW, confW := 16, 4
		if w < 120 {
			intentW = 10
		}
		toW := fromW
		subject := func() int { // the cells left once the others and their separators are set
			fixed := 4 + 1 + fromW + 1 + toW + 1 + 6 + 1
			if intentW > 0 {
				fixed += intentW + 1
			}
			if confW > 0 {
				fixed += confW + 1
			}
			return w - fixed
		}
		const minSubject = 30
		for _, give := range []func(){
			func() { confW = 0 },
			func() { intentW = 6 },
			func() { intentW = 0 },
			func() { fromW, toW = 12, 12 },
			func() { fromW, toW = 10, 10 },
		} {
			if subject() >= minSubject {
				break
			}
			give()
		}
		rest := max(8, subject())
		// The subject gets 60% of the rest, the summary what is left;
		// below 100 columns there is no summary column at all.
		fl := []int{rest, 0}
		if w >= 100 {
			fl[0] = rest * 60 / 100
			fl[1] = max(0, rest-fl[0]-1)
		}
		cols = []column{
			{text: pick("AGE", ""), width: 4},
			{text: pick("FROM", ""), width: fromW},
			{text: pick("TO", ""), width: toW},
			{text: pick("SUBJECT", ""), width: fl[0]},
			{text: pick("INTENT", ""), width: intentW},
			{text: pick("RISK", ""), width: 6},
			{text: pick("CONF", ""), width: confW},
			{text: pick("SUMMARY", ""), width: fl[1]},
		}
		if !hdr {
			cols[0].text = humantime.Age(now, it.Received)
			cols[1].text = it.From.String()
			cols[2].text, cols[2].isNew = toCell(it.To)
			cols[3].text = it.Subject
			switch {
			case it.Status == StatusSnoozed:
				cols[0].text = "zz"
				cols[3].text = "(snoozed) " + it.Subject
			case it.Status == StatusApproved && it.SendAt.After(now):
				cols[3].text = "(sending in " + countdown(it.SendAt.Sub(now)) + ") " + it.Subject
			case it.Status == StatusApproved:
				cols[3].text = "(sending) " + it.Subject
			}
			cols[4].text = strings.Join(it.Intents, ",")
			cols[5].text, cols[5].risk = it.Risk, it.Risk
			cols[6].text = fmt.Sprintf("%.0f%%", it.Confidence*100)
			cols[7].text = it.Summary
		}
	case tabAttention:
		parts := 2
		if w < 90 {
			// The reason shows in the detail view; the subject needs the room.
			fromW, parts = 12, 1
		}
		fl := append(flex([]int{4, 12, fromW, 8}, parts), 0)
		cols = []column{
			{text: pick("AGE", ""), width: 4},
			{text: pick("KIND", ""), width: 12},
			{text: pick("FROM", ""), width: fromW},
			{text: pick("SUBJECT", ""), width: fl[0]},
			{text: pick("STATUS", ""), width: 8},
			{text: pick("ERROR / REASON", ""), width: fl[1]},
		}
		if !hdr {
			cols[0].text = humantime.Age(now, it.Received)
			cols[1].text = it.Kind
			cols[2].text = it.From.String()
			cols[3].text = it.Subject
			cols[4].text = it.Status
			switch {
			case awaitingSend(it) && it.SendAt.After(now):
				// An answered invitation in its undo window.
				cols[3].text = "(sending in " + countdown(it.SendAt.Sub(now)) + ") " + it.Subject
			case awaitingSend(it):
				cols[3].text = "(sending) " + it.Subject
			}
			cols[5].text, cols[5].err = firstNonEmpty(it.Error, it.Summary), it.Error != ""
		}
	case tabSent:
		parts := 2
		if w < 90 {
			fromW, parts = 12, 1
		}
		fl := append(flex([]int{17, fromW, 8}, parts), 0)
		cols = []column{
			{text: pick("WHEN", ""), width: 17},
			{text: pick("TO", ""), width: fromW},
			{text: pick("SUBJECT", ""), width: fl[0]},
			{text: pick("STATUS", ""), width: 8},
			{text: pick("SUMMARY", ""), width: fl[1]},
		}
		if !hdr {
			cols[0].text = sendWhen(now, it)
			cols[1].text, cols[1].isNew = toCell(it.To)
			cols[2].text = it.Subject
			cols[3].text = it.Status
			cols[4].text = it.Summary
		}
	case tabDecided:
		parts := 2
		if w < 90 {
			fromW, parts = 12, 1
		}
		fl := append(flex([]int{4, 9, fromW}, parts), 0)
		cols = []column{
			{text: pick("AGE", ""), width: 4},
			{text: pick("DECISION", ""), width: 9},
			{text: pick("FROM", ""), width: fromW},
			{text: pick("SUBJECT", ""), width: fl[0]},
			{text: pick("WHY", ""), width: fl[1]},
		}
		if !hdr {
			cols[0].text = humantime.Age(now, it.Received)
			cols[1].text = it.Decision
			cols[2].text = it.From.String()
			cols[3].text = it.Subject
			cols[4].text = firstNonEmpty(strings.Join(it.Reasons, "; "), it.Summary)
		}
	}
	return cols
}

// joinCells fits every cell to its width and joins them. styled colours
// risk and error cells; the selected row is drawn in one style instead.
func (m *Model) joinCells(cols []column, styled bool) string {
	var b strings.Builder
	for i, c := range cols {
		if c.width <= 0 {
			continue
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		cell := m.padRight(ansi.Truncate(clean(c.text), c.width, m.st.Glyphs.Ellipsis), c.width)
		if styled {
			switch {
			case c.risk != "":
				cell = m.riskStyle(c.risk).Render(cell)
			case c.err:
				cell = m.st.Error.Render(cell)
			case c.isNew:
				cell = m.st.NewAddress.Render(cell)
			}
		}
		b.WriteString(cell)
	}
	return b.String()
}

func (m *Model) padRight(s string, w int) string {
	if n := ansi.StringWidth(s); n < w {
		return s + strings.Repeat(" ", w-n)
	}
	return s
}
