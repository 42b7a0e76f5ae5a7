// Package explain is `mailagent explain ID`: every step, gate and reason
// of how a message was handled, found by any id mailagent prints. Its
// tests are in internal/cmd/root (explain_test.go, explain_window_test.go),
// whose test binary holds every command's tests.
package explain

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
	"github.com/mailagent/mailagent/internal/config"
	"github.com/mailagent/mailagent/internal/iostreams"
	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/internal/termsafe"
	"github.com/mailagent/mailagent/store"
)

// ExplainOptions are the flags of `mailagent explain`.
type ExplainOptions struct {
	IO      *iostreams.IOStreams
	Config  func() (*config.Config, error)
	Service func(ctx context.Context, withActions bool) (api.Service, func() error, error)
	Now     func() time.Time

	ID    string
	JSON  bool
	Steps bool

	// SanitiseOff prints snapshot lines as stored (Factory's
	// ExplainSanitiseOff: a positive control's switch, never a flag).
	SanitiseOff bool
}

// NewCmdExplain is `mailagent explain ID`; runF, when not nil, runs
// instead of Run.
func NewCmdExplain(f *cmdutil.Factory, runF func(context.Context, *ExplainOptions) error) *cobra.Command {
	opts := &ExplainOptions{IO: f.IOStreams, Config: f.Config, Now: f.Now, SanitiseOff: f.ExplainSanitiseOff}
	cmd := &cobra.Command{
		Use:   "explain <id>",
		Short: "Show how a message was handled: every step, gate and reason",
		Long: `explain shows how a message was handled: each step with its timing,
the classification, every gate with its reason, and the decision. With
--steps it also prints what went into each step and what came out
(prompt variables, the model's raw answer, the inputs of each gate),
redacted and capped, while trace.snapshot_retention keeps them.

It accepts any id mailagent prints: a Message-ID (with or without <>), a
trace id (tr_…), a queue id (q_…), an outbox id (ob_…), a followup id
(fu_…: its state and deadline, then the message that set its state) or a
memory id (mem_…: the record, then the mail or queue item it was learned
from). Traces of
` + "`triage --dry-run`" + ` are not kept (a dry run writes nothing): its --json
output has the classification, gates and decision; run triage without
--dry-run to keep a trace.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.ID = args[0]
			opts.Service = f.Service
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return Run(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the trace and the message record as JSON")
	cmd.Flags().BoolVar(&opts.Steps, "steps", false, "also print each step's input and output (trace.snapshots)")
	return cmd
}

// explainView is what `explain` prints (view.ExplainJSON is its --json form).
type explainView struct {
	Trace   *store.Trace         `json:"trace"`
	Message *store.MessageRecord `json:"message,omitempty"`
}

// Run prints how the message opts.ID names was handled (text, --json,
// and with Steps each step's snapshots); any id mailagent prints is taken.
func Run(ctx context.Context, opts *ExplainOptions) error {
	svc, closeSvc, err := opts.Service(ctx, false)
	if err != nil {
		return err
	}
	defer func() { _ = closeSvc() }()
	ref := mail.NormalizeID(opts.ID)
	// A followup or memory id is explained by its message (explain_ids.go).
	subj, err := resolveExplainRef(ctx, svc, ref, opts.Now())
	if err != nil {
		return err
	}
	if subj != nil {
		if done, err := explainSubjectOnly(opts, subj); done {
			return err
		}
		ref = subj.ref
	}
	e, err := svc.Explain(ctx, ref)
	if errors.Is(err, store.ErrNotFound) && subj != nil {
		subj.none = fmt.Sprintf("no trace of %q (the owner's own mail, or handled before traces were kept)", termsafe.Line(ref))
		_, err := explainSubjectOnly(opts, subj)
		return err
	}
	if errors.Is(err, store.ErrNotFound) {
		return explainNotFound(ref)
	}
	if err != nil {
		return fmt.Errorf("explain %q: %w", ref, err)
	}
	out := &explainView{Trace: e.Trace, Message: e.Message}
	if opts.JSON {
		return cmdutil.WriteJSON(opts.IO.Out, view.ToExplainJSON(e.Trace, e.Message))
	}
	if subj != nil {
		fmt.Fprintln(opts.IO.Out, strings.Join(subj.header, "\n"))
	}
	printExplain(opts.IO.Out, out)
	if opts.Steps {
		printSnapshots(opts.IO.Out, e.Trace, opts.SanitiseOff)
	}
	return nil
}

// explainSubjectOnly handles a followup or memory record with no message
// to explain (subj.none): the text form prints the record and why, the
// JSON form (always an view.ExplainJSON) is a usage error pointing at the
// command that shows the record. done is false when there is a message.
func explainSubjectOnly(opts *ExplainOptions, subj *explainSubject) (done bool, err error) {
	if subj.ref != "" && subj.none == "" {
		return false, nil
	}
	if opts.JSON {
		show := "`mailagent followups --state all --json`"
		if strings.HasPrefix(opts.ID, "mem_") {
			show = "`mailagent memory show " + termsafe.Line(opts.ID) + " --json`"
		}
		return true, &cmdutil.UserError{Code: cmdutil.ExitUsage, Err: fmt.Errorf("%s has no message to explain: %s", termsafe.Line(opts.ID), subj.none),
			Hint: show + " shows the record itself"}
	}
	fmt.Fprintf(opts.IO.Out, "%s\nno message to explain: %s\n", strings.Join(subj.header, "\n"), subj.none)
	return true, nil
}

// explainNotFound says why ref found nothing, by the kind of id it is.
func explainNotFound(ref string) error {
	shown := termsafe.Line(ref)
	switch {
	case strings.HasPrefix(ref, "tr_"):
		return &cmdutil.UserError{Code: cmdutil.ExitUsage, Err: fmt.Errorf("no trace %q", shown),
			Hint: "if it came from `mailagent triage --dry-run`: a dry run writes nothing, so its traces are not kept; " +
				"`triage --dry-run --json` shows the classification, gates and decision, and triage without --dry-run keeps a trace"}
	case strings.HasPrefix(ref, "q_"):
		return &cmdutil.UserError{Code: cmdutil.ExitUsage, Err: fmt.Errorf("no queue item %q", shown),
			Hint: "`mailagent queue list --all` shows the queue ids"}
	case strings.HasPrefix(ref, "ob_"):
		return &cmdutil.UserError{Code: cmdutil.ExitUsage, Err: fmt.Errorf("no outbox record %q", shown),
			Hint: "outbox ids are in `mailagent queue show ID` and `mailagent status`"}
	}
	return &cmdutil.UserError{Code: cmdutil.ExitUsage, Err: fmt.Errorf("no trace or message %q", shown),
		Hint: "explain takes a Message-ID, a trace id (tr_…), a queue id (q_…), an outbox id (ob_…), a followup id (fu_…) or a memory id (mem_…)"}
}

// printExplain writes the human form; every field that came from mail, the
// model or a server is sanitised (termsafe.Line) first.
func printExplain(w io.Writer, e *explainView) {
	line := termsafe.Line
	tr, rec := e.Trace, e.Message
	fmt.Fprintf(w, "trace %s  %s/%s uid %d\n", line(tr.TraceID), line(tr.Message.Account), line(tr.Message.Mailbox), tr.Message.UID)
	fmt.Fprintf(w, "message-id <%s>\n", line(tr.MessageID))
	if rec != nil {
		fmt.Fprintf(w, "from %s\nsubject %s\n", termsafe.Address(rec.From.Name, rec.From.Email), line(rec.Subject))
		fmt.Fprintf(w, "route %s: %s\n", line(string(rec.Route)), line(rec.RouteReason))
		if c := rec.Classification; c != nil {
			fmt.Fprintf(w, "classification %s, risk %s, action %s, confidence %.2f, approval asked %v\n",
				line(strings.Join(c.Intents, "+")), line(c.Risk), line(c.Action), c.Confidence, c.RequiresApproval)
			fmt.Fprintf(w, "  summary: %s\n  comments: %s\n", line(c.Summary), line(c.Comments))
			if rw := c.RequestedWindow; rw != nil {
				fmt.Fprintf(w, "  requested window (as the model read it): %s to %s\n", line(rw.Start), line(rw.End))
			}
		}
		fmt.Fprintf(w, "state %s\n", line(string(rec.State)))
		if rec.Error != "" {
			fmt.Fprintf(w, "error %s\n", line(rec.Error))
		}
		for _, p := range rec.Problems {
			fmt.Fprintf(w, "parse problem: %s\n", line(p))
		}
	}
	fmt.Fprintln(w, "\nsteps:")
	var steps cmdutil.Table
	for _, s := range tr.Steps {
		cells := []string{"  " + line(s.Name), (time.Duration(s.LatencyMS) * time.Millisecond).String(), s.Start.Format(time.TimeOnly)}
		if s.TokensIn+s.TokensOut > 0 {
			cells = append(cells, fmt.Sprintf("tokens %d in / %d out", s.TokensIn, s.TokensOut))
		}
		if s.Model != "" {
			cells = append(cells, "model "+line(s.Model))
		}
		if s.Retries > 0 {
			cells = append(cells, fmt.Sprintf("retries %d", s.Retries))
		}
		if s.Detail != "" {
			cells = append(cells, line(s.Detail))
		}
		if s.Error != "" {
			cells = append(cells, "error: "+line(s.Error))
		}
		steps.Row(cells...)
	}
	_ = steps.Write(w)
	fmt.Fprintf(w, "\ndecision %s\n", line(string(tr.Decision)))
	if len(tr.Gates) > 0 {
		fmt.Fprintln(w, "gates:")
		var gates cmdutil.Table
		for _, g := range tr.Gates {
			mark := "pass"
			if !g.Pass {
				mark = "FAIL"
			}
			gates.Row("  "+mark, line(g.Gate), line(g.Reason))
		}
		_ = gates.Write(w)
	}
	if len(tr.Reasons) > 0 {
		fmt.Fprintln(w, "reasons:")
		for _, r := range tr.Reasons {
			fmt.Fprintf(w, "  - %s\n", line(r))
		}
	}
}
