// Package iostreams is the one place a command learns about its terminal:
// the three standard streams, whether each is a terminal, whether colour
// and progress may be drawn, and how wide the output is. It is modelled on
// cli/cli's pkg/iostreams. Commands never inspect os.Stdin or file
// descriptors themselves; tests build an IOStreams with Test and say which
// streams pretend to be terminals.
//
// It uses one terminal library, golang.org/x/term.
package iostreams

import (
	"bytes"
	"io"
	"os"

	"golang.org/x/term"
)

// IOStreams holds a command's standard streams and what is known about
// them. The zero value is not usable; build one with System, New or Test.
// An IOStreams is not safe for concurrent mutation (the Set methods are
// for set-up and tests), but its readers may be called from any goroutine.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer

	stdinTTY, stdoutTTY, stderrTTY bool
	dumb                           bool // TERM=dumb: no colour, no progress
	width                          func() int
}

// System is the process's own streams.
func System() *IOStreams { return New(os.Stdin, os.Stdout, os.Stderr) }

// New wraps in, out and errOut; a stream is a terminal when it is a file
// descriptor that is one (a pipe, a file or a buffer is not). TERM=dumb
// turns colour and progress off but does not change the TTY answers.
func New(in io.Reader, out, errOut io.Writer) *IOStreams {
	s := &IOStreams{In: in, Out: out, ErrOut: errOut,
		stdinTTY: IsTerminal(in), stdoutTTY: IsTerminal(out), stderrTTY: IsTerminal(errOut),
		dumb: os.Getenv("TERM") == "dumb"}
	s.width = func() int { return terminalWidth(out) }
	return s
}

// Test returns streams over fresh buffers, none of them a terminal, and
// the buffers: what the command reads (in) and what it wrote (out, errOut).
func Test() (s *IOStreams, in, out, errOut *bytes.Buffer) {
	in, out, errOut = &bytes.Buffer{}, &bytes.Buffer{}, &bytes.Buffer{}
	s = &IOStreams{In: in, Out: out, ErrOut: errOut, width: func() int { return 0 }}
	return s, in, out, errOut
}

// IsStdinTTY reports whether In is an interactive terminal.
func (s *IOStreams) IsStdinTTY() bool { return s.stdinTTY }

// IsStdoutTTY reports whether Out is a terminal.
func (s *IOStreams) IsStdoutTTY() bool { return s.stdoutTTY }

// IsStderrTTY reports whether ErrOut is a terminal.
func (s *IOStreams) IsStderrTTY() bool { return s.stderrTTY }

// SetStdinTTY makes In count as a terminal or not (tests).
func (s *IOStreams) SetStdinTTY(v bool) { s.stdinTTY = v }

// SetStdoutTTY makes Out count as a terminal or not (tests).
func (s *IOStreams) SetStdoutTTY(v bool) { s.stdoutTTY = v }

// SetStderrTTY makes ErrOut count as a terminal or not (tests).
func (s *IOStreams) SetStderrTTY(v bool) { s.stderrTTY = v }

// ColorEnabled reports whether Out may carry colour: it is a terminal and
// TERM is not "dumb".
func (s *IOStreams) ColorEnabled() bool { return s.stdoutTTY && !s.dumb }

// ProgressEnabled reports whether progress may be drawn on ErrOut: it is a
// terminal and TERM is not "dumb".
func (s *IOStreams) ProgressEnabled() bool { return s.stderrTTY && !s.dumb }

// CanPrompt reports whether a full-screen interface can draw: In and Out
// are both terminals.
func (s *IOStreams) CanPrompt() bool { return s.stdinTTY && s.stdoutTTY }

// TerminalWidth is the width of the terminal Out writes to, or 0 when Out
// is not a terminal (a pipe or a file: listings stay whole for scripts).
func (s *IOStreams) TerminalWidth() int {
	if !s.stdoutTTY || s.width == nil {
		return 0
	}
	return s.width()
}

// SetTerminalWidth fixes the width TerminalWidth reports while Out counts
// as a terminal (tests).
func (s *IOStreams) SetTerminalWidth(w int) { s.width = func() int { return w } }

// IsTerminal reports whether v is a file descriptor that is a terminal.
func IsTerminal(v any) bool {
	fd, ok := v.(interface{ Fd() uintptr })
	return ok && term.IsTerminal(int(fd.Fd()))
}

func terminalWidth(w any) int {
	fd, ok := w.(interface{ Fd() uintptr })
	if !ok || !term.IsTerminal(int(fd.Fd())) {
		return 0
	}
	cols, _, err := term.GetSize(int(fd.Fd()))
	if err != nil || cols <= 0 {
		return 0
	}
	return cols
}
