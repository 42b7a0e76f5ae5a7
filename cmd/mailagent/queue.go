package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/internal/api"
	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/store"
)

// QueueOptions are the flags shared by the queue subcommands.
type QueueOptions struct {
	Action      string // list | show | approve | reject | edit | snooze | retry | cancel
	ID          string
	JSON        bool
	All         bool
	Reason      string
	Until       string
	Instruction string
}

func newQueueCmd(f *Factory, runF func(context.Context, *QueueOptions) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "queue",
		Short: "List and act on drafts waiting for approval (the TUI's twins, for scripts)",
		Long: `queue works with the review queue. It talks to a running watcher over
its socket, or opens the state database when none runs. Every action takes
the same code path as the review TUI: approvals send through the outbox,
edits keep the model's draft and your text, reasons are stored.`,
	}
	mk := func(use, short string, args cobra.PositionalArgs, setup func(*cobra.Command, *QueueOptions)) *cobra.Command {
		opts := &QueueOptions{Action: strings.Fields(use)[0]}
		c := &cobra.Command{
			Use: use, Short: short, Args: args,
			RunE: func(cmd *cobra.Command, args []string) error {
				if len(args) > 0 {
					opts.ID = args[0]
				}
				if runF != nil {
					return runF(cmd.Context(), opts)
				}
				return queueRun(cmd.Context(), f, opts)
			},
		}
		if setup != nil {
			setup(c, opts)
		}
		return c
	}
	cmd.AddCommand(
		mk("list", "List open queue items (drafts, notices, failures)", cobra.NoArgs, func(c *cobra.Command, o *QueueOptions) {
			c.Flags().BoolVar(&o.JSON, "json", false, "one JSON array on stdout")
			c.Flags().BoolVar(&o.All, "all", false, "include sent, rejected and resolved items")
		}),
		mk("show ID", "Show one item: message, classification, gates and draft", cobra.ExactArgs(1), func(c *cobra.Command, o *QueueOptions) {
			c.Flags().BoolVar(&o.JSON, "json", false, "print as JSON")
		}),
		mk("approve ID", "Send the draft (through the outbox; recipients as chosen by code)", cobra.ExactArgs(1), nil),
		mk("reject ID", "Close the item without sending", cobra.ExactArgs(1), func(c *cobra.Command, o *QueueOptions) {
			c.Flags().StringVar(&o.Reason, "reason", "", "why (kept for learning later)")
		}),
		mk("edit ID", "Edit the draft in $VISUAL / $EDITOR (the model's text is kept too)", cobra.ExactArgs(1), nil),
		mk("snooze ID", "Hide the item for a while", cobra.ExactArgs(1), func(c *cobra.Command, o *QueueOptions) {
			c.Flags().StringVar(&o.Until, "for", "4h", "how long: a duration (90m, 4h) or Nd for days")
		}),
		mk("regenerate ID", "Draft the reply again with an instruction", cobra.ExactArgs(1), func(c *cobra.Command, o *QueueOptions) {
			c.Flags().StringVar(&o.Instruction, "instruction", "", `e.g. "shorter" or "decline politely"`)
		}),
		mk("retry MESSAGE-KEY|TRACE-ID", "Process a message that needs review again", cobra.ExactArgs(1), nil),
		mk("cancel OUTBOX-ID", "Cancel a delayed auto-send (policy.send_delay) and queue its draft", cobra.ExactArgs(1), nil),
	)
	return cmd
}

func queueRun(ctx context.Context, f *Factory, opts *QueueOptions) error {
	needsActions := opts.Action != "list" && opts.Action != "show"
	svc, closeSvc, err := f.Service(ctx, needsActions)
	if err != nil {
		return err
	}
	defer closeSvc()
	err = queueDo(ctx, f, svc, opts)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return &UserError{Code: ExitUsage, Err: err, Hint: "list the ids with: mailagent queue list"}
	case errors.Is(err, agent.ErrNotActionable):
		return &UserError{Code: ExitUsage, Err: err}
	case errors.Is(err, api.ErrNoActions):
		return &UserError{Code: ExitFailure, Err: err, Hint: "check the configuration with: mailagent doctor"}
	}
	return err
}

func queueDo(ctx context.Context, f *Factory, svc api.Service, opts *QueueOptions) error {
	switch opts.Action {
	case "list":
		items, err := svc.Queue(ctx, api.QueueFilter{})
		if err != nil {
			return err
		}
		if !opts.All {
			open := items[:0]
			for _, q := range items {
				if q.Status == store.QueuePending || q.Status == store.QueueSnoozed || q.Status == store.QueueFailed || q.Status == store.QueueApproved {
					open = append(open, q)
				}
			}
			items = open
		}
		if opts.JSON {
			return writeJSON(f.Stdout, items)
		}
		printQueue(f.Stdout, items, f.Now())
		recs, err := svc.NeedsReview(ctx)
		if err != nil {
			return err
		}
		if len(recs) > 0 {
			fmt.Fprintf(f.Stdout, "\n%d message(s) need review (retry with: mailagent queue retry TRACE-ID):\n", len(recs))
			for _, r := range recs {
				fmt.Fprintf(f.Stdout, "  %s  %s  %s: %s\n", r.TraceID, r.From.Email, truncate(r.Subject, 40), truncate(r.Error, 80))
			}
		}
		return nil
	case "show":
		d, err := svc.QueueItem(ctx, opts.ID)
		if err != nil {
			return err
		}
		if opts.JSON {
			return writeJSON(f.Stdout, d)
		}
		printQueueItem(f.Stdout, d)
		return nil
	case "approve":
		item, err := svc.Approve(ctx, opts.ID, "")
		if err != nil {
			// The reply may be out and only its copy to the Sent folder
			// failed: that is a success with a warning (the copy is
			// retried), not a failure that invites a second approval.
			d, qerr := svc.QueueItem(ctx, opts.ID)
			if qerr != nil || d.Item.Status != store.QueueSent {
				return err
			}
			fmt.Fprintf(f.Stderr, "%s: sent to %s\nwarning: the copy to the Sent folder failed and will be retried: %v\n", d.Item.ID, joinAddrs(d.Item.To), err)
			return nil
		}
		fmt.Fprintf(f.Stderr, "%s: %s to %s\n", item.ID, item.Status, joinAddrs(item.To))
		return nil
	case "reject":
		if err := svc.Reject(ctx, opts.ID, opts.Reason); err != nil {
			return err
		}
		fmt.Fprintf(f.Stderr, "%s: rejected\n", opts.ID)
		return nil
	case "edit":
		d, err := svc.QueueItem(ctx, opts.ID)
		if err != nil {
			return err
		}
		text := d.Item.Final
		if text == "" {
			text = d.Item.Draft
		}
		edited, err := editText(ctx, f, text)
		if err != nil {
			return err
		}
		if edited == text {
			fmt.Fprintln(f.Stderr, "no change")
			return nil
		}
		if _, err := svc.Edit(ctx, opts.ID, edited); err != nil {
			return err
		}
		fmt.Fprintf(f.Stderr, "%s: edited (the model's draft is kept beside your text)\n", opts.ID)
		return nil
	case "snooze":
		d, err := parseFor(opts.Until)
		if err != nil {
			return usageErr("--for: %v", err)
		}
		until := f.Now().Add(d)
		if err := svc.Snooze(ctx, opts.ID, until); err != nil {
			return err
		}
		fmt.Fprintf(f.Stderr, "%s: snoozed until %s\n", opts.ID, until.Format(time.DateTime))
		return nil
	case "regenerate":
		item, err := svc.Regenerate(ctx, opts.ID, opts.Instruction)
		if err != nil {
			return err
		}
		fmt.Fprintln(f.Stdout, item.Draft)
		return nil
	case "retry":
		e, err := svc.Explain(ctx, opts.ID)
		if err != nil {
			return err
		}
		if err := svc.Retry(ctx, e.Trace.Message); err != nil {
			return err
		}
		fmt.Fprintf(f.Stderr, "%s: processed again\n", opts.ID)
		return nil
	case "cancel":
		if err := svc.Cancel(ctx, opts.ID); err != nil {
			return err
		}
		fmt.Fprintf(f.Stderr, "%s: cancelled; the draft is back in the queue\n", opts.ID)
		return nil
	}
	return usageErr("unknown queue action %q", opts.Action)
}

func parseFor(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if strings.HasSuffix(s, "d") {
		var n int
		if _, err := fmt.Sscanf(s, "%dd", &n); err == nil && n > 0 {
			return time.Duration(n) * 24 * time.Hour, nil
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%q is not a positive duration (90m, 4h, 2d)", s)
	}
	return d, nil
}

// editText opens $VISUAL or $EDITOR on a private temp file.
func editText(ctx context.Context, f *Factory, text string) (string, error) {
	editor := os.Getenv("VISUAL")
	if editor == "" {
		editor = os.Getenv("EDITOR")
	}
	if editor == "" {
		return "", usageErr("set $VISUAL or $EDITOR to edit drafts")
	}
	dir, err := os.MkdirTemp("", "mailagent-edit-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "draft.txt")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		return "", err
	}
	parts := strings.Fields(editor)
	cmd := exec.CommandContext(ctx, parts[0], append(parts[1:], path)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("editor %s: %w", parts[0], err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	return strings.TrimRight(string(b), "\n"), nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func printQueue(w io.Writer, items []store.QueueItem, now time.Time) {
	if len(items) == 0 {
		fmt.Fprintln(w, "the queue is empty")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tKIND\tSTATUS\tAGE\tFROM\tSUBJECT\tINTENT\tRISK")
	for _, q := range items {
		intent, risk := "", ""
		if c := q.Classification; c != nil {
			intent, risk = strings.Join(c.Intents, ","), c.Risk
		}
		status := q.Status
		if q.Kind == store.KindDraft && q.IMAPDraftUID == 0 && strings.HasPrefix(q.Error, "could not save the draft") {
			status += " (no IMAP copy yet)" // retried by watch; `queue show` says why
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", q.ID, q.Kind, status, age(now, q.CreatedAt),
			q.From.Email, truncate(q.Subject, 40), intent, risk)
	}
	_ = tw.Flush()
}

func printQueueItem(w io.Writer, d *api.QueueDetail) {
	q := d.Item
	fmt.Fprintf(w, "%s  %s, %s\nfrom %s\nto %s\nsubject %s\n", q.ID, q.Kind, q.Status, q.From.Email, joinAddrs(q.To), q.Subject)
	if c := q.Classification; c != nil {
		fmt.Fprintf(w, "classification %s, risk %s, action %s, confidence %.2f\n  %s\n", strings.Join(c.Intents, "+"), c.Risk, c.Action, c.Confidence, c.Comments)
	}
	for _, g := range q.Gates {
		mark := "pass"
		if !g.Pass {
			mark = "FAIL"
		}
		fmt.Fprintf(w, "  %s %s: %s\n", mark, g.Gate, g.Reason)
	}
	if q.Error != "" {
		fmt.Fprintf(w, "error %s\n", q.Error)
	}
	for _, m := range d.Thread {
		fmt.Fprintf(w, "\n--- %s, %s\n%s\n", m.From.Email, m.Date.Format(time.DateTime), m.Excerpt)
	}
	if q.Draft != "" {
		fmt.Fprintf(w, "\n=== draft\n%s\n", q.Draft)
	}
	if q.Final != "" {
		fmt.Fprintf(w, "\n=== your edit\n%s\n", q.Final)
	}
}

func joinAddrs(as []mail.Address) string {
	var out []string
	for _, a := range as {
		out = append(out, a.Email)
	}
	return strings.Join(out, ", ")
}

func age(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := now.Sub(t)
	switch {
	case d < time.Minute:
		return "now"
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

func truncate(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
