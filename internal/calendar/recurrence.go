package calendar

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/emersion/go-ical"
	"github.com/teambition/rrule-go"
)

// Changes to one occurrence of a recurring event (RFC 5545 3.8.4.4, RFC
// 5546 3.2.2 and 3.2.5): an iTIP CANCEL or REQUEST whose VEVENTs carry a
// RECURRENCE-ID. ApplyOccurrences writes them into the calendar object
// that holds the series: a cancelled occurrence becomes an EXDATE on the
// master (RANGE=THISANDFUTURE ends the RRULE before it), a moved or
// changed one becomes an override VEVENT with that RECURRENCE-ID. It is
// pure: the caller reads the object and writes the result back with
// If-Match, so a concurrent change is never overwritten.

// Kinds of OccurrenceChange.
const (
	OccurrenceCancelled     = "cancelled"      // one occurrence removed (EXDATE)
	OccurrenceCancelledFrom = "cancelled_from" // this one and all later ones (RANGE=THISANDFUTURE)
	OccurrenceChanged       = "changed"        // moved or changed (an override VEVENT)
)

// ErrNoSeries is wrapped by ApplyOccurrences when the stored object holds
// no recurring master VEVENT with the message's UID.
var ErrNoSeries = errors.New("no recurring event with this UID")

// ErrNotOrganizer is wrapped by ApplyOccurrences when the message's
// ORGANIZER is not the stored series' ORGANIZER.
var ErrNotOrganizer = errors.New("the message's organizer is not the organizer of the series on the calendar")

// organizerCheckOff switches ApplyOccurrences' ORGANIZER comparison off.
// It exists only for the positive control of the occurrence attacks
// (SwitchOffOrganizerCheckForTest); nothing in the product sets it.
var organizerCheckOff atomic.Bool

// SwitchOffOrganizerCheckForTest turns ApplyOccurrences' ORGANIZER
// comparison (ErrNotOrganizer) off until the returned function is called.
// Only adversarial tests' positive controls call it, never from a
// parallel test.
func SwitchOffOrganizerCheckForTest() (restore func()) {
	organizerCheckOff.Store(true)
	return func() { organizerCheckOff.Store(false) }
}

// OccurrenceChange is what one VEVENT of an occurrence message asks for,
// and what ApplyOccurrences did with it.
type OccurrenceChange struct {
	Kind         string    // OccurrenceCancelled, OccurrenceCancelledFrom or OccurrenceChanged
	RecurrenceID string    // the RECURRENCE-ID value as sent (cleaned)
	Start        time.Time // the occurrence's original start, in the series' zone; zero when it matched none
	AllDay       bool
	// NewStart and NewEnd are a changed occurrence's new times.
	NewStart, NewEnd time.Time
	// Applied is true when the stored series now says so (also when it
	// said so already: Note then tells).
	Applied bool
	Note    string // why it was not applied, or "already so"
}

// OccurrenceIDs returns the RECURRENCE-ID values of the VEVENTs of an
// iTIP message about uid, in order, cleaned for display.
func OccurrenceIDs(ics []byte, uid string) []string {
	cal, err := decodeICS(ics)
	if err != nil {
		return nil
	}
	var out []string
	for _, c := range cal.Children {
		if c.Name == ical.CompEvent && propValue(c, ical.PropUID) == uid {
			if p := c.Props.Get(ical.PropRecurrenceID); p != nil {
				out = append(out, clean(p.Value, 40))
			}
		}
	}
	return out
}

// ApplyOccurrences applies the occurrence VEVENTs (those with a
// RECURRENCE-ID and msg's UID) of msg, a CANCEL or a REQUEST, to stored,
// the calendar object holding the series. loc is the zone of floating
// times. It returns the new object (nil when nothing changed) and one
// OccurrenceChange per occurrence VEVENT.
//
// Nothing is applied unless stored holds a recurring master with msg's
// UID whose ORGANIZER is msg's ORGANIZER (ErrNoSeries, ErrNotOrganizer);
// authenticating the sender as that organizer is the caller's. A
// RECURRENCE-ID that is no occurrence of the series, or an update older
// (lower SEQUENCE) than the override stored for it, is not applied and
// says why. The EXDATE and RECURRENCE-ID written take the value type and
// zone of the master's DTSTART (DATE, TZID, UTC or floating), whatever
// form the message used; the override brings the VTIMEZONEs it names.
func ApplyOccurrences(stored []byte, msg *Invitation, loc *time.Location) ([]byte, []OccurrenceChange, error) {
	if loc == nil {
		loc = time.UTC
	}
	if msg.Method != MethodCancel && msg.Method != MethodRequest {
		return nil, nil, fmt.Errorf("calendar: a %s changes no occurrence", clean(msg.Method, 20))
	}
	cal, err := decodeICS(stored)
	if err != nil {
		return nil, nil, err
	}
	in, err := decodeICS(msg.ICS)
	if err != nil {
		return nil, nil, err
	}
	var mc *ical.Component
	for _, c := range cal.Children {
		if c.Name == ical.CompEvent && propValue(c, ical.PropUID) == msg.UID && c.Props.Get(ical.PropRecurrenceID) == nil {
			mc = c
			break
		}
	}
	if mc == nil || (mc.Props.Get(ical.PropRecurrenceRule) == nil && mc.Props.Get(ical.PropRecurrenceDates) == nil) {
		return nil, nil, fmt.Errorf("calendar: %q: %w", clean(msg.UID, 80), ErrNoSeries)
	}
	if org := mc.Props.Get(ical.PropOrganizer); !organizerCheckOff.Load() && (org == nil || msg.Organizer == "" || mailtoAddr(org.Value) != msg.Organizer) {
		return nil, nil, fmt.Errorf("calendar: %q: %w", clean(msg.UID, 80), ErrNotOrganizer)
	}
	master, err := parseEvent(mc, loc)
	if err != nil {
		return nil, nil, err
	}
	s := &series{cal: cal, mc: mc, master: master, loc: loc, in: in}
	var out []OccurrenceChange
	changed := false
	for _, c := range in.Children {
		if c.Name != ical.CompEvent || propValue(c, ical.PropUID) != msg.UID || c.Props.Get(ical.PropRecurrenceID) == nil {
			continue
		}
		ch, did := s.apply(c, msg.Method)
		out = append(out, ch)
		changed = changed || did
	}
	if !changed {
		return nil, out, nil
	}
	data, err := encode(cal)
	if err != nil {
		return nil, nil, err
	}
	return data, out, nil
}

// series is the stored object being changed.
type series struct {
	cal    *ical.Calendar
	mc     *ical.Component // the master VEVENT
	master *event
	loc    *time.Location
	in     *ical.Calendar // the message
}

// apply applies one occurrence VEVENT c; did reports a change to s.cal.
func (s *series) apply(c *ical.Component, method string) (ch OccurrenceChange, did bool) {
	rp := c.Props.Get(ical.PropRecurrenceID)
	ch = OccurrenceChange{Kind: OccurrenceCancelled, RecurrenceID: clean(rp.Value, 40), AllDay: s.master.allDay}
	thisAndFuture := strings.EqualFold(rp.Params.Get(ical.ParamRange), "THISANDFUTURE")
	switch {
	case method == MethodRequest:
		ch.Kind = OccurrenceChanged
	case thisAndFuture:
		ch.Kind = OccurrenceCancelledFrom
	}
	at, err := s.recurrenceTime(rp)
	if err != nil {
		ch.Note = err.Error()
		return ch, false
	}
	if !s.isOccurrence(at) {
		ch.Note = "the series on your calendar has no occurrence at " + ch.RecurrenceID
		return ch, false
	}
	ch.Start = at.In(s.master.start.Location())
	if method == MethodRequest {
		return s.override(c, ch, at, thisAndFuture)
	}
	if thisAndFuture {
		return s.cancelFrom(ch, at)
	}
	if s.excluded(at) && s.overrideAt(at) < 0 {
		ch.Applied, ch.Note = true, "already cancelled on your calendar"
		return ch, false
	}
	s.dropOverride(at)
	if !s.excluded(at) {
		x := ical.NewProp(ical.PropExceptionDates)
		s.setMasterTime(x, at)
		s.mc.Props.Add(x)
	}
	ch.Applied = true
	return ch, true
}

// recurrenceTime reads a RECURRENCE-ID as an instant (a local midnight for
// an all-day series). A DATE against a series with times names no one
// occurrence and is refused; a DATE-TIME against an all-day series is
// taken when it is midnight.
func (s *series) recurrenceTime(p *ical.Prop) (time.Time, error) {
	t, allDay, err := propTime(p, p.Value, s.loc)
	if err != nil {
		return time.Time{}, fmt.Errorf("RECURRENCE-ID %q not read: %v", clean(p.Value, 40), err)
	}
	switch {
	case allDay == s.master.allDay:
		return t, nil
	case allDay:
		return time.Time{}, fmt.Errorf("RECURRENCE-ID %q is a date, but the series on your calendar has times", clean(p.Value, 40))
	}
	if t.Hour() != 0 || t.Minute() != 0 || t.Second() != 0 {
		return time.Time{}, fmt.Errorf("RECURRENCE-ID %q has a time, but the series on your calendar is all-day", clean(p.Value, 40))
	}
	return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, s.loc), nil
}

// isOccurrence reports whether at is a start the series generates
// (DTSTART, RRULE, RDATE), whether or not an EXDATE removed it.
func (s *series) isOccurrence(at time.Time) bool {
	if at.Equal(s.master.start) {
		return true
	}
	rdates, err := s.master.dateList(ical.PropRecurrenceDates, s.loc)
	if err != nil {
		return false
	}
	if slices.ContainsFunc(rdates, at.Equal) {
		return true
	}
	rp := s.mc.Props.Get(ical.PropRecurrenceRule)
	if rp == nil || at.Before(s.master.start) {
		return false
	}
	opt, err := rrule.StrToROptionInLocation(rp.Value, s.master.start.Location())
	if err != nil {
		return false
	}
	opt.Dtstart = s.master.start
	rule, err := rrule.NewRRule(*opt)
	if err != nil {
		return false
	}
	next := rule.Iterator()
	for i := 0; i < maxInstances; i++ {
		t, ok := next()
		if !ok || t.After(at) {
			return false
		}
		if t.Equal(at) {
			return true
		}
	}
	return false
}

// excluded reports whether an EXDATE of the master removes at.
func (s *series) excluded(at time.Time) bool {
	x, err := s.master.dateList(ical.PropExceptionDates, s.loc)
	return err == nil && slices.ContainsFunc(x, at.Equal)
}

// overrideAt is the index in s.cal.Children of the override VEVENT for
// the occurrence at, -1 when there is none.
func (s *series) overrideAt(at time.Time) int {
	for i, c := range s.cal.Children {
		if c.Name != ical.CompEvent || propValue(c, ical.PropUID) != s.master.uid {
			continue
		}
		if p := c.Props.Get(ical.PropRecurrenceID); p != nil {
			if t, err := s.recurrenceTime(p); err == nil && t.Equal(at) {
				return i
			}
		}
	}
	return -1
}

func (s *series) dropOverride(at time.Time) bool {
	i := s.overrideAt(at)
	if i < 0 {
		return false
	}
	s.cal.Children = slices.Delete(s.cal.Children, i, i+1)
	return true
}

// setMasterTime sets p's value to at in the form of the master's
// DTSTART: a DATE, a DATE-TIME with its TZID, in UTC, or floating.
func (s *series) setMasterTime(p *ical.Prop, at time.Time) {
	sp := s.mc.Props.Get(ical.PropDateTimeStart)
	p.Params = ical.Params{}
	switch {
	case s.master.allDay:
		p.Params.Set(ical.ParamValue, "DATE")
		p.Value = at.Format("20060102")
	case strings.HasSuffix(sp.Value, "Z"):
		p.Value = at.UTC().Format("20060102T150405Z")
	case sp.Params.Get(ical.ParamTimezoneID) != "":
		p.Params.Set(ical.ParamTimezoneID, sp.Params.Get(ical.ParamTimezoneID))
		p.Value = at.In(s.master.start.Location()).Format("20060102T150405")
	default:
		p.Value = at.In(s.loc).Format("20060102T150405")
	}
}

// cancelFrom ends the series before at (RANGE=THISANDFUTURE): the RRULE
// gets an UNTIL, and later RDATEs and overrides go.
func (s *series) cancelFrom(ch OccurrenceChange, at time.Time) (OccurrenceChange, bool) {
	if !at.After(s.master.start) {
		ch.Note = "it cancels the series from its first occurrence on: that is the whole series, which only a cancellation of the series removes"
		return ch, false
	}
	if rp := s.mc.Props.Get(ical.PropRecurrenceRule); rp != nil {
		var until string
		switch sp := s.mc.Props.Get(ical.PropDateTimeStart); {
		case s.master.allDay:
			until = at.AddDate(0, 0, -1).Format("20060102")
		case !strings.HasSuffix(sp.Value, "Z") && sp.Params.Get(ical.ParamTimezoneID) == "":
			until = at.Add(-time.Second).In(s.loc).Format("20060102T150405") // floating, like DTSTART
		default:
			until = at.Add(-time.Second).UTC().Format("20060102T150405Z")
		}
		var parts []string
		for _, part := range strings.Split(rp.Value, ";") {
			k, _, _ := strings.Cut(strings.ToUpper(part), "=")
			if k != "UNTIL" && k != "COUNT" && part != "" {
				parts = append(parts, part)
			}
		}
		rp.Value = strings.Join(append(parts, "UNTIL="+until), ";")
	}
	var rd []ical.Prop
	for _, p := range s.mc.Props.Values(ical.PropRecurrenceDates) {
		var keep []string
		for _, v := range strings.Split(p.Value, ",") {
			if t, _, err := propTime(&p, strings.TrimSpace(v), s.loc); err == nil && !t.Before(at) {
				continue
			}
			keep = append(keep, v)
		}
		if len(keep) > 0 {
			p.Value = strings.Join(keep, ",")
			rd = append(rd, p)
		}
	}
	if len(rd) > 0 {
		s.mc.Props[ical.PropRecurrenceDates] = rd
	} else {
		s.mc.Props.Del(ical.PropRecurrenceDates)
	}
	s.cal.Children = slices.DeleteFunc(s.cal.Children, func(c *ical.Component) bool {
		if c.Name != ical.CompEvent || propValue(c, ical.PropUID) != s.master.uid {
			return false
		}
		p := c.Props.Get(ical.PropRecurrenceID)
		if p == nil {
			return false
		}
		t, err := s.recurrenceTime(p)
		return err == nil && !t.Before(at)
	})
	ch.Applied = true
	return ch, true
}

// override stores c as the override of the occurrence at, replacing one
// stored before unless that one is newer (higher SEQUENCE).
func (s *series) override(c *ical.Component, ch OccurrenceChange, at time.Time, thisAndFuture bool) (OccurrenceChange, bool) {
	if thisAndFuture {
		ch.Note = "it changes this and every later occurrence (RANGE=THISANDFUTURE), which mailagent does not apply: change the series in your calendar client"
		return ch, false
	}
	ev, err := parseEvent(c, s.loc)
	if err != nil {
		ch.Note = err.Error()
		return ch, false
	}
	ch.NewStart, ch.NewEnd = ev.start, ev.endFor(ev.start)
	if i := s.overrideAt(at); i >= 0 {
		if seq(s.cal.Children[i]) > seq(c) {
			ch.Note = fmt.Sprintf("your calendar holds a newer change of this occurrence (SEQUENCE %d > %d)", seq(s.cal.Children[i]), seq(c))
			return ch, false
		}
		s.cal.Children = slices.Delete(s.cal.Children, i, i+1)
	}
	o := ical.NewComponent(ical.CompEvent)
	for name, ps := range c.Props {
		o.Props[name] = slices.Clone(ps)
	}
	o.Children = c.Children // VALARMs
	rid := ical.NewProp(ical.PropRecurrenceID)
	s.setMasterTime(rid, at)
	o.Props.Set(rid)
	s.cal.Children = append(s.cal.Children, o)
	// An occurrence cancelled before and now sent again stands again.
	if s.excluded(at) {
		s.unexclude(at)
	}
	s.addTimezones(o)
	ch.Applied = true
	return ch, true
}

// unexclude removes the EXDATE values equal to at.
func (s *series) unexclude(at time.Time) {
	var keepProps []ical.Prop
	for _, p := range s.mc.Props.Values(ical.PropExceptionDates) {
		var keep []string
		for _, v := range strings.Split(p.Value, ",") {
			if t, _, err := propTime(&p, strings.TrimSpace(v), s.loc); err == nil && t.Equal(at) {
				continue
			}
			keep = append(keep, v)
		}
		if len(keep) > 0 {
			p.Value = strings.Join(keep, ",")
			keepProps = append(keepProps, p)
		}
	}
	if len(keepProps) > 0 {
		s.mc.Props[ical.PropExceptionDates] = keepProps
	} else {
		s.mc.Props.Del(ical.PropExceptionDates)
	}
}

// addTimezones copies the message's VTIMEZONEs that o's times name and
// the stored object lacks.
func (s *series) addTimezones(o *ical.Component) {
	have := map[string]bool{}
	for _, c := range s.cal.Children {
		if c.Name == ical.CompTimezone {
			have[propValue(c, ical.PropTimezoneID)] = true
		}
	}
	for _, n := range []string{ical.PropDateTimeStart, ical.PropDateTimeEnd} {
		p := o.Props.Get(n)
		if p == nil {
			continue
		}
		tz := p.Params.Get(ical.ParamTimezoneID)
		if tz == "" || have[tz] {
			continue
		}
		for _, c := range s.in.Children {
			if c.Name == ical.CompTimezone && propValue(c, ical.PropTimezoneID) == tz {
				s.cal.Children = append([]*ical.Component{c}, s.cal.Children...)
				have[tz] = true
				break
			}
		}
	}
}

func seq(c *ical.Component) int {
	n := 0
	_, _ = fmt.Sscanf(strings.TrimSpace(propValue(c, ical.PropSequence)), "%d", &n)
	return n
}
