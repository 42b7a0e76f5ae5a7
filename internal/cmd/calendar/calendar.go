// Package calendar is `mailagent calendar`: the owner's calendar as the
// agent sees it (internal/app/agentcal reads it; this package only wires
// the flags and prints). Its tests are in internal/cmd/root
// (calendar_test.go), whose test binary holds every command's tests.
package calendar

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/mailagent/mailagent/internal/app/agentcal"
	"github.com/mailagent/mailagent/internal/app/view"
	"github.com/mailagent/mailagent/internal/cmdutil"
	"github.com/mailagent/mailagent/internal/config"
	"github.com/mailagent/mailagent/internal/iostreams"
)

// CalendarOptions are the flags of `mailagent calendar free`.
type CalendarOptions struct {
	IO     *iostreams.IOStreams
	Config func() (*config.Config, error)
	Now    func() time.Time

	Account string
	Days    int
	JSON    bool
}

// NewCmdCalendar is `mailagent calendar` and its verb free; runF, when not
// nil, runs instead of calendarFreeRun (after the flags are checked).
func NewCmdCalendar(f *cmdutil.Factory, runF func(context.Context, *CalendarOptions) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "calendar",
		Short: "The owner's calendar as the agent sees it",
		Long: `The calendar named in [accounts.calendar] (CalDAV or an .ics feed or
file), read with the preferences in [scheduling]. Only code computes free
time; the model is never asked.`,
	}
	opts := &CalendarOptions{IO: f.IOStreams, Config: f.Config}
	free := &cobra.Command{
		Use:   "free",
		Short: "Free slots in the next days, as the agent would offer them",
		Long: `Prints the free time the agent believes you have: within
scheduling.working_hours on scheduling.days (in scheduling.timezone), at
least scheduling.min_notice from now, with scheduling.buffer kept free
around every event, each slot at least scheduling.slot_length long.
Recurring events, exceptions, all-day events, other time zones and DST
changes are expanded by mailagent itself; transparent and cancelled events
are free.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if opts.Days < 1 || opts.Days > 90 {
				return cmdutil.UsageErr("--days %d: use 1 to 90", opts.Days)
			}
			opts.Now = f.Now
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return calendarFreeRun(cmd.Context(), opts)
		},
	}
	fl := free.Flags()
	fl.StringVar(&opts.Account, "account", "", "account whose calendar to read (default: the first with a calendar)")
	fl.IntVar(&opts.Days, "days", 7, "how many days ahead, today included")
	fl.BoolVar(&opts.JSON, "json", false, "print as JSON: a list of {start, end} in RFC 3339 with offsets")
	cmd.AddCommand(free)
	return cmd
}

// calendarAccount picks the account whose calendar to read.
func calendarAccount(cfg *config.Config, name string) (*config.Account, error) {
	if name != "" {
		a, ok := cfg.Account(name)
		if !ok {
			return nil, cmdutil.UsageErr("--account %q: no such account", name)
		}
		if !a.Calendar.Configured() {
			return nil, &cmdutil.UserError{Code: cmdutil.ExitUsage, Err: fmt.Errorf("account %q has no calendar", name),
				Hint: "add [accounts.calendar] with url = … to it (see README: Calendar)"}
		}
		return a, nil
	}
	for i := range cfg.Accounts {
		if cfg.Accounts[i].Calendar.Configured() {
			return &cfg.Accounts[i], nil
		}
	}
	return nil, &cmdutil.UserError{Code: cmdutil.ExitUsage, Err: errors.New("no account has a calendar"),
		Hint: "add [accounts.calendar] with url = … to an account (see README: Calendar)"}
}

func calendarFreeRun(ctx context.Context, o *CalendarOptions) error {
	cfg, err := o.Config()
	if err != nil {
		return err
	}
	a, err := calendarAccount(cfg, o.Account)
	if err != nil {
		return err
	}
	slots, prefs, err := agentcal.FreeSlots(ctx, cfg, a, o.Now(), o.Days)
	if err != nil {
		return err
	}
	if o.JSON {
		out := make([]view.FreeSlotJSON, 0, len(slots))
		for _, s := range slots {
			out = append(out, view.ToFreeSlotJSON(s))
		}
		return cmdutil.WriteJSON(o.IO.Out, out)
	}
	PrintFreeSlots(o.IO.Out, slots, prefs)
	return nil
}

// PrintFreeSlots writes one line per day: "Mon 30 Mar  09:00–11:00, 12:00–17:30".
func PrintFreeSlots(w io.Writer, slots []agentcal.Interval, p agentcal.Prefs) {
	if len(slots) == 0 {
		fmt.Fprintln(w, "No free slots in that window.")
		return
	}
	fmt.Fprintf(w, "Free (%s, slots of at least %s):\n", p.Location, p.SlotLength)
	var day string
	var line []string
	flush := func() {
		if day != "" {
			fmt.Fprintf(w, "  %s  %s\n", day, strings.Join(line, ", "))
		}
	}
	for _, s := range slots {
		st, en := s.Start.In(p.Location), s.End.In(p.Location)
		d := st.Format("Mon 02 Jan")
		if d != day {
			flush()
			day, line = d, nil
		}
		line = append(line, st.Format("15:04")+"–"+en.Format("15:04"))
	}
	flush()
}
