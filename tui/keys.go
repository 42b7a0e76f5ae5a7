package tui

import (
	"strconv"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
)

// handleKey routes a key press to the component that takes it: a y/N
// question on the note line takes the next key whatever is open; then
// an open prompt, the inline editor, the help overlay, the follow-ups
// view; else the root's own keys (tabs, navigation, actions).
func (m *Model) handleKey(msg tea.KeyPressMsg) tea.Cmd {
	if cmd, ok := m.c.prompt.answerNote(msg.String()); ok {
		return cmd
	}
	switch m.mode() {
	case modePrompt:
		cmd, a := m.c.prompt.update(msg)
		return tea.Batch(cmd, m.answer(a))
	case modeInlineEdit:
		cmd, d := m.editor.update(msg)
		return tea.Batch(cmd, m.editDone(d))
	}
	if !m.help.show {
		if m.fu.open {
			switch {
			case msg.String() == "ctrl+c":
				return m.quit()
			case !key.Matches(msg, m.c.keys.Help):
				return m.fu.key(msg)
			}
			// The help key opens the overlay over this view's keys.
		} else {
			switch {
			case key.Matches(msg, m.c.keys.Followups):
				if cmd, ok := m.fu.show(); ok {
					return cmd
				}
			case key.Matches(msg, m.c.keys.Unsubscribe):
				if cmd, ok := m.unsubscribe(); ok {
					return cmd
				}
			}
		}
	}
	return m.handleNormalKey(msg)
}

// pendingG is set while a lone "g" waits for a second one (gg jumps to
// the top, as in vim and less); any other key clears it.
func (m *Model) handleNormalKey(msg tea.KeyPressMsg) tea.Cmd {
	k := m.c.keys
	if m.help.show {
		// The overlay swallows everything but its own toggles.
		// A window too small for it scrolls it.
		if msg.String() == "g" {
			if m.pendingG {
				m.help.scroll(-1 << 30)
			}
			m.pendingG = !m.pendingG
			return nil
		}
		m.pendingG = false
		// The detail and follow-ups views' overlays list "q/esc
		// back": q leaves the overlay, never the program.
		if m.help.update(msg, m.tab == tabDetail || m.fu.open) == helpQuit {
			return m.quit()
		}
		return nil
	}
	if msg.String() == "g" {
		if m.pendingG {
			m.pendingG = false
			m.scroll(-1 << 30)
			return nil
		}
		m.pendingG = true
		return nil
	}
	m.pendingG = false
	if cmd, ok := m.quittingKey(key.Matches(msg, k.Cancel), key.Matches(msg, k.Back)); ok {
		return cmd // quit.go: c or esc while a quit waits for sends
	}
	switch {
	case key.Matches(msg, k.Quit):
		if m.tab == tabDetail && msg.String() != "ctrl+c" {
			// neomutt, aerc: q leaves the message before the program.
			m.switchTab(m.detail.from)
			return nil
		}
		return m.quit()
	case key.Matches(msg, k.Help):
		m.help.open()
	case key.Matches(msg, k.NextTab):
		m.switchTab((m.tab + 1) % numTabs)
	case key.Matches(msg, k.PrevTab):
		m.switchTab((m.tab + numTabs - 1) % numTabs)
	case key.Matches(msg, k.GotoTab):
		if n, err := strconv.Atoi(msg.String()); err == nil && n >= 1 && n <= int(numTabs) {
			m.switchTab(tab(n - 1))
		}
	case key.Matches(msg, k.Back):
		switch {
		case m.tab == tabDetail:
			m.switchTab(m.detail.from)
		case m.c.filter != "":
			m.c.filter = ""
			m.rebuild()
			m.c.setNote("filter cleared")
		}
	case key.Matches(msg, k.Up):
		m.scroll(-1)
	case key.Matches(msg, k.Down):
		m.scroll(1)
	case key.Matches(msg, k.PageUp):
		m.scroll(-m.c.bodyHeight())
	case key.Matches(msg, k.PageDown):
		m.scroll(m.c.bodyHeight())
	case key.Matches(msg, k.HalfPageUp):
		m.scroll(-max(1, m.c.bodyHeight()/2))
	case key.Matches(msg, k.HalfPageDown):
		m.scroll(max(1, m.c.bodyHeight()/2))
	case key.Matches(msg, k.Top):
		m.scroll(-1 << 30)
	case key.Matches(msg, k.Bottom):
		m.scroll(1 << 30)
	case key.Matches(msg, k.Open):
		if m.tab != tabDetail {
			if it, ok := m.selected(); ok {
				m.openDetail(it.ID)
				return detailCmd(m.c.ctx, m.c.backend, it.ID)
			}
		}
	case key.Matches(msg, k.Filter):
		if m.tab != tabDetail {
			return m.c.prompt.open(promptFilter, "", m.c.filter)
		}
	case key.Matches(msg, k.Approve):
		return m.approve()
	case key.Matches(msg, k.Edit):
		return m.edit()
	case key.Matches(msg, k.Reject):
		return m.startPrompt(promptReject, canDismiss)
	case key.Matches(msg, k.Regenerate):
		return m.startPrompt(promptRegenerate, canRegenerate)
	case key.Matches(msg, k.Snooze):
		return m.startPrompt(promptSnooze, canDismiss)
	case key.Matches(msg, k.Retry):
		return m.retry()
	case key.Matches(msg, k.Cancel):
		return m.cancelSend()
	case key.Matches(msg, k.Forget):
		return m.forgetLearned()
	case key.Matches(msg, k.Unsnooze):
		return m.unsnooze()
	case key.Matches(msg, k.Accept, k.Decline, k.Tentative):
		return m.rsvp(msg) // invite.go
	}
	return nil
}

func (m *Model) switchTab(t tab) {
	if t != m.tab {
		m.c.setNote("") // a flash belongs to the view it was shown in
	}
	if t == tabDetail && m.tab != tabDetail {
		if it, ok := m.selected(); ok {
			m.openDetail(it.ID)
			return
		}
		m.detail.from = m.tab
		m.detail.id = ""
	}
	m.tab = t
	if t == tabDetail {
		m.detail.refresh()
	}
}

// openDetail shows item id in the detail view, which goes back to the
// list it was opened from.
func (m *Model) openDetail(id string) {
	if m.tab != tabDetail {
		m.detail.from = m.tab
		m.c.setNote("")
	}
	m.tab = tabDetail
	m.detail.open(id)
}

// scroll sends the active list or the detail view n lines (or rows).
func (m *Model) scroll(n int) {
	if m.tab == tabDetail {
		m.detail.update(scrollMsg(n))
		return
	}
	m.lists[m.tab].update(scrollMsg(n))
}
