package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/mailagent/mailagent/internal/termsafe"
	"github.com/mailagent/mailagent/store"
)

// Exit codes. They are part of the command-line contract (README.md).
const (
	ExitOK          = 0   // success
	ExitFailure     = 1   // an unexpected failure; the message says what
	ExitUsage       = 2   // bad flags, arguments or configuration
	ExitUnreachable = 3   // a server (IMAP, SMTP, model) could not be reached or refused the login
	ExitLocked      = 4   // the state database is held by another process
	ExitPartial     = 5   // finished, but some messages need review or some checks failed
	ExitCorrupt     = 6   // the state database is damaged; the message says: mailagent doctor --repair
	ExitInterrupted = 130 // stopped by SIGINT/SIGTERM before finishing
)

// UserError is an error the user can act on: it carries the exit code and
// a hint. Any other error reaching Main is reported as an unexpected
// failure with its full detail.
type UserError struct {
	Code int
	Err  error
	Hint string // e.g. "try: mailagent doctor"
}

func (e *UserError) Error() string { return e.Err.Error() }
func (e *UserError) Unwrap() error { return e.Err }

func usageErr(format string, args ...any) error {
	return &UserError{Code: ExitUsage, Err: fmt.Errorf(format, args...)}
}

func unreachable(err error, hint string) error {
	return &UserError{Code: ExitUnreachable, Err: err, Hint: hint}
}

// errPartial is returned by commands that finished but want exit code 5.
var errPartial = errors.New("finished with items that need review")

// report prints err once, on stderr, and returns the exit code.
func report(stderr io.Writer, err error) int {
	if err == nil {
		return ExitOK
	}
	if errors.Is(err, errPartial) {
		return ExitPartial
	}
	if errors.Is(err, context.Canceled) {
		fmt.Fprintln(stderr, "mailagent: interrupted")
		return ExitInterrupted
	}
	// Errors carry server and mail text (an SMTP reply, a subject): it
	// is sanitised like every other untrusted string on a terminal.
	if errors.Is(err, store.ErrCorrupt) {
		fmt.Fprintf(stderr, "mailagent: %s\n", termsafe.Text(err.Error()))
		return ExitCorrupt
	}
	if errors.Is(err, store.ErrLocked) {
		fmt.Fprintf(stderr, "mailagent: %s\n", termsafe.Text(err.Error()))
		return ExitLocked
	}
	var ue *UserError
	if errors.As(err, &ue) {
		fmt.Fprintf(stderr, "mailagent: %s\n", termsafe.Text(ue.Err.Error()))
		if ue.Hint != "" {
			fmt.Fprintf(stderr, "  %s\n", termsafe.Text(ue.Hint))
		}
		return ue.Code
	}
	fmt.Fprintf(stderr, "mailagent: %s\n", termsafe.Text(err.Error()))
	return ExitFailure
}
