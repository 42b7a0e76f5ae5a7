package calendar

import (
	"bytes"
	"fmt"
	"strings"
	"time"

	"github.com/emersion/go-ical"

	mailaddr "github.com/mailagent/mailagent/internal/mail"
)

// ProdID names mailagent in the calendar data it writes.
const ProdID = "-//mailagent//iTIP//EN"

// ValidPartStat reports whether ps is one an RSVP may answer with.
func ValidPartStat(ps string) bool {
	switch ps {
	case PartStatAccepted, PartStatDeclined, PartStatTentative:
		return true
	}
	return false
}

// Reply writes the iTIP REPLY (RFC 5546 §3.2.3) of attendee to a REQUEST:
// METHOD:REPLY and one VEVENT with the same UID, SEQUENCE and
// RECURRENCE-ID, the ORGANIZER as received, DTSTAMP now, DTSTART/DTEND as
// received, and one ATTENDEE (the owner) with PARTSTAT. Nothing else of
// the invitation is copied: the organizer's text never travels back.
// Every value comes from the decoder, so it holds no CR or LF, and the
// encoder refuses one anyway.
func (inv *Invitation) Reply(attendee, partStat string, now time.Time) ([]byte, error) {
	if inv.Method != MethodRequest {
		return nil, fmt.Errorf("imip: only a REQUEST is answered, this is a %s", inv.Method)
	}
	if !ValidPartStat(partStat) {
		return nil, fmt.Errorf("imip: PARTSTAT %q: use ACCEPTED, DECLINED or TENTATIVE", partStat)
	}
	src, err := inv.event()
	if err != nil {
		return nil, err
	}
	out := ical.NewCalendar()
	out.Props.SetText(ical.PropVersion, "2.0")
	out.Props.SetText(ical.PropProductID, ProdID)
	out.Props.SetText(ical.PropMethod, MethodReply)
	ev := ical.NewComponent(ical.CompEvent)
	copyProps(ev, src, ical.PropUID, ical.PropSequence, ical.PropRecurrenceID, ical.PropOrganizer,
		ical.PropDateTimeStart, ical.PropDateTimeEnd, ical.PropDuration)
	ev.Props.SetDateTime(ical.PropDateTimeStamp, now.UTC())
	if inv.Summary != "" {
		ev.Props.SetText(ical.PropSummary, inv.Summary)
	}
	att, err := ownerAttendee(src, attendee, partStat)
	if err != nil {
		return nil, err
	}
	ev.Props.Add(att)
	out.Children = append(out.Children, ev)
	if tz := timezones(inv.ICS, src); len(tz) > 0 {
		out.Children = append(tz, out.Children...)
	}
	return encode(out)
}

// Accepted is the invitation as the owner's calendar should store it
// (CalDAV PUT): the calendar data without METHOD, every VEVENT of the
// UID with the owner's ATTENDEE set to partStat (a declined one also
// TRANSP:TRANSPARENT, so it is not busy time), and the time zones.
func (inv *Invitation) Accepted(attendee, partStat string) ([]byte, error) {
	if !ValidPartStat(partStat) {
		return nil, fmt.Errorf("imip: PARTSTAT %q: use ACCEPTED, DECLINED or TENTATIVE", partStat)
	}
	cal, err := decodeICS(inv.ICS)
	if err != nil {
		return nil, err
	}
	out := ical.NewCalendar()
	out.Props.SetText(ical.PropVersion, "2.0")
	out.Props.SetText(ical.PropProductID, ProdID)
	for _, c := range cal.Children {
		switch {
		case c.Name == ical.CompTimezone:
			out.Children = append(out.Children, c)
		case c.Name == ical.CompEvent && propValue(c, ical.PropUID) == inv.UID:
			att, err := ownerAttendee(c, attendee, partStat)
			if err != nil {
				return nil, err
			}
			var keep []ical.Prop
			for _, p := range c.Props.Values(ical.PropAttendee) {
				if mailtoAddr(p.Value) != mailaddr.AddrKey(attendee) {
					keep = append(keep, p)
				}
			}
			c.Props[ical.PropAttendee] = append(keep, *att)
			switch partStat {
			case PartStatTentative:
				c.Props.SetText(ical.PropStatus, "TENTATIVE")
			case PartStatDeclined:
				// Kept so the owner sees what they declined, but it takes
				// no time: free/busy (and `calendar free`) skip it.
				c.Props.SetText(ical.PropTransparency, "TRANSPARENT")
			}
			out.Children = append(out.Children, c)
		}
	}
	return encode(out)
}

// ownerAttendee is the owner's ATTENDEE line: the one in the event
// (keeping its CN and ROLE) when listed, else a new one.
func ownerAttendee(ev *ical.Component, attendee, partStat string) (*ical.Prop, error) {
	addr := mailtoAddr("mailto:" + attendee)
	if addr == "" {
		return nil, fmt.Errorf("imip: attendee %q is not an address", clean(attendee, 80))
	}
	att := ical.NewProp(ical.PropAttendee)
	att.Value = "mailto:" + addr
	for _, p := range ev.Props.Values(ical.PropAttendee) {
		if mailtoAddr(p.Value) == addr {
			if cn := clean(p.Params.Get(ical.ParamCommonName), maxSummary); cn != "" && !strings.Contains(cn, `"`) {
				att.Params.Set(ical.ParamCommonName, cn)
			}
			break
		}
	}
	att.Params.Set(ical.ParamParticipationStatus, partStat)
	return att, nil
}

func (inv *Invitation) event() (*ical.Component, error) {
	cal, err := decodeICS(inv.ICS)
	if err != nil {
		return nil, err
	}
	for _, c := range cal.Children {
		if c.Name == ical.CompEvent && propValue(c, ical.PropUID) == inv.UID && propValue(c, ical.PropRecurrenceID) == inv.RecurrenceID {
			return c, nil
		}
	}
	return nil, fmt.Errorf("imip: event %q: %w", clean(inv.UID, 80), ErrNotInvitation)
}

func copyProps(dst, src *ical.Component, names ...string) {
	for _, n := range names {
		for _, p := range src.Props.Values(n) {
			dst.Props.Add(&p)
		}
	}
}

// timezones returns the VTIMEZONEs of data that ev's times name.
func timezones(data []byte, ev *ical.Component) []*ical.Component {
	want := map[string]bool{}
	for _, n := range []string{ical.PropDateTimeStart, ical.PropDateTimeEnd, ical.PropRecurrenceID} {
		if p := ev.Props.Get(n); p != nil && p.Params.Get(ical.ParamTimezoneID) != "" {
			want[p.Params.Get(ical.ParamTimezoneID)] = true
		}
	}
	if len(want) == 0 {
		return nil
	}
	cal, err := decodeICS(data)
	if err != nil {
		return nil
	}
	var out []*ical.Component
	for _, c := range cal.Children {
		if c.Name == ical.CompTimezone && want[propValue(c, ical.PropTimezoneID)] {
			out = append(out, c)
		}
	}
	return out
}

func encode(cal *ical.Calendar) ([]byte, error) {
	var b bytes.Buffer
	if err := ical.NewEncoder(&b).Encode(cal); err != nil {
		return nil, fmt.Errorf("imip: encode: %w", err)
	}
	return b.Bytes(), nil
}
