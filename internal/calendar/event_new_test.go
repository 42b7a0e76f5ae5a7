package calendar

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/emersion/go-ical"
)

// summaryHostile are TestEventSummaryHostile's subjects and the SUMMARY
// each must give.
var summaryHostile = []struct{ in, want string }{
	{"Re: AW: Fwd: Lunch", "Lunch"},
	{"Lunch\r\nATTENDEE:mailto:eve@evil.example", "Lunch ATTENDEE:mailto:eve@evil.example"},
	{"\x1b[31mRed\x1b[0m \u202eevil\u202c", "[31mRed[0m evil"},
	{"RE[2]: \t ", "Meeting"},
	{"", "Meeting"},
	{"\xff\xfeLunch", "Lunch"},
	{"Re:Re: Budget, Q3; \\ review\nEND:VEVENT\nBEGIN:VEVENT", "Budget, Q3; \\ review END:VEVENT BEGIN:VEVENT"},
}

// summaryLong is the subject far over the cap.
var summaryLong = strings.Repeat("x", 5000)

// unsafeSummary says what in a SUMMARY breaks a line or a terminal: a
// control character (CR, LF, tab, escape…), a format character (bidi
// override…), invalid UTF-8; "" when none.
func unsafeSummary(s string) string {
	if !utf8.ValidString(s) {
		return "invalid UTF-8"
	}
	if i := strings.IndexFunc(s, func(r rune) bool { return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) }); i >= 0 {
		r, _ := utf8.DecodeRuneInString(s[i:])
		return fmt.Sprintf("keeps %U", r)
	}
	return ""
}

// summaryAttack reports whether the subject in carries what the cleaning
// is for: a line break, a control or format character that is not a
// space, or invalid UTF-8 (the reply prefixes and the blank subjects are
// the prefix rule's, not attacks).
func summaryAttack(in string) bool {
	return !utf8.ValidString(in) || strings.IndexFunc(in, func(r rune) bool {
		return r == '\r' || r == '\n' || (unicode.IsControl(r) && !unicode.IsSpace(r)) || unicode.Is(unicode.Cf, r)
	}) >= 0
}

// TestEventSummaryHostile: whatever a subject carries, the SUMMARY is one
// line without control or format characters, without reply prefixes, and
// capped; an empty one is "Meeting".
func TestEventSummaryHostile(t *testing.T) {
	t.Parallel()
	tried, through := 0, 0
	for _, c := range summaryHostile {
		tried++
		got := EventSummary(c.in)
		bad := false
		if p := unsafeSummary(got); p != "" {
			bad = true
			t.Errorf("EventSummary(%q) = %q %s", c.in, got, p)
		}
		if got != c.want {
			bad = true
			t.Errorf("EventSummary(%q) = %q, want %q", c.in, got, c.want)
		}
		if bad {
			through++
		}
	}
	tried++
	if n := len([]rune(EventSummary(summaryLong))); n > maxSummary+1 {
		through++
		t.Errorf("summary of %d runes, want at most %d", n, maxSummary+1)
	}
	t.Logf("hostile subjects: %d tried, %d got through", tried, through)
	if tried != len(summaryHostile)+1 || through != 0 {
		t.Errorf("got %d of %d through, want 0 of %d", through, tried, len(summaryHostile)+1)
	}
}

// TestEventSummaryHostileLandsWithoutClean is the positive control of
// TestEventSummaryHostile: with the text cleaning off (textCleanOff),
// each subject summaryAttack names keeps its line break, escape, bidi
// override or invalid byte, caught by the test's safety check
// (unsafeSummary, the want comparison aside), and the long subject goes
// over the cap. Not parallel: the switch is global.
func TestEventSummaryHostileLandsWithoutClean(t *testing.T) {
	textCleanOff.Store(true)
	defer textCleanOff.Store(false)
	tried, landed := 0, 0
	for _, c := range summaryHostile {
		if !summaryAttack(c.in) {
			continue
		}
		tried++
		if got := EventSummary(c.in); unsafeSummary(got) != "" {
			landed++
		} else {
			t.Errorf("EventSummary(%q) = %q is safe with the cleaning off: the subject does not test the cleaning", c.in, got)
		}
	}
	tried++
	if n := len([]rune(EventSummary(summaryLong))); n > maxSummary+1 {
		landed++
	} else {
		t.Errorf("summary of %d runes with the cleaning off, want over the cap %d", n, maxSummary+1)
	}
	t.Logf("without the cleaning: %d of %d landed (of %d subjects and the long one)", landed, tried, len(summaryHostile))
	if tried < 2 || landed != tried {
		t.Errorf("positive control: got %d of %d landed, want all", landed, tried)
	}
}

// tentativeHostile is TestTentativeEventHostileFields's event: its
// summary (the mail's subject) breaks the line and writes iCalendar lines.
func tentativeHostile() NewEvent {
	start := time.Date(2026, 4, 1, 8, 0, 0, 0, time.UTC)
	return NewEvent{UID: "u1@mailagent", Summary: "Lunch\r\nEND:VEVENT\r\nBEGIN:VEVENT\r\nATTENDEE:mailto:eve@evil.example",
		Organizer: "ada@example.com", Attendee: "bob@example.org", Start: start, End: start.Add(30 * time.Minute), Stamp: start}
}

// tentativeSummaryProblem says what is wrong with the event written for
// tentativeHostile ("" when it parses back to one VEVENT, one ORGANIZER,
// one ATTENDEE and the cleaned SUMMARY).
func tentativeSummaryProblem(e NewEvent) string {
	data, err := TentativeEvent(e)
	if err != nil {
		return fmt.Sprintf("not written: %v", err)
	}
	cal, err := ical.NewDecoder(bytes.NewReader(data)).Decode()
	if err != nil {
		return fmt.Sprintf("unreadable: %v", err)
	}
	evs := cal.Events()
	if len(evs) != 1 || len(evs[0].Props.Values(ical.PropAttendee)) != 1 || len(evs[0].Props.Values(ical.PropOrganizer)) != 1 {
		return fmt.Sprintf("event shape wrong:\n%s", data)
	}
	if s := evs[0].Props.Get(ical.PropSummary).Value; s != "Lunch END:VEVENT BEGIN:VEVENT ATTENDEE:mailto:eve@evil.example" {
		return fmt.Sprintf("SUMMARY %q", s)
	}
	return ""
}

// badEvent is an event TentativeEvent must refuse; alsoStoppedBy names
// a layer below its checks that stops it as well.
type badEvent struct {
	name          string
	e             NewEvent
	alsoStoppedBy string
}

// badEvents are TestTentativeEventHostileFields's events to refuse.
func badEvents() []badEvent {
	start := time.Date(2026, 4, 1, 8, 0, 0, 0, time.UTC)
	return []badEvent{
		{"attendee with a line break", NewEvent{UID: "u", Organizer: "ada@example.com", Attendee: "bob@example.org\r\nATTENDEE:mailto:eve@evil.example", Start: start, End: start.Add(time.Hour)},
			"go-ical's encoder (it refuses CR or LF in a value)"},
		{"attendee with a name", NewEvent{UID: "u", Organizer: "ada@example.com", Attendee: "Bob <bob@example.org>", Start: start, End: start.Add(time.Hour)}, ""},
		{"no organizer", NewEvent{UID: "u", Organizer: "", Attendee: "bob@example.org", Start: start, End: start.Add(time.Hour)}, ""},
		{"no UID", NewEvent{UID: "", Organizer: "ada@example.com", Attendee: "bob@example.org", Start: start, End: start.Add(time.Hour)}, ""},
		{"no length", NewEvent{UID: "u", Organizer: "ada@example.com", Attendee: "bob@example.org", Start: start, End: start}, ""},
	}
}

// TestTentativeEventHostileFields: the encoded event parses back to one
// VEVENT whose SUMMARY is the cleaned subject (the line breaks and
// iCalendar lines in it stay text), with one ORGANIZER and one ATTENDEE;
// addresses that are not plain addresses are refused.
func TestTentativeEventHostileFields(t *testing.T) {
	t.Parallel()
	tried, through := 1, 0
	if p := tentativeSummaryProblem(tentativeHostile()); p != "" {
		through++
		t.Error(p)
	}
	bad := badEvents()
	for _, b := range bad {
		tried++
		if _, err := TentativeEvent(b.e); err == nil {
			through++
			t.Errorf("TentativeEvent(%+v) accepted", b.e)
		}
	}
	t.Logf("hostile event fields: %d tried, %d got through", tried, through)
	if tried != len(bad)+1 || through != 0 {
		t.Errorf("got %d of %d through, want 0 of %d", through, tried, len(bad)+1)
	}
}

// TestTentativeEventHostileFieldsLandWithoutChecks is the positive
// control of TestTentativeEventHostileFields. With the text cleaning off
// (textCleanOff) the hostile summary is caught by the test's own check:
// the event is not written at all, since go-ical's encoder refuses the
// CR/LF (the iCalendar lines never become lines: that layer holds the
// structure; the cleaning is what keeps the event writable). With the
// event checks off (eventChecksOff) each bad event is accepted, but the
// attendee with a line break, which go-ical refuses too, asserted. Not
// parallel: the switches are global.
func TestTentativeEventHostileFieldsLandWithoutChecks(t *testing.T) {
	tried, landed := 0, 0
	textCleanOff.Store(true)
	tried++
	if p := tentativeSummaryProblem(tentativeHostile()); p != "" {
		landed++
		t.Logf("summary, cleaning off: %s", p)
	} else {
		t.Error("the hostile summary is written clean with the cleaning off: it does not test the cleaning")
	}
	textCleanOff.Store(false)

	eventChecksOff.Store(true)
	defer eventChecksOff.Store(false)
	layered, stopped := 0, 0
	for _, b := range badEvents() {
		_, err := TentativeEvent(b.e)
		if b.alsoStoppedBy != "" {
			layered++
			if err != nil {
				stopped++
			} else {
				t.Errorf("%s: accepted with the checks off, want it refused by %s", b.name, b.alsoStoppedBy)
			}
			continue
		}
		tried++
		if err == nil {
			landed++
		} else {
			t.Errorf("%s: refused with the checks off (%v): the checks are not what stops it", b.name, err)
		}
	}
	t.Logf("without the cleaning or the checks: %d of %d landed; %d of %d stopped by a lower layer as well", landed, tried, stopped, layered)
	if tried < 2 || landed != tried {
		t.Errorf("positive control: got %d of %d landed, want all", landed, tried)
	}
	if stopped != layered {
		t.Errorf("lower layer: got %d of %d stopped, want all", stopped, layered)
	}
}

// TestConfirmedSlot: one day and time inside an offered slot with room
// for the meeting is confirmed; zero, several, or any time outside the
// offer is not.
func TestConfirmedSlot(t *testing.T) {
	t.Parallel()
	loc, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Skip(err)
	}
	ref := time.Date(2026, 3, 30, 8, 0, 0, 0, time.UTC) // Monday
	d := func(h, m int) time.Time { return time.Date(2026, 4, 1, h, m, 0, 0, loc) }
	offered := []Interval{{Start: d(10, 0), End: d(11, 0)}, {Start: d(14, 0), End: d(15, 0)}}
	for text, want := range map[string]time.Time{
		"Wednesday at 10:00 works.":                 d(10, 0),
		"Wednesday at 2pm then.":                    d(14, 0),
		"Wednesday 10:15 is good.":                  d(10, 15),
		"Wednesday at 10:30.":                       {}, // 10:30 + 45 min > 11:00
		"Wednesday at 10:00 or 14:00.":              {},
		"Wednesday at 10:00, and Tuesday is busy.":  {},
		"Wednesday works.":                          {},
		"10:00 works.":                              {},
		"No time named here.":                       {},
		"Wednesday at 10:00; the 13:00 is taken.":   {},
		"Wednesday 10:00 works. See you Wednesday.": d(10, 0),
	} {
		got, ok := ConfirmedSlot(text, offered, 45*time.Minute, ref, loc)
		if ok != !want.IsZero() || !got.Equal(want) {
			t.Errorf("ConfirmedSlot(%q) = %v %v, want %v", text, got, ok, want)
		}
	}
}
