package main

// The names the tests of package main use for what moved to internal/cmd,
// internal/cmdutil and internal/app (issue 27): the binary itself is
// main.go alone.

import (
	"context"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/mailagent/mailagent/imapsync"
	"github.com/mailagent/mailagent/internal/app/view"
	"github.com/mailagent/mailagent/internal/app/wire"
	"github.com/mailagent/mailagent/internal/cmd/root"
	"github.com/mailagent/mailagent/internal/cmdutil"
	"github.com/mailagent/mailagent/internal/config"
	"github.com/mailagent/mailagent/internal/iostreams"
	"github.com/mailagent/mailagent/internal/smtpsend"
	"github.com/mailagent/mailagent/store"
)

// Factory is cmdutil.Factory with the streams under the names these
// tests were written with (the same values as IOStreams').
type Factory struct {
	*cmdutil.Factory

	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
}

// newFactory is the Factory over the three streams, with the real model
// builder (root.NewFactory) and the application service wired in
// (root.Service), as root.Main builds it.
func newFactory(stdin io.Reader, stdout, stderr io.Writer) *Factory {
	cf := root.NewFactory(iostreams.New(stdin, stdout, stderr))
	cf.Service = root.Service(cf)
	return wrapFactory(cf)
}

// wrapFactory is cf under the tests' names.
func wrapFactory(cf *cmdutil.Factory) *Factory {
	return &Factory{Factory: cf, Stdin: cf.IOStreams.In, Stdout: cf.IOStreams.Out, Stderr: cf.IOStreams.ErrOut}
}

// SMTPOptions is internal/app/wire's, under the name these tests use.
func SMTPOptions(ctx context.Context, acct *config.Account) (smtpsend.Options, error) {
	return wire.SMTPOptions(ctx, acct)
}

// UserError and the exit codes live in cmdutil.
type UserError = cmdutil.UserError

const (
	ExitOK          = cmdutil.ExitOK
	ExitFailure     = cmdutil.ExitFailure
	ExitUsage       = cmdutil.ExitUsage
	ExitUnreachable = cmdutil.ExitUnreachable
	ExitLocked      = cmdutil.ExitLocked
	ExitPartial     = cmdutil.ExitPartial
	ExitCorrupt     = cmdutil.ExitCorrupt
	ExitNotSent     = cmdutil.ExitNotSent
	ExitInterrupted = cmdutil.ExitInterrupted
)

// DBPath is where the state database lives.
func DBPath(cfg *config.Config) string { return cmdutil.DBPath(cfg) }

func (f *Factory) openStore(o store.Options) (*store.Store, error) { return f.OpenStoreWith(o) }

// IsTTY reports whether w is a terminal that may show progress and colour
// (not TERM=dumb).
func IsTTY(w io.Writer) bool { return iostreams.IsTerminal(w) && os.Getenv("TERM") != "dumb" }

// IMAPOptions and DialIMAP are internal/app/wire's (the one home of the
// logins), under the names these tests use.
func IMAPOptions(ctx context.Context, acct *config.Account) (imapsync.Options, error) {
	return wire.IMAPOptions(ctx, acct)
}

// DialIMAP connects and logs in to an account's IMAP server (wire.DialIMAP).
func DialIMAP(ctx context.Context, acct *config.Account) (*imapsync.Client, error) {
	return wire.DialIMAP(ctx, acct)
}

// The JSON output types live in internal/app/view; these are their old
// names, as these tests use them.

type (
	AddressJSON         = view.AddressJSON
	MessageKeyJSON      = view.MessageKeyJSON
	MessageJSON         = view.MessageJSON
	TriageJSON          = view.TriageJSON
	OccurrenceJSON      = view.OccurrenceJSON
	SnapshotJSON        = view.SnapshotJSON
	ExplainJSON         = view.ExplainJSON
	AccountStatusJSON   = view.AccountStatusJSON
	StatusJSON          = view.StatusJSON
	CostJSON            = view.CostJSON
	ReplayThresholdJSON = view.ReplayThresholdJSON
	ReplayAutoSendJSON  = view.ReplayAutoSendJSON
	ReplayJSON          = view.ReplayJSON
	DigestJSON          = view.DigestJSON
	MemoryJSON          = view.MemoryJSON
	CheckJSON           = view.CheckJSON
	FollowupJSON        = view.FollowupJSON
	UnsubscribeJSON     = view.UnsubscribeJSON
)

var toInvitationJSON = view.ToInvitationJSON

// parseFor is cmdutil's, under the name these tests use.

func parseFor(s string) (time.Duration, error) { return cmdutil.PositiveDuration(s) }

// Main runs the command line over the three streams and returns the
// process exit code, as main.go runs it (the in-process tests).
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return root.Main(args, iostreams.New(stdin, stdout, stderr), wireLegacy)
}

// wireLegacy adds no group: every command is internal/cmd's (issue 27).
// It is the hook through which a test reaches the Factory root.Main builds.
func wireLegacy(*cmdutil.Factory) []*cobra.Command { return nil }

// newRootCmd is the whole command tree over f.
func newRootCmd(f *Factory) *cobra.Command { return root.NewCmdRoot(f.Factory) }
