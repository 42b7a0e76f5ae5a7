// Package prompter is the one way mailagent asks its owner a question:
// the setup interview's text, password, yes/no and menu questions, and
// the y/N confirmation before an action that cannot be undone (approving
// a send to a stranger, unsubscribing, forgetting a contact). Commands
// never read the terminal themselves: they get a Prompter from the
// Factory (internal/cmdutil), and tests script one.
//
// New picks the terminal prompter (charm.land/huh fields, as cli/cli
// does) when both streams are terminals, and the line prompter for
// pipes, scripts and dumb terminals.
package prompter

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Prompter asks the user questions. Every method may block on input; none
// is safe for concurrent use.
type Prompter interface {
	// Say writes a message (printf-style); it never reads.
	Say(format string, a ...any)
	// Text asks until check (when not nil) accepts the answer; an empty
	// answer means def.
	Text(ctx context.Context, label, def string, check func(string) error) (string, error)
	// Password asks for a non-empty secret, not echoed.
	Password(ctx context.Context, label string) (string, error)
	// YesNo asks a y/n question; an empty answer means def.
	YesNo(ctx context.Context, label string, def bool) (bool, error)
	// Choose shows items and returns the key of the one chosen; def is
	// the key an empty answer picks.
	Choose(ctx context.Context, label string, items []Choice, def string) (string, error)
	// Confirm is the one y/N confirmation: it writes question followed by
	// " y/N: " (" Y/n: " when def is true) and reads one line. "y" or
	// "yes" (any case) is yes, "n" or "no" is no, an empty answer or the
	// end of input is def, anything else is no. Only a failed read is an
	// error.
	Confirm(question string, def bool) (bool, error)
}

// Closer is a Prompter that holds resources (a reading goroutine) until
// Close.
type Closer interface {
	Prompter
	Close()
}

// Choice is one item of a Choose menu: Key is returned, Label shown.
type Choice struct{ Key, Label string }

// ErrInputEnded is returned when the input ends before an answer.
var ErrInputEnded = errors.New("input ended before the setup was complete")

// ErrBack is what a Prompter returns when the owner asks to go back to
// the previous question (Esc or Shift-Tab in the terminal prompter).
var ErrBack = errors.New("back to the previous question")

// confirmSuffix is what follows a Confirm question.
func confirmSuffix(def bool) string {
	if def {
		return " Y/n: "
	}
	return " y/N: "
}

// confirmAnswer interprets one Confirm answer (see Prompter.Confirm).
func confirmAnswer(line string, def bool) bool {
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "":
		return def
	case "y", "yes":
		return true
	}
	return false
}

// readConfirm reads one line from r for Confirm.
func readConfirm(r *bufio.Reader, def bool) (bool, error) {
	line, err := r.ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return false, fmt.Errorf("read answer: %w", err)
	}
	return confirmAnswer(line, def), nil
}
