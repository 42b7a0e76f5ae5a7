package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mailagent/mailagent/agent/invite"

	"github.com/mailagent/mailagent/internal/calendar"
	"github.com/mailagent/mailagent/internal/config"
)

// Busy gives the agent an account's busy times in window (an
// invitation's conflicts); invite.BusyCalendar.
func (c agentCalendar) Busy(ctx context.Context, account string, window calendar.Interval, exceptUID string) ([]calendar.Interval, error) {
	a, ok := c.cfg.Account(account)
	if !ok || !a.Calendar.Configured() {
		return nil, nil
	}
	prefs, err := schedulingPrefs(c.cfg.Scheduling)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, calendarTimeout(a))
	defer cancel()
	src := calendarSource(a)
	src.SkipUID = exceptUID
	busy, err := src.Busy(ctx, window, prefs.Location)
	if err != nil {
		return nil, calendarErr(a, err)
	}
	return busy, nil
}

// PutEvent stores an event on the account's calendar when
// [accounts.calendar] write = true and it is CalDAV, conditionally (etag
// "": create only; else replace only that version); invite.EventWriter.
func (c agentCalendar) PutEvent(ctx context.Context, account, uid string, data []byte, etag string) (calendar.Stored, error) {
	a, ok := c.cfg.Account(account)
	if !ok || !a.Calendar.Configured() || !a.Calendar.Write || a.Calendar.Kind == config.CalendarICS {
		return calendar.Stored{}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, calendarTimeout(a))
	defer cancel()
	st, err := calendarSource(a).PutEvent(ctx, uid, data, etag)
	if errors.Is(err, calendar.ErrPrecondition) {
		return st, fmt.Errorf("account %q calendar: %w", a.Name, err) // the agent queues it for the owner
	}
	if err != nil {
		return st, calendarErr(a, err)
	}
	return st, nil
}

// The calendar sides the agent looks for (by type assertion, so a
// signature drift would silently switch them off).
var (
	_ invite.EventWriter  = agentCalendar{}
	_ invite.EventDeleter = agentCalendar{}
	_ invite.BusyCalendar = agentCalendar{}
	_ invite.EventReader  = agentCalendar{}
)

// GetEvent reads the event mailagent stores for uid on the account's
// writable calendar, with its ETag and the owner's zone (floating
// times); invite.EventReader. A zero Stored: no writable calendar.
func (c agentCalendar) GetEvent(ctx context.Context, account, uid string) ([]byte, calendar.Stored, *time.Location, error) {
	a, ok := c.cfg.Account(account)
	if !ok || !a.Calendar.Configured() || !a.Calendar.Write || a.Calendar.Kind == config.CalendarICS {
		return nil, calendar.Stored{}, nil, nil
	}
	loc := time.UTC
	if prefs, err := schedulingPrefs(c.cfg.Scheduling); err == nil && prefs.Location != nil {
		loc = prefs.Location
	}
	ctx, cancel := context.WithTimeout(ctx, calendarTimeout(a))
	defer cancel()
	data, st, err := calendarSource(a).GetEvent(ctx, uid)
	if errors.Is(err, calendar.ErrEventGone) {
		return nil, st, loc, fmt.Errorf("account %q calendar: %w", a.Name, err)
	}
	if err != nil {
		return nil, st, loc, calendarErr(a, err)
	}
	return data, st, loc, nil
}

// DeleteEvent removes an event mailagent wrote, in the version etag
// names; invite.EventDeleter.
func (c agentCalendar) DeleteEvent(ctx context.Context, account, uid, path, etag string) error {
	a, ok := c.cfg.Account(account)
	if !ok || !a.Calendar.Configured() || !a.Calendar.Write || a.Calendar.Kind == config.CalendarICS {
		return fmt.Errorf("account %q calendar: %w", account, calendar.ErrReadOnly)
	}
	ctx, cancel := context.WithTimeout(ctx, calendarTimeout(a))
	defer cancel()
	if err := calendarSource(a).DeleteEvent(ctx, uid, path, etag); err != nil {
		return fmt.Errorf("account %q calendar: %w", a.Name, err)
	}
	return nil
}

func calendarTimeout(a *config.Account) time.Duration {
	if t := a.Calendar.Timeout.D(); t > 0 {
		return t
	}
	return 30 * time.Second
}
