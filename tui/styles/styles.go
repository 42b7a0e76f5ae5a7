// Package styles holds every lipgloss style and glyph the review TUI draws
// with.
//
// DefaultStyles builds one Styles value when the program starts; views only
// read it, so no style is constructed while rendering a frame. In plain mode
// (NO_COLOR, TERM=dumb or a flag) the styles carry no attributes at all, so a
// rendered frame contains no escape sequences, and the glyphs fall back to
// ASCII.
package styles

import (
	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/textarea"
	"charm.land/bubbles/v2/textinput"
	"charm.land/lipgloss/v2"
)

// Glyphs are the symbols the TUI draws; ASCII mode swaps them for
// 7-bit equivalents.
type Glyphs struct {
	GateOK    string // a passing gate: "✓" or "[ok]"
	GateFail  string // a failing gate: "✗" or "[x]"
	Cursor    string // marks the selected row: "▸ " or "> "
	NoCursor  string // same width as Cursor, for other rows
	Online    string // watcher connected: "●" or "*"
	Offline   string // watcher absent: "○" or "o"
	Sep       string // between status-line parts: " │ " or " | "
	Ellipsis  string // truncated text: "…" or "..."
	Rule      string // a horizontal rule character: "─" or "-"
	HelpSep   string // between short-help entries: " • " or " - "
	FilterMrk string // shown before an active filter: "⌕ " or "/"
}

// Styles is the complete look of the TUI.
type Styles struct {
	Plain  bool // no colour or attributes at all
	ASCII  bool // 7-bit glyphs only
	Dark   bool // the palette is for a dark background
	Glyphs Glyphs

	Title       lipgloss.Style // the app name in the tab bar
	TabActive   lipgloss.Style // the current view's tab
	TabInactive lipgloss.Style // the other tabs
	Header      lipgloss.Style // a table's column header
	Row         lipgloss.Style // an ordinary table row
	RowSelected lipgloss.Style // the selected table row
	RiskHigh    lipgloss.Style // risk "high"
	RiskMedium  lipgloss.Style // risk "medium"
	RiskLow     lipgloss.Style // risk "low"
	GateOK      lipgloss.Style // a passing gate's mark
	GateFail    lipgloss.Style // a failing gate's mark
	Section     lipgloss.Style // a heading inside the detail view
	Label       lipgloss.Style // "From:", "Risk:" and similar labels
	Muted       lipgloss.Style // secondary text (dates, hints)
	Error       lipgloss.Style // an error in the status area
	Success     lipgloss.Style // a successful action's result
	StatusBar   lipgloss.Style // the bottom status line
	Online      lipgloss.Style // "watcher connected"
	Offline     lipgloss.Style // "no watcher: actions run locally"
	Prompt      lipgloss.Style // the label of a prompt
	Body        lipgloss.Style // wrapped message text in the detail view
	NewAddress  lipgloss.Style // a recipient the owner has never written to

	Help      help.Styles      // the short and full help
	TextInput textinput.Styles // prompts (reject reason, snooze, filter)
	TextArea  textarea.Styles  // the inline editor
}

// DetectPlain reports whether the environment asks for plain output:
// NO_COLOR set to any non-empty value (https://no-color.org) or TERM=dumb
// both mean ASCII glyphs and no colour. env is usually os.Getenv.
func DetectPlain(env func(string) string) (ascii, noColor bool) {
	if env == nil {
		return false, false
	}
	if env("NO_COLOR") != "" || env("TERM") == "dumb" {
		return true, true
	}
	return false, false
}

// DefaultStyles builds the styles for a dark terminal background, the
// guess before the terminal has answered; see ForBackground.
func DefaultStyles(noColor, ascii bool) Styles {
	return ForBackground(noColor, ascii, true)
}

// ForBackground builds the styles. noColor drops every colour and text
// attribute; ascii swaps the glyphs for 7-bit ones; dark picks the palette
// (lipgloss.LightDark) for a dark or a light terminal background, as
// reported by tea.BackgroundColorMsg.
func ForBackground(noColor, ascii, dark bool) Styles {
	s := Styles{Plain: noColor, ASCII: ascii, Dark: dark, Glyphs: unicodeGlyphs()}
	if ascii {
		s.Glyphs = asciiGlyphs()
	}
	if noColor {
		return plainStyles(s)
	}
	return colourStyles(s, dark)
}

func unicodeGlyphs() Glyphs {
	return Glyphs{
		GateOK: "✓", GateFail: "✗", Cursor: "▸ ", NoCursor: "  ",
		Online: "●", Offline: "○", Sep: " │ ", Ellipsis: "…", Rule: "─",
		HelpSep: " • ", FilterMrk: "⌕ ",
	}
}

func asciiGlyphs() Glyphs {
	return Glyphs{
		GateOK: "[ok]", GateFail: "[x]", Cursor: "> ", NoCursor: "  ",
		Online: "*", Offline: "o", Sep: " | ", Ellipsis: "...", Rule: "-",
		HelpSep: " - ", FilterMrk: "/",
	}
}

// plainStyles leaves every style empty: lipgloss renders an empty style as
// the bare text, so a plain frame carries no escape sequences.
func plainStyles(s Styles) Styles {
	n := lipgloss.NewStyle()
	s.Title, s.TabActive, s.TabInactive, s.Header = n, n, n, n
	s.Row, s.RowSelected, s.RiskHigh, s.RiskMedium, s.RiskLow = n, n, n, n, n
	s.GateOK, s.GateFail, s.Section, s.Label, s.Muted = n, n, n, n, n
	s.Error, s.Success, s.StatusBar, s.Online, s.Offline = n, n, n, n, n
	s.Prompt, s.Body, s.NewAddress = n, n, n
	s.Help = help.Styles{Ellipsis: n, ShortKey: n, ShortDesc: n, ShortSeparator: n, FullKey: n, FullDesc: n, FullSeparator: n}

	ti := textinput.DefaultStyles(true)
	ti.Focused = textinput.StyleState{Placeholder: n, Suggestion: n, Prompt: n, Text: n}
	ti.Blurred = ti.Focused
	ti.Cursor.Color = nil
	ti.Cursor.Blink = false
	s.TextInput = ti

	ta := textarea.DefaultStyles(true)
	plainState := textarea.StyleState{
		Base: n, Text: n, LineNumber: n, CursorLineNumber: n, CursorLine: n,
		EndOfBuffer: n, Placeholder: n, Prompt: n, Selection: n,
	}
	ta.Focused, ta.Blurred = plainState, plainState
	ta.Cursor.Color = nil
	ta.Cursor.Blink = false
	s.TextArea = ta
	return s
}

// colourStyles picks each colour for the background: on a light terminal
// the pale yellow, green and grey of the dark palette would barely show, so
// darker shades replace them.
func colourStyles(s Styles, dark bool) Styles {
	ld := lipgloss.LightDark(dark)
	var (
		accent  = ld(lipgloss.Color("#5A3FC0"), lipgloss.Color("#7D56F4"))
		dim     = ld(lipgloss.Color("241"), lipgloss.Color("245"))
		red     = ld(lipgloss.Color("160"), lipgloss.Color("203"))
		yellow  = ld(lipgloss.Color("130"), lipgloss.Color("220"))
		green   = ld(lipgloss.Color("28"), lipgloss.Color("78"))
		fgLight = lipgloss.Color("255") // on the accent background, both modes
		selBg   = ld(lipgloss.Color("254"), lipgloss.Color("237"))
	)
	n := lipgloss.NewStyle()
	s.Title = n.Bold(true).Foreground(accent)
	s.TabActive = n.Bold(true).Foreground(fgLight).Background(accent).Padding(0, 1)
	s.TabInactive = n.Foreground(dim).Padding(0, 1)
	s.Header = n.Bold(true).Foreground(dim)
	s.Row = n
	s.RowSelected = n.Background(selBg).Bold(true)
	s.RiskHigh = n.Foreground(red).Bold(true)
	s.RiskMedium = n.Foreground(yellow)
	s.RiskLow = n.Foreground(green)
	s.GateOK = n.Foreground(green)
	s.GateFail = n.Foreground(red).Bold(true)
	s.Section = n.Bold(true).Foreground(accent)
	s.Label = n.Foreground(dim)
	s.Muted = n.Foreground(dim)
	s.Error = n.Foreground(red).Bold(true)
	s.Success = n.Foreground(green)
	s.StatusBar = n.Foreground(dim)
	s.Online = n.Foreground(green)
	s.Offline = n.Foreground(yellow)
	s.Prompt = n.Foreground(accent).Bold(true)
	s.Body = n
	s.NewAddress = n.Foreground(yellow).Bold(true).Underline(true)
	s.Help = help.DefaultStyles(dark)

	ti := textinput.DefaultStyles(dark)
	ti.Cursor.Blink = false // a static cursor: no blink ticks to drive
	s.TextInput = ti
	ta := textarea.DefaultStyles(dark)
	ta.Cursor.Blink = false
	s.TextArea = ta
	return s
}
