// Package calendar answers one question for the agent: when is the owner
// free? It reads busy time from a CalDAV server or an iCalendar feed and
// computes free slots from it with the owner's scheduling preferences.
//
// Contract:
//   - FreeSlots is pure: the same busy list, preferences and window give
//     the same slots, computed on the wall clock of Prefs.Location, so
//     working hours stay 09:00–17:30 local across a DST change.
//   - Busy expands iCalendar data itself: RRULE with EXDATE and RDATE,
//     RECURRENCE-ID overrides (moved or cancelled instances), all-day
//     events (whole local days), TZID and UTC times, floating times (in
//     the owner's zone). TRANSP:TRANSPARENT and STATUS:CANCELLED events
//     are free. An event that cannot be read (unknown TZID, broken RRULE)
//     is an error naming its UID, never silently free time: no slots
//     are better than wrong ones.
//   - Sources read calendar data (CalDAV REPORT calendar-query with a
//     time range, or a GET of an .ics feed), with a response-size cap;
//     errors never contain the password. The only writes are PutEvent (a
//     CalDAV PUT of an event the owner's command led to) and DeleteEvent
//     (of an event PutEvent wrote), both conditional: a create sends
//     If-None-Match: *, an update or delete If-Match with the stored
//     ETag, so another client's change is never overwritten (a 412 is
//     ErrPrecondition, never retried here).
//   - ParseInvitation reads iMIP (RFC 6047) text/calendar parts; Reply
//     writes the iTIP REPLY (RFC 5546) with only the UID, SEQUENCE,
//     RECURRENCE-ID, times, ORGANIZER and the owner's ATTENDEE. Text read
//     from an invitation has control characters removed and is capped.
//   - ApplyOccurrences (pure) writes a CANCEL or REQUEST of single
//     occurrences (RECURRENCE-ID) into the stored series: EXDATE in the
//     master's form, UNTIL for RANGE=THISANDFUTURE, override VEVENTs;
//     GetEvent reads the series with the ETag its write must name.
//   - From the project the package imports only internal/mail (AddrKey,
//     the one address key).
package calendar

import (
	"errors"
	"slices"
	"time"
)

// Interval is a half-open time range [Start, End).
type Interval struct {
	Start time.Time
	End   time.Time
}

// Duration returns End-Start.
func (iv Interval) Duration() time.Duration { return iv.End.Sub(iv.Start) }

// Prefs are the owner's scheduling preferences, parsed.
type Prefs struct {
	Location *time.Location
	// DayStart and DayEnd are working hours in minutes after local midnight.
	DayStart, DayEnd int
	// Days[time.Weekday] is true on working days.
	Days       [7]bool
	Buffer     time.Duration // kept free around every busy interval
	MinNotice  time.Duration // no slot starts sooner after now
	SlotLength time.Duration // the meeting length; shorter gaps are not offered
}

// ErrPrefs is returned for preferences FreeSlots cannot use.
var ErrPrefs = errors.New("calendar: invalid scheduling preferences")

func (p Prefs) check() error {
	if p.Location == nil || p.DayEnd <= p.DayStart || p.DayStart < 0 || p.DayEnd > 24*60 || p.SlotLength <= 0 || p.Buffer < 0 {
		return ErrPrefs
	}
	return nil
}

// Window returns the search window for "the next days days": from
// now+MinNotice, rounded up to the next quarter hour, to the end of the
// local day days-1 days from now.
func Window(now time.Time, days int, p Prefs) Interval {
	loc := p.Location
	if loc == nil {
		loc = time.UTC
	}
	start := now.Add(p.MinNotice)
	if r := start.Truncate(15 * time.Minute); !r.Equal(start) {
		start = r.Add(15 * time.Minute)
	}
	n := now.In(loc)
	end := time.Date(n.Year(), n.Month(), n.Day()+days, 0, 0, 0, 0, loc)
	if end.Before(start) {
		end = start
	}
	return Interval{Start: start, End: end}
}

// FreeSlots returns the free intervals inside window: within working hours
// on working days (on Prefs.Location's wall clock), outside every busy
// interval widened by Buffer on both sides, each at least SlotLength
// long, sorted. Busy intervals may overlap and be in any zone or order.
func FreeSlots(busy []Interval, p Prefs, window Interval) ([]Interval, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	blocked := make([]Interval, 0, len(busy))
	for _, b := range busy {
		if !b.End.After(b.Start) {
			continue
		}
		blocked = append(blocked, Interval{Start: b.Start.Add(-p.Buffer), End: b.End.Add(p.Buffer)})
	}
	blocked = Merge(blocked)

	var out []Interval
	ws := window.Start.In(p.Location)
	for d := time.Date(ws.Year(), ws.Month(), ws.Day(), 0, 0, 0, 0, p.Location); d.Before(window.End); d = time.Date(d.Year(), d.Month(), d.Day()+1, 0, 0, 0, 0, p.Location) {
		if !p.Days[d.Weekday()] {
			continue
		}
		day := Interval{
			Start: time.Date(d.Year(), d.Month(), d.Day(), p.DayStart/60, p.DayStart%60, 0, 0, p.Location),
			End:   time.Date(d.Year(), d.Month(), d.Day(), p.DayEnd/60, p.DayEnd%60, 0, 0, p.Location),
		}
		if day.Start.Before(window.Start) {
			day.Start = window.Start
		}
		if day.End.After(window.End) {
			day.End = window.End
		}
		for _, f := range subtract(day, blocked) {
			if f.Duration() >= p.SlotLength {
				out = append(out, Interval{Start: f.Start.In(p.Location), End: f.End.In(p.Location)})
			}
		}
	}
	return out, nil
}

// subtract returns iv minus the sorted, merged intervals in blocked.
func subtract(iv Interval, blocked []Interval) []Interval {
	var out []Interval
	cur := iv.Start
	for _, b := range blocked {
		if !b.End.After(cur) {
			continue
		}
		if !b.Start.Before(iv.End) {
			break
		}
		if b.Start.After(cur) {
			out = append(out, Interval{Start: cur, End: b.Start})
		}
		cur = b.End
	}
	if cur.Before(iv.End) {
		out = append(out, Interval{Start: cur, End: iv.End})
	}
	return out
}

// Merge sorts intervals and joins those that overlap or touch.
func Merge(in []Interval) []Interval {
	s := slices.Clone(in)
	slices.SortFunc(s, func(a, b Interval) int { return a.Start.Compare(b.Start) })
	var out []Interval
	for _, iv := range s {
		if n := len(out); n > 0 && !iv.Start.After(out[n-1].End) {
			if iv.End.After(out[n-1].End) {
				out[n-1].End = iv.End
			}
			continue
		}
		out = append(out, iv)
	}
	return out
}
