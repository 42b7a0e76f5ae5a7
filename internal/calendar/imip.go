package calendar

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/mail"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/emersion/go-ical"
	message "github.com/emersion/go-message"
	_ "github.com/emersion/go-message/charset" // charsets of text/calendar parts

	mailaddr "github.com/mailagent/mailagent/internal/mail"
)

// iMIP (RFC 6047) carries iTIP (RFC 5546) scheduling messages as
// text/calendar MIME parts. ParseInvitation finds such a part in a raw
// message and reads the one event it is about; Reply and Accepted write
// the answers. Nothing here sends or stores anything.

// Limits on what an invitation may make the code read.
const (
	// MaxICSBytes caps the text/calendar part read from a message.
	MaxICSBytes = 256 << 10
	// maxParts caps the MIME parts walked looking for it.
	maxParts = 64
	// maxDepth caps multipart nesting.
	maxDepth = 8
	// maxSummary and maxDescription cap the text kept for display.
	maxSummary     = 200
	maxDescription = 2000
	// maxAttendees caps the attendees kept.
	maxAttendees = 100
	// ConflictDays is how far ahead a recurring invitation's occurrences
	// are checked against the owner's calendar.
	ConflictDays = 28
)

// iTIP methods an invitation may carry.
const (
	MethodRequest = "REQUEST"
	MethodCancel  = "CANCEL"
	MethodCounter = "COUNTER"
	MethodReply   = "REPLY"
)

// Participation statuses an RSVP may answer with.
const (
	PartStatAccepted  = "ACCEPTED"
	PartStatDeclined  = "DECLINED"
	PartStatTentative = "TENTATIVE"
)

// ErrNotInvitation is returned by ParseICS for calendar data that is not
// an iTIP message about one event.
var ErrNotInvitation = errors.New("not an invitation")

// Attendee is one ATTENDEE of an invitation.
type Attendee struct {
	Email    string // lowercased, from the mailto: URI
	Name     string // CN, control characters removed
	PartStat string // NEEDS-ACTION when absent
}

// Invitation is one iTIP message read from a mail. Text fields are plain
// text with control characters (escape sequences, CR, LF) removed and
// capped; they are untrusted like any mail text.
type Invitation struct {
	Method       string
	UID          string
	Sequence     int
	RecurrenceID string // the RECURRENCE-ID value as sent, "" for the whole series
	Summary      string
	Location     string
	Description  string
	Organizer    string // lowercased address from the mailto: URI, "" when none or not mailto
	OrganizerCN  string
	Attendees    []Attendee
	Start, End   time.Time
	AllDay       bool
	TZID         string // DTSTART's TZID, "" for UTC or floating
	Recurring    bool   // RRULE or RDATE present
	RRule        string
	// ICS is the calendar part as received (at most MaxICSBytes): what
	// Reply and Accepted are built from.
	ICS []byte
}

// ParseInvitation finds the first text/calendar (or application/ics)
// part of a raw RFC 5322 message, at the top level, inside
// multipart/alternative or mixed, or attached, and reads it. It returns
// nil and no error when the message has none.
func ParseInvitation(raw []byte) (*Invitation, error) {
	e, err := message.Read(bytes.NewReader(raw))
	if e == nil {
		return nil, fmt.Errorf("imip: read message: %w", err)
	}
	parts := 0
	data, method, err := findCalendarPart(e, 0, &parts)
	if err != nil || data == nil {
		return nil, err
	}
	return ParseICS(data, method)
}

func findCalendarPart(e *message.Entity, depth int, parts *int) ([]byte, string, error) {
	*parts++
	if *parts > maxParts || depth > maxDepth {
		return nil, "", nil
	}
	mt, params, _ := e.Header.ContentType()
	mt = strings.ToLower(mt)
	if mr := e.MultipartReader(); mr != nil {
		for {
			p, err := mr.NextPart()
			if errors.Is(err, io.EOF) {
				return nil, "", nil
			}
			if err != nil && !message.IsUnknownCharset(err) && !message.IsUnknownEncoding(err) {
				return nil, "", fmt.Errorf("imip: read part: %w", err)
			}
			if p == nil {
				return nil, "", nil
			}
			if data, method, err := findCalendarPart(p, depth+1, parts); err != nil || data != nil {
				return data, method, err
			}
		}
	}
	if mt != "text/calendar" && mt != "application/ics" {
		if _, fp, err := mime.ParseMediaType(e.Header.Get("Content-Disposition")); err == nil &&
			strings.HasSuffix(strings.ToLower(fp["filename"]), ".ics") {
			mt = "application/ics"
		} else {
			return nil, "", nil
		}
	}
	data, err := io.ReadAll(io.LimitReader(e.Body, MaxICSBytes+1))
	if err != nil {
		return nil, "", fmt.Errorf("imip: read calendar part: %w", err)
	}
	if len(data) > MaxICSBytes {
		return nil, "", fmt.Errorf("imip: calendar part larger than %d bytes", MaxICSBytes)
	}
	return data, strings.ToUpper(params["method"]), nil
}

// ParseICS reads iTIP calendar data. methodHint is the MIME part's method
// parameter, used when the data has no METHOD property (RFC 6047 §2.4
// says they must agree; when both are present the data wins).
func ParseICS(data []byte, methodHint string) (*Invitation, error) {
	if len(data) > MaxICSBytes {
		return nil, fmt.Errorf("imip: calendar data larger than %d bytes", MaxICSBytes)
	}
	cal, err := decodeICS(data)
	if err != nil {
		return nil, err
	}
	inv := &Invitation{ICS: data, Method: methodHint}
	if p := cal.Props.Get(ical.PropMethod); p != nil {
		inv.Method = strings.ToUpper(strings.TrimSpace(p.Value))
	}
	if inv.Method == "" {
		return nil, fmt.Errorf("imip: no METHOD: %w", ErrNotInvitation)
	}
	inv.Method = clean(inv.Method, 20)
	ev := mainEvent(cal)
	if ev == nil {
		return nil, fmt.Errorf("imip: no VEVENT: %w", ErrNotInvitation)
	}
	if err := inv.readEvent(ev); err != nil {
		return nil, err
	}
	return inv, nil
}

// mainEvent is the event an iTIP message is about: the master (no
// RECURRENCE-ID) when there is one, else the first instance.
func mainEvent(cal *ical.Calendar) *ical.Component {
	var first *ical.Component
	for _, c := range cal.Children {
		if c.Name != ical.CompEvent {
			continue
		}
		if first == nil {
			first = c
		}
		if c.Props.Get(ical.PropRecurrenceID) == nil {
			return c
		}
	}
	return first
}

func (inv *Invitation) readEvent(ev *ical.Component) error {
	uid := ev.Props.Get(ical.PropUID)
	if uid == nil || strings.TrimSpace(uid.Value) == "" {
		return fmt.Errorf("imip: event has no UID: %w", ErrNotInvitation)
	}
	inv.UID = uid.Value
	if p := ev.Props.Get(ical.PropSequence); p != nil {
		n, err := strconv.Atoi(strings.TrimSpace(p.Value))
		if err != nil || n < 0 {
			return fmt.Errorf("imip: event %q: bad SEQUENCE %q", clean(inv.UID, 80), clean(p.Value, 40))
		}
		inv.Sequence = n
	}
	if p := ev.Props.Get(ical.PropRecurrenceID); p != nil {
		inv.RecurrenceID = p.Value
	}
	inv.Summary = textProp(ev, ical.PropSummary, maxSummary)
	inv.Location = textProp(ev, ical.PropLocation, maxSummary)
	inv.Description = textProp(ev, ical.PropDescription, maxDescription)
	if p := ev.Props.Get(ical.PropOrganizer); p != nil {
		inv.Organizer = mailtoAddr(p.Value)
		inv.OrganizerCN = clean(p.Params.Get(ical.ParamCommonName), maxSummary)
	}
	for _, p := range ev.Props.Values(ical.PropAttendee) {
		if len(inv.Attendees) == maxAttendees {
			break
		}
		ps := strings.ToUpper(p.Params.Get(ical.ParamParticipationStatus))
		if ps == "" {
			ps = "NEEDS-ACTION"
		}
		inv.Attendees = append(inv.Attendees, Attendee{Email: mailtoAddr(p.Value),
			Name: clean(p.Params.Get(ical.ParamCommonName), maxSummary), PartStat: clean(ps, 20)})
	}
	if inv.Method == MethodCancel && ev.Props.Get(ical.PropDateTimeStart) == nil {
		return nil // a CANCEL may name only the UID
	}
	e, err := parseEvent(ev, time.UTC)
	if err != nil {
		return err
	}
	inv.Start, inv.End, inv.AllDay = e.start, e.endFor(e.start), e.allDay
	if p := ev.Props.Get(ical.PropDateTimeStart); p != nil {
		inv.TZID = clean(p.Params.Get(ical.ParamTimezoneID), 80)
	}
	if p := ev.Props.Get(ical.PropRecurrenceRule); p != nil {
		inv.Recurring, inv.RRule = true, clean(p.Value, maxSummary)
	}
	if ev.Props.Get(ical.PropRecurrenceDates) != nil {
		inv.Recurring = true
	}
	return nil
}

func textProp(c *ical.Component, name string, limit int) string {
	p := c.Props.Get(name)
	if p == nil {
		return ""
	}
	s, err := p.Text()
	if err != nil {
		s = p.Value
	}
	return clean(s, limit)
}

// mailtoAddr returns the lowercased address of a mailto: calendar
// address, or "" when it is not one or not a single valid address.
func mailtoAddr(v string) string {
	v = strings.TrimSpace(v)
	if len(v) < 7 || !strings.EqualFold(v[:7], "mailto:") {
		return ""
	}
	a, err := mail.ParseAddress(v[7:])
	if err != nil || a.Name != "" || strings.ContainsAny(a.Address, " \t\r\n<>,;") {
		return ""
	}
	return mailaddr.AddrKey(a.Address)
}

// textCleanOff makes clean return its input as it is. It exists only for
// the positive control of the hostile-invitation tests (package calendar);
// nothing in the product sets it. Never from a parallel test.
var textCleanOff atomic.Bool

// SwitchOffTextCleanForTest turns the cleaning of invitation text off
// (textCleanOff) until the returned function is called, for the positive
// control of adversarial tests outside this package. Never from a
// parallel test.
func SwitchOffTextCleanForTest() (restore func()) {
	textCleanOff.Store(true)
	return func() { textCleanOff.Store(false) }
}

// clean removes control characters (terminal escape sequences, CR, LF,
// bidi overrides) and invalid UTF-8, folds whitespace runs to one space,
// and caps s at limit runes.
func clean(s string, limit int) string {
	if textCleanOff.Load() {
		return s
	}
	var b strings.Builder
	n := 0
	space := false
	for _, r := range strings.ToValidUTF8(s, "\uFFFD") {
		if n >= limit {
			b.WriteString("…")
			break
		}
		switch {
		case r == '\n' || r == '\t' || r == '\r' || unicode.IsSpace(r):
			space = b.Len() > 0
			continue
		case unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == utf8.RuneError:
			continue
		}
		if space {
			b.WriteByte(' ')
			n++
			space = false
		}
		b.WriteRune(r)
		n++
	}
	return b.String()
}

// Conflicts returns the busy intervals that overlap the invitation's
// occurrences in the ConflictDays from its start (its one time when it
// does not recur). Busy intervals that are the invitation itself (the
// owner's calendar already holding it) are the caller's to remove.
// A recurrence too dense to expand is an error, never "no conflicts".
func (inv *Invitation) Conflicts(busy []Interval) ([]Interval, error) {
	occ, err := inv.Occurrences()
	if err != nil {
		return nil, err
	}
	var out []Interval
	for _, b := range busy {
		for _, o := range occ {
			if b.Start.Before(o.End) && o.Start.Before(b.End) {
				out = append(out, b)
				break
			}
		}
	}
	return out, nil
}

// Occurrences are the invitation's times in the ConflictDays from its
// start.
func (inv *Invitation) Occurrences() ([]Interval, error) {
	if inv.Start.IsZero() {
		return nil, nil
	}
	if !inv.Recurring {
		return []Interval{{Start: inv.Start, End: inv.End}}, nil
	}
	cal, err := decodeICS(inv.ICS)
	if err != nil {
		return nil, err
	}
	only := ical.NewCalendar()
	for _, c := range cal.Children {
		if c.Name == ical.CompTimezone || (c.Name == ical.CompEvent && propValue(c, ical.PropUID) == inv.UID) {
			only.Children = append(only.Children, c)
		}
	}
	w := Interval{Start: inv.Start, End: inv.Start.AddDate(0, 0, ConflictDays)}
	occ, err := Busy([]*ical.Calendar{only}, w, time.UTC)
	if err != nil {
		return nil, fmt.Errorf("imip: expand the invitation's recurrence: %w", err)
	}
	return occ, nil
}

func propValue(c *ical.Component, name string) string {
	if p := c.Props.Get(name); p != nil {
		return p.Value
	}
	return ""
}

// decodeICS decodes calendar data from a mail. go-ical panics on some
// malformed parameters (a stray character after a quoted value): that
// must be an error for one message, never a crash of the watcher.
func decodeICS(data []byte) (cal *ical.Calendar, err error) {
	defer func() {
		if r := recover(); r != nil {
			cal, err = nil, fmt.Errorf("imip: malformed calendar data: %v", r)
		}
	}()
	cal, err = ical.NewDecoder(bytes.NewReader(data)).Decode()
	if err != nil {
		return nil, fmt.Errorf("imip: %w", err)
	}
	return cal, nil
}

// withoutUID returns cals without the VEVENTs whose UID is uid (all of
// them when uid is ""). The calendars are copied, not changed.
func withoutUID(cals []*ical.Calendar, uid string) []*ical.Calendar {
	if uid == "" {
		return cals
	}
	out := make([]*ical.Calendar, 0, len(cals))
	for _, cal := range cals {
		if cal == nil || cal.Component == nil {
			continue
		}
		c := &ical.Calendar{Component: &ical.Component{Name: cal.Name, Props: cal.Props}}
		for _, child := range cal.Children {
			if child.Name == ical.CompEvent && propValue(child, ical.PropUID) == uid {
				continue
			}
			c.Children = append(c.Children, child)
		}
		out = append(out, c)
	}
	return out
}

// decodeAll decodes every VCALENDAR in data (an .ics feed), with go-ical's
// panics on malformed input turned into an error like decodeICS.
func decodeAll(data []byte) (cals []*ical.Calendar, err error) {
	defer func() {
		if r := recover(); r != nil {
			cals, err = nil, fmt.Errorf("malformed calendar data: %v", r)
		}
	}()
	dec := ical.NewDecoder(bytes.NewReader(data))
	for {
		cal, err := dec.Decode()
		if errors.Is(err, io.EOF) {
			return cals, nil
		}
		if err != nil {
			return nil, err
		}
		cals = append(cals, cal)
	}
}
