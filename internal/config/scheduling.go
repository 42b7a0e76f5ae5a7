package config

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Scheduling holds the owner's scheduling preferences ([scheduling]): the
// free slots offered for a meeting lie inside working hours on working
// days, at least min_notice from now, with buffer kept free around every
// busy interval.
type Scheduling struct {
	// Timezone is an IANA zone ("Europe/Berlin"); "" is the machine's.
	Timezone string `toml:"timezone"`
	// WorkingHours is "HH:MM-HH:MM" in Timezone (default "09:00-17:30").
	WorkingHours string `toml:"working_hours"`
	// Days lists working days: "mon-fri" (default), "mon,wed,fri",
	// "sun-thu".
	Days string `toml:"days"`
	// Buffer is kept free before and after every busy interval (default 0).
	Buffer Duration `toml:"buffer"`
	// MinNotice: no slot starts sooner than this after now (default 4h).
	MinNotice Duration `toml:"min_notice"`
	// SlotLength is the meeting length offered (default 30m); free
	// intervals shorter than it are not offered.
	SlotLength Duration `toml:"slot_length"`
}

// Location loads Timezone.
func (s Scheduling) Location() (*time.Location, error) {
	if strings.TrimSpace(s.Timezone) == "" {
		return time.Local, nil
	}
	loc, err := time.LoadLocation(strings.TrimSpace(s.Timezone))
	if err != nil {
		return nil, fmt.Errorf("scheduling.timezone %q: %w", s.Timezone, err)
	}
	return loc, nil
}

// Hours parses WorkingHours into minutes after midnight.
func (s Scheduling) Hours() (from, to int, err error) {
	a, b, ok := strings.Cut(strings.TrimSpace(s.WorkingHours), "-")
	if !ok {
		return 0, 0, errors.New(`working hours must read "HH:MM-HH:MM"`)
	}
	if from, err = clock(a); err != nil {
		return 0, 0, err
	}
	if to, err = clock(b); err != nil {
		return 0, 0, err
	}
	if to <= from {
		return 0, 0, fmt.Errorf("working hours end %s is not after the start %s", strings.TrimSpace(b), strings.TrimSpace(a))
	}
	return from, to, nil
}

func clock(s string) (int, error) {
	s = strings.TrimSpace(s)
	if s == "24:00" {
		return 24 * 60, nil
	}
	t, err := time.Parse("15:04", s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a time of day HH:MM", s)
	}
	return t.Hour()*60 + t.Minute(), nil
}

var dayNames = []string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}

// Weekdays parses Days into a set indexed by time.Weekday.
func (s Scheduling) Weekdays() ([7]bool, error) {
	var set [7]bool
	day := func(n string) (int, error) {
		n = strings.ToLower(strings.TrimSpace(n))
		if len(n) > 3 {
			n = n[:3]
		}
		i := slices.Index(dayNames, n)
		if i < 0 {
			return 0, fmt.Errorf("%q is not a day (use mon, tue, wed, thu, fri, sat, sun)", n)
		}
		return i, nil
	}
	for _, part := range strings.Split(s.Days, ",") {
		if strings.TrimSpace(part) == "" {
			continue
		}
		a, b, isRange := strings.Cut(part, "-")
		from, err := day(a)
		if err != nil {
			return set, err
		}
		to := from
		if isRange {
			if to, err = day(b); err != nil {
				return set, err
			}
		}
		for i := from; ; i = (i + 1) % 7 {
			set[i] = true
			if i == to {
				break
			}
		}
	}
	if set == [7]bool{} {
		return set, errors.New("no working day is named")
	}
	return set, nil
}

func defaultScheduling() Scheduling {
	return Scheduling{WorkingHours: "09:00-17:30", Days: "mon-fri", MinNotice: Dur(4 * time.Hour), SlotLength: Dur(30 * time.Minute)}
}

func (s *Scheduling) validate(p *problems) {
	if _, err := s.Location(); err != nil {
		p.add("scheduling.timezone", fmt.Sprintf("%q is not a known time zone", s.Timezone), `use an IANA name such as "Europe/Berlin" or "America/New_York"`)
	}
	if _, _, err := s.Hours(); err != nil {
		p.add("scheduling.working_hours", err.Error(), `write it like "09:00-17:30"`)
	}
	if _, err := s.Weekdays(); err != nil {
		p.add("scheduling.days", err.Error(), `write it like "mon-fri" or "mon,tue,thu"`)
	}
	p.duration("scheduling.buffer", s.Buffer, `"10m"`, true)
	p.duration("scheduling.min_notice", s.MinNotice, `"4h"`, true)
	p.duration("scheduling.slot_length", s.SlotLength, `"30m"`, false)
	if d := s.SlotLength.D(); d > 0 && (d < 5*time.Minute || d > 12*time.Hour) {
		p.add("scheduling.slot_length", fmt.Sprintf("%s is outside 5m–12h", d), `use a meeting length such as "30m" or "1h"`)
	}
	if d := s.Buffer.D(); d > 4*time.Hour {
		p.add("scheduling.buffer", fmt.Sprintf("%s is longer than 4h", d), `use a few minutes, e.g. "10m"`)
	}
}

func sortedStrings(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

func unwrapPath(err error) error {
	if u := errors.Unwrap(err); u != nil {
		return u
	}
	return err
}
