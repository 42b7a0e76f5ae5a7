package prompter

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	tea "charm.land/bubbletea/v2"
	"charm.land/huh/v2"
	"golang.org/x/term"
)

// huhPrompter is the Prompter of a terminal: each question is a
// charm.land/huh field (a text input that can be edited, a masked
// password, a y/n toggle, a menu moved with the arrow keys), as cli/cli
// does. Each answered question is echoed as "label: answer" (passwords
// never), so the transcript stays readable after the field is gone.
// Scripts, pipes and tests get the line prompter (New).
type huhPrompter struct {
	in    io.Reader
	out   io.Writer
	width int           // of the fields; 0: huhWidth
	lines *bufio.Reader // Confirm's reader of in, made on first use
}

// huhWidth is the fields' width when the terminal's is unknown. A width
// is always set: a form that never learns one draws a placeholder with a
// negative width (and panics).
const huhWidth = 80

var _ Prompter = (*huhPrompter)(nil)

// New is the terminal prompter when r and w are both terminals (and
// neither TERM=dumb nor ACCESSIBLE asks for plain lines), else the line
// prompter. The caller owns it and must Close it.
func New(r io.Reader, w io.Writer) Closer {
	in, inOK := r.(*os.File)
	out, outOK := w.(*os.File)
	if inOK && outOK && term.IsTerminal(int(in.Fd())) && term.IsTerminal(int(out.Fd())) &&
		os.Getenv("TERM") != "dumb" && os.Getenv("ACCESSIBLE") == "" {
		w, _, err := term.GetSize(int(out.Fd()))
		if err != nil || w < 20 {
			w = huhWidth
		}
		return &huhPrompter{in: in, out: out, width: w}
	}
	return newLine(r, w)
}

// Close implements Closer; a huh field holds nothing between
// questions.
func (p *huhPrompter) Close() {}

func (p *huhPrompter) run(ctx context.Context, field huh.Field) (err error) {
	defer func() {
		// huh turns a failed program into a nil-model panic; say it.
		if r := recover(); r != nil {
			err = fmt.Errorf("prompt failed (%v): set ACCESSIBLE=1 to answer line by line", r)
		}
	}()
	width := p.width
	if width <= 0 {
		width = huhWidth
	}
	// Esc and Shift-Tab go back to the question before: a filter sees
	// the key before the field does and ends the form (huh has no "back"
	// of its own across forms, and each question is a form of its own).
	back := false
	filter := func(_ tea.Model, msg tea.Msg) tea.Msg {
		if k, ok := msg.(tea.KeyPressMsg); ok && (k.String() == "esc" || k.String() == "shift+tab") {
			back = true
			return tea.QuitMsg{}
		}
		return msg
	}
	// WithProgramOptions replaces the program's options: it comes before
	// WithInput and WithOutput, which add theirs.
	err = huh.NewForm(huh.NewGroup(field)).WithProgramOptions(tea.WithFilter(filter)).
		WithInput(p.in).WithOutput(p.out).WithShowHelp(false).WithWidth(width).RunWithContext(ctx)
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case back:
		return ErrBack
	case errors.Is(err, huh.ErrUserAborted):
		// Ctrl-C in raw mode is a key, not SIGINT: end as the signal would.
		return fmt.Errorf("setup cancelled, nothing was written: %w", context.Canceled)
	case err != nil:
		return fmt.Errorf("prompt: %w", err)
	}
	return nil
}

// Say writes a message for the user.
func (p *huhPrompter) Say(format string, a ...any) { fmt.Fprintf(p.out, format, a...) }

// Text asks with def shown as the placeholder (Enter takes it, typing
// replaces it); check runs on Enter.
func (p *huhPrompter) Text(ctx context.Context, label, def string, check func(string) error) (string, error) {
	var v string
	in := huh.NewInput().Title(label).Placeholder(def).Value(&v).Validate(func(s string) error {
		s = strings.TrimSpace(s)
		if s == "" {
			s = def
		}
		if check == nil {
			return nil
		}
		return check(s)
	})
	if err := p.run(ctx, in); err != nil {
		return "", err
	}
	if v = strings.TrimSpace(v); v == "" {
		v = def
	}
	p.Say("%s: %s\n", label, v)
	return v, nil
}

// Password asks for a non-empty secret, masked; it is never echoed.
func (p *huhPrompter) Password(ctx context.Context, label string) (string, error) {
	var v string
	in := huh.NewInput().Title(label).EchoMode(huh.EchoModePassword).Value(&v).Validate(func(s string) error {
		if s == "" {
			return errors.New("the password cannot be empty")
		}
		return nil
	})
	if err := p.run(ctx, in); err != nil {
		return "", err
	}
	p.Say("%s: (hidden)\n", label)
	return v, nil
}

// YesNo asks with a toggle; def is selected first.
func (p *huhPrompter) YesNo(ctx context.Context, label string, def bool) (bool, error) {
	v := def
	if err := p.run(ctx, huh.NewConfirm().Title(label).Affirmative("Yes").Negative("No").Value(&v)); err != nil {
		return false, err
	}
	p.Say("%s: %s\n", label, map[bool]string{true: "yes", false: "no"}[v])
	return v, nil
}

// Choose shows a menu with def selected.
func (p *huhPrompter) Choose(ctx context.Context, label string, items []Choice, def string) (string, error) {
	opts := make([]huh.Option[string], len(items))
	chosen := ""
	for i, c := range items {
		opts[i] = huh.NewOption(c.Label, c.Key)
		if c.Key == def {
			chosen = def
		}
	}
	if chosen == "" && len(items) > 0 {
		chosen = items[0].Key
	}
	if err := p.run(ctx, huh.NewSelect[string]().Title(label).Options(opts...).Value(&chosen)); err != nil {
		return "", err
	}
	for _, c := range items {
		if c.Key == chosen {
			p.Say("%s: %s\n", label, c.Label)
		}
	}
	return chosen, nil
}

// Confirm implements Prompter with the same plain "y/N" line as the line
// prompter: a confirmation guards an action, and one typed answer is
// what the owner's muscle memory and scripts expect.
func (p *huhPrompter) Confirm(question string, def bool) (bool, error) {
	p.Say("%s%s", question, confirmSuffix(def))
	if p.lines == nil {
		p.lines = bufio.NewReader(p.in)
	}
	return readConfirm(p.lines, def)
}
