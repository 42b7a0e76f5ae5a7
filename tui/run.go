package tui

import (
	"context"
	"errors"
	"fmt"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/mailagent/mailagent/tui/styles"
)

// Run starts the review TUI on the terminal in the alternate screen and
// blocks until the owner quits or ctx ends. Diagnostics go to
// opts.Logger only. A program that ends with sends still waiting for
// this process (no watcher; quit.go) cancels them before Run returns,
// so none stays approved and unsent; a cancel that fails is part of the
// error.
func Run(ctx context.Context, b Backend, opts Options) error {
	m := New(b, opts)
	m.close() // replace New's background context with the caller's
	m.c.ctx, m.c.cancel = context.WithCancel(ctx)
	defer m.close()
	p := tea.NewProgram(m, tea.WithContext(ctx))
	_, err := p.Run()
	cerr := m.cancelLeft(ctx)
	if cerr != nil {
		cerr = fmt.Errorf("review ended in the undo window: %w", cerr)
	}
	if err != nil {
		if errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil {
			err = ctx.Err()
		}
		return errors.Join(fmt.Errorf("review: %w", err), cerr)
	}
	return cerr
}

// Snapshot renders the first frame (the queue) of a width×height terminal
// as plain text, without colour or escape sequences. It calls b.List and
// b.Status once and nothing else.
func Snapshot(b Backend, width, height int) (string, error) {
	return snapshot(context.Background(), b, width, height, Options{NoColor: true})
}

func snapshot(ctx context.Context, b Backend, width, height int, opts Options) (string, error) {
	if width <= 0 || height <= 0 {
		return "", fmt.Errorf("snapshot: bad size %dx%d", width, height)
	}
	opts.NoColor = true
	m := New(b, opts)
	m.close() // replace New's background context with the caller's
	m.c.ctx, m.c.cancel = context.WithCancel(ctx)
	defer m.close()
	msg := load(ctx, b)
	if msg.err != nil {
		return "", fmt.Errorf("snapshot: list items: %w", msg.err)
	}
	m.Update(tea.WindowSizeMsg{Width: width, Height: height})
	m.Update(msg)
	return ansi.Strip(m.View().Content), nil
}

// DetectPlain reports whether the environment asks for plain output
// (NO_COLOR non-empty or TERM=dumb); see styles.DetectPlain. Callers pass
// the result as Options.ASCII and Options.NoColor.
func DetectPlain(env func(string) string) (ascii, noColor bool) {
	return styles.DetectPlain(env)
}
