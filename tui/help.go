package tui

import (
	"fmt"
	"strings"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"
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
	// drawn is the last overlay full drew and what it drew it from: a
	// frame asks for it several times (the body, the position, a scroll
	// twice), and each drawing measured every column again.
	drawn struct {
		sig   string
		lines []string
	}
	// hint is the last hint bar hintBar drew, and what from (one per
	// frame, mostly the same as the last).
	hint struct {
		sig, line string
	}
}

// bindingSig writes what the help model draws of each binding in bs: its
// key, its description, and whether it is enabled.
func bindingSig(sig *strings.Builder, bs []key.Binding) {
	for _, b := range bs {
		fmt.Fprintf(sig, "\x01%q %q %t", b.Help().Key, b.Help().Desc, b.Enabled())
	}
}

func newHelpView(c *Common, under func() viewKeys) *helpView {
	h := &helpView{c: c, model: help.New(), under: under}
	h.model.ShortSeparator = c.st.Glyphs.HelpSep
	h.model.Ellipsis = c.st.Glyphs.Ellipsis
	return h
}

func (h *helpView) setStyles() {
	h.model.Styles = h.c.st.Help
	h.drawn.sig, h.drawn.lines = "", nil
	h.hint.sig, h.hint.line = "", ""
}

// hintBar is the hint bar's line: keys, as many of them as fit the
// window from the first, then tail, which stays whatever the width. It
// is drawn again only when the width or a binding changed.
func (h *helpView) hintBar(keys, tail []key.Binding) string {
	var sig strings.Builder
	fmt.Fprintf(&sig, "%d", h.c.width)
	bindingSig(&sig, keys)
	sig.WriteByte(0)
	bindingSig(&sig, tail)
	if h.hint.sig != "" && h.hint.sig == sig.String() {
		return h.hint.line
	}
	line := h.drawHint(keys, tail)
	h.hint.sig, h.hint.line = sig.String(), line
	return line
}

func (h *helpView) drawHint(keys, tail []key.Binding) string {
	hm := h.model
	hm.SetWidth(0) // we trim whole hints ourselves
	// The most of keys that fit before the tail. A hint added never makes
	// the line narrower (ShortHelpView only appends), so the widths grow
	// with n and a binary search finds the n a longest-first scan finds,
	// drawing the line a few times instead of once per key dropped.
	view := func(n int) string { return hm.ShortHelpView(append(keys[:n:n], tail...)) }
	if v := view(len(keys)); ansi.StringWidth(v) <= h.c.width {
		return v
	}
	lo, hi := -1, len(keys) // view(hi) does not fit; view(lo) does (-1: none known)
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if ansi.StringWidth(view(mid)) <= h.c.width {
			lo = mid
		} else {
			hi = mid
		}
	}
	if lo >= 0 {
		return view(lo)
	}
	return hm.ShortHelpView(tail)
}

func (h *helpView) setSize() { h.model.SetWidth(h.c.width) }

// keys are those of the view under the overlay.
func (h *helpView) keys() viewKeys { return h.under() }

// open shows the overlay from its top.
func (h *helpView) open() { h.show, h.offset = true, 0 }

// full is the overlay: the key groups side by side, in as many rows of
// groups as the width needs, so no binding is ever cut off. It is drawn
// again only when the width or a binding shown changed (the styles are
// fixed between setStyles calls); callers only read the lines.
func (h *helpView) full() []string {
	var groups [][]key.Binding
	var sig strings.Builder
	fmt.Fprintf(&sig, "%d", h.c.width)
	for _, g := range h.under().FullHelp() {
		if g = h.c.supported(g); len(g) == 0 {
			continue
		}
		groups = append(groups, g)
		sig.WriteByte(0)
		bindingSig(&sig, g)
	}
	if h.drawn.lines != nil && h.drawn.sig == sig.String() {
		return h.drawn.lines
	}
	lines := h.draw(groups)
	h.drawn.sig, h.drawn.lines = sig.String(), lines
	return lines
}

// draw lays the groups out for full.
func (h *helpView) draw(groups [][]key.Binding) []string {
	hm := h.model
	hm.SetWidth(0)
	lines := []string{}
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
	for _, g := range groups {
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
