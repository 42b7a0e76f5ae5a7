// Package apperr is the error the application tier (internal/app/...)
// hands the owner to act on: what went wrong, the process exit code the
// command reports for it, and a hint. The command tier turns it into its
// own user error at the boundary; the exit codes are the command line's
// contract (README.md), repeated here as values so that the application
// tier never imports the command tier.
package apperr

import "fmt"

// Exit codes an application-tier error may carry (the same numbers as
// the command line's table).
const (
	CodeFailure     = 1 // an unexpected failure; the message says what
	CodeUsage       = 2 // bad flags, arguments or configuration
	CodeUnreachable = 3 // a server could not be reached or refused the login
	CodeLocked      = 4 // the state database is held by another process
)

// Error is an error the owner can act on. Error() is Err's text alone;
// the hint is printed on a line of its own by the command tier.
type Error struct {
	Code int
	Err  error
	Hint string // e.g. "stop it first; …"
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Usage is an Error with CodeUsage (bad configuration or arguments).
func Usage(format string, args ...any) error {
	return &Error{Code: CodeUsage, Err: fmt.Errorf(format, args...)}
}
