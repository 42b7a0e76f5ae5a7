package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/mailagent/mailagent/imapsync"
	"github.com/mailagent/mailagent/internal/app/wire"
	"github.com/mailagent/mailagent/internal/cmd/root"
	"github.com/mailagent/mailagent/internal/cmdutil"
	"github.com/mailagent/mailagent/internal/config"
	"github.com/mailagent/mailagent/internal/iostreams"
	"github.com/mailagent/mailagent/internal/smtpsend"
	"github.com/mailagent/mailagent/store"
)

// This file is the bridge of issue 27's move: the command groups still in
// package main keep their names (Factory with Stdin/Stdout/Stderr,
// UserError, usageErr…) while they move to internal/cmd/<group>, where
// they take a *cmdutil.Factory and an Options struct with IOStreams. It
// goes when the last group has left.

// Factory is cmdutil.Factory plus the fields the commands still in
// package main read: the streams under their old names (the same values
// as IOStreams'), and the approval settings of queue and review.
type Factory struct {
	*cmdutil.Factory

	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
}

// newFactory is the Factory over the three streams, with the application
// service wired in (root.Service), as root.Main builds it.
func newFactory(stdin io.Reader, stdout, stderr io.Writer) *Factory {
	cf := cmdutil.New(iostreams.New(stdin, stdout, stderr))
	cf.Service = root.Service(cf)
	return wrapFactory(cf)
}

// wrapFactory is f for the commands still in package main.
func wrapFactory(cf *cmdutil.Factory) *Factory {
	return &Factory{Factory: cf, Stdin: cf.IOStreams.In, Stdout: cf.IOStreams.Out, Stderr: cf.IOStreams.ErrOut}
}

// SMTPOptions is internal/app/wire's, under the name the files still in
// package main use.
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

var errPartial = cmdutil.ErrPartial

func usageErr(format string, args ...any) error {
	return &UserError{Code: ExitUsage, Err: fmt.Errorf(format, args...)}
}

// DBPath is where the state database lives.
func DBPath(cfg *config.Config) string { return cmdutil.DBPath(cfg) }

func (f *Factory) openStore(o store.Options) (*store.Store, error) { return f.OpenStoreWith(o) }

// IsTTY reports whether w is a terminal that may show progress and colour
// (not TERM=dumb).
func IsTTY(w io.Writer) bool { return iostreams.IsTerminal(w) && os.Getenv("TERM") != "dumb" }

// IMAPOptions and DialIMAP are internal/app/wire's (the one home of the
// logins), under the names the commands still in package main use.
func IMAPOptions(ctx context.Context, acct *config.Account) (imapsync.Options, error) {
	return wire.IMAPOptions(ctx, acct)
}

// DialIMAP connects and logs in to an account's IMAP server (wire.DialIMAP).
func DialIMAP(ctx context.Context, acct *config.Account) (*imapsync.Client, error) {
	return wire.DialIMAP(ctx, acct)
}
