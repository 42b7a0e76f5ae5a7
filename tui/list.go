package tui

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/mailagent/mailagent/internal/humantime"
)

// entry is an item plus the lower-cased text the filter searches.
type entry struct {
	item Item
	hay  string
	// ahead: an action on the item succeeded after item was read and
	// the TUI applied its outcome (approved, cancelled…), so a copy as
	// old as item predates the action and is stale too.
	ahead bool
}

// stale reports whether it, a copy of e's item read from the backend, is
// older than what e shows (Item.Updated); a copy without a version is
// never stale.
func (e *entry) stale(it *Item) bool {
	if it.Updated.IsZero() {
		return false
	}
	return it.Updated.Before(e.item.Updated) || e.ahead && !it.Updated.After(e.item.Updated)
}

// put stores it, read from the backend, unless the copy shown is newer
// (entry.stale); it reports whether it was stored.
func (c *Common) put(it Item) bool {
	if e, ok := c.items[it.ID]; ok && e.stale(&it) {
		c.log.Debug("stale copy dropped", "id", it.ID, "updated", it.Updated, "shown", e.item.Updated, "ahead", e.ahead)
		return false
	}
	c.items[it.ID] = newEntry(it)
	return true
}

func newEntry(it Item) *entry {
	parts := []string{it.From.String(), it.Subject, it.Summary, strings.Join(it.Intents, " ")}
	for _, a := range it.To {
		parts = append(parts, a.String())
	}
	hay := strings.ToLower(strings.Join(parts, "\x00"))
	return &entry{item: it, hay: hay}
}

// listView is the component of one list tab: the queue, needs
// attention, sent by the agent, and decided without asking. Each is the
// same component over a different tab: its rows are the cached items
// that belong to it (inTab) and match the filter, in its own order, and
// it keeps its own cursor and scroll window. Only the rows that fit are
// drawn, whatever the length of the list.
type listView struct {
	c      *Common
	t      tab
	rows   []*entry
	cursor int
	offset int
	help   viewKeys
}

func newListView(c *Common, t tab) *listView {
	l := &listView{c: c, t: t}
	l.help = listKeys(c, t)
	return l
}

// listKeys are the keys of list tab t, for the hint bar and the help
// overlay.
func listKeys(c *Common, t tab) viewKeys {
	k := c.keys
	nav := navKeys(c)
	tabs := []key.Binding{k.NextTab, k.PrevTab, k.GotoTab, k.Help, k.Quit}
	switch t {
	case tabQueue:
		return viewKeys{
			short: []key.Binding{k.Approve, k.Cancel, k.Forget, k.Accept, k.Decline, k.Tentative, k.Edit, k.Reject, k.Regenerate, k.Snooze, k.Unsnooze, k.Open, k.Unsubscribe, k.Followups, k.Filter, k.NextTab},
			full:  [][]key.Binding{nav, reviewKeys(c), {k.Cancel, k.Open, k.Filter, k.Back}, rsvpKeys(c), extraKeys(c), tabs},
		}
	case tabAttention:
		return viewKeys{
			short: []key.Binding{k.Retry, k.Approve, k.Cancel, k.Forget, k.Accept, k.Decline, k.Tentative, k.Edit, k.Reject, k.Open, k.Unsubscribe, k.Followups, k.Filter, k.NextTab},
			full:  [][]key.Binding{nav, {k.Retry, k.Reject, k.Approve, k.Edit, k.Cancel}, {k.Open, k.Filter, k.Back}, rsvpKeys(c), extraKeys(c), tabs},
		}
	case tabSent:
		return viewKeys{
			short: []key.Binding{k.Cancel, k.Forget, k.Open, k.Followups, k.Filter, k.NextTab},
			full:  [][]key.Binding{nav, {k.Cancel}, {k.Open, k.Filter, k.Back}, {k.Followups, k.Forget}, tabs},
		}
	}
	return viewKeys{ // tabDecided
		short: []key.Binding{k.Forget, k.Open, k.Unsubscribe, k.Followups, k.Filter, k.NextTab},
		full:  [][]key.Binding{nav, {k.Open, k.Filter, k.Back}, extraKeys(c), tabs},
	}
}

// navKeys, reviewKeys, rsvpKeys and extraKeys are key groups several
// views list.
func navKeys(c *Common) []key.Binding {
	k := c.keys
	return []key.Binding{k.Up, k.Down, k.HalfPageUp, k.HalfPageDown, k.PageUp, k.PageDown, k.Top, k.Bottom}
}

func reviewKeys(c *Common) []key.Binding {
	k := c.keys
	return []key.Binding{k.Approve, k.Edit, k.Reject, k.Regenerate, k.Snooze, k.Unsnooze}
}

// rsvpKeys answer an invitation: only on items that carry one (invite.go).
func rsvpKeys(c *Common) []key.Binding {
	k := c.keys
	return []key.Binding{k.Accept, k.Decline, k.Tentative}
}

// extraKeys belong to no one view: the follow-ups view, unsubscribe and
// forgetting what an approval taught (the last two only offered when
// they apply; see applicable).
func extraKeys(c *Common) []key.Binding {
	k := c.keys
	return []key.Binding{k.Followups, k.Unsubscribe, k.Forget}
}

func (l *listView) keys() viewKeys { return l.help }

// update moves the cursor for the scroll messages the root sends it.
func (l *listView) update(msg tea.Msg) tea.Cmd {
	if s, ok := msg.(scrollMsg); ok {
		l.moveCursor(int(s))
	}
	return nil
}

// scrollMsg asks the active component to scroll by n lines (or rows);
// the root turns the navigation keys into it.
type scrollMsg int

func (l *listView) setSize() { l.clampOffset() }

// selected is the item under the cursor.
func (l *listView) selected() (*Item, bool) {
	if l.cursor < 0 || l.cursor >= len(l.rows) {
		return nil, false
	}
	return &l.rows[l.cursor].item, true
}

// inTab reports whether an item belongs to a list view.
func inTab(t tab, it *Item) bool {
	switch t {
	case tabQueue:
		// Snoozed drafts stay in sight, below the pending ones.
		// Approved drafts stay during their undo window, with a
		// countdown, so c can reach them.
		return it.Kind == KindDraft && (it.Status == StatusPending || it.Status == StatusSnoozed || it.Status == StatusApproved)
	case tabAttention:
		if it.Status == StatusFailed {
			return true
		}
		if awaitingSend(it) && it.Kind != KindDraft {
			// Any other send the owner started (an answered invitation
			// that came as a notification) stays where it was answered,
			// counting down its undo window.
			return true
		}
		if it.Kind != KindNotify && it.Kind != KindNeedsReview {
			return false
		}
		switch it.Status {
		case StatusRejected, StatusApproved, StatusSent, StatusSnoozed, StatusSending:
			return false
		}
		return true
	case tabSent:
		return it.Kind == KindSent
	case tabDecided:
		return it.Kind == KindDecided
	}
	return false
}

func riskRank(r string) int {
	switch strings.ToLower(r) {
	case "high":
		return 3
	case "medium":
		return 2
	case "low":
		return 1
	}
	return 0
}

// snoozedRank sorts snoozed items after the others.
func snoozedRank(it *Item) int {
	if it.Status == StatusSnoozed {
		return 1
	}
	return 0
}

func sentTime(it *Item) time.Time {
	if !it.SendAt.IsZero() {
		return it.SendAt
	}
	return it.Received
}

func (c *Common) matches(e *entry) bool {
	return c.filter == "" || strings.Contains(e.hay, strings.ToLower(c.filter))
}

// rebuild recomputes the rows from the cached items, keeping the
// selection on the same item where it still exists.
func (l *listView) rebuild() {
	var selected string
	oldCursor := l.cursor
	if l.cursor >= 0 && l.cursor < len(l.rows) {
		selected = l.rows[l.cursor].item.ID
	}
	rows := l.rows[:0:0]
	for _, e := range l.c.items {
		if inTab(l.t, &e.item) && l.c.matches(e) {
			rows = append(rows, e)
		}
	}
	switch l.t {
	case tabQueue:
		slices.SortFunc(rows, func(a, b *entry) int {
			if c := cmp.Compare(snoozedRank(&a.item), snoozedRank(&b.item)); c != 0 {
				return c
			}
			if c := cmp.Compare(riskRank(b.item.Risk), riskRank(a.item.Risk)); c != 0 {
				return c
			}
			if c := b.item.Received.Compare(a.item.Received); c != 0 {
				return c
			}
			return cmp.Compare(a.item.ID, b.item.ID)
		})
	case tabAttention, tabDecided:
		slices.SortFunc(rows, func(a, b *entry) int {
			if c := b.item.Received.Compare(a.item.Received); c != 0 {
				return c
			}
			return cmp.Compare(a.item.ID, b.item.ID)
		})
	case tabSent:
		slices.SortFunc(rows, func(a, b *entry) int {
			if c := sentTime(&b.item).Compare(sentTime(&a.item)); c != 0 {
				return c
			}
			return cmp.Compare(a.item.ID, b.item.ID)
		})
	}
	l.rows = rows
	l.cursor = 0
	if selected != "" {
		if i := slices.IndexFunc(rows, func(e *entry) bool { return e.item.ID == selected }); i >= 0 {
			l.cursor = i
		} else {
			l.cursor = min(oldCursor, len(rows)-1)
		}
	}
	l.cursor = max(0, min(l.cursor, len(rows)-1))
	l.clampOffset()
}

// clampOffset keeps the cursor inside the visible window.
func (l *listView) clampOffset() {
	h := l.c.bodyHeight()
	if l.cursor < l.offset {
		l.offset = l.cursor
	}
	if l.cursor >= l.offset+h {
		l.offset = l.cursor - h + 1
	}
	l.offset = max(0, min(l.offset, len(l.rows)-h))
}

func (l *listView) moveCursor(delta int) {
	if len(l.rows) == 0 {
		return
	}
	l.cursor = max(0, min(l.cursor+delta, len(l.rows)-1))
	l.clampOffset()
}

// position is the selected row over the total ("12/340").
func (l *listView) position() string {
	if len(l.rows) == 0 {
		return "0/0"
	}
	return fmt.Sprintf("%d/%d", l.cursor+1, len(l.rows))
}

// body draws the column header and the rows that fit in h-1 lines.
// Only visible rows are formatted, whatever the length of the list.
func (l *listView) body(h int) []string {
	c := l.c
	lines := make([]string, 0, h)
	lines = append(lines, c.st.Header.Render(c.st.Glyphs.NoCursor+c.joinCells(l.columns(nil), false)))
	if len(l.rows) == 0 {
		lines = append(lines, "", "  "+c.st.Muted.Render(l.emptyText()))
		return lines
	}
	end := min(len(l.rows), l.offset+h-1)
	for i := l.offset; i < end; i++ {
		sel := i == l.cursor
		lines = append(lines, c.row(c.joinCells(l.columns(&l.rows[i].item), !sel), sel))
	}
	return lines
}

func (l *listView) emptyText() string {
	if l.c.filter != "" {
		return fmt.Sprintf("nothing matches %q", l.c.filter)
	}
	switch l.t {
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

// columns lays out a row (or, with it == nil, the header).
func (l *listView) columns(it *Item) []column {
	w := l.c.width - 2 // the cursor glyph
	fromW := 14
	switch {
	case w >= 120:
		fromW = 24
	case w >= 90:
		fromW = 18
	}
	now := l.c.now()
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
	switch l.t {
	case tabQueue:
		cols = queueColumns(w, fromW, hdr)
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

// queueColumns are the queue's columns for w cells, headers when hdr.
// Columns give way by priority so that SUBJECT keeps room: first CONF
// goes, then INTENT shrinks and goes, then FROM and TO narrow. RISK
// stays: it is what the owner sorts by.
func queueColumns(w, fromW int, hdr bool) []column {
	pick := func(header string) string {
		if hdr {
			return header
		}
		return ""
	}
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
	return []column{
		{text: pick("AGE"), width: 4},
		{text: pick("FROM"), width: fromW},
		{text: pick("TO"), width: toW},
		{text: pick("SUBJECT"), width: fl[0]},
		{text: pick("INTENT"), width: intentW},
		{text: pick("RISK"), width: 6},
		{text: pick("CONF"), width: confW},
		{text: pick("SUMMARY"), width: fl[1]},
	}
}
