// Package followups is `mailagent followups`: the threads waiting for
// the owner's reply or for the correspondent's, and the done, snooze,
// nudge and replies verbs, all through api.Service.
// Its tests are in internal/cmd/root (followups_test.go), whose test
// binary holds every command's tests.
package followups

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/mailagent/mailagent/internal/app/api"
	"github.com/mailagent/mailagent/internal/app/view"
	"github.com/mailagent/mailagent/internal/cmdutil"
	"github.com/mailagent/mailagent/internal/humantime"
	"github.com/mailagent/mailagent/internal/termsafe"
	"github.com/mailagent/mailagent/store"
)

// FollowupsOptions are the flags of `mailagent followups` and its
// subcommands.
type FollowupsOptions struct {
	Action  string // list | done | snooze | nudge | replies
	ID      string // a followup id, or a Message-ID for replies
	Account string
	JSON    bool
	State   string // needs-reply | awaiting | done | gave-up | open | all
	From    string
	Since   string
	Until   string
	Recent  string // done within this long (recently replied)
	For     string // snooze
}

// followupStates maps --state to store states.
var followupStates = map[string][]string{
	"needs-reply": {store.FollowupNeedsReply},
	"awaiting":    {store.FollowupAwaitingReply},
	"done":        {store.FollowupDone},
	"gave-up":     {store.FollowupGaveUp},
	"open":        {store.FollowupNeedsReply, store.FollowupAwaitingReply},
	"all":         {store.FollowupNeedsReply, store.FollowupAwaitingReply, store.FollowupDone, store.FollowupGaveUp},
}

// NewCmdFollowups is `mailagent followups` and its subcommands. runF,
// when set, runs instead of Run (the test seam).
func NewCmdFollowups(f *cmdutil.Factory, runF func(context.Context, *FollowupsOptions) error) *cobra.Command {
	opts := &FollowupsOptions{Action: "list"}
	run := func(cmd *cobra.Command, o *FollowupsOptions) error {
		if runF != nil {
			return runF(cmd.Context(), o)
		}
		return Run(cmd.Context(), f, o)
	}
	cmd := &cobra.Command{
		Use:   "followups",
		Short: "Threads waiting for your reply, or for theirs",
		Long: `Reply tracking, derived from the mailbox: a thread needs your reply when
the last message is someone else's and expects an answer you have not sent
(from any client); it awaits their reply when you asked something last and
no answer came. Each has a deadline (a date from the mail, checked, or
followup.default_after); a stale thread gets a reminder, then a follow-up
draft queued for your approval, then is given up after followup.max_nudges.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return run(cmd, opts) },
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Account, "account", "", "only this account")
	fl.BoolVar(&opts.JSON, "json", false, "print as JSON")
	fl.StringVar(&opts.State, "state", "open", "needs-reply, awaiting, done, gave-up, open or all")
	fl.StringVar(&opts.From, "from", "", "only threads with this correspondent (an address or a domain)")
	fl.StringVar(&opts.Since, "since", "", "last message since a duration ago (7d, 36h) or a date (2026-01-02)")
	fl.StringVar(&opts.Until, "until", "", "last message before a duration ago or a date")
	fl.StringVar(&opts.Recent, "recent", "", "recently replied: threads closed within this long (7d); implies --state done")

	mk := func(use, short string, args cobra.PositionalArgs, json bool) (*cobra.Command, *FollowupsOptions) {
		o := &FollowupsOptions{Action: strings.Fields(use)[0]}
		c := &cobra.Command{Use: use, Short: short, Args: args,
			RunE: func(cmd *cobra.Command, args []string) error {
				o.ID = args[0]
				return run(cmd, o)
			}}
		c.Flags().StringVar(&o.Account, "account", "", "account (default: the only one, or the first)")
		if json {
			c.Flags().BoolVar(&o.JSON, "json", false, "print as JSON")
		}
		return c, o
	}
	done, _ := mk("done ID", "Mark a thread done (stops its timer)", cobra.ExactArgs(1), false)
	snooze, so := mk("snooze ID", "Hide a thread and delay its timer", cobra.ExactArgs(1), false)
	snooze.Flags().StringVar(&so.For, "for", "1d", "how long (90m, 4h, 2d)")
	nudge, _ := mk("nudge ID", "Queue a follow-up draft for approval now", cobra.ExactArgs(1), false)
	replies, _ := mk("replies MESSAGE-ID", "The stored replies to a message", cobra.ExactArgs(1), true)
	cmd.AddCommand(done, snooze, nudge, replies)
	return cmd
}

// Run lists the followups (opts.Action "list"), a message's stored
// replies ("replies"), or marks one done, snoozes or nudges it.
func Run(ctx context.Context, f *cmdutil.Factory, opts *FollowupsOptions) error {
	now := f.Now()
	var filter api.FollowupFilter
	if opts.Action == "list" {
		states, ok := followupStates[opts.State]
		if !ok {
			return cmdutil.UsageErr("--state: %q is not one of needs-reply, awaiting, done, gave-up, open, all", opts.State)
		}
		filter = api.FollowupFilter{Account: opts.Account, States: states, Correspondent: opts.From}
		var err error
		if filter.Since, err = cmdutil.ParseSince(opts.Since, now); err != nil {
			return cmdutil.UsageErr("--since: %v", err)
		}
		if filter.Until, err = cmdutil.ParseSince(opts.Until, now); err != nil {
			return cmdutil.UsageErr("--until: %v", err)
		}
		if opts.Recent != "" {
			if filter.ClosedSince, err = cmdutil.ParseSince(opts.Recent, now); err != nil {
				return cmdutil.UsageErr("--recent: %v", err)
			}
			filter.States = []string{store.FollowupDone}
		}
	}
	var until time.Time
	if opts.Action == "snooze" {
		d, err := cmdutil.PositiveDuration(opts.For)
		if err != nil {
			return cmdutil.UsageErr("--for: %v", err)
		}
		until = now.Add(d)
	}
	svc, closeSvc, err := f.Service(ctx, false)
	if err != nil {
		return err
	}
	defer func() { _ = closeSvc() }()
	switch opts.Action {
	case "list":
		fs, err := svc.Followups(ctx, filter)
		if err != nil {
			return err
		}
		if opts.JSON {
			return cmdutil.WriteJSON(f.IOStreams.Out, view.ToFollowupsJSON(fs, now))
		}
		printFollowups(f.IOStreams.Out, fs, now)
		return nil
	case "replies":
		account := opts.Account
		if account == "" {
			cfg, err := f.Config()
			if err != nil {
				return err
			}
			accts, err := cmdutil.PickAccounts(cfg, "")
			if err != nil || len(accts) == 0 {
				return cmdutil.UsageErr("no accounts configured")
			}
			account = accts[0].Name
		}
		recs, err := svc.Replies(ctx, account, opts.ID)
		if errors.Is(err, api.ErrBadRequest) {
			return &cmdutil.UserError{Code: cmdutil.ExitUsage, Err: err}
		}
		if err != nil {
			return err
		}
		if opts.JSON {
			out := make([]view.MessageJSON, 0, len(recs))
			for i := range recs {
				out = append(out, view.ToMessageJSON(&recs[i]))
			}
			return cmdutil.WriteJSON(f.IOStreams.Out, out)
		}
		if len(recs) == 0 {
			fmt.Fprintln(f.IOStreams.Out, "no stored replies")
		}
		for _, r := range recs {
			fmt.Fprintf(f.IOStreams.Out, "%s  %s  %s\n", r.Date.Format("2006-01-02 15:04"), termsafe.Address(r.From.Name, r.From.Email), termsafe.Line(r.Subject))
		}
		return nil
	}
	action := map[string]string{"done": api.FollowupActDone, "snooze": api.FollowupActSnooze, "nudge": api.FollowupActNudge}[opts.Action]
	if action == "" {
		return cmdutil.UsageErr("unknown followups action %q", opts.Action)
	}
	res, err := svc.FollowupAction(ctx, opts.ID, action, until)
	if errors.Is(err, store.ErrNotFound) {
		return &cmdutil.UserError{Code: cmdutil.ExitUsage, Err: fmt.Errorf("no followup %s (ids from: mailagent followups)", opts.ID)}
	}
	if err != nil {
		return err
	}
	switch action {
	case api.FollowupActNudge:
		fmt.Fprintf(f.IOStreams.ErrOut, "%s: follow-up draft queued as %s; review it with `mailagent queue show %s`\n", opts.ID, res.QueueID, res.QueueID)
	case api.FollowupActSnooze:
		fmt.Fprintf(f.IOStreams.ErrOut, "%s: snoozed until %s\n", opts.ID, until.Format(time.DateTime))
	default:
		fmt.Fprintf(f.IOStreams.ErrOut, "%s: %s\n", opts.ID, res.Followup.State)
	}
	return nil
}

// stateLabel is a followup state as the table shows it.
func stateLabel(s string) string { return strings.ReplaceAll(s, "_", "-") }

func printFollowups(w io.Writer, fs []store.Followup, now time.Time) {
	if len(fs) == 0 {
		fmt.Fprintln(w, "no followups")
		return
	}
	var tb cmdutil.Table
	tb.Row("ID", "STATE", "WITH", "SUBJECT", "AGE", "DEADLINE", "TIER")
	for _, fu := range fs {
		with := make([]string, 0, len(fu.Correspondents))
		for _, c := range fu.Correspondents {
			with = append(with, termsafe.Line(c))
		}
		deadline := fu.Deadline.Local().Format("2006-01-02")
		if fu.Deadline.Before(now) && store.FollowupOpen(fu.State) {
			deadline += " (overdue)"
		}
		tier := []string{"-", "reminded", "nudged"}[min(max(fu.Tier, 0), 2)]
		if !fu.SnoozeUntil.IsZero() && fu.SnoozeUntil.After(now) {
			tier = "snoozed"
		}
		tb.Row(fu.ID, stateLabel(fu.State), cmdutil.Truncate(strings.Join(with, ","), 32), cmdutil.Truncate(termsafe.Line(fu.Subject), 40),
			humantime.Age(now, fu.LastAt), deadline, tier)
	}
	_ = tb.Write(w)
}
