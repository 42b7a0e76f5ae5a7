// Package review is `mailagent review`: the approval queue in the
// terminal (the tui package over internal/app/review's Backend). It is
// the one command group that imports tui (archtest's tuiFronts).
// Its tests are in internal/cmd/root (review_test.go), whose test binary
// holds every command's tests.
package review

import (
	"context"
	"errors"
	"os"

	"github.com/spf13/cobra"

	"github.com/mailagent/mailagent/internal/app/api"
	"github.com/mailagent/mailagent/internal/app/review"
	cmdunsub "github.com/mailagent/mailagent/internal/cmd/unsubscribe"
	"github.com/mailagent/mailagent/internal/cmdutil"
	"github.com/mailagent/mailagent/tui"
)

// ReviewOptions are the flags of `mailagent review`.
type ReviewOptions struct{}

// NewCmdReview is `mailagent review`. runF, when set, runs instead of Run
// (the test seam).
func NewCmdReview(f *cmdutil.Factory, runF func(context.Context, *ReviewOptions) error) *cobra.Command {
	opts := &ReviewOptions{}
	return &cobra.Command{
		Use:   "review",
		Short: "The approval queue: read, edit, approve or reject drafts (TUI)",
		Long: `review opens the approval queue in the terminal. With a watcher running
it connects to it and shows new drafts, auto-sends and resolutions live;
without one it opens the state database directly, for each operation
only, so that a watcher can start meanwhile. The status line follows the
watcher: "● watcher connected" while one runs, "○ no watcher: actions run
locally" within a second or two after it stops (approvals then send from
this process), and connected again, with the queue reloaded, when it is
back. While a triage (or an approval waiting out its undo window) holds
the database, it serves the same socket and the status line names it:
"● served by a triage (pid N)".

The detail view shows the recipients; an address you have never written
to is marked [new], and approving a send to it asks "y/N" first.

Keys follow vim/less/neomutt: j/k, gg/G, ctrl-d/ctrl-u, enter opens, q or
esc goes back (ctrl+c quits anywhere); a approve and send, e edit
($VISUAL/$EDITOR), r/n reject, R regenerate with an instruction, s snooze,
u unsnooze, t try again (needs attention), c cancel a pending send,
/ filter, tab or 1-5 switch views, ? help. The hint bar offers only what
applies to the selected item.

Every send you start here, an approved reply or an answered invitation
(A/D/T), waits policy.approval_delay (5s by default) before it goes: the
queue and the detail count it down and c cancels it, with or without a
watcher. With no watcher running the TUI sends it itself when the
countdown ends, so q then waits: "sending in 4s… (c cancel, q again to
quit and cancel)", and quits once it is sent; q again cancels it (nothing
is sent) and quits.

Every item opens to the same detail, whatever its state: recipients,
the thread, the classification and its rationale, every gate with its
reason, the draft or the text sent, and the message and trace ids that
mailagent explain takes. View 5 lists what the agent decided without
asking (archived, ignored, notified, answered on its own); so does
mailagent decisions.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return Run(cmd.Context(), f, opts)
		},
	}
}

// Run opens the TUI once the service opens (a bad configuration or a
// held database fails here, before the screen is drawn). It needs a
// terminal on stdin and stdout.
func Run(ctx context.Context, f *cmdutil.Factory, _ *ReviewOptions) error {
	if !f.IOStreams.CanPrompt() {
		return &cmdutil.UserError{Code: cmdutil.ExitUsage, Err: errors.New("review needs a terminal (stdin and stdout are not both one)"),
			Hint: "for scripts: mailagent queue list, then mailagent queue show|approve|reject ID"}
	}
	// Fail early (bad config, a database held by another command); the
	// TUI then opens what it needs for each operation.
	svc, closeSvc, err := f.Service(ctx, false)
	if err != nil {
		return err
	}
	if f.RemoteURL() != "" {
		// The remote client serves the whole session (one ssh per
		// connection, kept alive), instead of one dial per operation.
		defer func() { _ = closeSvc() }()
		return RunTUI(ctx, f, svc, "")
	}
	if err := closeSvc(); err != nil {
		return err
	}
	return RunTUI(ctx, f, svc, "")
}

// RunTUI opens the TUI; label, when set, names the model on the status
// line (the demo says it is not an AI). svc is used only when the
// configuration cannot be read again; otherwise every operation reaches
// the watcher, or the store when none runs, afresh (Factory.Service).
func RunTUI(ctx context.Context, f *cmdutil.Factory, svc api.Service, label string) error {
	editor := os.Getenv("VISUAL")
	if editor == "" {
		editor = os.Getenv("EDITOR")
	}
	ascii, noColor := tui.DetectPlain(os.Getenv)
	b := &review.Backend{Svc: svc, Now: f.Now, Label: label, Log: f.Logger()}
	if t, ok, _ := f.RemoteTarget(); ok {
		// --remote: svc is the remote watcher's client; its events
		// reconnect over ssh (api.Client.Events).
		b.Remote = t.String()
	} else if cfg, err := f.Config(); err == nil {
		b.Open = f.Service
		b.Sock = api.SocketPath(cfg.StateDir)
		// Unsubscribing reaches the mail server (internal/app/unsubscribe).
		b.UnsubscribeEnv = cmdunsub.Env(cfg, f.Now)
	}
	return tui.Run(ctx, b, tui.Options{
		Editor: editor, ASCII: ascii, NoColor: noColor, Now: f.Now, Logger: f.Logger(),
	})
}
