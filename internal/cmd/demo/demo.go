// Package demo is `mailagent demo`: the whole agent on a seeded mailbox
// in a private world (internal/app/demoworld), with watch in the
// background and the review TUI in front, or a table or JSON of what it
// did (--no-tui, --json). Its tests are in internal/cmd/root
// (demo_test.go), whose test binary holds every command's tests.
package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/mailagent/mailagent/internal/app/api"
	"github.com/mailagent/mailagent/internal/app/demoworld"
	"github.com/mailagent/mailagent/internal/app/view"
	cmdreview "github.com/mailagent/mailagent/internal/cmd/review"
	"github.com/mailagent/mailagent/internal/cmd/watch"
	"github.com/mailagent/mailagent/internal/cmdutil"
	"github.com/mailagent/mailagent/internal/iostreams"
	"github.com/mailagent/mailagent/internal/termsafe"
	"github.com/mailagent/mailagent/store"
)

// DemoOptions are the flags of `mailagent demo`.
type DemoOptions struct {
	IO      *iostreams.IOStreams
	Factory *cmdutil.Factory

	NoTUI bool
	JSON  bool
	Keep  bool
}

// NewCmdDemo is `mailagent demo`; runF, when not nil, runs instead of
// Run (tests of the flag parsing).
func NewCmdDemo(f *cmdutil.Factory, runF func(context.Context, *DemoOptions) error) *cobra.Command {
	opts := &DemoOptions{IO: f.IOStreams, Factory: f}
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run the whole agent on a seeded mailbox: no account, no key, no network",
		Long: `demo starts an IMAP server and an SMTP server in this process, on
loopback, seeds about 20 realistic messages (an intro, a scheduling request,
an invoice dispute, a newsletter, a bounce, a thread, a prompt-injection
attempt, a German message…), and runs the real watch pipeline over them in
"auto" mode. Then it opens the review queue: approving a draft really sends
it, to the in-process SMTP server standing in for the outside world.

Without GEMINI_API_KEY the model is an offline demo model: deterministic
keyword rules, no AI. It is labelled as such. With the key set, the demo
uses Gemini for real (your mail never leaves the machine except to the
model).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return Run(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.NoTUI, "no-tui", false, "print the triage table and the outcomes instead of opening the TUI")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the outcomes as JSON (implies --no-tui)")
	cmd.Flags().BoolVar(&opts.Keep, "keep", false, "keep the demo's state directory (its path is printed)")
	return cmd
}

// DemoOutcome is one seeded message's outcome, for --json.
type DemoOutcome struct {
	MessageID string   `json:"message_id"`
	From      string   `json:"from"`
	Subject   string   `json:"subject"`
	Route     string   `json:"route"`
	Intents   []string `json:"intents,omitempty"`
	Risk      string   `json:"risk,omitempty"`
	Decision  string   `json:"decision"`
	Reasons   []string `json:"reasons,omitempty"`
}

// DemoReport is what `demo --no-tui --json` prints.
type DemoReport struct {
	Model    string        `json:"model"`
	Outcomes []DemoOutcome `json:"outcomes"`
	Sent     []DemoSent    `json:"sent"`
	Queued   int           `json:"queued"`  // drafts waiting for approval
	Notices  int           `json:"notices"` // messages flagged for the owner
}

// DemoSent is one message the outside world received.
type DemoSent struct {
	To      []view.AddressJSON `json:"to"`
	Subject string             `json:"subject"`
	Auto    bool               `json:"auto_submitted"`
	Body    string             `json:"body"`
}

// StartWorld starts the demo's world and points f at it: its
// configuration, and the offline model when there is no GEMINI_API_KEY.
// The world's servers log through f's logger (the demo's log file).
func StartWorld(ctx context.Context, f *cmdutil.Factory) (*demoworld.World, error) {
	w, err := demoworld.Start(ctx, f.Logger, f.Now())
	if err != nil {
		return w, err
	}
	f.ConfigPath, f.StateDir = w.ConfigPath, ""
	if w.NewModel != nil {
		f.NewModel = w.NewModel
	}
	return w, nil
}

// Run runs the demo: the table or JSON of its outcomes (NoTUI, JSON), or
// the review TUI over a watcher in the background.
func Run(ctx context.Context, opts *DemoOptions) error {
	f, ios := opts.Factory, opts.IO
	if opts.JSON && !opts.NoTUI {
		// JSON is for a program to read: there is no TUI to show it.
		opts.NoTUI = true
	}
	if !opts.NoTUI && !ios.CanPrompt() {
		fmt.Fprintln(ios.ErrOut, "mailagent demo: no terminal to draw on: printing the table instead (as with --no-tui)")
		opts.NoTUI = true
	}
	env, err := StartWorld(ctx, f)
	defer func() {
		if env != nil {
			env.Close(opts.Keep)
		}
	}()
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	if opts.Keep {
		// The state directory itself (database, log), not its parent.
		fmt.Fprintf(ios.ErrOut, "demo state: %s (config: %s)\n", env.StateDir, env.ConfigPath)
	}
	fmt.Fprintf(ios.ErrOut, "mailagent demo: model = %s\n", env.Label)
	fmt.Fprintf(ios.ErrOut, "IMAP and SMTP servers run in this process on 127.0.0.1; nothing leaves the machine.\n\n")

	if opts.NoTUI {
		if err := watch.Run(ctx, &watch.WatchOptions{IO: ios, Factory: f, Once: true}); err != nil {
			return err
		}
		return demoReport(ios, f, env, opts.JSON)
	}

	// Watch in the background (it serves the queue over its socket) and
	// the review TUI in the foreground, connected to it.
	wctx, stopWatch := context.WithCancel(ctx)
	watchDone := make(chan error, 1)
	go func() { watchDone <- watch.Run(wctx, &watch.WatchOptions{IO: ios, Factory: f, Demo: true}) }()
	svc, closeSvc, err := waitForWatcher(ctx, f, watchDone)
	if err != nil {
		stopWatch()
		return err
	}
	err = cmdreview.RunTUI(ctx, f, svc, env.Label)
	// The watcher sends what the owner approved once its undo window has
	// passed; quitting the review inside that window must not drop it
	// silently, so the demo keeps the watcher until those sends are done.
	waitForApprovals(ctx, ios.ErrOut, svc, demoApprovalWait)
	_ = closeSvc()
	stopWatch()
	if werr := <-watchDone; werr != nil && err == nil {
		err = werr
	}
	printDelivered(ios.Out, env.Delivered())
	return err
}

// waitForWatcher waits until the background watcher's socket answers and
// its first sync is done.
func waitForWatcher(ctx context.Context, f *cmdutil.Factory, watchDone <-chan error) (api.Service, func() error, error) {
	cfg, err := f.Config()
	if err != nil {
		return nil, nil, err
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := api.Dial(ctx, api.SocketPath(cfg.StateDir))
		if err == nil {
			// The first sync is done when every seeded message is terminal.
			for time.Now().Before(deadline) {
				st, err := c.Status(ctx)
				if err == nil && st.Counts[store.StateDone]+st.Counts[store.StateNeedsReview] >= 20 {
					return c, c.Close, nil
				}
				time.Sleep(100 * time.Millisecond) // waiting for a background sync, nothing asserted on time
			}
			return c, c.Close, nil
		}
		select {
		case err := <-watchDone:
			return nil, nil, fmt.Errorf("demo watcher stopped: %w", err)
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return nil, nil, errors.New("demo watcher did not start")
		}
	}
}

func demoReport(ios *iostreams.IOStreams, f *cmdutil.Factory, env *demoworld.World, asJSON bool) error {
	st, err := f.OpenStore(true)
	if err != nil {
		return err
	}
	defer func() { _ = st.Close() }()
	rep := DemoReport{Model: env.Label, Outcomes: []DemoOutcome{}, Sent: []DemoSent{}}
	err = st.ListMessages(store.MessageFilter{Account: demoworld.Account, Mailbox: "INBOX"}, func(r *store.MessageRecord) error {
		o := DemoOutcome{MessageID: r.MessageID, From: r.From.Email, Subject: r.Subject, Route: r.Route, Decision: r.Decision, Reasons: r.Reasons}
		if c := r.Classification; c != nil {
			o.Intents, o.Risk = c.Intents, c.Risk
		}
		rep.Outcomes = append(rep.Outcomes, o)
		return nil
	})
	if err != nil {
		return err
	}
	_ = st.ListQueue(store.QueuePending, func(q *store.QueueItem) error {
		if q.Kind == store.KindDraft {
			rep.Queued++
		} else {
			rep.Notices++
		}
		return nil
	})
	for _, d := range env.Delivered() {
		rep.Sent = append(rep.Sent, DemoSent{To: view.EmailsJSON(d.To), Subject: d.Subject, Auto: d.Auto, Body: d.Body})
	}
	if asJSON {
		return cmdutil.WriteJSON(ios.Out, rep)
	}
	var tb cmdutil.Table
	tb.Row("FROM", "SUBJECT", "ROUTE", "INTENT", "RISK", "DECISION")
	sort.SliceStable(rep.Outcomes, func(i, j int) bool { return rep.Outcomes[i].Decision < rep.Outcomes[j].Decision })
	for _, o := range rep.Outcomes {
		tb.Row(termsafe.Line(o.From), cmdutil.Truncate(termsafe.Line(o.Subject), 38), o.Route, termsafe.Line(strings.Join(o.Intents, ",")), termsafe.Line(o.Risk), o.Decision)
	}
	if err := tb.Write(ios.Out); err != nil {
		return err
	}
	fmt.Fprintf(ios.Out, "\n%s and %s wait in the queue (run `mailagent demo` without --no-tui to review them).\n", cmdutil.Plural(rep.Queued, "draft"), cmdutil.Plural(rep.Notices, "notice"))
	printDelivered(ios.Out, env.Delivered())
	fmt.Fprintf(ios.Out, "\nmodel: %s\n", env.Label)
	return nil
}

func printDelivered(w io.Writer, ds []demoworld.Delivered) {
	fmt.Fprintf(w, "\nthe outside world received %d message(s):\n", len(ds))
	for _, d := range ds {
		kind := "approved by you"
		if d.Auto {
			kind = "sent automatically"
		}
		fmt.Fprintf(w, "  to %s: %q (%s)\n", termsafe.Line(strings.Join(d.To, ", ")), termsafe.Line(d.Subject), kind)
		for _, line := range strings.Split(strings.TrimSpace(termsafe.Text(d.Body)), "\n") {
			fmt.Fprintf(w, "    | %s\n", line)
		}
	}
}

// demoApprovalWait bounds how long the demo waits, after the review is
// closed, for approved replies still in their undo window.
const demoApprovalWait = 30 * time.Second

// waitForApprovals waits until no approved reply is waiting to be sent
// (scheduled, pending or sending), at most limit, saying on w what it
// waits for and, if it gives up or is interrupted, what was not sent.
func waitForApprovals(ctx context.Context, w io.Writer, svc api.Service, limit time.Duration) {
	waiting := func() int {
		n := 0
		for _, st := range []string{store.OutboxScheduled, store.OutboxPending, store.OutboxSending} {
			obs, err := svc.Outbox(ctx, st)
			if err != nil {
				return 0
			}
			for _, ob := range obs {
				if !ob.Auto {
					n++
				}
			}
		}
		return n
	}
	n := waiting()
	if n == 0 {
		return
	}
	fmt.Fprintf(w, "mailagent demo: sending %s you approved when the undo window ends (Ctrl-C leaves it unsent)\n", cmdutil.PluralWord(n, "reply", "replies"))
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for n > 0 {
		select {
		case <-ctx.Done():
			fmt.Fprintf(w, "mailagent demo: interrupted: %s not sent\n", cmdutil.PluralWord(n, "approved reply", "approved replies"))
			return
		case <-deadline.C:
			fmt.Fprintf(w, "mailagent demo: %s still not sent after %s\n", cmdutil.PluralWord(n, "approved reply", "approved replies"), limit)
			return
		case <-tick.C:
			n = waiting()
		}
	}
}
