// Package queue is `mailagent queue`: the approval queue's verbs for
// scripts (list, show, approve, reject, edit, snooze, unsnooze,
// regenerate, retry, rsvp, cancel), the review TUI's twins over the same
// api.Service.
// Its tests are in internal/cmd/root (queue_test.go), whose test binary
// holds every command's tests.
package queue

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/mailagent/mailagent/internal/app/actions"
	"github.com/mailagent/mailagent/internal/app/api"
	"github.com/mailagent/mailagent/internal/app/review"
	"github.com/mailagent/mailagent/internal/app/view"
	"github.com/mailagent/mailagent/internal/cmdutil"
	"github.com/mailagent/mailagent/internal/humantime"
	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/internal/termsafe"
	"github.com/mailagent/mailagent/store"
	"github.com/mailagent/mailagent/tui"
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
	Yes         bool   // approve: send to addresses the owner never wrote to without asking
	Text        string // edit: the new text, instead of an editor
	TextSet     bool
	Answer      string // rsvp: accept | decline | tentative
}

// NewCmdQueue is `mailagent queue` and its subcommands. runF, when set,
// runs instead of Run (the test seam).
func NewCmdQueue(f *cmdutil.Factory, runF func(context.Context, *QueueOptions) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "queue",
		Short: "List and act on drafts waiting for approval (the TUI's twins, for scripts)",
		Long: `queue works with the review queue. It talks to a running watcher over
its socket, or opens the state database when none runs. Every action takes
the same code path as the review TUI: approvals send through the outbox,
edits keep the model's draft and your text, reasons are stored.

list and show mark [new] each recipient you have never written to.
approve then asks "y/N" when stdin is a terminal, and refuses without
--yes when it is not (a script must say so explicitly).`,
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
				return Run(cmd.Context(), f, opts)
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
		mk("approve ID", "Send the draft (through the outbox; recipients as chosen by code)", cobra.ExactArgs(1), func(c *cobra.Command, o *QueueOptions) {
			c.Flags().BoolVarP(&o.Yes, "yes", "y", false, "send even to addresses you have never written to, without asking (needed when stdin is not a terminal)")
		}),
		mk("reject ID", "Close the item without sending", cobra.ExactArgs(1), func(c *cobra.Command, o *QueueOptions) {
			c.Flags().StringVar(&o.Reason, "reason", "", "why (kept for learning later)")
		}),
		mk("edit ID", "Edit the draft in $VISUAL / $EDITOR, else vi (the model's text is kept too)", cobra.ExactArgs(1), func(c *cobra.Command, o *QueueOptions) {
			c.Flags().StringVar(&o.Text, "text", "", "the new text, without an editor")
			c.PreRun = func(c *cobra.Command, _ []string) { o.TextSet = c.Flags().Changed("text") }
		}),
		mk("snooze ID", "Hide the item for a while", cobra.ExactArgs(1), func(c *cobra.Command, o *QueueOptions) {
			c.Flags().StringVar(&o.Until, "for", "4h", "how long: a duration (90m, 4h), Nd for days, or tomorrow (08:00) — the words the review TUI takes")
		}),
		mk("unsnooze ID", "Bring a snoozed item back to the queue now", cobra.ExactArgs(1), nil),
		mk("regenerate ID", "Draft the reply again with an instruction", cobra.ExactArgs(1), func(c *cobra.Command, o *QueueOptions) {
			c.Flags().StringVar(&o.Instruction, "instruction", "", `e.g. "shorter" or "decline politely"`)
		}),
		mk("retry MESSAGE-KEY|TRACE-ID", "Process a message that needs review again", cobra.ExactArgs(1), nil),
		newQueueRSVPCmd(f, runF), // rsvp.go
		mk("cancel ID", "Cancel a scheduled send: an approval in its undo window (policy.approval_delay; ID is the queue id) or a delayed auto-send (policy.send_delay; ID is the outbox id)", cobra.ExactArgs(1), nil),
	)
	return cmd
}

// Run opens the service (with actions for every verb but list and show)
// and does opts.Action, turning the queue's errors into exit codes.
func Run(ctx context.Context, f *cmdutil.Factory, opts *QueueOptions) error {
	needsActions := opts.Action != "list" && opts.Action != "show"
	svc, closeSvc, err := f.Service(ctx, needsActions)
	if err != nil {
		return err
	}
	defer func() { _ = closeSvc() }()
	if opts.Action == "approve" || opts.Action == "rsvp" {
		actions.Announce(svc, f.IOStreams.ErrOut) // the undo window is announced here
	}
	err = queueDo(ctx, f, svc, opts)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return &cmdutil.UserError{Code: cmdutil.ExitUsage, Err: err, Hint: "list the ids with: mailagent queue list"}
	case errors.Is(err, actions.ErrNotActionable) && (opts.Action == "approve" || opts.Action == "rsvp"):
		// Approving (or answering) an item already sent, rejected or
		// resolved sends nothing: the approval's own "nothing was sent"
		// (not a usage error: the command line was right).
		return &cmdutil.UserError{Code: cmdutil.ExitNotSent, Err: err, Hint: "see the item with: mailagent queue show " + opts.ID}
	case errors.Is(err, actions.ErrNotActionable):
		return &cmdutil.UserError{Code: cmdutil.ExitUsage, Err: err, Hint: "see the item with: mailagent queue show " + opts.ID}
	case errors.Is(err, api.ErrNoActions):
		return &cmdutil.UserError{Code: cmdutil.ExitFailure, Err: err, Hint: "check the configuration with: mailagent doctor"}
	}
	return err
}

func queueDo(ctx context.Context, f *cmdutil.Factory, svc api.Service, opts *QueueOptions) error {
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
			return cmdutil.WriteJSON(f.IOStreams.Out, view.ToQueueItemsJSON(items))
		}
		known, err := review.RecipientStatus(ctx, svc, items)
		if err != nil {
			return err
		}
		PrintQueue(f.IOStreams.Out, items, known, mailDates(ctx, svc, items), f.Now(), f.IOStreams.TerminalWidth())
		recs, err := svc.NeedsReview(ctx)
		if err != nil {
			return err
		}
		if len(recs) > 0 {
			fmt.Fprintf(f.IOStreams.Out, "\n%s need review (retry with: mailagent queue retry TRACE-ID):\n", cmdutil.Plural(len(recs), "message"))
			for _, r := range recs {
				fmt.Fprintf(f.IOStreams.Out, "  %s  %s  %s: %s\n", termsafe.Line(r.TraceID), termsafe.Address(r.From.Name, r.From.Email),
					cmdutil.Truncate(termsafe.Line(r.Subject), 40), cmdutil.Truncate(termsafe.Line(r.Error), 80))
			}
		}
		return nil
	case "rsvp":
		return queueRSVP(ctx, f, svc, opts) // queue_rsvp.go
	case "show":
		d, err := svc.QueueItem(ctx, opts.ID)
		if err != nil {
			return err
		}
		if opts.JSON {
			return cmdutil.WriteJSON(f.IOStreams.Out, view.ToQueueShowJSON(d))
		}
		known, err := review.RecipientStatus(ctx, svc, []store.QueueItem{d.Item})
		if err != nil {
			return err
		}
		printQueueItem(f.IOStreams.Out, d, known[d.Item.Account])
		return nil
	case "approve":
		if err := confirmRecipients(ctx, f, svc, opts); err != nil {
			return err
		}
		item, err := svc.Approve(ctx, opts.ID, "")
		if err != nil {
			// The reply may be out and only its copy to the Sent folder
			// failed: that is a success with a warning (the copy is
			// retried), not a failure that invites a second approval.
			// An item that was not actionable (sent before, rejected…) was
			// not sent by this approval: that stays an error.
			if errors.Is(err, actions.ErrNotActionable) {
				return err
			}
			d, qerr := svc.QueueItem(ctx, opts.ID)
			if qerr != nil || d.Item.Status != store.QueueSent {
				return err
			}
			fmt.Fprintf(f.IOStreams.ErrOut, "%s: sent to %s\nwarning: the copy to the Sent folder failed and will be retried: %s\n", termsafe.Line(d.Item.ID), joinAddrs(d.Item.To, nil), termsafe.Line(err.Error()))
			return nil
		}
		printLearned(f.IOStreams.ErrOut, item.Learned) // memory.go
		if item.Status == store.QueueApproved {
			// The watcher holds it for policy.approval_delay: say how to undo.
			fmt.Fprintf(f.IOStreams.ErrOut, "%s: approved, to %s; it goes out shortly (policy.approval_delay): undo with `mailagent queue cancel %s`\n",
				termsafe.Line(item.ID), joinAddrs(item.To, nil), termsafe.Line(item.ID))
			return nil
		}
		fmt.Fprintf(f.IOStreams.ErrOut, "%s: %s to %s\n", termsafe.Line(item.ID), termsafe.Line(item.Status), joinAddrs(item.To, nil))
		return nil
	case "reject":
		if err := svc.Reject(ctx, opts.ID, opts.Reason); err != nil {
			return err
		}
		fmt.Fprintf(f.IOStreams.ErrOut, "%s: rejected\n", opts.ID)
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
		edited := opts.Text
		if !opts.TextSet {
			if edited, err = editText(ctx, f, text); err != nil {
				return err
			}
		}
		if edited == text {
			fmt.Fprintln(f.IOStreams.ErrOut, "no change")
			return nil
		}
		item, err := svc.Edit(ctx, opts.ID, edited)
		if err != nil {
			return err
		}
		fmt.Fprintf(f.IOStreams.ErrOut, "%s: edited (the model's draft is kept beside your text)\n", opts.ID)
		return draftCopyFailed(f, item)
	case "snooze":
		until, err := tui.ParseSnooze(opts.Until, f.Now())
		if err != nil {
			return cmdutil.UsageErr("--for: %v", err)
		}
		if err := svc.Snooze(ctx, opts.ID, until); err != nil {
			return err
		}
		fmt.Fprintf(f.IOStreams.ErrOut, "%s: snoozed until %s (undo: mailagent queue unsnooze %s)\n", termsafe.Line(opts.ID), until.Format("Mon 2 Jan 15:04"), termsafe.Line(opts.ID))
		return nil
	case "unsnooze":
		if err := svc.Unsnooze(ctx, opts.ID); err != nil {
			return err
		}
		fmt.Fprintf(f.IOStreams.ErrOut, "%s: back in the queue\n", termsafe.Line(opts.ID))
		return nil
	case "regenerate":
		item, err := svc.Regenerate(ctx, opts.ID, opts.Instruction)
		if err != nil {
			return err
		}
		fmt.Fprintln(f.IOStreams.Out, termsafe.Text(item.Draft))
		return draftCopyFailed(f, item)
	case "retry":
		e, err := svc.Explain(ctx, opts.ID)
		if err != nil {
			return err
		}
		if err := svc.Retry(ctx, e.Trace.Message); err != nil {
			return err
		}
		fmt.Fprintf(f.IOStreams.ErrOut, "%s: processed again\n", opts.ID)
		return nil
	case "cancel":
		if err := svc.Cancel(ctx, opts.ID); err != nil {
			return err
		}
		fmt.Fprintf(f.IOStreams.ErrOut, "%s: cancelled; the draft is back in the queue\n", opts.ID)
		return nil
	}
	return cmdutil.UsageErr("unknown queue action %q", opts.Action)
}

// lookEditor finds the editor: $VISUAL, else $EDITOR, else vi when it is
// installed (as git and crontab do). lookPath is exec.LookPath; tests
// replace it.
func lookEditor(getenv func(string) string, lookPath func(string) (string, error)) (string, error) {
	for _, v := range []string{"VISUAL", "EDITOR"} {
		if e := strings.TrimSpace(getenv(v)); e != "" {
			return e, nil
		}
	}
	if _, err := lookPath("vi"); err == nil {
		return "vi", nil
	}
	return "", cmdutil.UsageErr("no editor: set $VISUAL or $EDITOR (no vi is installed either), or give the text with --text")
}

// editText opens the editor (lookEditor) on a private temp file. The file
// ends with a newline, as editors expect; one the draft did not have is
// taken off again, so an unchanged draft comes back unchanged.
func editText(ctx context.Context, f *cmdutil.Factory, text string) (string, error) {
	editor, err := lookEditor(os.Getenv, exec.LookPath)
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", "mailagent-edit-")
	if err != nil {
		return "", err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	path := filepath.Join(dir, "draft.txt")
	added := !strings.HasSuffix(text, "\n")
	content := text
	if added {
		content += "\n"
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
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
	return TrimAddedNewline(string(b), added), nil
}

// TrimAddedNewline takes off the one final newline (LF or CRLF) that
// editText added, and nothing the owner typed.
func TrimAddedNewline(s string, added bool) string {
	if !added {
		return s
	}
	if t, ok := strings.CutSuffix(s, "\r\n"); ok {
		return t
	}
	return strings.TrimSuffix(s, "\n")
}

// PrintQueue writes the human table. Every untrusted field is sanitised
// before it is cut to width. known maps account → address → written to
// before (see review.RecipientStatus); recipients not in it are marked new.
// dates maps an item id to its mail's Date: AGE counts from it (from the
// item's creation when the date is unknown).
func PrintQueue(w io.Writer, items []store.QueueItem, known map[string]map[string]bool, dates map[string]time.Time, now time.Time, width int) {
	if len(items) == 0 {
		fmt.Fprintln(w, "the queue is empty")
		return
	}
	build := func(compact bool) *cmdutil.Table {
		tb := &cmdutil.Table{}
		tb.Row("ID", "KIND", "STATUS", "AGE", "FROM", "TO", "SUBJECT", "INTENT", "RISK")
		for i := range items {
			q := &items[i]
			intent, risk := "", ""
			if c := q.Classification; c != nil {
				intent, risk = termsafe.Line(strings.Join(c.Intents, ",")), termsafe.Line(c.Risk)
			}
			var k map[string]bool
			if review.Sendable(q) {
				k = known[q.Account]
			}
			status := q.Status
			if q.Kind == store.KindDraft && q.IMAPDraftUID == 0 && strings.HasPrefix(q.Error, "could not save the draft") {
				status += " (no IMAP copy yet)" // retried by watch; `queue show` says why
			}
			when := q.Written()
			if d := dates[q.ID]; q.MessageDate.IsZero() && !d.IsZero() {
				when = d // an item written before MessageDate was kept
			}
			from, to := cmdutil.Truncate(termsafe.Address(q.From.Name, q.From.Email), 40), joinAddrs(q.To, k)
			if compact {
				// Addresses only: who it is, not what they call themselves.
				from, to = termsafe.Line(q.From.Email), joinAddrs(bareAddrs(q.To), k)
			}
			tb.Row(termsafe.Line(q.ID), termsafe.Line(q.Kind), termsafe.Line(status),
				humantime.Age(now, when), from, to, cmdutil.Truncate(termsafe.Line(q.Subject), 40), intent, risk)
		}
		return tb
	}
	tb := build(false)
	if width > 0 && tb.Width() > width {
		// In a terminal narrower than the rows: addresses without
		// names, then INTENT, KIND and STATUS go, then FROM, TO and SUBJECT are
		// cut. A row never wraps; `queue show ID` has every field whole.
		tb = build(true)
		const colKind, colStatus, colFrom, colTo, colSubject, colIntent = 1, 2, 4, 5, 6, 7
		tb.Fit(width, []int{colIntent, colKind, colStatus}, []int{colSubject, colFrom, colTo})
	}
	_ = tb.Write(w)
}

// mailDates looks up the Date header of each item's message. A message
// whose record cannot be read is left out: its AGE falls back to the
// item's creation, which is no reason to fail the listing.
func mailDates(ctx context.Context, svc api.Service, items []store.QueueItem) map[string]time.Time {
	out := map[string]time.Time{}
	for _, q := range items {
		if q.MessageID == "" || !q.MessageDate.IsZero() {
			continue
		}
		e, err := svc.Explain(ctx, q.MessageID)
		if err != nil || e.Message == nil {
			continue
		}
		out[q.ID] = e.Message.Date
	}
	return out
}

// bareAddrs drops the display names of as.
func bareAddrs(as []mail.Address) []mail.Address {
	out := make([]mail.Address, len(as))
	for i, a := range as {
		out[i] = mail.Address{Email: a.Email}
	}
	return out
}

// newMark prefixes a recipient the owner has never written to.
const newMark = "[new] "

func printQueueItem(w io.Writer, d *api.QueueDetail, known map[string]bool) {
	q := d.Item
	line, text := termsafe.Line, termsafe.Text
	if !review.Sendable(&q) {
		known = nil
	}
	fmt.Fprintf(w, "%s  %s, %s\nfrom %s\nto %s\n", line(q.ID), line(q.Kind), line(q.Status),
		termsafe.Address(q.From.Name, q.From.Email), joinAddrs(q.To, known))
	if n := len(newRecipients(q.To, known)); n > 0 {
		fmt.Fprintf(w, "   %s marked [new]: you have never written to them; approving asks first\n", cmdutil.PluralWord(n, "address", "addresses"))
	}
	fmt.Fprintf(w, "subject %s\n", line(q.Subject))
	printExplainIDs(w, d)
	review.PrintInvitation(w, q.Invitation) // queue_rsvp.go
	if c := q.Classification; c != nil {
		fmt.Fprintf(w, "classification %s, risk %s, action %s, confidence %.2f\n  %s\n", line(strings.Join(c.Intents, "+")),
			line(c.Risk), line(c.Action), c.Confidence, line(c.Comments))
	}
	for _, g := range q.Gates {
		mark := "pass"
		if !g.Pass {
			mark = "FAIL"
		}
		fmt.Fprintf(w, "  %s %s: %s\n", mark, line(g.Gate), line(g.Reason))
	}
	if q.Error != "" {
		fmt.Fprintf(w, "error %s\n", line(q.Error))
	}
	for _, m := range d.Thread {
		fmt.Fprintf(w, "\n--- %s, %s\n%s\n", termsafe.Address(m.From.Name, m.From.Email), m.Date.Format(time.DateTime), text(m.Excerpt))
	}
	if q.Draft != "" {
		fmt.Fprintf(w, "\n=== draft\n%s\n", text(q.Draft))
	}
	if q.Final != "" {
		fmt.Fprintf(w, "\n=== your edit\n%s\n", text(q.Final))
	}
}

// printExplainIDs prints the item's message id and trace id, each in a
// form `mailagent explain` accepts (the Message-ID without brackets, which
// a shell would take for redirections).
func printExplainIDs(w io.Writer, d *api.QueueDetail) {
	q := d.Item
	if q.MessageID != "" {
		fmt.Fprintf(w, "message-id %s\n", termsafe.Line(strings.Trim(q.MessageID, "<>")))
	}
	for _, r := range d.Thread {
		if r.MessageKey == q.Message && r.TraceID != "" {
			fmt.Fprintf(w, "trace %s  (mailagent explain %s)\n", termsafe.Line(r.TraceID), termsafe.Line(r.TraceID))
			break
		}
	}
}

// joinAddrs formats recipients; with known non-nil, those not known are
// marked new.
func joinAddrs(as []mail.Address, known map[string]bool) string {
	var out []string
	for _, a := range as {
		s := termsafe.Address(a.Name, a.Email)
		if known != nil && !known[a.Email] {
			s = newMark + s
		}
		out = append(out, s)
	}
	return strings.Join(out, ", ")
}

// newRecipients returns the addresses of as that known says the owner
// never wrote to (none when known is nil: not looked up).
func newRecipients(as []mail.Address, known map[string]bool) []string {
	if known == nil {
		return nil
	}
	var out []string
	for _, a := range as {
		if !known[a.Email] {
			out = append(out, a.Email)
		}
	}
	return out
}

// confirmRecipients stops an approval that would send to an address the
// owner has never written to (a Reply-To stranger, say), or a draft whose
// safety gates failed for a reason that is a warning to a person too (see
// riskyGates), unless --yes is given or the owner, at a terminal, answers
// y. Off a terminal it refuses with every reason.
func confirmRecipients(ctx context.Context, f *cmdutil.Factory, svc api.Service, opts *QueueOptions) error {
	if opts.Yes {
		return nil
	}
	d, err := svc.QueueItem(ctx, opts.ID)
	if err != nil {
		return err
	}
	if !review.Sendable(&d.Item) {
		return nil // Approve says why it cannot send
	}
	known, err := review.RecipientStatus(ctx, svc, []store.QueueItem{d.Item})
	if err != nil {
		return err
	}
	news := termsafe.Lines(newRecipients(d.Item.To, known[d.Item.Account]))
	risky := review.RiskyGates(&d.Item)
	if len(news) == 0 && len(risky) == 0 {
		return nil
	}
	var questions, reasons []string
	if len(news) > 0 {
		what := "a new address"
		if len(news) > 1 {
			what = "new addresses"
		}
		questions = append(questions, fmt.Sprintf("send to %s %s", what, strings.Join(news, ", ")))
		reasons = append(reasons, "you have never written to "+strings.Join(news, ", "))
	}
	for _, g := range risky {
		reasons = append(reasons, "gate "+termsafe.Line(g.Gate)+" failed: "+termsafe.Line(g.Reason))
	}
	if len(risky) > 0 {
		questions = append(questions, "send although the safety gates above failed")
	}
	id := termsafe.Line(opts.ID)
	if !f.IOStreams.IsStdinTTY() {
		return &cmdutil.UserError{Code: cmdutil.ExitUsage,
			Err:  fmt.Errorf("not sent: %s: %s", id, strings.Join(reasons, "; ")),
			Hint: "check it with `mailagent queue show " + id + "`, then approve with --yes"}
	}
	for _, g := range risky {
		fmt.Fprintf(f.IOStreams.ErrOut, "  FAIL %s: %s\n", termsafe.Line(g.Gate), termsafe.Line(g.Reason))
	}
	ok, err := f.Prompter().Confirm(strings.Join(questions, ", and ")+"?", false)
	if err != nil {
		return err
	}
	if !ok {
		return &cmdutil.UserError{Code: cmdutil.ExitFailure, Err: errors.New("not sent")}
	}
	return nil
}

// draftCopyFailed says on stderr that the new text is kept but its copy
// in the Drafts folder failed, and returns cmdutil.ErrPartial (exit 5): the
// command did its part, one side effect did not happen.
func draftCopyFailed(f *cmdutil.Factory, item *store.QueueItem) error {
	why := actions.DraftCopyFailure(item)
	if why == "" {
		return nil
	}
	fmt.Fprintf(f.IOStreams.ErrOut, "warning: the text is saved here, but its copy in your Drafts folder was not updated: %s\n  watch retries it; see: mailagent status\n", termsafe.Line(why))
	return cmdutil.ErrPartial
}
