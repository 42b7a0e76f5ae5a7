package tui

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/mailagent/mailagent/internal/humantime"
)

// What the owner's answers come to: a prompt answered or dropped, an
// inline edit saved or cancelled, an unsubscribe confirmed, what an
// approval taught forgotten.

// startPrompt opens a text prompt about the selected item once check
// allows it.
func (m *Model) startPrompt(kind promptKind, check func(*Item) error) tea.Cmd {
	it := m.current(check)
	if it == nil {
		return nil
	}
	return m.c.prompt.open(kind, it.ID, "")
}

// answer carries out what a prompt came to.
func (m *Model) answer(a *promptAnswer) tea.Cmd {
	c := m.c
	switch {
	case a == nil:
		return nil
	case a.typed:
		// Narrow as the owner types.
		c.filter = a.value
		m.rebuild()
		return nil
	case a.cancelled:
		if a.kind == promptFilter {
			c.filter = ""
			m.rebuild()
		}
		c.setNote("")
		return nil
	}
	if a.kind == promptFilter {
		c.filter = a.value
		m.rebuild()
		if a.value != "" {
			c.setNote(fmt.Sprintf("filter %q: %d match(es)", a.value, len(m.lists[m.tab].rows)))
		}
		return nil
	}
	e, ok := c.items[a.id]
	if !ok {
		c.setErr(errors.New("the item is gone"))
		return nil
	}
	it := e.item
	switch a.kind {
	case promptConfirmNew:
		if v := strings.ToLower(a.value); v != "y" {
			c.setNote("not sent")
			return nil
		}
		return m.confirmed(a.confirmFor, &it)
	case promptReject:
		m.markBusy(&it, "rejecting")
		return rejectCmd(c.ctx, c.backend, a.id, a.value, it.Subject)
	case promptRegenerate:
		if a.value == "" {
			c.setErr(errors.New("regenerate needs an instruction"))
			return nil
		}
		m.markBusy(&it, "regenerating")
		return regenerateCmd(c.ctx, c.backend, a.id, a.value, it.Subject)
	case promptSnooze:
		until, err := ParseSnooze(a.value, c.now())
		if err != nil {
			c.setErr(err)
			return nil
		}
		m.markBusy(&it, "snoozing")
		return snoozeCmd(c.ctx, c.backend, a.id, until, it.Subject)
	}
	return nil
}

// defaultSnooze is the snooze length when the prompt is left empty.
const defaultSnooze = 4 * time.Hour

// ParseSnooze turns the snooze prompt (or a CLI --for value, so both
// accept the same words) into a time: "" is 4h, "tomorrow" (08:00 local
// time the next day), or a positive duration in the one grammar
// (humantime.ParseDuration: "90m", "1h30m", "2d", "1w").
func ParseSnooze(s string, now time.Time) (time.Time, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	switch {
	case s == "":
		return now.Add(defaultSnooze), nil
	case s == "tomorrow":
		y, mo, d := now.Date()
		return time.Date(y, mo, d+1, 8, 0, 0, 0, now.Location()), nil
	}
	d, err := humantime.ParseDuration(s)
	if err != nil {
		return time.Time{}, fmt.Errorf("snooze %q: want 4h, 30m, 2d or tomorrow", s)
	}
	if d <= 0 {
		return time.Time{}, fmt.Errorf("snooze %q: must be in the future", s)
	}
	return now.Add(d), nil
}

// editDone carries out what the inline editor came to: a saved text
// that differs from the draft is stored.
func (m *Model) editDone(d *editDone) tea.Cmd {
	c := m.c
	if d == nil {
		return nil
	}
	if !d.saved {
		c.setNote("edit cancelled")
		return nil
	}
	e, ok := c.items[d.id]
	if !ok {
		c.setErr(errors.New("the item is gone"))
		return nil
	}
	orig := e.item.Final
	if orig == "" {
		orig = e.item.Draft
	}
	// The editor was given the draft as editorText shows it: saving that
	// unchanged changes nothing.
	if d.text == orig || d.text == editorText(orig) {
		c.setNote("draft unchanged")
		return nil
	}
	it := e.item
	m.markBusy(&it, "saving")
	return editCmd(c.ctx, c.backend, d.id, d.text, it.Subject)
}

// forwardToInput passes non-key messages (paste, cursor) to the focused
// text component.
func (m *Model) forwardToInput(msg tea.Msg) tea.Cmd {
	switch m.mode() {
	case modePrompt:
		cmd, a := m.c.prompt.update(msg)
		return tea.Batch(cmd, m.answer(a))
	case modeInlineEdit:
		cmd, d := m.editor.update(msg)
		return tea.Batch(cmd, m.editDone(d))
	}
	return nil
}

// quote quotes untrusted text for a note: strconv.Quote, so a control
// or format character shows as its escape.
func quote(s string) string {
	if s == "" {
		s = "(no subject)"
	}
	if cleanOff.Load() {
		return `"` + s + `"`
	}
	return strconv.Quote(s)
}

// canUnsubscribe reports whether U applies to it: the backend can
// unsubscribe and it is a queue item (a draft or a notification) about a
// received mail, since the backend takes queue ids. Whether the mail
// carries a List-Unsubscribe header is not part of the item: the backend
// reads the mail again from the server to know, so UnsubscribePlan
// answers that (with an error when there is none).
func (m *Model) canUnsubscribe(it *Item) bool {
	_, ok := m.c.backend.(Unsubscriber)
	return ok && it != nil && (it.Kind == KindDraft || it.Kind == KindNotify)
}

// unsubscribe asks the backend what unsubscribing from the selected
// item's list would send (U); applyUnsubscribePlan asks the owner.
// It does nothing (false) when U does not apply.
func (m *Model) unsubscribe() (tea.Cmd, bool) {
	it, _ := m.selected()
	if !m.canUnsubscribe(it) {
		return nil, false
	}
	u := m.c.backend.(Unsubscriber)
	ctx, id := m.c.ctx, it.ID
	return func() tea.Msg {
		what, err := u.UnsubscribePlan(ctx, id)
		return unsubscribePlanMsg{id: id, what: what, err: err}
	}, true
}

// applyUnsubscribePlan asks "unsubscribe with …? y/N" on the note line;
// y sends it.
func (m *Model) applyUnsubscribePlan(msg unsubscribePlanMsg) {
	c := m.c
	if msg.err != nil {
		c.setErr(fmt.Errorf("unsubscribe: %w", msg.err))
		return
	}
	ctx, id := c.ctx, msg.id
	m.c.prompt.askOnNote("unsubscribe with "+clean(msg.what), func() tea.Cmd {
		u, ok := c.backend.(Unsubscriber)
		if !ok {
			c.setNote("nothing sent")
			return nil
		}
		return func() tea.Msg {
			if err := u.Unsubscribe(ctx, id); err != nil {
				return followupDoneMsg{err: fmt.Errorf("unsubscribe: %w", err)}
			}
			return followupDoneMsg{note: "unsubscribed"}
		}
	}, "nothing sent")
}

// forgettable reports whether the Forget key applies: the countdown note
// shows what the approval taught, and the backend can forget it.
func (m *Model) forgettable() bool {
	_, ok := m.c.backend.(Forgetter)
	return ok && len(m.undo.learned) > 0 && m.c.note == "" && m.undo.note(m.c) != ""
}

// forgotMsg reports ForgetLearned's result.
type forgotMsg struct {
	n   int
	err error
}

// forgetLearned forgets the records the approval in its undo window
// wrote; the approval itself stands (c cancels it).
func (m *Model) forgetLearned() tea.Cmd {
	if !m.forgettable() {
		return nil
	}
	f := m.c.backend.(Forgetter)
	ids := make([]string, 0, len(m.undo.learned))
	for _, l := range m.undo.learned {
		ids = append(ids, l.ID)
	}
	ctx := m.c.ctx
	return func() tea.Msg { return forgotMsg{n: len(ids), err: f.ForgetLearned(ctx, ids)} }
}

func (m *Model) applyForgot(msg forgotMsg) {
	if msg.err != nil {
		m.c.setErr(fmt.Errorf("forget what the approval taught: %w", msg.err))
		return
	}
	m.undo.learned = nil
	if msg.n == 1 {
		m.c.setNote("forgot what the approval taught (1 record)")
		return
	}
	m.c.setNote(fmt.Sprintf("forgot what the approval taught (%d records)", msg.n))
}
