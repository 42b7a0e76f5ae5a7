package cmdutil

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/imapsync"
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
	ExitNotSent     = 7   // an approval sent nothing: the message was answered already (the message says how)
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

// UsageErr is a UserError with ExitUsage and a formatted message.
func UsageErr(format string, args ...any) error {
	return &UserError{Code: ExitUsage, Err: fmt.Errorf(format, args...)}
}

// Unreachable is a UserError with ExitUnreachable: a server could not be
// reached or refused the login.
func Unreachable(err error, hint string) error {
	return &UserError{Code: ExitUnreachable, Err: err, Hint: hint}
}

// UsageArgs makes every bad command line exit with ExitUsage, as the
// README promises: cobra reports an unknown command, a missing or extra
// argument as a plain error (exit 1) and a group command given an unknown
// subcommand prints its help and exits 0. It walks the whole tree, so a
// command added later is covered too: a leaf without Args takes none, a
// group rejects any word that is not one of its subcommands.
func UsageArgs(root *cobra.Command) {
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			walk(sub)
		}
		switch {
		case c.Name() == "help" && c.HasParent() && !c.HasSubCommands():
			c.Args = func(cmd *cobra.Command, args []string) error {
				if found, rest, err := cmd.Root().Find(args); err != nil || len(rest) > 0 || (len(args) > 0 && found == cmd.Root()) {
					return &UserError{Code: ExitUsage, Err: fmt.Errorf("unknown help topic %q", strings.Join(args, " ")), Hint: "see: mailagent --help"}
				}
				return nil
			}
		case c.HasSubCommands():
			// SuggestionsFor applies no distance of its own (cobra sets its
			// default of 2 only on its own error path, which Args replaces):
			// without it "statsu" would suggest nothing.
			if c.SuggestionsMinimumDistance <= 0 {
				c.SuggestionsMinimumDistance = 2
			}
			c.Args = func(cmd *cobra.Command, args []string) error {
				if len(args) == 0 {
					return nil
				}
				hint := "see: " + cmd.CommandPath() + " --help"
				if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
					hint = "did you mean: " + cmd.CommandPath() + " " + s[0] + "?"
				}
				return &UserError{Code: ExitUsage, Err: fmt.Errorf("unknown command %q for %q", args[0], cmd.CommandPath()), Hint: hint}
			}
			if !c.Runnable() {
				c.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
			}
		default:
			check := c.Args
			if check == nil {
				check = cobra.NoArgs
			}
			c.Args = func(cmd *cobra.Command, args []string) error {
				if err := check(cmd, args); err != nil {
					return &UserError{Code: ExitUsage, Err: err, Hint: "see: " + cmd.CommandPath() + " --help"}
				}
				return nil
			}
		}
	}
	walk(root)
}

// ErrPartial is returned by commands that finished but want exit code 5.
var ErrPartial = errors.New("finished with items that need review")

// Report prints err once, on stderr, and returns the exit code.
func Report(stderr io.Writer, err error) int {
	if err == nil {
		return ExitOK
	}
	if errors.Is(err, ErrPartial) {
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
	var pe *fs.PathError
	if errors.Is(err, fs.ErrPermission) && errors.As(err, &pe) {
		// A state directory or file of another user (a watcher started
		// with sudo, a restored backup): a setup problem with a fix.
		fmt.Fprintf(stderr, "mailagent: %s\n", termsafe.Text(err.Error()))
		fmt.Fprintf(stderr, "  fix: run mailagent as the user that owns %s, or give this user (uid %d) access to it (chown -R, chmod 700 on the state directory)\n",
			termsafe.Line(pe.Path), os.Getuid())
		return ExitUsage
	}
	if errors.Is(err, agent.ErrNotSent) {
		fmt.Fprintf(stderr, "mailagent: %s\n", termsafe.Text(err.Error()))
		return ExitNotSent
	}
	fx := (interface{ SetupFix() string })(nil)
	if errors.Is(err, imapsync.ErrSetupNeeded) || (errors.As(err, &fx) && fx.SetupFix() != "") {
		// A bare account (no Sent or Drafts folder yet): whatever command
		// met it, here or in the watcher behind the socket, the fix is the
		// same, and it is a setup problem, not a failure of mailagent's.
		fmt.Fprintf(stderr, "mailagent: %s\n", termsafe.Text(err.Error()))
		fix := "run `mailagent doctor --fix`"
		if errors.As(err, &fx) && fx.SetupFix() != "" {
			fix = fx.SetupFix()
		}
		fmt.Fprintf(stderr, "  fix: %s\n", termsafe.Text(fix))
		return ExitUsage
	}
	if ue, ok := AsUserError(err); ok {
		fmt.Fprintf(stderr, "mailagent: %s\n", termsafe.Text(ue.Err.Error()))
		if ue.Hint != "" {
			fmt.Fprintf(stderr, "  %s\n", termsafe.Text(ue.Hint))
		}
		return ue.Code
	}
	fmt.Fprintf(stderr, "mailagent: %s\n", termsafe.Text(err.Error()))
	return ExitFailure
}
