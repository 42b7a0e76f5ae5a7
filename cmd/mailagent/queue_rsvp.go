package main

import (
	"context"
	"time"

	"github.com/mailagent/mailagent/internal/calendar"
	"github.com/mailagent/mailagent/internal/config"
)

// Busy gives the agent an account's busy times in window (an
// invitation's conflicts); agent.BusyCalendar.
func (c agentCalendar) Busy(ctx context.Context, account string, window calendar.Interval) ([]calendar.Interval, error) {
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
	busy, err := calendarSource(a).Busy(ctx, window, prefs.Location)
	if err != nil {
		return nil, calendarErr(a, err)
	}
	return busy, nil
}

// PutEvent stores an answered invitation on the account's calendar when
// [accounts.calendar] write = true and it is CalDAV; agent.EventWriter.
func (c agentCalendar) PutEvent(ctx context.Context, account, uid string, data []byte) (string, error) {
	a, ok := c.cfg.Account(account)
	if !ok || !a.Calendar.Configured() || !a.Calendar.Write || a.Calendar.Kind == config.CalendarICS {
		return "", nil
	}
	ctx, cancel := context.WithTimeout(ctx, calendarTimeout(a))
	defer cancel()
	path, err := calendarSource(a).PutEvent(ctx, uid, data)
	if err != nil {
		return "", calendarErr(a, err)
	}
	return path, nil
}

func calendarTimeout(a *config.Account) time.Duration {
	if t := a.Calendar.Timeout.D(); t > 0 {
		return t
	}
	return 30 * time.Second
}
