package calendar

import (
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/emersion/go-ical"
	"github.com/teambition/rrule-go"
)

// maxInstances bounds the occurrences walked for one recurring event, so a
// hostile FREQ=SECONDLY rule cannot spin forever.
const maxInstances = 100000

// busyChecksOff makes Busy take a hostile event as it comes instead of
// refusing it: a TZID it does not know reads as loc, an end before the
// start is kept, an RRULE it cannot read is ignored (the event counts
// once), and the walk of a recurrence stops quietly at maxInstances (it
// would otherwise run for hours on FREQ=SECONDLY from 1970). It exists
// only for the positive control of TestBusyHostileInput (package
// calendar); nothing in the product sets it. Never from a parallel test.
var busyChecksOff atomic.Bool

// event is one VEVENT, parsed.
type event struct {
	uid        string
	start, end time.Time // end exclusive
	allDay     bool
	days       int // length in days for an all-day event
	free       bool
	recurID    time.Time // zero for a master or single event
	comp       *ical.Component
}

// Busy returns the busy intervals of the given calendars inside window,
// merged and sorted. loc is the zone of floating times and all-day
// events (the owner's).
func Busy(cals []*ical.Calendar, window Interval, loc *time.Location) ([]Interval, error) {
	if loc == nil {
		loc = time.UTC
	}
	type group struct {
		masters   []*event
		overrides []*event
	}
	groups := map[string]*group{}
	var order []string
	for _, cal := range cals {
		if cal == nil || cal.Component == nil {
			continue
		}
		for _, child := range cal.Children {
			if child.Name != ical.CompEvent {
				continue
			}
			ev, err := parseEvent(child, loc)
			if err != nil {
				return nil, err
			}
			g := groups[ev.uid]
			if g == nil {
				g = &group{}
				groups[ev.uid] = g
				order = append(order, ev.uid)
			}
			if ev.recurID.IsZero() {
				g.masters = append(g.masters, ev)
			} else {
				g.overrides = append(g.overrides, ev)
			}
		}
	}
	var busy []Interval
	add := func(ev *event, start time.Time) {
		if ev.free {
			return
		}
		iv := Interval{Start: start, End: ev.endFor(start)}
		if iv.End.After(window.Start) && iv.Start.Before(window.End) {
			busy = append(busy, iv)
		}
	}
	for _, uid := range order {
		g := groups[uid]
		moved := map[int64]bool{}
		for _, o := range g.overrides {
			moved[o.recurID.Unix()] = true
			add(o, o.start)
		}
		for _, m := range g.masters {
			starts, err := m.occurrences(window, loc)
			if err != nil {
				return nil, err
			}
			for _, s := range starts {
				if !moved[s.Unix()] {
					add(m, s)
				}
			}
		}
	}
	return Merge(busy), nil
}

func parseEvent(c *ical.Component, loc *time.Location) (*event, error) {
	ev := &event{comp: c}
	if p := c.Props.Get(ical.PropUID); p != nil {
		ev.uid = p.Value
	}
	fail := func(format string, a ...any) error {
		return fmt.Errorf("calendar: event %q: %s", ev.uid, fmt.Sprintf(format, a...))
	}
	sp := c.Props.Get(ical.PropDateTimeStart)
	if sp == nil {
		return nil, fail("no DTSTART")
	}
	var err error
	ev.start, ev.allDay, err = propTime(sp, sp.Value, loc)
	if err != nil {
		return nil, fail("DTSTART: %v", err)
	}
	switch ep, dp := c.Props.Get(ical.PropDateTimeEnd), c.Props.Get(ical.PropDuration); {
	case ep != nil:
		end, _, err := propTime(ep, ep.Value, loc)
		if err != nil {
			return nil, fail("DTEND: %v", err)
		}
		ev.end = end
	case dp != nil:
		d, err := dp.Duration()
		if err != nil {
			return nil, fail("DURATION: %v", err)
		}
		if ev.allDay && d%(24*time.Hour) == 0 {
			ev.end = ev.start.AddDate(0, 0, int(d/(24*time.Hour)))
		} else {
			ev.end = ev.start.Add(d)
		}
	case ev.allDay:
		ev.end = ev.start.AddDate(0, 0, 1)
	default:
		ev.end = ev.start
	}
	if ev.allDay {
		ev.days = civilDays(ev.start, ev.end)
	}
	if ev.end.Before(ev.start) && !busyChecksOff.Load() {
		return nil, fail("ends before it starts")
	}
	if p := c.Props.Get(ical.PropStatus); p != nil && strings.EqualFold(strings.TrimSpace(p.Value), "CANCELLED") {
		ev.free = true
	}
	if p := c.Props.Get(ical.PropTransparency); p != nil && strings.EqualFold(strings.TrimSpace(p.Value), "TRANSPARENT") {
		ev.free = true
	}
	if p := c.Props.Get(ical.PropRecurrenceID); p != nil {
		if ev.recurID, _, err = propTime(p, p.Value, loc); err != nil {
			return nil, fail("RECURRENCE-ID: %v", err)
		}
	}
	return ev, nil
}

func civilDays(a, b time.Time) int {
	ad := time.Date(a.Year(), a.Month(), a.Day(), 12, 0, 0, 0, time.UTC)
	bd := time.Date(b.Year(), b.Month(), b.Day(), 12, 0, 0, 0, time.UTC)
	return int(bd.Sub(ad).Hours()/24 + 0.5)
}

// endFor returns the end of the occurrence starting at start: the same
// number of local days for an all-day event, the same exact duration
// otherwise (RFC 5545 3.8.5.3).
func (ev *event) endFor(start time.Time) time.Time {
	if ev.allDay {
		return start.AddDate(0, 0, ev.days)
	}
	return start.Add(ev.end.Sub(ev.start))
}

// occurrences returns the start times of ev that may overlap window.
func (ev *event) occurrences(window Interval, loc *time.Location) ([]time.Time, error) {
	rp := ev.comp.Props.Get(ical.PropRecurrenceRule)
	rdates, err := ev.dateList(ical.PropRecurrenceDates, loc)
	if err != nil {
		return nil, err
	}
	if rp == nil {
		return append([]time.Time{ev.start}, rdates...), nil
	}
	exdates, err := ev.dateList(ical.PropExceptionDates, loc)
	if err != nil {
		return nil, err
	}
	excluded := map[int64]bool{}
	for _, x := range exdates {
		excluded[x.Unix()] = true
	}
	opt, err := rrule.StrToROptionInLocation(rp.Value, ev.start.Location())
	if err != nil && busyChecksOff.Load() {
		return append([]time.Time{ev.start}, rdates...), nil
	}
	if err != nil {
		return nil, fmt.Errorf("calendar: event %q: RRULE: %w", ev.uid, err)
	}
	opt.Dtstart = ev.start
	rule, err := rrule.NewRRule(*opt)
	if err != nil {
		return nil, fmt.Errorf("calendar: event %q: RRULE: %w", ev.uid, err)
	}
	// An occurrence that starts before the window may still reach into it.
	from := window.Start.Add(-ev.endFor(ev.start).Sub(ev.start) - 24*time.Hour)
	var out []time.Time
	next := rule.Iterator()
	for i := 0; ; i++ {
		if i >= maxInstances && busyChecksOff.Load() {
			break
		}
		if i >= maxInstances {
			return nil, fmt.Errorf("calendar: event %q: more than %d occurrences before the window ends", ev.uid, maxInstances)
		}
		t, ok := next()
		if !ok || !t.Before(window.End) {
			break
		}
		if t.Before(from) || excluded[t.Unix()] {
			continue
		}
		out = append(out, t)
	}
	for _, r := range rdates {
		if !excluded[r.Unix()] {
			out = append(out, r)
		}
	}
	return out, nil
}

// dateList reads every value of EXDATE or RDATE (several properties, each
// possibly a comma-separated list); PERIOD values are skipped.
func (ev *event) dateList(name string, loc *time.Location) ([]time.Time, error) {
	var out []time.Time
	for _, p := range ev.comp.Props.Values(name) {
		if strings.EqualFold(p.Params.Get(ical.ParamValue), "PERIOD") {
			continue
		}
		for _, v := range strings.Split(p.Value, ",") {
			v = strings.TrimSpace(v)
			if v == "" || strings.Contains(v, "/") {
				continue
			}
			t, _, err := propTime(&p, v, loc)
			if err != nil {
				return nil, fmt.Errorf("calendar: event %q: %s: %v", ev.uid, name, err)
			}
			out = append(out, t)
		}
	}
	return out, nil
}

// propTime parses one DATE or DATE-TIME value of p: UTC ("Z"), in the
// zone its TZID names, or floating (in loc). A DATE is local midnight.
func propTime(p *ical.Prop, v string, loc *time.Location) (time.Time, bool, error) {
	if strings.EqualFold(p.Params.Get(ical.ParamValue), "DATE") || len(v) == len("20060102") {
		t, err := time.ParseInLocation("20060102", v, loc)
		return t, true, err
	}
	if strings.HasSuffix(v, "Z") {
		t, err := time.ParseInLocation("20060102T150405Z", v, time.UTC)
		return t, false, err
	}
	zone := loc
	if tzid := strings.Trim(p.Params.Get(ical.PropTimezoneID), `"`); tzid != "" {
		z, err := loadZone(tzid)
		switch {
		case err != nil && busyChecksOff.Load():
			z = loc
		case err != nil:
			return time.Time{}, false, err
		}
		zone = z
	}
	t, err := time.ParseInLocation("20060102T150405", v, zone)
	return t, false, err
}

// windowsZones maps the Windows time zone names Outlook and Exchange
// write as TZID to IANA zones (CLDR windowsZones.xml, territory 001), for
// the most common zones.
var windowsZones = map[string]string{
	"UTC": "Etc/UTC", "GMT Standard Time": "Europe/London", "Greenwich Standard Time": "Atlantic/Reykjavik",
	"W. Europe Standard Time": "Europe/Berlin", "Central Europe Standard Time": "Europe/Budapest",
	"Central European Standard Time": "Europe/Warsaw", "Romance Standard Time": "Europe/Paris",
	"E. Europe Standard Time": "Europe/Chisinau", "FLE Standard Time": "Europe/Kiev", "GTB Standard Time": "Europe/Bucharest",
	"Russian Standard Time": "Europe/Moscow", "Turkey Standard Time": "Europe/Istanbul", "Israel Standard Time": "Asia/Jerusalem",
	"Eastern Standard Time": "America/New_York", "Central Standard Time": "America/Chicago",
	"Mountain Standard Time": "America/Denver", "US Mountain Standard Time": "America/Phoenix",
	"Pacific Standard Time": "America/Los_Angeles", "Alaskan Standard Time": "America/Anchorage",
	"Hawaiian Standard Time": "Pacific/Honolulu", "Atlantic Standard Time": "America/Halifax",
	"E. South America Standard Time": "America/Sao_Paulo", "India Standard Time": "Asia/Calcutta",
	"China Standard Time": "Asia/Shanghai", "Tokyo Standard Time": "Asia/Tokyo", "Singapore Standard Time": "Asia/Singapore",
	"AUS Eastern Standard Time": "Australia/Sydney", "New Zealand Standard Time": "Pacific/Auckland",
	"Arabian Standard Time": "Asia/Dubai", "South Africa Standard Time": "Africa/Johannesburg",
}

// loadZone loads an IANA zone or a common Windows zone name; a TZID some
// servers prefix with a path ("/mozilla.org/20050126_1/Europe/Berlin") is
// reduced to its IANA tail.
func loadZone(tzid string) (*time.Location, error) {
	if z, err := time.LoadLocation(tzid); err == nil {
		return z, nil
	}
	if iana, ok := windowsZones[tzid]; ok {
		if z, err := time.LoadLocation(iana); err == nil {
			return z, nil
		}
	}
	parts := strings.Split(tzid, "/")
	for i := 1; i < len(parts)-1; i++ {
		if z, err := time.LoadLocation(strings.Join(parts[i:], "/")); err == nil {
			return z, nil
		}
	}
	return nil, fmt.Errorf("unknown time zone %q (IANA names and common Windows names are understood)", tzid)
}
