package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/mailagent/mailagent/imapsync"
	"github.com/mailagent/mailagent/internal/app/api"
	"github.com/mailagent/mailagent/internal/app/wire"
	"github.com/mailagent/mailagent/internal/cmdutil"
	"github.com/mailagent/mailagent/internal/config"
	"github.com/mailagent/mailagent/internal/iostreams"
	"github.com/mailagent/mailagent/internal/llm"
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

	// approveNotice, when set, is where an approval made with no watcher
	// running announces its undo window (`queue approve`; the TUI leaves
	// it nil: it must not print over the screen).
	approveNotice io.Writer
	// deferApprovalSend: an approval made with no watcher running returns
	// once it is approved instead of waiting out the undo window (review:
	// the TUI counts down and sends through serviceBackend.SendApproved).
	deferApprovalSend bool
}

// newFactory is the Factory over the three streams, with the application
// service wired in (Service, in wire.go).
func newFactory(stdin io.Reader, stdout, stderr io.Writer) *Factory {
	return wrapFactory(cmdutil.New(iostreams.New(stdin, stdout, stderr)))
}

// wrapFactory is f for the commands still in package main.
func wrapFactory(cf *cmdutil.Factory) *Factory {
	f := &Factory{Factory: cf, Stdin: cf.IOStreams.In, Stdout: cf.IOStreams.Out, Stderr: cf.IOStreams.ErrOut}
	cf.Service = func(ctx context.Context, withActions bool) (api.Service, func() error, error) {
		return f.Service(ctx, withActions)
	}
	return f
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

func unreachable(err error, hint string) error { return cmdutil.Unreachable(err, hint) }

// DBPath is where the state database lives.
func DBPath(cfg *config.Config) string { return cmdutil.DBPath(cfg) }

func taskConfig(cfg *config.Config, task string) *config.Config { return cmdutil.TaskConfig(cfg, task) }

func (f *Factory) openStore(o store.Options) (*store.Store, error) { return f.OpenStoreWith(o) }

func (f *Factory) openSnapshotStore() (*store.Store, error) { return f.OpenSnapshotStore() }

func (f *Factory) draftModel(ctx context.Context, cfg *config.Config, classify llm.Model) (llm.Model, error) {
	return f.DraftModel(ctx, cfg, classify)
}

// IsTTY reports whether w is a terminal that may show progress and colour
// (not TERM=dumb).
func IsTTY(w io.Writer) bool { return iostreams.IsTerminal(w) && os.Getenv("TERM") != "dumb" }

// terminalAttached reports whether the TUI can draw: stdin and stdout are
// both terminals.
func terminalAttached(f *Factory) bool { return f.IOStreams.CanPrompt() }

// IMAPOptions and DialIMAP are internal/app/wire's (the one home of the
// logins), under the names the commands still in package main use.
func IMAPOptions(ctx context.Context, acct *config.Account) (imapsync.Options, error) {
	return wire.IMAPOptions(ctx, acct)
}

// DialIMAP connects and logs in to an account's IMAP server (wire.DialIMAP).
func DialIMAP(ctx context.Context, acct *config.Account) (*imapsync.Client, error) {
	return wire.DialIMAP(ctx, acct)
}

// table, truncate, plural and pluralWord are cmdutil's, under the names
// the commands still in package main use.
type table struct{ cmdutil.Table }

func (t *table) row(cells ...string)     { t.Row(cells...) }
func (t *table) write(w io.Writer) error { return t.Write(w) }

func truncate(s string, n int) string           { return cmdutil.Truncate(s, n) }
func plural(n int, word string) string          { return cmdutil.Plural(n, word) }
func pluralWord(n int, one, many string) string { return cmdutil.PluralWord(n, one, many) }
