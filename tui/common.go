package tui

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/mailagent/mailagent/tui/keymap"
	"github.com/mailagent/mailagent/tui/styles"
)

// Common is what every component of the TUI shares (the pattern of
// soft-serve's ui/common): the program's lifetime, the window size, the
// palette, the keymap, the backend, the clock, the item cache, the note
// line and the one prompt facility (prompt: every question the TUI asks,
// text or y/N). The root Model creates one and hands the same pointer to
// each component; a component reads it freely and changes only the note
// (setNote, setErr) and the prompt. Only the root writes size, palette,
// items and busy.
type Common struct {
	// ctx bounds every Backend call and the event subscription; cancel
	// ends them when the program quits. Bubbletea models have no other
	// place to keep the program's lifetime.
	ctx    context.Context
	cancel context.CancelFunc

	width, height int
	st            styles.Styles
	keys          keymap.KeyMap
	backend       Backend
	opts          Options
	now           func() time.Time
	log           *slog.Logger

	// ticks is false in tests that drive Update directly, where a
	// tea.Tick would block the synchronous Cmd runner.
	ticks bool

	// items is the cache every view draws from, by id; busy is the
	// action in flight per id.
	items map[string]*entry
	busy  map[string]string

	// filter narrows every list (the / prompt); "" shows everything.
	filter string

	// note is the last action's result or error, shown on the note line.
	note    string
	noteErr bool

	// prompt asks every question (prompt.go); while it has one open on
	// the prompt line it receives the keys.
	prompt *promptBox
}

// newCommon returns the Common of a model over b: 80×24 until the first
// tea.WindowSizeMsg, the palette and keymap opts asks for.
func newCommon(b Backend, opts Options) *Common {
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	keys := keymap.DefaultKeyMap()
	if opts.ASCII {
		keys = keys.ASCII()
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &Common{
		ctx:     ctx,
		cancel:  cancel,
		width:   80,
		height:  24,
		st:      styles.DefaultStyles(opts.NoColor, opts.ASCII),
		keys:    keys,
		backend: b,
		opts:    opts,
		now:     now,
		log:     logger,
		ticks:   true,
		items:   make(map[string]*entry),
		busy:    make(map[string]string),
	}
	c.prompt = newPromptBox(c)
	return c
}

// component is one part of the screen the root shows (soft-serve's
// common.Component, cut to what this TUI needs): it draws its body h
// lines high, says where its scroll position is, and lists its keys for
// the hint bar and the help overlay. Size and palette come from the
// shared Common; setSize is called after the window changed. Each
// component also has an update method for the keys and messages the
// root routes to it, whose result says what the root must do next (an
// answered prompt, a saved edit, a quit): its signature is the
// component's own.
type component interface {
	body(h int) []string
	position() string
	keys() viewKeys
	setSize()
}

// viewKeys is one view's help.KeyMap.
type viewKeys struct {
	short []key.Binding
	full  [][]key.Binding
}

// ShortHelp implements help.KeyMap.
func (v viewKeys) ShortHelp() []key.Binding { return v.short }

// FullHelp implements help.KeyMap.
func (v viewKeys) FullHelp() [][]key.Binding { return v.full }

// close ends the context shared by all Backend calls.
func (c *Common) close() { c.cancel() }

func (c *Common) setNote(s string) { c.note, c.noteErr = s, false }

func (c *Common) setErr(err error) {
	c.note, c.noteErr = err.Error(), true
}

// bodyHeight is the number of lines between the tab bar and the footer.
func (c *Common) bodyHeight() int {
	// tab bar, column header, note/prompt line, status line, help line.
	return max(1, c.height-5)
}

// fitLine cuts a (possibly styled) line to the window width.
func (c *Common) fitLine(s string) string {
	// No text is wider than its bytes (a double-width character takes
	// three or four, an escape sequence none of the cells): a line of at
	// most width bytes fits without being measured.
	if len(s) <= c.width || ansi.StringWidth(s) <= c.width {
		return s
	}
	return ansi.Truncate(s, c.width, c.st.Glyphs.Ellipsis)
}

func (c *Common) padRight(s string, w int) string {
	if n := ansi.StringWidth(s); n < w {
		return s + strings.Repeat(" ", w-n)
	}
	return s
}

// column is one cell of a row: its text, width and optional style.
type column struct {
	text  string
	width int
	risk  string // non-empty: colour the cell by this risk
	err   bool   // colour the cell as an error
	isNew bool   // colour the cell as a new address
}

// joinCells fits every cell to its width and joins them. styled colours
// risk and error cells; the selected row is drawn in one style instead.
func (c *Common) joinCells(cols []column, styled bool) string {
	var b strings.Builder
	for i, col := range cols {
		if col.width <= 0 {
			continue
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		cell := c.padRight(ansi.Truncate(clean(col.text), col.width, c.st.Glyphs.Ellipsis), col.width)
		if styled {
			switch {
			case col.risk != "":
				cell = c.riskStyle(col.risk).Render(cell)
			case col.err:
				cell = c.st.Error.Render(cell)
			case col.isNew:
				cell = c.st.NewAddress.Render(cell)
			}
		}
		b.WriteString(cell)
	}
	return b.String()
}

// row draws one list row: the cursor glyph and the selected style when
// sel, else the plain row style.
func (c *Common) row(line string, sel bool) string {
	if sel {
		return c.st.RowSelected.Render(c.st.Glyphs.Cursor + c.padRight(line, c.width-len(c.st.Glyphs.Cursor)))
	}
	return c.st.Row.Render(c.st.Glyphs.NoCursor + line)
}

func (c *Common) riskStyle(r string) lipgloss.Style {
	switch strings.ToLower(r) {
	case "high":
		return c.st.RiskHigh
	case "medium":
		return c.st.RiskMedium
	case "low":
		return c.st.RiskLow
	}
	return c.st.Row
}
