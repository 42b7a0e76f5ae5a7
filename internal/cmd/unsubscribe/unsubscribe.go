// Package unsubscribe is `mailagent unsubscribe`: leave the mailing list a
// message came from, after the owner confirms. The execution (the
// one-click POST or the mail through the outbox) is
// internal/app/unsubscribe's. Its tests are in internal/cmd/root
// (unsubscribe_test.go), whose test binary holds every command's tests.
package unsubscribe

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	appunsub "github.com/mailagent/mailagent/internal/app/unsubscribe"
	"github.com/mailagent/mailagent/internal/app/view"
	"github.com/mailagent/mailagent/internal/app/wire"
	"github.com/mailagent/mailagent/internal/cmdutil"
	"github.com/mailagent/mailagent/internal/config"
	"github.com/mailagent/mailagent/internal/termsafe"
)

// UnsubscribeOptions are the flags of `mailagent unsubscribe`.
type UnsubscribeOptions struct {
	Ref  string // a Message-ID or trace id
	Yes  bool
	JSON bool
	// Poster makes the one-click client; nil is the default (https only,
	// public addresses only). Tests set it through runF.
	Poster func() *appunsub.Poster
}

// NewCmdUnsubscribe is `mailagent unsubscribe ID`. runF, when set, runs
// instead of Run (the test seam).
func NewCmdUnsubscribe(f *cmdutil.Factory, runF func(context.Context, *UnsubscribeOptions) error) *cobra.Command {
	opts := &UnsubscribeOptions{}
	cmd := &cobra.Command{
		Use:   "unsubscribe ID",
		Short: "Leave the mailing list a message came from (after you confirm)",
		Long: `Reads the message's List-Unsubscribe header again from the server and
unsubscribes: by the RFC 8058 one-click POST when the list offers it (https
only, never to an internal address), else by mail to the list's address
(a public address only: never an address literal or a local name, unless
policy.allow_domains names its domain). The mail goes through the outbox
like a reply: Auto-Submitted: auto-generated, one record, and the undo
window of policy.approval_delay (Ctrl-C, or with a watcher running
` + "`mailagent queue cancel ob_…`" + `, cancels it). It asks first (--yes in a
script), and records what it did. ID is the Message-ID or a trace id.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Ref = args[0]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return Run(cmd.Context(), f, opts)
		},
	}
	cmd.Flags().BoolVarP(&opts.Yes, "yes", "y", false, "do it without asking (needed when stdin is not a terminal)")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the record as JSON")
	return cmd
}

// Run plans the unsubscribe of opts.Ref, asks the owner (unless --yes),
// executes it and reports what it did.
func Run(ctx context.Context, f *cmdutil.Factory, opts *UnsubscribeOptions) error {
	svc, closeSvc, err := f.Service(ctx, true)
	if err != nil {
		return err
	}
	defer func() { _ = closeSvc() }()
	cfg, err := f.Config()
	if err != nil {
		return err
	}
	env := Env(cfg, f.Now)
	env.Poster = opts.Poster
	p, err := appunsub.NewPlan(ctx, env, svc, opts.Ref)
	if err != nil {
		return err
	}
	defer p.Close()
	if err := Confirm(f, opts, termsafe.Line(p.Record.List), p.What); err != nil {
		return err
	}
	stderr := f.IOStreams.ErrOut
	p.Notice = stderr
	if err := p.Execute(ctx, svc); err != nil {
		return err
	}
	u := p.Record
	if opts.JSON {
		return cmdutil.WriteJSON(f.IOStreams.Out, view.UnsubscribeJSON{Account: u.Account, MessageID: u.MessageID, List: u.List, Method: u.Method,
			Target: u.Target, Result: u.Result, At: u.At})
	}
	if u.Result != "ok" {
		fmt.Fprintf(stderr, "unsubscribe from %s: %s\n", termsafe.Line(u.List), termsafe.Line(u.Result))
		return nil
	}
	fmt.Fprintf(stderr, "unsubscribed from %s by %s\n", termsafe.Line(u.List), strings.ReplaceAll(u.Method, "_", "-"))
	return nil
}

// Env is what an unsubscribe needs of this process (appunsub.Env), for
// this command and the review TUI's U: cfg, the mail servers reached
// with the configured logins (wire.Logins) and the clock now; the
// one-click client is the default one.
func Env(cfg *config.Config, now func() time.Time) *appunsub.Env {
	return &appunsub.Env{Config: cfg, Mailer: wire.NewMailerLogins, Now: now}
}

// Confirm asks y/N at a terminal; a script must say --yes. It returns nil
// when opts.Yes is set or the owner answers y; off a terminal without
// --yes, a usage error whose hint names --yes; any other answer, an
// ExitFailure error "nothing sent".
func Confirm(f *cmdutil.Factory, opts *UnsubscribeOptions, list, what string) error {
	if opts.Yes {
		return nil
	}
	if !f.IOStreams.IsStdinTTY() {
		return &cmdutil.UserError{Code: cmdutil.ExitUsage, Err: fmt.Errorf("nothing sent: unsubscribing from %s sends %s", list, what),
			Hint: "run it at a terminal to confirm, or add --yes"}
	}
	ok, err := f.Prompter().Confirm(fmt.Sprintf("unsubscribe from %s with %s?", list, what), false)
	if err != nil {
		return err
	}
	if !ok {
		return &cmdutil.UserError{Code: cmdutil.ExitFailure, Err: errors.New("nothing sent")}
	}
	return nil
}
