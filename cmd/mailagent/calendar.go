package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/internal/calendar"
	"github.com/mailagent/mailagent/internal/config"
)

// CalendarOptions are the flags of `mailagent calendar free`.
type CalendarOptions struct {
	Account string
	Days    int
	JSON    bool
}

func newCalendarCmd(f *Factory, runF func(context.Context, *CalendarOptions) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "calendar",
		Short: "The owner's calendar as the agent sees it",
		Long: `The calendar named in [accounts.calendar] (CalDAV or an .ics feed or
file), read with the preferences in [scheduling]. Only code computes free
time; the model is never asked.`,
	}
	opts := &CalendarOptions{}
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
				return usageErr("--days %d: use 1 to 90", opts.Days)
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return calendarFreeRun(cmd.Context(), f, opts)
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
			return nil, usageErr("--account %q: no such account", name)
		}
		if !a.Calendar.Configured() {
			return nil, &UserError{Code: ExitUsage, Err: fmt.Errorf("account %q has no calendar", name),
				Hint: "add [accounts.calendar] with url = … to it (see README: Calendar)"}
		}
		return a, nil
	}
	for i := range cfg.Accounts {
		if cfg.Accounts[i].Calendar.Configured() {
			return &cfg.Accounts[i], nil
		}
	}
	return nil, &UserError{Code: ExitUsage, Err: errors.New("no account has a calendar"),
		Hint: "add [accounts.calendar] with url = … to an account (see README: Calendar)"}
}

// calendarSource builds the reader of an account's calendar.
func calendarSource(a *config.Account) *calendar.Source {
	c := a.Calendar
	s := &calendar.Source{URL: c.URL, ICS: c.Kind == config.CalendarICS}
	if c.IsFile() {
		s.URL = c.FilePath()
	}
	switch {
	case c.OAuth2TokenCmd != "":
		s.Auth = calendar.Bearer(func(ctx context.Context) (string, error) {
			t, err := c.ResolveOAuth2Token(ctx)
			return t.Reveal(), err
		})
	case c.HasSecret():
		s.Auth = calendar.Basic(c.Username, func(ctx context.Context) (string, error) {
			p, err := c.ResolvePassword(ctx)
			return p.Reveal(), err
		})
	}
	return s
}

// schedulingPrefs parses [scheduling] (validated by config already).
func schedulingPrefs(s config.Scheduling) (calendar.Prefs, error) {
	loc, err := s.Location()
	if err != nil {
		return calendar.Prefs{}, err
	}
	from, to, err := s.Hours()
	if err != nil {
		return calendar.Prefs{}, fmt.Errorf("scheduling.working_hours: %w", err)
	}
	days, err := s.Weekdays()
	if err != nil {
		return calendar.Prefs{}, fmt.Errorf("scheduling.days: %w", err)
	}
	return calendar.Prefs{Location: loc, DayStart: from, DayEnd: to, Days: days,
		Buffer: s.Buffer.D(), MinNotice: s.MinNotice.D(), SlotLength: s.SlotLength.D()}, nil
}

// FreeSlots reads the account's calendar and returns its free slots for
// the next days days: the one function both `calendar free` and the
// drafter's scheduling step use.
func FreeSlots(ctx context.Context, cfg *config.Config, a *config.Account, now time.Time, days int) ([]calendar.Interval, calendar.Prefs, error) {
	return freeSlotsIn(ctx, cfg, a, func(p calendar.Prefs) calendar.Interval { return calendar.Window(now, days, p) })
}

// freeSlotsIn reads the account's calendar over the window that window
// computes from the preferences, and returns its free slots.
func freeSlotsIn(ctx context.Context, cfg *config.Config, a *config.Account, window func(calendar.Prefs) calendar.Interval) ([]calendar.Interval, calendar.Prefs, error) {
	prefs, err := schedulingPrefs(cfg.Scheduling)
	if err != nil {
		return nil, prefs, usageErr("%v", err)
	}
	w := window(prefs)
	timeout := a.Calendar.Timeout.D()
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	busy, err := calendarSource(a).Busy(ctx, w, prefs.Location)
	if err != nil {
		return nil, prefs, calendarErr(a, err)
	}
	slots, err := calendar.FreeSlots(busy, prefs, w)
	return slots, prefs, err
}

// calendarErr gives a failed fetch its exit code and hint.
func calendarErr(a *config.Account, err error) error {
	switch {
	case errors.Is(err, calendar.ErrAuth):
		return unreachable(fmt.Errorf("account %q calendar: %w", a.Name, err), "check username and the password source in [accounts.calendar]; try: mailagent doctor")
	case errors.Is(err, calendar.ErrNoCalendar):
		return &UserError{Code: ExitUsage, Err: fmt.Errorf("account %q calendar: %w", a.Name, err), Hint: "point [accounts.calendar] url at a calendar collection"}
	case errors.Is(err, config.ErrNoSecret):
		return &UserError{Code: ExitUsage, Err: fmt.Errorf("account %q calendar: %w", a.Name, err)}
	case strings.Contains(err.Error(), "calendar: event "):
		// Bad calendar data: no slots rather than wrong ones.
		return fmt.Errorf("account %q calendar: %w", a.Name, err)
	}
	return unreachable(fmt.Errorf("account %q calendar: %w", a.Name, err), "is the calendar server reachable? try: mailagent doctor")
}

func calendarFreeRun(ctx context.Context, f *Factory, o *CalendarOptions) error {
	cfg, err := f.Config()
	if err != nil {
		return err
	}
	a, err := calendarAccount(cfg, o.Account)
	if err != nil {
		return err
	}
	slots, prefs, err := FreeSlots(ctx, cfg, a, f.Now(), o.Days)
	if err != nil {
		return err
	}
	if o.JSON {
		out := make([]FreeSlotJSON, 0, len(slots))
		for _, s := range slots {
			out = append(out, toFreeSlotJSON(s))
		}
		return writeJSON(f.Stdout, out)
	}
	printFreeSlots(f.Stdout, slots, prefs)
	return nil
}

// printFreeSlots writes one line per day: "Mon 30 Mar  09:00–11:00, 12:00–17:30".
func printFreeSlots(w io.Writer, slots []calendar.Interval, p calendar.Prefs) {
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

// schedulingDays is how far ahead free slots are offered to a scheduling
// draft.
const schedulingDays = agent.SchedulingHorizonDays

var _ agent.WindowCalendar = agentCalendar{}

// agentCalendar gives the agent each account's free slots.
type agentCalendar struct{ cfg *config.Config }

// newAgentCalendar returns the agent's calendar, nil when no account has
// one (scheduling drafts then get no slots, and the schedule gate holds
// them).
func newAgentCalendar(cfg *config.Config) agent.Calendar {
	for _, a := range cfg.Accounts {
		if a.Calendar.Configured() {
			return agentCalendar{cfg: cfg}
		}
	}
	return nil
}

func (c agentCalendar) FreeSlots(ctx context.Context, account string, now time.Time) ([]calendar.Interval, *time.Location, error) {
	a, ok := c.cfg.Account(account)
	if !ok || !a.Calendar.Configured() {
		return nil, nil, nil // this account has no calendar: no slots; the schedule gate holds the reply
	}
	slots, prefs, err := FreeSlots(ctx, c.cfg, a, now, schedulingDays)
	return slots, prefs.Location, err
}

// FreeSlotsIn returns the free slots inside window (the days a
// scheduling mail asks about, bounded by agent.ValidWindow), from now plus
// min_notice at the earliest.
func (c agentCalendar) FreeSlotsIn(ctx context.Context, account string, now time.Time, window calendar.Interval) ([]calendar.Interval, *time.Location, error) {
	a, ok := c.cfg.Account(account)
	if !ok || !a.Calendar.Configured() {
		return nil, nil, nil
	}
	slots, prefs, err := freeSlotsIn(ctx, c.cfg, a, func(p calendar.Prefs) calendar.Interval {
		w := calendar.Window(now, 0, p) // its start: now plus min_notice
		if window.Start.After(w.Start) {
			w.Start = window.Start
		}
		w.End = window.End
		if w.End.Before(w.Start) {
			w.End = w.Start
		}
		return w
	})
	return slots, prefs.Location, err
}

// SlotLength is the meeting length a confirmed slot's event gets.
func (c agentCalendar) SlotLength(string) time.Duration { return c.cfg.Scheduling.SlotLength.D() }

// HasCalendar reports whether account names a calendar, without reading it.
func (c agentCalendar) HasCalendar(account string) bool {
	a, ok := c.cfg.Account(account)
	return ok && a.Calendar.Configured()
}
