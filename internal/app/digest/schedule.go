package digest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Schedule is when digests go out: every day at Hour:Minute, local time.
type Schedule struct {
	Hour, Minute int
}

// ParseSchedule reads "daily HH:MM".
func ParseSchedule(s string) (Schedule, error) {
	f := strings.Fields(strings.ToLower(s))
	if len(f) != 2 || f[0] != "daily" {
		return Schedule{}, fmt.Errorf("%q: want \"daily HH:MM\", e.g. \"daily 08:00\"", s)
	}
	hh, mm, ok := strings.Cut(f[1], ":")
	h, err1 := strconv.Atoi(hh)
	m, err2 := strconv.Atoi(mm)
	if !ok || err1 != nil || err2 != nil || h < 0 || h > 23 || m < 0 || m > 59 || len(mm) != 2 {
		return Schedule{}, fmt.Errorf("%q: the time must be HH:MM from 00:00 to 23:59", s)
	}
	return Schedule{Hour: h, Minute: m}, nil
}

// PeriodStart is the start of the period now is in: today at the
// scheduled time if that has passed, else yesterday's.
func (s Schedule) PeriodStart(now time.Time) time.Time {
	y, mo, d := now.Date()
	t := time.Date(y, mo, d, s.Hour, s.Minute, 0, 0, now.Location())
	if now.Before(t) {
		t = time.Date(y, mo, d-1, s.Hour, s.Minute, 0, 0, now.Location())
	}
	return t
}

// PeriodStore records the last period a digest was sent for.
// *store.Store implements it.
type PeriodStore interface {
	DigestPeriod() (string, error)
	SetDigestPeriod(p string) error
}

// Scheduler sends one digest per period.
type Scheduler struct {
	Schedule Schedule
	State    PeriodStore
	// Send builds and sends the digest of [since, until) for period.
	Send func(ctx context.Context, since, until time.Time, period string) error
	Now  func() time.Time
}

// RunDue sends the current period's digest unless it was sent already,
// and reports whether it sent one. The period is recorded first and
// cleared again if sending fails (the next call retries).
func (s *Scheduler) RunDue(ctx context.Context) (bool, error) {
	now := time.Now()
	if s.Now != nil {
		now = s.Now()
	}
	start := s.Schedule.PeriodStart(now)
	key := PeriodKey(start)
	last, err := s.State.DigestPeriod()
	if err != nil {
		return false, fmt.Errorf("digest: read the last period: %w", err)
	}
	if last == key {
		return false, nil
	}
	if err := s.State.SetDigestPeriod(key); err != nil {
		return false, fmt.Errorf("digest: record the period: %w", err)
	}
	since := start.AddDate(0, 0, -1)
	if err := s.Send(ctx, since, start, key); err != nil {
		if rerr := s.State.SetDigestPeriod(last); rerr != nil {
			err = errors.Join(err, fmt.Errorf("digest: restore the period: %w", rerr))
		}
		return false, err
	}
	return true, nil
}

// CronSpec is the schedule as a cron spec in robfig/cron/v3's standard
// form ("MM HH * * *", read in the watcher's local time zone, as
// PeriodStart is): the watcher's durable scheduler runs the digest job at
// its next time.
func (s *Scheduler) CronSpec() string {
	return fmt.Sprintf("%d %d * * *", s.Schedule.Minute, s.Schedule.Hour)
}
