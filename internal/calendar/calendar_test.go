package calendar

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-ical"
)

var berlin = mustZone("Europe/Berlin")

func mustZone(name string) *time.Location {
	z, err := time.LoadLocation(name)
	if err != nil {
		panic(err)
	}
	return z
}

func prefs(buffer time.Duration) Prefs {
	return Prefs{
		Location: berlin, DayStart: 9 * 60, DayEnd: 17*60 + 30,
		Days:   [7]bool{time.Monday: true, time.Tuesday: true, time.Wednesday: true, time.Thursday: true, time.Friday: true},
		Buffer: buffer, SlotLength: 30 * time.Minute,
	}
}

// ts parses an RFC 3339 time.
func ts(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func iv(a, b string) Interval { return Interval{Start: ts(a), End: ts(b)} }

func parseICS(t *testing.T, body string) *ical.Calendar {
	t.Helper()
	data := "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//test//EN\r\n" + strings.ReplaceAll(strings.TrimSpace(body), "\n", "\r\n") + "\r\nEND:VCALENDAR\r\n"
	cal, err := ical.NewDecoder(strings.NewReader(data)).Decode()
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	return cal
}

func format(ivs []Interval) string {
	var b strings.Builder
	for _, x := range ivs {
		fmt.Fprintf(&b, "%s/%s\n", x.Start.Format(time.RFC3339), x.End.Format(time.RFC3339))
	}
	return b.String()
}

func TestFreeSlotsHandComputed(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		busy   []Interval
		buffer time.Duration
		window Interval
		want   []Interval
	}{
		{
			// Berlin moves to summer time on Sunday 29 March 2026: Friday's
			// hours are +01:00, Monday's +02:00. The UTC event is 13:00–14:00
			// Berlin on Friday; the New York one (EDT, -04:00) 11:00–12:00
			// Berlin on Monday.
			name: "spring DST and events in other zones",
			busy: []Interval{
				iv("2026-03-27T12:00:00Z", "2026-03-27T13:00:00Z"),
				iv("2026-03-30T05:00:00-04:00", "2026-03-30T06:00:00-04:00"),
			},
			window: iv("2026-03-27T00:00:00+01:00", "2026-03-31T00:00:00+02:00"),
			want: []Interval{
				iv("2026-03-27T09:00:00+01:00", "2026-03-27T13:00:00+01:00"),
				iv("2026-03-27T14:00:00+01:00", "2026-03-27T17:30:00+01:00"),
				iv("2026-03-30T09:00:00+02:00", "2026-03-30T11:00:00+02:00"),
				iv("2026-03-30T12:00:00+02:00", "2026-03-30T17:30:00+02:00"),
			},
		},
		{
			// Autumn: Berlin is back on +01:00 from 25 October, New York
			// still on EDT until 1 November: 10:00 New York is 15:00
			// Berlin. A 10-minute buffer widens it to 14:50–16:10.
			name:   "autumn DST with buffer",
			busy:   []Interval{iv("2026-10-26T10:00:00-04:00", "2026-10-26T11:00:00-04:00")},
			buffer: 10 * time.Minute,
			window: iv("2026-10-23T00:00:00+02:00", "2026-10-28T00:00:00+01:00"),
			want: []Interval{
				iv("2026-10-23T09:00:00+02:00", "2026-10-23T17:30:00+02:00"),
				iv("2026-10-26T09:00:00+01:00", "2026-10-26T14:50:00+01:00"),
				iv("2026-10-26T16:10:00+01:00", "2026-10-26T17:30:00+01:00"),
				iv("2026-10-27T09:00:00+01:00", "2026-10-27T17:30:00+01:00"),
			},
		},
		{
			name: "gaps shorter than the slot are not offered; overlapping busy merged",
			busy: []Interval{
				iv("2026-03-16T09:20:00+01:00", "2026-03-16T12:00:00+01:00"),
				iv("2026-03-16T11:00:00+01:00", "2026-03-16T13:00:00+01:00"),
				iv("2026-03-16T13:29:00+01:00", "2026-03-16T17:10:00+01:00"),
			},
			window: iv("2026-03-16T00:00:00+01:00", "2026-03-17T00:00:00+01:00"),
			want:   nil,
		},
		{
			name:   "window starting mid-day clips working hours",
			window: iv("2026-03-16T15:15:00+01:00", "2026-03-17T10:00:00+01:00"),
			want: []Interval{
				iv("2026-03-16T15:15:00+01:00", "2026-03-16T17:30:00+01:00"),
				iv("2026-03-17T09:00:00+01:00", "2026-03-17T10:00:00+01:00"),
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := FreeSlots(tc.busy, prefs(tc.buffer), tc.window)
			if err != nil {
				t.Fatal(err)
			}
			if format(got) != format(tc.want) {
				t.Errorf("got\n%swant\n%s", format(got), format(tc.want))
			}
		})
	}
}

func TestFreeSlotsRejectsBadPrefs(t *testing.T) {
	t.Parallel()
	p := prefs(0)
	p.DayEnd = p.DayStart
	if _, err := FreeSlots(nil, p, iv("2026-03-16T00:00:00Z", "2026-03-17T00:00:00Z")); !errors.Is(err, ErrPrefs) {
		t.Fatalf("err = %v, want ErrPrefs", err)
	}
}

func TestWindowMinNoticeRoundsUp(t *testing.T) {
	t.Parallel()
	p := prefs(0)
	p.MinNotice = 4 * time.Hour
	w := Window(ts("2026-03-16T08:07:00+01:00"), 2, p)
	if got, want := w.Start, ts("2026-03-16T12:15:00+01:00"); !got.Equal(want) {
		t.Errorf("start = %s, want %s", got, want)
	}
	if got, want := w.End, ts("2026-03-18T00:00:00+01:00"); !got.Equal(want) {
		t.Errorf("end = %s, want %s", got, want)
	}
}

// recurring is a weekly Tuesday 10:00–11:00 Berlin meeting with one
// EXDATE (17 March) and one instance moved (24 March → Thursday 26 March
// 14:00–15:00), plus an all-day event, a transparent and a cancelled one.
const recurring = `
BEGIN:VEVENT
UID:weekly@test
DTSTAMP:20260301T000000Z
DTSTART;TZID=Europe/Berlin:20260303T100000
DTEND;TZID=Europe/Berlin:20260303T110000
RRULE:FREQ=WEEKLY;BYDAY=TU
EXDATE;TZID=Europe/Berlin:20260317T100000
SUMMARY:Weekly
END:VEVENT
BEGIN:VEVENT
UID:weekly@test
DTSTAMP:20260301T000000Z
RECURRENCE-ID;TZID=Europe/Berlin:20260324T100000
DTSTART;TZID=Europe/Berlin:20260326T140000
DTEND;TZID=Europe/Berlin:20260326T150000
SUMMARY:Weekly (moved)
END:VEVENT
BEGIN:VEVENT
UID:allday@test
DTSTAMP:20260301T000000Z
DTSTART;VALUE=DATE:20260325
DTEND;VALUE=DATE:20260326
SUMMARY:Offsite
END:VEVENT
BEGIN:VEVENT
UID:transparent@test
DTSTAMP:20260301T000000Z
DTSTART:20260316T080000Z
DTEND:20260316T163000Z
TRANSP:TRANSPARENT
SUMMARY:Reminder
END:VEVENT
BEGIN:VEVENT
UID:cancelled@test
DTSTAMP:20260301T000000Z
DTSTART;TZID=Europe/Berlin:20260319T090000
DTEND;TZID=Europe/Berlin:20260319T170000
STATUS:CANCELLED
SUMMARY:Called off
END:VEVENT`

func TestBusyRecurringExceptionsAllDay(t *testing.T) {
	t.Parallel()
	window := iv("2026-03-16T00:00:00+01:00", "2026-04-01T00:00:00+02:00")
	busy, err := Busy([]*ical.Calendar{parseICS(t, recurring)}, window, berlin)
	if err != nil {
		t.Fatal(err)
	}
	want := []Interval{
		// 17 March excluded, 24 March moved to 26 March.
		iv("2026-03-25T00:00:00+01:00", "2026-03-26T00:00:00+01:00"),
		iv("2026-03-26T14:00:00+01:00", "2026-03-26T15:00:00+01:00"),
		// After the DST change the series stays at 10:00 local (+02:00).
		iv("2026-03-31T10:00:00+02:00", "2026-03-31T11:00:00+02:00"),
	}
	if format(inZone(busy, berlin)) != format(want) {
		t.Errorf("busy\n%swant\n%s", format(inZone(busy, berlin)), format(want))
	}

	free, err := FreeSlots(busy, prefs(0), iv("2026-03-23T00:00:00+01:00", "2026-03-28T00:00:00+01:00"))
	if err != nil {
		t.Fatal(err)
	}
	wantFree := []Interval{
		iv("2026-03-23T09:00:00+01:00", "2026-03-23T17:30:00+01:00"),
		iv("2026-03-24T09:00:00+01:00", "2026-03-24T17:30:00+01:00"),
		iv("2026-03-26T09:00:00+01:00", "2026-03-26T14:00:00+01:00"),
		iv("2026-03-26T15:00:00+01:00", "2026-03-26T17:30:00+01:00"),
		iv("2026-03-27T09:00:00+01:00", "2026-03-27T17:30:00+01:00"),
	}
	if format(free) != format(wantFree) {
		t.Errorf("free\n%swant\n%s", format(free), format(wantFree))
	}
}

func TestBusyOtherZoneSeriesAcrossDifferentDSTDates(t *testing.T) {
	t.Parallel()
	// A Monday 10:00 New York series: 16:00 Berlin while both are on
	// summer time, 15:00 Berlin in the week between Berlin's and New
	// York's autumn change, 16:00 again after.
	cal := parseICS(t, `
BEGIN:VEVENT
UID:ny@test
DTSTAMP:20260301T000000Z
DTSTART;TZID=America/New_York:20261019T100000
DURATION:PT1H
RRULE:FREQ=WEEKLY;COUNT=3
END:VEVENT`)
	busy, err := Busy([]*ical.Calendar{cal}, iv("2026-10-19T00:00:00Z", "2026-11-10T00:00:00Z"), berlin)
	if err != nil {
		t.Fatal(err)
	}
	want := []Interval{
		iv("2026-10-19T16:00:00+02:00", "2026-10-19T17:00:00+02:00"),
		iv("2026-10-26T15:00:00+01:00", "2026-10-26T16:00:00+01:00"),
		iv("2026-11-02T16:00:00+01:00", "2026-11-02T17:00:00+01:00"),
	}
	if format(inZone(busy, berlin)) != format(want) {
		t.Errorf("busy\n%swant\n%s", format(inZone(busy, berlin)), format(want))
	}
}

func TestBusyFloatingAndCancelledOverride(t *testing.T) {
	t.Parallel()
	cal := parseICS(t, `
BEGIN:VEVENT
UID:daily@test
DTSTAMP:20260301T000000Z
DTSTART:20260316T120000
DTEND:20260316T130000
RRULE:FREQ=DAILY;COUNT=3
EXDATE:20260317T120000,20260399T000000
END:VEVENT`)
	if _, err := Busy([]*ical.Calendar{cal}, iv("2026-03-16T00:00:00Z", "2026-03-20T00:00:00Z"), berlin); err == nil || !strings.Contains(err.Error(), "daily@test") {
		t.Fatalf("a broken EXDATE must be an error naming the event, got %v", err)
	}
	cal = parseICS(t, `
BEGIN:VEVENT
UID:daily@test
DTSTAMP:20260301T000000Z
DTSTART:20260316T120000
DTEND:20260316T130000
RRULE:FREQ=DAILY;COUNT=3
END:VEVENT
BEGIN:VEVENT
UID:daily@test
DTSTAMP:20260301T000000Z
RECURRENCE-ID:20260317T120000
DTSTART:20260317T120000
DTEND:20260317T130000
STATUS:CANCELLED
END:VEVENT`)
	busy, err := Busy([]*ical.Calendar{cal}, iv("2026-03-16T00:00:00Z", "2026-03-20T00:00:00Z"), berlin)
	if err != nil {
		t.Fatal(err)
	}
	want := []Interval{
		iv("2026-03-16T12:00:00+01:00", "2026-03-16T13:00:00+01:00"),
		iv("2026-03-18T12:00:00+01:00", "2026-03-18T13:00:00+01:00"),
	}
	if format(inZone(busy, berlin)) != format(want) {
		t.Errorf("busy\n%swant\n%s", format(inZone(busy, berlin)), format(want))
	}
}

func TestBusyWindowsAndPrefixedZones(t *testing.T) {
	t.Parallel()
	// Outlook writes Windows zone names; Lightning once prefixed a path.
	cal := parseICS(t, `
BEGIN:VEVENT
UID:outlook@test
DTSTART;TZID=W. Europe Standard Time:20260330T100000
DTEND;TZID=W. Europe Standard Time:20260330T110000
END:VEVENT
BEGIN:VEVENT
UID:lightning@test
DTSTART;TZID=/mozilla.org/20050126_1/America/New_York:20260330T100000
DTEND;TZID=/mozilla.org/20050126_1/America/New_York:20260330T103000
END:VEVENT`)
	busy, err := Busy([]*ical.Calendar{cal}, iv("2026-03-30T00:00:00Z", "2026-03-31T00:00:00Z"), time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	want := []Interval{
		iv("2026-03-30T10:00:00+02:00", "2026-03-30T11:00:00+02:00"),
		iv("2026-03-30T10:00:00-04:00", "2026-03-30T10:30:00-04:00"),
	}
	if format(inZone(busy, berlin)) != format(inZone(want, berlin)) {
		t.Errorf("busy\n%swant\n%s", format(inZone(busy, berlin)), format(inZone(want, berlin)))
	}
}

// busyHostileEvents are TestBusyHostileInput's hostile events: each must
// be refused with an error naming it, in bounded time.
var busyHostileEvents = []struct{ name, body string }{
	{"unknown zone", `BEGIN:VEVENT
UID:tz@test
DTSTART;TZID=Mars/Olympus:20260316T100000
DTEND;TZID=Mars/Olympus:20260316T110000
END:VEVENT`},
	{"secondly forever", `BEGIN:VEVENT
UID:spin@test
DTSTART:19700101T000000Z
DTEND:19700101T000001Z
RRULE:FREQ=SECONDLY
END:VEVENT`},
	{"bad rrule", `BEGIN:VEVENT
UID:rr@test
DTSTART:20260316T100000Z
RRULE:FREQ=FORTNIGHTLY
END:VEVENT`},
	{"ends before start", `BEGIN:VEVENT
UID:neg@test
DTSTART:20260316T100000Z
DTEND:20260316T090000Z
END:VEVENT`},
}

// busyHostileProblem runs Busy over one hostile event and says what is
// wrong ("" when Busy refused it with an error naming it, in time).
func busyHostileProblem(t *testing.T, body string) string {
	t.Helper()
	cal := parseICS(t, body)
	done := make(chan error, 1)
	go func() {
		_, err := Busy([]*ical.Calendar{cal}, iv("2026-03-16T00:00:00Z", "2026-03-20T00:00:00Z"), berlin)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "@test") {
			return fmt.Sprintf("got %v, want an error naming the event", err)
		}
		if testing.Verbose() {
			t.Log(err)
		}
		return ""
	case <-time.After(10 * time.Second):
		return "Busy did not return"
	}
}

// TestBusyHostileInput: an event Busy cannot read right (an unknown zone,
// a recurrence too dense to walk, an RRULE it cannot parse, an end before
// the start) is an error naming it, never a wrong or endless answer.
func TestBusyHostileInput(t *testing.T) {
	t.Parallel()
	tried, through := 0, 0
	for _, c := range busyHostileEvents {
		tried++
		t.Run(c.name, func(t *testing.T) {
			if p := busyHostileProblem(t, c.body); p != "" {
				through++
				t.Error(p)
			}
		})
	}
	t.Logf("hostile events: %d tried, %d got through", tried, through)
	if tried != len(busyHostileEvents) || through != 0 {
		t.Errorf("got %d of %d through, want 0 of %d", through, tried, len(busyHostileEvents))
	}
}

// TestBusyHostileInputLandsWithoutChecks is the positive control of
// TestBusyHostileInput: with Busy's checks off (busyChecksOff: the
// unknown zone read as local time, the end before the start kept, the
// bad RRULE ignored, the walk stopped quietly at its bound), each hostile
// event is answered without an error, as a busy time that is wrong, and
// the test's own check (busyHostileProblem) catches it. Not parallel: the
// switch is global.
func TestBusyHostileInputLandsWithoutChecks(t *testing.T) {
	busyChecksOff.Store(true)
	defer busyChecksOff.Store(false)
	tried, landed := 0, 0
	for _, c := range busyHostileEvents {
		tried++
		if p := busyHostileProblem(t, c.body); p != "" {
			landed++
			t.Logf("%s: %s", c.name, p)
		} else {
			t.Errorf("%s: refused with the checks off: the checks are not what stops it", c.name)
		}
	}
	t.Logf("without the checks: %d of %d landed", landed, tried)
	if tried != len(busyHostileEvents) || landed != tried {
		t.Errorf("positive control: got %d of %d landed, want all %d", landed, tried, len(busyHostileEvents))
	}
}

func inZone(ivs []Interval, loc *time.Location) []Interval {
	out := make([]Interval, len(ivs))
	for i, x := range ivs {
		out[i] = Interval{Start: x.Start.In(loc), End: x.End.In(loc)}
	}
	return out
}
