package calendar

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-ical"
)

// TestEventSummaryHostile: whatever a subject carries, the SUMMARY is one
// line without control or format characters, without reply prefixes, and
// capped; an empty one is "Meeting".
func TestEventSummaryHostile(t *testing.T) {
	for in, want := range map[string]string{
		"Re: AW: Fwd: Lunch":                        "Lunch",
		"Lunch\r\nATTENDEE:mailto:eve@evil.example": "Lunch ATTENDEE:mailto:eve@evil.example",
		"\x1b[31mRed\x1b[0m \u202eevil\u202c":       "[31mRed[0m evil",
		"RE[2]: \t ":                                "Meeting",
		"":                                          "Meeting",
		"\xff\xfeLunch":                             "Lunch",
		"Re:Re: Budget, Q3; \\ review\nEND:VEVENT\nBEGIN:VEVENT": "Budget, Q3; \\ review END:VEVENT BEGIN:VEVENT",
	} {
		got := EventSummary(in)
		if strings.ContainsAny(got, "\x1b") {
			t.Errorf("EventSummary(%q) = %q keeps an escape", in, got)
		}
		if got != want {
			t.Errorf("EventSummary(%q) = %q, want %q", in, got, want)
		}
	}
	if n := len([]rune(EventSummary(strings.Repeat("x", 5000)))); n > maxSummary+1 {
		t.Errorf("summary of %d runes, want at most %d", n, maxSummary+1)
	}
}

// TestTentativeEventHostileFields: the encoded event parses back to one
// VEVENT whose SUMMARY is the cleaned subject (the line breaks and
// iCalendar lines in it stay text), with one ORGANIZER and one ATTENDEE;
// addresses that are not plain addresses are refused.
func TestTentativeEventHostileFields(t *testing.T) {
	start := time.Date(2026, 4, 1, 8, 0, 0, 0, time.UTC)
	e := NewEvent{UID: "u1@mailagent", Summary: "Lunch\r\nEND:VEVENT\r\nBEGIN:VEVENT\r\nATTENDEE:mailto:eve@evil.example",
		Organizer: "ada@example.com", Attendee: "bob@example.org", Start: start, End: start.Add(30 * time.Minute), Stamp: start}
	data, err := TentativeEvent(e)
	if err != nil {
		t.Fatal(err)
	}
	cal, err := ical.NewDecoder(bytes.NewReader(data)).Decode()
	if err != nil {
		t.Fatal(err)
	}
	evs := cal.Events()
	if len(evs) != 1 || len(evs[0].Props.Values(ical.PropAttendee)) != 1 || len(evs[0].Props.Values(ical.PropOrganizer)) != 1 {
		t.Fatalf("event shape wrong:\n%s", data)
	}
	if s := evs[0].Props.Get(ical.PropSummary).Value; s != "Lunch END:VEVENT BEGIN:VEVENT ATTENDEE:mailto:eve@evil.example" {
		t.Errorf("SUMMARY %q", s)
	}
	for _, bad := range []NewEvent{
		{UID: "u", Organizer: "ada@example.com", Attendee: "bob@example.org\r\nATTENDEE:mailto:eve@evil.example", Start: start, End: start.Add(time.Hour)},
		{UID: "u", Organizer: "ada@example.com", Attendee: "Bob <bob@example.org>", Start: start, End: start.Add(time.Hour)},
		{UID: "u", Organizer: "", Attendee: "bob@example.org", Start: start, End: start.Add(time.Hour)},
		{UID: "", Organizer: "ada@example.com", Attendee: "bob@example.org", Start: start, End: start.Add(time.Hour)},
		{UID: "u", Organizer: "ada@example.com", Attendee: "bob@example.org", Start: start, End: start},
	} {
		if _, err := TentativeEvent(bad); err == nil {
			t.Errorf("TentativeEvent(%+v) accepted", bad)
		}
	}
}

// TestConfirmedSlot: one day and time inside an offered slot with room
// for the meeting is confirmed; zero, several, or any time outside the
// offer is not.
func TestConfirmedSlot(t *testing.T) {
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
