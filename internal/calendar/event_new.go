package calendar

import (
	"fmt"
	"regexp"
	"sync"
	"sync/atomic"
	"time"

	"github.com/emersion/go-ical"
)

// NewEvent is an event mailagent itself creates on the owner's calendar:
// the time a scheduling reply the owner approved confirmed.
type NewEvent struct {
	UID       string
	Summary   string // untrusted (the mail's subject): cleaned by TentativeEvent
	Organizer string // the owner's address
	Attendee  string // the correspondent's address
	Start     time.Time
	End       time.Time
	Stamp     time.Time
}

// replyPrefix matches the "Re:", "AW:", "Fwd:" … runs a subject carries.
var replyPrefix = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)^\s*((re|aw|sv|fwd?|wg)\s*(\[\d+\])?\s*:\s*)+`) })

// EventSummary is the SUMMARY an event gets from a mail subject: reply
// prefixes dropped, control characters (CR, LF, escapes, bidi overrides)
// removed, capped; "Meeting" when nothing is left.
func EventSummary(subject string) string {
	s := clean(replyPrefix().ReplaceAllString(clean(subject, 4*maxSummary), ""), maxSummary)
	if s == "" {
		return "Meeting"
	}
	return s
}

// eventChecksOff makes TentativeEvent write the organizer and attendee
// as given and skip its checks (plain addresses, a UID, an end after the
// start). It exists only for the positive control of
// TestTentativeEventHostileFields (package calendar); nothing in the
// product sets it. Never from a parallel test.
var eventChecksOff atomic.Bool

// TentativeEvent writes the calendar data (for a CalDAV PUT, no METHOD)
// of one tentative event: STATUS:TENTATIVE, the owner as ORGANIZER and
// the correspondent as ATTENDEE (PARTSTAT=NEEDS-ACTION), times in UTC.
// Addresses that are not plain addresses are refused.
func TentativeEvent(e NewEvent) ([]byte, error) {
	org, att := mailtoAddr("mailto:"+e.Organizer), mailtoAddr("mailto:"+e.Attendee)
	off := eventChecksOff.Load()
	if off {
		org, att = e.Organizer, e.Attendee
	}
	switch {
	case off:
	case org == "" || att == "":
		return nil, fmt.Errorf("calendar: event: organizer %q or attendee %q is not an address", clean(e.Organizer, 80), clean(e.Attendee, 80))
	case e.UID == "" || !e.End.After(e.Start):
		return nil, fmt.Errorf("calendar: event: needs a UID and an end after its start")
	}
	out := ical.NewCalendar()
	out.Props.SetText(ical.PropVersion, "2.0")
	out.Props.SetText(ical.PropProductID, ProdID)
	ev := ical.NewComponent(ical.CompEvent)
	ev.Props.SetText(ical.PropUID, e.UID)
	ev.Props.SetDateTime(ical.PropDateTimeStamp, e.Stamp.UTC())
	ev.Props.SetDateTime(ical.PropDateTimeStart, e.Start.UTC())
	ev.Props.SetDateTime(ical.PropDateTimeEnd, e.End.UTC())
	ev.Props.SetText(ical.PropSummary, EventSummary(e.Summary))
	ev.Props.SetText(ical.PropStatus, "TENTATIVE")
	o := ical.NewProp(ical.PropOrganizer)
	o.Value = "mailto:" + org
	ev.Props.Set(o)
	a := ical.NewProp(ical.PropAttendee)
	a.Value = "mailto:" + att
	a.Params.Set(ical.ParamParticipationStatus, "NEEDS-ACTION")
	ev.Props.Add(a)
	out.Children = append(out.Children, ev)
	return encode(out)
}

// ConfirmedSlot returns the start of the one meeting text confirms: a
// single day and time, inside an offered slot with room for length after
// it, with every other date or time in text naming the same day or time
// and none outside the offered slots. Zero or several times: false.
func ConfirmedSlot(text string, offered []Interval, length time.Duration, ref time.Time, loc *time.Location) (time.Time, bool) {
	if loc == nil {
		loc = time.UTC
	}
	if c := CheckTimes(text, "", offered, length, ref, loc); !c.OK() || c.Mentions == 0 {
		return time.Time{}, false
	}
	var at time.Time
	var loose []Mention
	for _, m := range Mentions(text, ref, loc) {
		switch {
		case m.Period || m.Until:
			return time.Time{}, false // not one start time
		case m.HasTime && !m.Day.IsZero():
			t := m.At(loc)
			if !at.IsZero() && !at.Equal(t) {
				return time.Time{}, false // several times named
			}
			at = t
		default:
			loose = append(loose, m)
		}
	}
	if at.IsZero() {
		return time.Time{}, false
	}
	for _, m := range loose {
		if (m.HasTime && m.Minute != at.Hour()*60+at.Minute()) || (!m.Day.IsZero() && !sameDay(m.Day, at)) {
			return time.Time{}, false
		}
	}
	for _, s := range offered {
		if !at.Before(s.Start) && !at.Add(length).After(s.End) {
			return at, true
		}
	}
	return time.Time{}, false
}
