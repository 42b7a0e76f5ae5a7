package tui

import (
	"fmt"
	"strings"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
)

// helpView is the help overlay component (?): the keys of the view
// under it (under), in groups side by side, listing only what this
// backend supports. It also draws the hint bar's keys (short), so the
// two always agree. A window too small for the overlay scrolls it.
type helpView struct {
	c      *Common
	model  help.Model
	show   bool
	offset int // the overlay's first line shown, when it is taller than the window
	// under returns the keys of the view the overlay covers (the root's
	// routing knows which that is).
	under func() viewKeys
}

func newHelpView(c *Common, under func() viewKeys) *helpView {
	h := &helpView{c: c, model: help.New(), under: under}
	h.model.ShortSeparator = c.st.Glyphs.HelpSep
	h.model.Ellipsis = c.st.Glyphs.Ellipsis
	return h
}

func (h *helpView) setStyles() { h.model.Styles = h.c.st.Help }

func (h *helpView) setSize() { h.model.SetWidth(h.c.width) }

// keys are those of the view under the overlay.
func (h *helpView) keys() viewKeys { return h.under() }

// open shows the overlay from its top.
func (h *helpView) open() { h.show, h.offset = true, 0 }

// full is the overlay: the key groups side by side, in as many rows of
// groups as the width needs, so no binding is ever cut off.
func (h *helpView) full() []string {
	hm := h.model
	hm.SetWidth(0)
	var lines []string
	var row [][]key.Binding
	flush := func() {
		if len(row) == 0 {
			return
		}
		if len(lines) > 0 {
			lines = append(lines, "")
		}
		lines = append(lines, strings.Split(hm.FullHelpView(row), "\n")...)
		row = nil
	}
	for _, g := range h.under().FullHelp() {
		if g = h.c.supported(g); len(g) == 0 {
			continue
		}
		if len(row) > 0 && lipgloss.Width(hm.FullHelpView(append(row[:len(row):len(row)], g))) > h.c.width { // widest line
			flush()
		}
		row = append(row, g)
	}
	flush()
	return lines
}

// top is the overlay's first line shown: offset, kept so that the last
// line is at the bottom of the body at most.
func (h *helpView) top(lines int) int {
	return max(0, min(h.offset, lines-h.c.bodyHeight()-1))
}

// scroll moves the overlay by n lines when it is taller than the window
// (60×20 with every optional key), so no key is out of reach.
func (h *helpView) scroll(n int) {
	h.offset = h.top(len(h.full())) + n
	h.offset = h.top(len(h.full()))
}

func (h *helpView) body(int) []string {
	lines := h.full()
	return lines[h.top(len(lines)):]
}

// position is shown, like the detail view's, only when there is more
// than fits.
func (h *helpView) position() string {
	if n := len(h.full()); n > h.c.bodyHeight()+1 {
		return fmt.Sprintf("%d/%d", h.top(n)+1, n)
	}
	return ""
}

// helpAction is what a key press on the overlay asks of the root.
type helpAction int

const (
	helpStay helpAction = iota
	helpQuit            // the quit key: leave the program
)

// update handles a key press on the overlay: it swallows everything but
// its own keys. backOnQuit: the view under it lists "q/esc back", so q
// closes the overlay, never the program (ctrl+c still quits).
func (h *helpView) update(msg tea.KeyPressMsg, backOnQuit bool) helpAction {
	k := h.c.keys
	switch {
	case key.Matches(msg, k.Help, k.Back):
		h.show = false
	case key.Matches(msg, k.Quit) && backOnQuit && msg.String() != "ctrl+c":
		h.show = false
	case key.Matches(msg, k.Quit):
		return helpQuit
	case key.Matches(msg, k.Down):
		h.scroll(1)
	case key.Matches(msg, k.Up):
		h.scroll(-1)
	case key.Matches(msg, k.HalfPageDown, k.PageDown):
		h.scroll(max(1, h.c.bodyHeight()/2))
	case key.Matches(msg, k.HalfPageUp, k.PageUp):
		h.scroll(-max(1, h.c.bodyHeight()/2))
	case key.Matches(msg, k.Top):
		h.scroll(-1 << 30)
	case key.Matches(msg, k.Bottom):
		h.scroll(1 << 30)
	}
	return helpStay
}

// supported drops the bindings whose action this backend lacks (the
// follow-ups view, unsubscribe, forgetting what an approval taught, the
// RSVP keys): the help overlay never lists a key that cannot work in
// this session.
func (c *Common) supported(g []key.Binding) []key.Binding {
	k := c.keys
	var out []key.Binding
	for _, b := range g {
		ok := true
		switch b.Help() {
		case k.Followups.Help():
			_, ok = c.backend.(FollowupBackend)
		case k.Unsubscribe.Help():
			_, ok = c.backend.(Unsubscriber)
		case k.Forget.Help():
			_, ok = c.backend.(Forgetter)
		case k.Accept.Help(), k.Decline.Help(), k.Tentative.Help():
			_, ok = c.backend.(Inviter)
		}
		if ok {
			out = append(out, b)
		}
	}
	return out
}
