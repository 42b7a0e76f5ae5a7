// Package agentcal is the owner's calendar as mailagent reads and writes
// it: the reader of an account's [accounts.calendar] (CalDAV, an .ics feed
// or file), the [scheduling] preferences, the free slots both `calendar
// free`, `doctor` and the drafter's scheduling step compute, and Calendar,
// the adapter that gives the agent (and the invitation code) those slots,
// busy times and event writes. Errors the owner can act on are
// *apperr.Error with the command line's exit code and a hint.
package agentcal

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/agent/invite"
	"github.com/mailagent/mailagent/internal/app/apperr"
	"github.com/mailagent/mailagent/internal/calendar"
	"github.com/mailagent/mailagent/internal/config"
)

// Interval and Prefs are the calendar library's types, named here so the
// command tier prints them without importing the library.
type (
	Interval = calendar.Interval
	Prefs    = calendar.Prefs
)

// Source builds the reader of an account's calendar (its password or
// token resolved only when a request needs it).
func Source(a *config.Account) *calendar.Source {
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

// SchedulingPrefs parses [scheduling] (validated by config already).
func SchedulingPrefs(s config.Scheduling) (calendar.Prefs, error) {
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
// the next days days: the one function `calendar free`, doctor and the
// drafter's scheduling step use. A bad [scheduling] is an apperr usage
// error; a failed fetch is Err's.
func FreeSlots(ctx context.Context, cfg *config.Config, a *config.Account, now time.Time, days int) ([]calendar.Interval, calendar.Prefs, error) {
	return freeSlotsIn(ctx, cfg, a, func(p calendar.Prefs) calendar.Interval { return calendar.Window(now, days, p) })
}

// freeSlotsIn reads the account's calendar over the window that window
// computes from the preferences, and returns its free slots.
func freeSlotsIn(ctx context.Context, cfg *config.Config, a *config.Account, window func(calendar.Prefs) calendar.Interval) ([]calendar.Interval, calendar.Prefs, error) {
	prefs, err := SchedulingPrefs(cfg.Scheduling)
	if err != nil {
		return nil, prefs, apperr.Usage("%v", err)
	}
	w := window(prefs)
	ctx, cancel := context.WithTimeout(ctx, Timeout(a))
	defer cancel()
	busy, err := Source(a).Busy(ctx, w, prefs.Location)
	if err != nil {
		return nil, prefs, Err(a, err)
	}
	slots, err := calendar.FreeSlots(busy, prefs, w)
	return slots, prefs, err
}

// Timeout is how long one request to the account's calendar may take:
// [accounts.calendar] timeout, 30 seconds when unset.
func Timeout(a *config.Account) time.Duration {
	if t := a.Calendar.Timeout.D(); t > 0 {
		return t
	}
	return 30 * time.Second
}

// Err gives a failed calendar request its exit code and hint: a refused
// login or an unreachable server is CodeUnreachable, a URL that names no
// calendar or a password source that yields nothing is CodeUsage, bad
// calendar data (an event that does not parse) a plain error (no slots
// rather than wrong ones). The text always names the account.
func Err(a *config.Account, err error) error {
	wrapped := fmt.Errorf("account %q calendar: %w", a.Name, err)
	switch {
	case errors.Is(err, calendar.ErrAuth):
		return &apperr.Error{Code: apperr.CodeUnreachable, Err: wrapped, Hint: "check username and the password source in [accounts.calendar]; try: mailagent doctor"}
	case errors.Is(err, calendar.ErrNoCalendar):
		return &apperr.Error{Code: apperr.CodeUsage, Err: wrapped, Hint: "point [accounts.calendar] url at a calendar collection"}
	case errors.Is(err, config.ErrNoSecret):
		return &apperr.Error{Code: apperr.CodeUsage, Err: wrapped}
	case strings.Contains(err.Error(), "calendar: event "):
		return wrapped
	}
	return &apperr.Error{Code: apperr.CodeUnreachable, Err: wrapped, Hint: "is the calendar server reachable? try: mailagent doctor"}
}

// schedulingDays is how far ahead free slots are offered to a scheduling
// draft.
const schedulingDays = agent.SchedulingHorizonDays

// Calendar gives the agent each account's free slots, busy times and
// event writes (agent.WindowCalendar and the invite package's calendar
// sides). An account without a calendar has no slots and no busy times.
type Calendar struct{ cfg *config.Config }

// The calendar sides the agent looks for (by type assertion, so a
// signature drift would silently switch them off).
var (
	_ agent.WindowCalendar = Calendar{}
	_ invite.EventWriter   = Calendar{}
	_ invite.EventDeleter  = Calendar{}
	_ invite.BusyCalendar  = Calendar{}
	_ invite.EventReader   = Calendar{}
)

// New returns the agent's calendar, nil when no account has one
// (scheduling drafts then get no slots, and the schedule gate holds them).
func New(cfg *config.Config) agent.Calendar {
	for _, a := range cfg.Accounts {
		if a.Calendar.Configured() {
			return Calendar{cfg: cfg}
		}
	}
	return nil
}

// FreeSlots returns the account's free slots over the scheduling horizon.
func (c Calendar) FreeSlots(ctx context.Context, account string, now time.Time) ([]calendar.Interval, *time.Location, error) {
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
func (c Calendar) FreeSlotsIn(ctx context.Context, account string, now time.Time, window calendar.Interval) ([]calendar.Interval, *time.Location, error) {
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
func (c Calendar) SlotLength(string) time.Duration { return c.cfg.Scheduling.SlotLength.D() }

// HasCalendar reports whether account names a calendar, without reading it.
func (c Calendar) HasCalendar(account string) bool {
	a, ok := c.cfg.Account(account)
	return ok && a.Calendar.Configured()
}

// Busy gives the agent an account's busy times in window (an
// invitation's conflicts), leaving out the event exceptUID;
// invite.BusyCalendar.
func (c Calendar) Busy(ctx context.Context, account string, window calendar.Interval, exceptUID string) ([]calendar.Interval, error) {
	a, ok := c.cfg.Account(account)
	if !ok || !a.Calendar.Configured() {
		return nil, nil
	}
	prefs, err := SchedulingPrefs(c.cfg.Scheduling)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, Timeout(a))
	defer cancel()
	src := Source(a)
	src.SkipUID = exceptUID
	busy, err := src.Busy(ctx, window, prefs.Location)
	if err != nil {
		return nil, Err(a, err)
	}
	return busy, nil
}

// writable reports whether mailagent may write the account's calendar:
// [accounts.calendar] write = true and it is CalDAV.
func writable(a *config.Account, ok bool) bool {
	return ok && a.Calendar.Configured() && a.Calendar.Write && a.Calendar.Kind != config.CalendarICS
}

// PutEvent stores an event on the account's calendar when
// [accounts.calendar] write = true and it is CalDAV, conditionally (etag
// "": create only; else replace only that version); invite.EventWriter.
// A zero Stored and no error: the calendar is not writable.
func (c Calendar) PutEvent(ctx context.Context, account, uid string, data []byte, etag string) (calendar.Stored, error) {
	a, ok := c.cfg.Account(account)
	if !writable(a, ok) {
		return calendar.Stored{}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, Timeout(a))
	defer cancel()
	st, err := Source(a).PutEvent(ctx, uid, data, etag)
	if errors.Is(err, calendar.ErrPrecondition) {
		return st, fmt.Errorf("account %q calendar: %w", a.Name, err) // the agent queues it for the owner
	}
	if err != nil {
		return st, Err(a, err)
	}
	return st, nil
}

// GetEvent reads the event mailagent stores for uid on the account's
// writable calendar, with its ETag and the owner's zone (floating
// times); invite.EventReader. A zero Stored: no writable calendar.
func (c Calendar) GetEvent(ctx context.Context, account, uid string) ([]byte, calendar.Stored, *time.Location, error) {
	a, ok := c.cfg.Account(account)
	if !writable(a, ok) {
		return nil, calendar.Stored{}, nil, nil
	}
	loc := time.UTC
	if prefs, err := SchedulingPrefs(c.cfg.Scheduling); err == nil && prefs.Location != nil {
		loc = prefs.Location
	}
	ctx, cancel := context.WithTimeout(ctx, Timeout(a))
	defer cancel()
	data, st, err := Source(a).GetEvent(ctx, uid)
	if errors.Is(err, calendar.ErrEventGone) {
		return nil, st, loc, fmt.Errorf("account %q calendar: %w", a.Name, err)
	}
	if err != nil {
		return nil, st, loc, Err(a, err)
	}
	return data, st, loc, nil
}

// DeleteEvent removes an event mailagent wrote, in the version etag
// names; invite.EventDeleter. A calendar that is not writable is
// calendar.ErrReadOnly.
func (c Calendar) DeleteEvent(ctx context.Context, account, uid, path, etag string) error {
	a, ok := c.cfg.Account(account)
	if !writable(a, ok) {
		return fmt.Errorf("account %q calendar: %w", account, calendar.ErrReadOnly)
	}
	ctx, cancel := context.WithTimeout(ctx, Timeout(a))
	defer cancel()
	if err := Source(a).DeleteEvent(ctx, uid, path, etag); err != nil {
		return fmt.Errorf("account %q calendar: %w", a.Name, err)
	}
	return nil
}
