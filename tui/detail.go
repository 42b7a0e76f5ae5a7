package tui

import (
	"fmt"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/viewport"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
)

// detailView is the component of the Detail tab: one item whole (its
// recipients, thread, classification, gates, draft and steps) in a
// scrolling viewport. It shows the item by id from the shared cache, so
// an update of the item shows at once; from is the list it was opened
// from, where q and esc go back to.
type detailView struct {
	c        *Common
	viewport viewport.Model
	id       string // the item shown
	from     tab    // the list the view was opened from
	// back is "q/esc back": what q and esc do in the detail view.
	back key.Binding
	help viewKeys
}

func newDetailView(c *Common) *detailView {
	d := &detailView{c: c, viewport: viewport.New()}
	d.viewport.SoftWrap = true
	d.viewport.KeyMap = viewport.KeyMap{} // scrolling goes through our keymap
	d.back = key.NewBinding(key.WithKeys("q", "esc"), key.WithHelp("q/esc", "back"))
	k := c.keys
	d.help = viewKeys{
		short: []key.Binding{k.Approve, k.Cancel, k.Forget, k.Accept, k.Decline, k.Tentative, k.Edit, k.Reject, k.Regenerate, k.Snooze, k.Unsnooze, k.Retry, k.Unsubscribe, k.Followups, d.back},
		// q goes back here; ctrl+c is what quits.
		full: [][]key.Binding{navKeys(c), reviewKeys(c), {k.Retry, k.Cancel, d.back}, rsvpKeys(c), extraKeys(c),
			{k.NextTab, k.PrevTab, k.GotoTab, k.Help, key.NewBinding(key.WithKeys("ctrl+c"), key.WithHelp("ctrl+c", "quit"))}},
	}
	return d
}

func (d *detailView) keys() viewKeys { return d.help }

// setSize fits the viewport to the window; the root lays the text out
// again (refresh) when the view is shown.
func (d *detailView) setSize() {
	d.viewport.SetWidth(max(10, d.c.width))
	d.viewport.SetHeight(d.c.bodyHeight() + 1) // detail has no column header
}

// update scrolls the viewport for the scroll messages the root sends it.
func (d *detailView) update(msg tea.Msg) tea.Cmd {
	if s, ok := msg.(scrollMsg); ok {
		if n := int(s); n < 0 {
			d.viewport.ScrollUp(-n)
		} else {
			d.viewport.ScrollDown(n)
		}
	}
	return nil
}

// open shows item id, scrolled to the top.
func (d *detailView) open(id string) {
	d.id = id
	d.refresh()
	d.viewport.GotoTop()
}

// selected is the item shown, if it is still there.
func (d *detailView) selected() (*Item, bool) {
	e, ok := d.c.items[d.id]
	if !ok {
		return nil, false
	}
	return &e.item, true
}

func (d *detailView) body(int) []string { return strings.Split(d.viewport.View(), "\n") }

// position is the top line shown over the total ("12/340").
func (d *detailView) position() string {
	total := d.viewport.TotalLineCount()
	if total == 0 {
		return ""
	}
	return fmt.Sprintf("%d/%d", d.viewport.YOffset()+1, total)
}

// refresh rebuilds the content from the current item. It runs on open,
// resize, item changes and clock ticks, never in View.
func (d *detailView) refresh() {
	e, ok := d.c.items[d.id]
	if !ok {
		d.viewport.SetContent(d.c.st.Muted.Render("  Nothing selected (the item may have been handled elsewhere)."))
		return
	}
	d.viewport.SetContent(d.text(&e.item))
}

// stateText says in words where an item is, the same way for every kind.
func stateText(now time.Time, it *Item) string {
	if awaitingSend(it) && it.Kind != KindDraft {
		// An answered invitation or any other send the owner started:
		// the same countdown as an approved draft.
		if it.SendAt.After(now) {
			return "answered: sending in " + countdown(it.SendAt.Sub(now)) + " (c cancels)"
		}
		return "answered: sending"
	}
	switch it.Kind {
	case KindSent:
		if it.Status == StatusFailed {
			return "sent by the agent on its own: the send failed"
		}
		return "sent by the agent on its own: " + sendWhen(now, it)
	case KindDecided:
		switch it.Decision {
		case "archive":
			return "archived by the agent, without asking"
		case "ignore":
			return "ignored by the agent, without asking"
		case "notify":
			return "shown to you by the agent (no reply drafted)"
		case "auto_send":
			return "answered by the agent on its own"
		}
		return "decided by the agent: " + it.Decision
	case KindNotify:
		return "a notice for you, " + it.Status
	case KindNeedsReview:
		return "needs review: the agent could not handle it"
	}
	switch it.Status {
	case StatusApproved, StatusSending:
		if it.SendAt.After(now) {
			return "approved: sending in " + countdown(it.SendAt.Sub(now)) + " (c cancels)"
		}
		return "approved: sending"
	case StatusSnoozed:
		if !it.SnoozeUntil.IsZero() {
			return "snoozed until " + it.SnoozeUntil.Local().Format("Mon 2 Jan 15:04") + " (u brings it back)"
		}
		return "snoozed (u brings it back)"
	case StatusFailed:
		return "approved, but the send failed (t tries again)"
	case StatusRejected:
		return "rejected: not sent"
	case StatusSent:
		return "approved by you and sent"
	}
	return "draft waiting for your approval"
}

func (d *detailView) text(it *Item) string {
	st, g := d.c.st, d.c.st.Glyphs
	now := d.c.now()
	var b strings.Builder
	w := max(24, d.c.width-1) // one cell spare: viewport soft-wrap never has to step in
	label := func(name, value string) {
		b.WriteString(st.Label.Render(fmt.Sprintf("%-12s", name+":")))
		b.WriteString(wrapIndent(clean(value), w, labelIndent))
		b.WriteByte('\n')
	}
	body := func(text string) string { return st.Body.Render(wrapBody(cleanText(text), w)) }
	section := func(title string) {
		b.WriteByte('\n')
		rule := strings.Repeat(g.Rule, 2)
		b.WriteString(st.Section.Render(rule + " " + title + " " + rule))
		b.WriteByte('\n')
	}
	addrs := func(name string, as []Address, marks bool) {
		if len(as) == 0 {
			return
		}
		b.WriteString(st.Label.Render(fmt.Sprintf("%-12s", name+":")))
		var line strings.Builder
		for i, a := range as {
			if i > 0 {
				line.WriteString(", ")
			}
			if marks && a.New {
				line.WriteString(st.NewAddress.Render(newMark + a.String()))
			} else {
				line.WriteString(a.String())
			}
		}
		// Like a label's value: wrapped at words, under its first line.
		b.WriteString(wrapIndent(line.String(), w, labelIndent))
		b.WriteByte('\n')
	}

	// Recipients first: who the reply goes (or went) to, then whose mail
	// it answers. A sent reply never shows its recipient as "From".
	sent := it.Kind == KindSent
	replies := it.Kind == KindDraft || sent
	switch {
	case sent && it.Status == StatusSent:
		addrs("Sent to", it.To, false)
	case sent:
		addrs("Sending to", it.To, false)
	case replies:
		addrs("To", it.To, true)
		if n := len(it.NewRecipients()); n > 0 {
			// Under the addresses, wrapped at words; each line styled
			// on its own.
			for _, l := range strings.Split(labelIndent+wrapIndent(newWarning(n), w, labelIndent), "\n") {
				b.WriteString(st.NewAddress.Render(l))
				b.WriteByte('\n')
			}
		}
	}
	if it.From.Email != "" || it.From.Name != "" {
		if sent {
			label("Answering", it.From.String())
		} else {
			label("From", it.From.String())
		}
	}
	addrs("Cc", it.Cc, false)
	label("Subject", it.Subject)
	label("Account", it.Account)
	if !it.Received.IsZero() {
		label("Received", it.Received.Local().Format("Mon 2 Jan 2006 15:04")+" ("+ago(now, it.Received)+")")
	}
	status := stateText(now, it)
	if a, busy := d.c.busy[it.ID]; busy {
		status += " (" + a + ")"
	}
	label("Status", status)
	if it.Error != "" {
		b.WriteString(st.Error.Render(fmt.Sprintf("%-12s", "Error:") + wrapIndent(clean(it.Error), w, labelIndent)))
		b.WriteByte('\n')
	}
	if it.MessageID != "" {
		label("Message-ID", strings.Trim(it.MessageID, "<>"))
	}
	if it.TraceID != "" {
		label("Trace", it.TraceID+"  (mailagent explain "+it.TraceID+")")
	}
	var ids []string
	for _, id := range []string{it.QueueID, it.OutboxID} {
		if id != "" {
			ids = append(ids, id)
		}
	}
	if len(ids) > 0 {
		label("Ids", strings.Join(ids, ", "))
	}

	section(fmt.Sprintf("Thread (%d)", len(it.Thread)))
	if len(it.Thread) == 0 {
		b.WriteString(st.Muted.Render("(no messages)"))
		b.WriteByte('\n')
	}
	for i, msg := range it.Thread {
		if i > 0 {
			b.WriteByte('\n')
		}
		head := msg.From.String()
		if !msg.Date.IsZero() {
			head += "  " + msg.Date.Local().Format("Mon 2 Jan 15:04")
		}
		b.WriteString(st.Label.Render(wrapIndent(head, w, "")))
		b.WriteByte('\n')
		if msg.Subject != "" {
			b.WriteString(st.Label.Render(wrapIndent(clean(msg.Subject), w, "")))
			b.WriteByte('\n')
		}
		b.WriteString(body(msg.Text))
		b.WriteByte('\n')
	}

	section("Classification")
	if len(it.Intents) == 0 && it.Risk == "" && it.Decision != "" && it.Kind != KindNeedsReview {
		b.WriteString(st.Muted.Render(wrapIndent("(not classified: decided before any model call, see Reason)", w, "")))
		b.WriteByte('\n')
	}
	label("Intents", strings.Join(it.Intents, ", "))
	label("Risk", it.Risk)
	label("Confidence", fmt.Sprintf("%.0f%%", it.Confidence*100))
	label("Summary", it.Summary)
	label("Rationale", firstNonEmpty(it.Comments, "(none given)"))
	if it.Decision != "" {
		label("Decision", it.Decision)
	}
	for _, r := range it.Reasons {
		label("Reason", r)
	}

	section("Gates")
	if len(it.Gates) == 0 {
		b.WriteString(st.Muted.Render("(no gates: nothing was drafted to send)"))
		b.WriteByte('\n')
	}
	for _, gt := range it.Gates {
		mark := st.GateOK.Render(g.GateOK)
		if !gt.Pass {
			mark = st.GateFail.Render(g.GateFail)
		}
		line := clean(gt.Name)
		if gt.Reason != "" {
			line += ": " + clean(gt.Reason)
		}
		// The mark is one or four cells; the gate text wraps under itself.
		indent := strings.Repeat(" ", ansi.StringWidth(g.GateOK)+1)
		b.WriteString(mark + " " + wrapIndent(line, w, indent))
		b.WriteByte('\n')
	}

	switch {
	case sent && it.Status == StatusSent:
		section("Sent reply")
	case sent:
		section("Reply")
	case it.Final != "":
		section("Final (edited)")
	default:
		section("Draft")
	}
	text := firstNonEmpty(it.Final, it.Draft)
	switch {
	case text != "":
		b.WriteString(body(text))
	case it.Kind == KindDecided || it.Kind == KindNotify:
		b.WriteString(st.Muted.Render("(no reply: the agent decided none was needed)"))
	default:
		b.WriteString(st.Muted.Render("(no draft)"))
	}
	b.WriteByte('\n')
	b.WriteString(d.stepsSection(it, w))
	return b.String()
}
