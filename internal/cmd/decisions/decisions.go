// Package decisions is `mailagent decisions`: what the agent archived,
// ignored, notified or answered without asking, newest first. Its tests
// are in internal/cmd/root (decisions_test.go), whose test binary holds
// every command's tests.
package decisions

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/mailagent/mailagent/internal/app/api"
	"github.com/mailagent/mailagent/internal/app/view"
	"github.com/mailagent/mailagent/internal/cmdutil"
	"github.com/mailagent/mailagent/internal/config"
	"github.com/mailagent/mailagent/internal/humantime"
	"github.com/mailagent/mailagent/internal/iostreams"
	"github.com/mailagent/mailagent/internal/termsafe"
	"github.com/mailagent/mailagent/store"
)

// DecisionsOptions are the flags of `mailagent decisions`.
type DecisionsOptions struct {
	IO      *iostreams.IOStreams
	Config  func() (*config.Config, error)
	Service func(ctx context.Context, withActions bool) (api.Service, func() error, error)
	Now     func() time.Time

	Since string
	JSON  bool
}

// NewCmdDecisions is `mailagent decisions`; runF, when not nil, runs
// instead of Run (tests of the flag parsing).
func NewCmdDecisions(f *cmdutil.Factory, runF func(context.Context, *DecisionsOptions) error) *cobra.Command {
	opts := &DecisionsOptions{IO: f.IOStreams, Config: f.Config, Now: f.Now}
	cmd := &cobra.Command{
		Use:   "decisions",
		Short: "What the agent decided without asking: archived, ignored, notified, answered on its own",
		Long: `decisions lists the mail the agent handled without asking you: what it
archived (automated mail), ignored (already answered, for instance),
showed you as a notice, or answered on its own (with the reply it sent),
newest first, so that nothing it does happens out of sight. Drafts
waiting for your approval are in mailagent queue list instead.

Each line has the trace id that mailagent explain takes. The review
TUI shows the same list in view 5.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.Service = f.Service
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return Run(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Since, "since", "7d", "how far back, by when the agent decided: a duration (12h) or Nd for days")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "one JSON array on stdout")
	return cmd
}

// Run lists what the agent decided without asking since opts.Since (text
// or --json); a bad --since is a usage error before any service opens.
func Run(ctx context.Context, opts *DecisionsOptions) error {
	d, err := cmdutil.PositiveDuration(opts.Since)
	if err != nil {
		return cmdutil.UsageErr("--since: %v", err)
	}
	svc, closeSvc, err := opts.Service(ctx, false)
	if err != nil {
		return err
	}
	defer func() { _ = closeSvc() }()
	recs, err := api.DecidedWithoutAsking(ctx, svc, opts.Now().Add(-d))
	if err != nil {
		return err
	}
	replies := map[store.MessageKey]*store.OutboxRecord{}
	obs, err := svc.Outbox(ctx, "")
	if err != nil {
		return err
	}
	for i := range obs {
		if o := &obs[i]; o.Auto {
			replies[o.Message] = o
		}
	}
	if opts.JSON {
		out := make([]view.DecisionJSON, 0, len(recs))
		for i := range recs {
			out = append(out, view.ToDecisionJSON(&recs[i], replies[recs[i].MessageKey]))
		}
		return cmdutil.WriteJSON(opts.IO.Out, out)
	}
	printDecisions(opts.IO.Out, recs, replies, opts.Now(), strings.TrimSpace(opts.Since))
	return nil
}

// printDecisions writes the human table; every untrusted field is
// sanitised before it is measured.
func printDecisions(w io.Writer, recs []store.MessageRecord, replies map[store.MessageKey]*store.OutboxRecord, now time.Time, since string) {
	if len(recs) == 0 {
		fmt.Fprintf(w, "the agent decided nothing on its own in the last %s\n", termsafe.Line(since))
		return
	}
	var tb cmdutil.Table
	tb.Row("TRACE", "WHEN", "DECISION", "FROM", "SUBJECT", "WHY")
	for i := range recs {
		r := &recs[i]
		why := strings.Join(r.Reasons, "; ")
		if o := replies[r.MessageKey]; o != nil && view.AutoSent(r) {
			why = "replied to " + strings.Join(o.To, ", ") + " (" + o.Status + ")"
		}
		tb.Row(termsafe.Line(r.TraceID), humantime.Age(now, r.Written()), termsafe.Line(r.Decision),
			cmdutil.Truncate(termsafe.Address(r.From.Name, r.From.Email), 40), cmdutil.Truncate(termsafe.Line(r.Subject), 40),
			cmdutil.Truncate(termsafe.Line(why), 80))
	}
	_ = tb.Write(w)
	fmt.Fprintf(w, "\n%s; details: mailagent explain TRACE\n", cmdutil.Plural(len(recs), "decision"))
}
