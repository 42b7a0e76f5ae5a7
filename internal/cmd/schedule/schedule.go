// Package schedule is `mailagent schedule list`: the watcher's timed
// jobs, as a table or JSON. Its tests are in internal/cmd/root
// (schedule_test.go), whose test binary holds every command's tests.
package schedule

import (
	"context"
	"fmt"
	"io"
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

// ScheduleOptions are the flags of `mailagent schedule list`.
type ScheduleOptions struct {
	IO      *iostreams.IOStreams
	Config  func() (*config.Config, error)
	Service func(ctx context.Context, withActions bool) (api.Service, func() error, error)
	Now     func() time.Time

	All  bool
	JSON bool
}

// NewCmdSchedule is `mailagent schedule` and its verb list; runF, when not
// nil, runs instead of scheduleRun (tests of the flag parsing).
func NewCmdSchedule(f *cmdutil.Factory, runF func(context.Context, *ScheduleOptions) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "schedule",
		Short: "The watcher's timed jobs: what is due, when, and why",
		Long: `The watcher runs its timed work as jobs of one durable scheduler kept in the
database: delayed sends, send retries and snooze ends, the reply-tracking
timers, the digest (on digest.schedule), the retries of messages that need
review, and maintenance. Each job has a due
time, a reason, and after a failure its attempts and last error (it is
retried with back-off). A job claimed by a watcher that was killed is
resumed on the next start; handlers are idempotent, so nothing is done
twice. The individual sends and snoozes behind the sends job are in
queue list.`,
		Args: cobra.NoArgs,
	}
	opts := &ScheduleOptions{IO: f.IOStreams, Config: f.Config, Now: f.Now}
	list := &cobra.Command{
		Use:   "list",
		Short: "List the jobs, the next due first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.Service = f.Service
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return scheduleRun(cmd.Context(), opts)
		},
	}
	list.Flags().BoolVar(&opts.All, "all", false, "also the jobs that are done")
	list.Flags().BoolVar(&opts.JSON, "json", false, "print as JSON")
	cmd.AddCommand(list)
	return cmd
}

func scheduleRun(ctx context.Context, opts *ScheduleOptions) error {
	svc, closeSvc, err := opts.Service(ctx, false)
	if err != nil {
		return err
	}
	defer func() { _ = closeSvc() }()
	js, err := svc.Schedule(ctx, api.ScheduleFilter{All: opts.All})
	if err != nil {
		return err
	}
	now := opts.Now()
	if opts.JSON {
		out := make([]view.ScheduleJobJSON, 0, len(js))
		for i := range js {
			out = append(out, view.ToScheduleJobJSON(&js[i], now))
		}
		return cmdutil.WriteJSON(opts.IO.Out, out)
	}
	return printSchedule(opts.IO.Out, js, now)
}

// JobWhen says when a job is due: "in 5m", "overdue 3m", "-" when it
// waits for nothing.
func JobWhen(j *store.Job, now time.Time) string {
	due := view.JobDueAt(j)
	switch {
	case j.State == store.JobDone || j.State == store.JobFailed:
		return "-"
	case due.After(now):
		return "in " + humantime.Age(due, now)
	}
	if a := humantime.Age(now, due); a != "now" {
		return "due " + a + " ago"
	}
	return "due now"
}

func printSchedule(w io.Writer, js []store.Job, now time.Time) error {
	if len(js) == 0 {
		_, err := fmt.Fprintln(w, "no jobs (the watcher adds them when it starts)")
		return err
	}
	var tb cmdutil.Table
	tb.Row("ID", "KIND", "STATE", "DUE", "WHEN", "TRIES", "WHY")
	for i := range js {
		j := &js[i]
		why := termsafe.Line(j.Reason)
		if j.LastError != "" {
			why += " (last error: " + termsafe.Line(j.LastError) + ")"
		}
		due := "-"
		if t := view.JobDueAt(j); !t.IsZero() {
			due = t.Local().Format("2006-01-02 15:04")
		}
		tb.Row(termsafe.Line(j.ID), termsafe.Line(j.Kind), string(j.State), due, JobWhen(j, now), fmt.Sprint(j.Attempts), why)
	}
	return tb.Write(w)
}
