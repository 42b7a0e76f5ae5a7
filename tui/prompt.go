package tui

import (
	"strings"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
)

// promptKind is the question a prompt asks.
type promptKind int

const (
	promptNone promptKind = iota
	promptFilter
	promptReject
	promptRegenerate
	promptSnooze
	promptConfirmNew // a y/N question: approve (or resend) to a new address, an RSVP
)

// confirmSuffix ends every y/N question of the prompt line.
const confirmSuffix = "? y/N: "

// promptBox is the one prompt component: every question the TUI asks.
// A text prompt (filter, reject reason, regenerate instruction, snooze
// length) takes a line on the prompt line, enter submits it and esc
// drops it. A y/N question takes one key, as every y/N question in a
// terminal does: y (or Y) answers yes at once and any other key (n,
// enter, esc, a stray q) is no. A y/N question is asked either on the
// prompt line (confirm: the hint bar shows "y yes  n/esc no") or on the
// note line (askOnNote, unsubscribe), where the next key press answers
// it whatever else is open.
type promptBox struct {
	c     *Common
	input textinput.Model
	kind  promptKind // promptNone: no prompt-line question is open
	id    string     // the item the question is about
	// confirmFor is what a promptConfirmNew question confirms: approve,
	// retry or an RSVP answer.
	confirmFor string
	// onNote is the y/N question on the note line, nil when none.
	onNote *noteQuestion

	lineKeys, confirmKeys viewKeys
}

// noteQuestion is a one-key y/N question on the note line: yes runs on
// y or Y; any other key shows no.
type noteQuestion struct {
	yes func() tea.Cmd
	no  string
}

func newPromptBox(c *Common) *promptBox {
	p := &promptBox{c: c, input: textinput.New()}
	k := c.keys
	p.lineKeys = viewKeys{short: []key.Binding{k.Submit, k.Back}, full: [][]key.Binding{{k.Submit, k.Back}}}
	yes := key.NewBinding(key.WithKeys("y"), key.WithHelp("y", "yes"))
	no := key.NewBinding(key.WithKeys("n", "esc"), key.WithHelp("n/esc", "no"))
	p.confirmKeys = viewKeys{short: []key.Binding{yes, no}, full: [][]key.Binding{{yes, no}}}
	return p
}

// active reports whether a prompt-line question is open (it receives
// the keys).
func (p *promptBox) active() bool { return p.kind != promptNone }

func (p *promptBox) keys() viewKeys {
	if p.kind == promptConfirmNew {
		return p.confirmKeys
	}
	return p.lineKeys
}

// setSize gives the input what its prompt leaves of the window, so a
// placeholder ("4h (or 1h, 30m, 2d, tomorrow)") is whole at 60 columns.
func (p *promptBox) setSize() {
	p.input.SetWidth(max(10, p.c.width-ansi.StringWidth(p.input.Prompt)-1))
}

// open opens a text prompt about item id (none for the filter) with
// value typed in already.
func (p *promptBox) open(kind promptKind, id, value string) tea.Cmd {
	p.kind = kind
	p.id = id
	p.input.Reset()
	p.input.SetValue(value)
	p.input.CursorEnd()
	switch kind {
	case promptFilter:
		p.input.Prompt = "filter: "
		p.input.Placeholder = "from, subject, summary or intent"
	case promptReject:
		p.input.Prompt = "reject, reason (optional): "
		if e, ok := p.c.items[id]; ok && e.item.Kind == KindNotify {
			p.input.Prompt = "dismiss, note (optional): "
		}
		p.input.Placeholder = ""
	case promptRegenerate:
		p.input.Prompt = "regenerate, instruction: "
		p.input.Placeholder = "shorter / decline politely"
	case promptSnooze:
		p.input.Prompt = "snooze for: "
		p.input.Placeholder = "4h (or 1h, 30m, 2d, tomorrow)"
	case promptConfirmNew:
		p.input.Placeholder = ""
	}
	p.setSize()
	return p.input.Focus()
}

// confirm asks question (without its "? y/N: ") on the prompt line
// about item id; the answer comes back as a promptAnswer with
// confirmFor set to action.
func (p *promptBox) confirm(id, action, question string) tea.Cmd {
	cmd := p.open(promptConfirmNew, id, "")
	p.confirmFor = action
	p.input.Prompt = question + confirmSuffix
	return cmd
}

// askOnNote asks question on the note line; the next key press answers
// it: y or Y runs yes, any other key shows no.
func (p *promptBox) askOnNote(question string, yes func() tea.Cmd, no string) {
	p.onNote = &noteQuestion{yes: yes, no: no}
	p.c.setNote(question + "? y/N")
}

// answerNote answers the note-line question with key s, if one is open.
func (p *promptBox) answerNote(s string) (cmd tea.Cmd, answered bool) {
	q := p.onNote
	if q == nil {
		return nil, false
	}
	p.onNote = nil
	if s != "y" && s != "Y" {
		p.c.setNote(q.no)
		return nil, true
	}
	return q.yes(), true
}

func (p *promptBox) close() {
	p.kind = promptNone
	p.confirmFor = ""
	p.input.Blur()
}

// promptAnswer is what a prompt-line question came to.
type promptAnswer struct {
	kind       promptKind
	id         string
	value      string // trimmed
	confirmFor string
	// cancelled: esc dropped a text prompt; typed: the filter's text
	// changed and the question is still open.
	cancelled, typed bool
}

// update handles a key press (or a paste, a blink) while a prompt-line
// question is open; it returns an answer once the question is answered
// or dropped, or when the filter's text changed.
func (p *promptBox) update(msg tea.Msg) (tea.Cmd, *promptAnswer) {
	if k, ok := msg.(tea.KeyPressMsg); ok {
		if p.kind == promptConfirmNew {
			p.input.SetValue(k.String())
			return nil, p.submit()
		}
		switch {
		case key.Matches(k, p.c.keys.Back):
			a := &promptAnswer{kind: p.kind, id: p.id, cancelled: true}
			p.close()
			return nil, a
		case key.Matches(k, p.c.keys.Submit):
			return nil, p.submit()
		}
	}
	var cmd tea.Cmd
	p.input, cmd = p.input.Update(msg)
	if _, isKey := msg.(tea.KeyPressMsg); isKey && p.kind == promptFilter && p.c.filter != p.input.Value() {
		return cmd, &promptAnswer{kind: p.kind, value: p.input.Value(), typed: true}
	}
	return cmd, nil
}

func (p *promptBox) submit() *promptAnswer {
	a := &promptAnswer{kind: p.kind, id: p.id, value: strings.TrimSpace(p.input.Value()), confirmFor: p.confirmFor}
	p.close()
	return a
}

// view is the prompt line. A y/N question has no use for the input's
// padding, and when it is wider than the window its text is cut before
// "? y/N: ", so the question mark, the answers and what the owner types
// stay in sight (the detail view has every address and gate).
func (p *promptBox) view() string {
	q, ok := strings.CutSuffix(p.input.Prompt, confirmSuffix)
	if p.kind != promptConfirmNew || !ok {
		return p.input.View()
	}
	in := p.input
	in.SetWidth(4) // "yes" and the cursor
	in.Prompt = confirmSuffix
	room := p.c.width - ansi.StringWidth(in.View())
	in.Prompt = ansi.Truncate(q, max(room, 1), p.c.st.Glyphs.Ellipsis) + confirmSuffix
	return in.View()
}
