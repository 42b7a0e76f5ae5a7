package tui

import (
	"strings"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textarea"
	tea "charm.land/bubbletea/v2"
)

// inlineEditor is the component that edits a draft in place when no
// external editor is configured (Options.Editor ""): ctrl+s saves, esc
// cancels. It takes the whole body while open.
type inlineEditor struct {
	c      *Common
	editor textarea.Model
	id     string // the item being edited
	open   bool
	help   viewKeys
}

func newInlineEditor(c *Common) *inlineEditor {
	e := &inlineEditor{c: c, editor: textarea.New()}
	e.editor.ShowLineNumbers = false
	if c.opts.ASCII {
		e.editor.Prompt = "| "
	}
	k := c.keys
	e.help = viewKeys{short: []key.Binding{k.Save, k.Back}, full: [][]key.Binding{{k.Save, k.Back}}}
	return e
}

func (e *inlineEditor) keys() viewKeys { return e.help }

func (e *inlineEditor) setSize() {
	e.editor.SetWidth(max(10, e.c.width))
	e.editor.SetHeight(max(1, e.c.bodyHeight()))
}

func (e *inlineEditor) position() string { return "" }

// start opens the editor on item id's text, as editorText shows it:
// the draft is the model's and may carry what the mail asked for.
func (e *inlineEditor) start(id, text string) tea.Cmd {
	e.open = true
	e.id = id
	e.editor.SetValue(editorText(text))
	e.editor.MoveToBegin()
	return e.editor.Focus()
}

// editDone is what a key press in the editor came to: saved (with the
// text) or cancelled.
type editDone struct {
	id, text string
	saved    bool
}

// update handles a key press (or a paste) while the editor is open; it
// returns a result once the edit is saved or cancelled.
func (e *inlineEditor) update(msg tea.Msg) (tea.Cmd, *editDone) {
	if k, ok := msg.(tea.KeyPressMsg); ok {
		switch {
		case key.Matches(k, e.c.keys.Back):
			e.close()
			return nil, &editDone{id: e.id}
		case key.Matches(k, e.c.keys.Save):
			e.close()
			return nil, &editDone{id: e.id, text: e.editor.Value(), saved: true}
		}
	}
	var cmd tea.Cmd
	e.editor, cmd = e.editor.Update(msg)
	return cmd, nil
}

func (e *inlineEditor) close() {
	e.open = false
	e.editor.Blur()
}

// body is a title and the editor.
func (e *inlineEditor) body(int) []string {
	subject := ""
	if it, ok := e.c.items[e.id]; ok {
		subject = it.item.Subject
	}
	return append([]string{e.c.st.Section.Render("Editing " + clean(subject))}, strings.Split(e.editor.View(), "\n")...)
}
