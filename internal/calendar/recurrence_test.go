package calendar

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-ical"
)

// wrapCal makes a VCALENDAR of body (LF line ends are fine).
func wrapCal(method, body string) []byte {
	m := ""
	if method != "" {
		m = "METHOD:" + method + "\r\n"
	}
	return []byte("BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//test//EN\r\n" + m +
		strings.ReplaceAll(strings.TrimSpace(body), "\n", "\r\n") + "\r\nEND:VCALENDAR\r\n")
}

// A weekly Tuesday 14:00 Berlin meeting from 3 March 2026; Berlin goes to
// summer time on 29 March, so 31 March 14:00 is 12:00 UTC, 10 March
// 14:00 is 13:00 UTC.
const weeklyBerlin = `
BEGIN:VEVENT
UID:weekly-1@example.org
SEQUENCE:0
DTSTAMP:20260201T000000Z
DTSTART;TZID=Europe/Berlin:20260303T140000
DTEND;TZID=Europe/Berlin:20260303T150000
RRULE:FREQ=WEEKLY;BYDAY=TU;COUNT=20
SUMMARY:Weekly sync
ORGANIZER;CN=Ada:mailto:ada@example.com
ATTENDEE;PARTSTAT=ACCEPTED:mailto:owner@example.net
END:VEVENT`

// occurrenceMsg is an iTIP message with one VEVENT per recurrence-id line.
func occurrenceMsg(t *testing.T, method string, seq int, rids ...string) *Invitation {
	t.Helper()
	var b strings.Builder
	for _, rid := range rids {
		b.WriteString("BEGIN:VEVENT\nUID:weekly-1@example.org\nSEQUENCE:" + strconv.Itoa(seq) + "\nDTSTAMP:20260301T000000Z\n" + rid +
			"\nSUMMARY:Weekly sync\nORGANIZER:mailto:ada@example.com\nEND:VEVENT\n")
	}
	inv, err := ParseICS(wrapCal(method, b.String()), "")
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	return inv
}

func busyOf(t *testing.T, data []byte, window Interval) string {
	t.Helper()
	cal, err := decodeICS(data)
	if err != nil {
		t.Fatal(err)
	}
	busy, err := Busy([]*ical.Calendar{cal}, window, berlin)
	if err != nil {
		t.Fatal(err)
	}
	return format(inZone(busy, berlin))
}

// TestApplyOccurrenceCancelAcrossDST: a CANCEL of one occurrence after
// the DST change, named in UTC, a TZID, or Outlook's Windows zone name,
// becomes one EXDATE in the master's TZID form; free/busy then has that
// occurrence free and every other one busy at 14:00 local. A RECURRENCE-ID
// at the pre-DST UTC offset (13:00Z on 31 March) is no occurrence and
// changes nothing.
func TestApplyOccurrenceCancelAcrossDST(t *testing.T) {
	t.Parallel()
	stored := wrapCal("", weeklyBerlin)
	window := iv("2026-03-23T00:00:00+01:00", "2026-04-08T00:00:00+02:00")
	want := "2026-03-24T14:00:00+01:00/2026-03-24T15:00:00+01:00\n2026-04-07T14:00:00+02:00/2026-04-07T15:00:00+02:00\n"
	for _, tc := range []struct{ name, rid string }{
		{"utc", "RECURRENCE-ID:20260331T120000Z"},
		{"tzid", "RECURRENCE-ID;TZID=Europe/Berlin:20260331T140000"},
		{"windows zone", `RECURRENCE-ID;TZID="W. Europe Standard Time":20260331T140000`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, ch, err := ApplyOccurrences(stored, occurrenceMsg(t, MethodCancel, 1, tc.rid), time.UTC)
			if err != nil {
				t.Fatal(err)
			}
			if len(ch) != 1 || !ch[0].Applied || ch[0].Kind != OccurrenceCancelled {
				t.Fatalf("changes %+v, want one applied cancellation", ch)
			}
			if got := ch[0].Start.In(berlin).Format("Mon 2 January 15:04"); got != "Tue 31 March 14:00" {
				t.Errorf("start %s, want Tue 31 March 14:00", got)
			}
			if !strings.Contains(string(out), "EXDATE;TZID=Europe/Berlin:20260331T140000") {
				t.Errorf("no EXDATE in the master's form:\n%s", out)
			}
			if got := busyOf(t, out, window); got != want {
				t.Errorf("busy\n%swant\n%s", got, want)
			}
			// Applied again (a resumed message): nothing more to write.
			again, ch2, err := ApplyOccurrences(out, occurrenceMsg(t, MethodCancel, 1, tc.rid), time.UTC)
			if err != nil || again != nil || len(ch2) != 1 || !ch2[0].Applied || ch2[0].Note == "" {
				t.Errorf("second apply: %q %+v %v, want no change, applied, with a note", again, ch2, err)
			}
		})
	}
	out, ch, err := ApplyOccurrences(stored, occurrenceMsg(t, MethodCancel, 1, "RECURRENCE-ID:20260331T130000Z"), time.UTC)
	if err != nil || out != nil || len(ch) != 1 || ch[0].Applied || !strings.Contains(ch[0].Note, "no occurrence") {
		t.Errorf("wrong offset: %q %+v %v, want nothing applied", out, ch, err)
	}
}

// TestApplyOccurrenceSeveral: a CANCEL with several VEVENTs cancels each
// occurrence; one that is no occurrence is reported and the others still
// apply.
func TestApplyOccurrenceSeveral(t *testing.T) {
	t.Parallel()
	msg := occurrenceMsg(t, MethodCancel, 1,
		"RECURRENCE-ID;TZID=Europe/Berlin:20260324T140000",
		"RECURRENCE-ID;TZID=Europe/Berlin:20260325T140000", // a Wednesday
		"RECURRENCE-ID;TZID=Europe/Berlin:20260407T140000")
	out, ch, err := ApplyOccurrences(wrapCal("", weeklyBerlin), msg, time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	if len(ch) != 3 || !ch[0].Applied || ch[1].Applied || !ch[2].Applied {
		t.Fatalf("changes %+v, want applied, not applied, applied", ch)
	}
	got := busyOf(t, out, iv("2026-03-23T00:00:00+01:00", "2026-04-15T00:00:00+02:00"))
	want := "2026-03-31T14:00:00+02:00/2026-03-31T15:00:00+02:00\n2026-04-14T14:00:00+02:00/2026-04-14T15:00:00+02:00\n"
	if got != want {
		t.Errorf("busy\n%swant\n%s", got, want)
	}
}

// TestApplyOccurrenceAllDay: an all-day series takes a DATE EXDATE; a
// DATE-TIME at midnight names the same day; a DATE for a series with
// times is refused.
func TestApplyOccurrenceAllDay(t *testing.T) {
	t.Parallel()
	stored := wrapCal("", `
BEGIN:VEVENT
UID:weekly-1@example.org
DTSTAMP:20260201T000000Z
DTSTART;VALUE=DATE:20260302
DTEND;VALUE=DATE:20260303
RRULE:FREQ=WEEKLY
SUMMARY:Office day
ORGANIZER:mailto:ada@example.com
END:VEVENT`)
	for _, rid := range []string{"RECURRENCE-ID;VALUE=DATE:20260316", "RECURRENCE-ID:20260316T000000"} {
		out, ch, err := ApplyOccurrences(stored, occurrenceMsg(t, MethodCancel, 0, rid), berlin)
		if err != nil || len(ch) != 1 || !ch[0].Applied || !ch[0].AllDay {
			t.Fatalf("%s: %+v %v", rid, ch, err)
		}
		if !strings.Contains(string(out), "EXDATE;VALUE=DATE:20260316") {
			t.Errorf("%s: no DATE EXDATE:\n%s", rid, out)
		}
		got := busyOf(t, out, iv("2026-03-09T00:00:00+01:00", "2026-03-24T00:00:00+01:00"))
		want := "2026-03-09T00:00:00+01:00/2026-03-10T00:00:00+01:00\n2026-03-23T00:00:00+01:00/2026-03-24T00:00:00+01:00\n"
		if got != want {
			t.Errorf("%s: busy\n%swant\n%s", rid, got, want)
		}
	}
	_, ch, err := ApplyOccurrences(wrapCal("", weeklyBerlin), occurrenceMsg(t, MethodCancel, 0, "RECURRENCE-ID;VALUE=DATE:20260310"), berlin)
	if err != nil || len(ch) != 1 || ch[0].Applied || !strings.Contains(ch[0].Note, "is a date") {
		t.Errorf("DATE for a timed series: %+v %v, want refused", ch, err)
	}
}

// TestApplyOccurrenceMove: a REQUEST for one occurrence becomes an
// override with the master's RECURRENCE-ID form: the old time is free,
// the new one busy; a later change replaces it, an older one is refused;
// a CANCEL of the moved occurrence removes the override too.
func TestApplyOccurrenceMove(t *testing.T) {
	t.Parallel()
	move := func(seq int, day string) *Invitation {
		t.Helper()
		inv, err := ParseICS(wrapCal(MethodRequest, `
BEGIN:VTIMEZONE
TZID:America/New_York
BEGIN:STANDARD
DTSTART:19701101T020000
TZOFFSETFROM:-0400
TZOFFSETTO:-0500
END:STANDARD
END:VTIMEZONE
BEGIN:VEVENT
UID:weekly-1@example.org
SEQUENCE:`+strconv.Itoa(seq)+`
DTSTAMP:20260301T000000Z
RECURRENCE-ID:20260310T130000Z
DTSTART;TZID=America/New_York:202603`+day+`T100000
DTEND;TZID=America/New_York:202603`+day+`T110000
SUMMARY:Weekly sync (moved)
ORGANIZER:mailto:ada@example.com
ATTENDEE;PARTSTAT=NEEDS-ACTION;RSVP=TRUE:mailto:owner@example.net
END:VEVENT`), "")
		if err != nil {
			t.Fatal(err)
		}
		return inv
	}
	window := iv("2026-03-09T00:00:00+01:00", "2026-03-14T00:00:00+01:00")
	out, ch, err := ApplyOccurrences(wrapCal("", weeklyBerlin), move(1, "12"), time.UTC)
	if err != nil || len(ch) != 1 || !ch[0].Applied || ch[0].Kind != OccurrenceChanged {
		t.Fatalf("move: %+v %v", ch, err)
	}
	if !strings.Contains(string(out), "RECURRENCE-ID;TZID=Europe/Berlin:20260310T140000") || !strings.Contains(string(out), "TZID:America/New_York") {
		t.Errorf("override not in the master's form, or its VTIMEZONE missing:\n%s", out)
	}
	// 12 March 10:00 New York (EDT since 8 March) is 15:00 Berlin (CET).
	if got, want := busyOf(t, out, window), "2026-03-12T15:00:00+01:00/2026-03-12T16:00:00+01:00\n"; got != want {
		t.Errorf("busy after the move\n%swant\n%s", got, want)
	}
	out2, ch, err := ApplyOccurrences(out, move(2, "13"), time.UTC)
	if err != nil || !ch[0].Applied {
		t.Fatalf("second move: %+v %v", ch, err)
	}
	if got, want := busyOf(t, out2, window), "2026-03-13T15:00:00+01:00/2026-03-13T16:00:00+01:00\n"; got != want {
		t.Errorf("busy after the second move\n%swant\n%s", got, want)
	}
	if n := strings.Count(string(out2), "RECURRENCE-ID"); n != 1 {
		t.Errorf("%d overrides, want 1 (replaced)", n)
	}
	stale, ch, err := ApplyOccurrences(out2, move(1, "12"), time.UTC)
	if err != nil || stale != nil || ch[0].Applied || !strings.Contains(ch[0].Note, "newer") {
		t.Errorf("older update: %+v %v, want refused", ch, err)
	}
	gone, ch, err := ApplyOccurrences(out2, occurrenceMsg(t, MethodCancel, 3, "RECURRENCE-ID:20260310T130000Z"), time.UTC)
	if err != nil || !ch[0].Applied {
		t.Fatalf("cancel the moved one: %+v %v", ch, err)
	}
	if got := busyOf(t, gone, window); got != "" {
		t.Errorf("busy after cancelling the moved occurrence: %s, want none", got)
	}
}

// TestApplyOccurrenceThisAndFuture: RANGE=THISANDFUTURE ends the series
// before the occurrence (UNTIL in UTC, COUNT dropped); from the first
// occurrence it is refused (that is the whole series); a REQUEST with it
// is not applied.
func TestApplyOccurrenceThisAndFuture(t *testing.T) {
	t.Parallel()
	out, ch, err := ApplyOccurrences(wrapCal("", weeklyBerlin), occurrenceMsg(t, MethodCancel, 1, "RECURRENCE-ID;RANGE=THISANDFUTURE;TZID=Europe/Berlin:20260331T140000"), time.UTC)
	if err != nil || len(ch) != 1 || !ch[0].Applied || ch[0].Kind != OccurrenceCancelledFrom {
		t.Fatalf("%+v %v", ch, err)
	}
	if !strings.Contains(string(out), "UNTIL=20260331T115959Z") || strings.Contains(string(out), "COUNT") {
		t.Errorf("RRULE not ended:\n%s", out)
	}
	if got, want := busyOf(t, out, iv("2026-03-23T00:00:00+01:00", "2026-05-01T00:00:00+02:00")), "2026-03-24T14:00:00+01:00/2026-03-24T15:00:00+01:00\n"; got != want {
		t.Errorf("busy\n%swant\n%s", got, want)
	}
	out, ch, _ = ApplyOccurrences(wrapCal("", weeklyBerlin), occurrenceMsg(t, MethodCancel, 1, "RECURRENCE-ID;RANGE=THISANDFUTURE;TZID=Europe/Berlin:20260303T140000"), time.UTC)
	if out != nil || ch[0].Applied {
		t.Errorf("from the first occurrence: %+v, want not applied", ch)
	}
	out, ch, _ = ApplyOccurrences(wrapCal("", weeklyBerlin), occurrenceMsg(t, MethodRequest, 1, "RECURRENCE-ID;RANGE=THISANDFUTURE;TZID=Europe/Berlin:20260331T140000\nDTSTART;TZID=Europe/Berlin:20260331T160000\nDTEND;TZID=Europe/Berlin:20260331T170000"), time.UTC)
	if out != nil || ch[0].Applied || !strings.Contains(ch[0].Note, "THISANDFUTURE") {
		t.Errorf("REQUEST this-and-future: %+v, want not applied with a note", ch)
	}
}

// TestApplyOccurrenceRefusals: another organizer, another UID, a series
// that does not recur, and hostile data change nothing.
func TestApplyOccurrenceRefusals(t *testing.T) {
	t.Parallel()
	stored := wrapCal("", weeklyBerlin)
	msg := occurrenceMsg(t, MethodCancel, 1, "RECURRENCE-ID:20260310T130000Z")
	other := *msg
	other.Organizer = "mallory@example.com"
	if _, _, err := ApplyOccurrences(stored, &other, time.UTC); !errors.Is(err, ErrNotOrganizer) {
		t.Errorf("other organizer: %v, want ErrNotOrganizer", err)
	}
	uid := *msg
	uid.UID = "someone-else@example.org"
	if _, _, err := ApplyOccurrences(stored, &uid, time.UTC); !errors.Is(err, ErrNoSeries) {
		t.Errorf("other UID: %v, want ErrNoSeries", err)
	}
	single := wrapCal("", strings.Replace(weeklyBerlin, "RRULE:FREQ=WEEKLY;BYDAY=TU;COUNT=20\n", "", 1))
	if _, _, err := ApplyOccurrences(single, msg, time.UTC); !errors.Is(err, ErrNoSeries) {
		t.Errorf("not recurring: %v, want ErrNoSeries", err)
	}
	for _, bad := range [][]byte{nil, []byte("BEGIN:VCALENDAR\r\nX;A=\"b\"c:d\r\nEND:VCALENDAR\r\n"), []byte("garbage")} {
		if out, _, err := ApplyOccurrences(bad, msg, time.UTC); err == nil || out != nil {
			t.Errorf("stored %q: %v, want an error", bad, err)
		}
	}
	hostile := occurrenceMsg(t, MethodCancel, 1, "RECURRENCE-ID;TZID=Nowhere/Zone:20260310T140000", "RECURRENCE-ID:not-a-time")
	out, ch, err := ApplyOccurrences(stored, hostile, time.UTC)
	if err != nil || out != nil || len(ch) != 2 || ch[0].Applied || ch[1].Applied {
		t.Errorf("hostile RECURRENCE-IDs: %q %+v %v, want nothing applied", out, ch, err)
	}
}

// TestApplyOccurrenceSamples: occurrence messages in the shapes Outlook
// (CANCEL, Windows zone name), Google Calendar (a moved occurrence, TZID)
// and Thunderbird (one CANCEL naming two occurrences in UTC) send, read
// from whole mails and applied to the weekly Tuesday 11:00 Berlin series
// the owner's calendar holds for their UID.
func TestApplyOccurrenceSamples(t *testing.T) {
	t.Parallel()
	series := func(uid string) []byte {
		return wrapCal("", "BEGIN:VEVENT\nUID:"+uid+"\nDTSTAMP:20261120T100000Z\nDTSTART;TZID=Europe/Berlin:20261201T110000\n"+
			"DTEND;TZID=Europe/Berlin:20261201T120000\nRRULE:FREQ=WEEKLY;BYDAY=TU\nSUMMARY:Weekly sync\n"+
			"ORGANIZER;CN=Erin Example:mailto:erin@example.org\nATTENDEE;PARTSTAT=ACCEPTED:mailto:ada@example.com\nEND:VEVENT")
	}
	window := iv("2026-12-07T00:00:00+01:00", "2026-12-31T00:00:00+01:00")
	for _, tc := range []struct {
		file, kind string
		applied    int
		busy       string
	}{
		{"outlook_cancel_occurrence.eml", OccurrenceCancelled, 1,
			"2026-12-08T11:00:00+01:00/2026-12-08T12:00:00+01:00\n2026-12-22T11:00:00+01:00/2026-12-22T12:00:00+01:00\n2026-12-29T11:00:00+01:00/2026-12-29T12:00:00+01:00\n"},
		{"google_move_occurrence.eml", OccurrenceChanged, 1,
			"2026-12-09T15:00:00+01:00/2026-12-09T16:00:00+01:00\n2026-12-15T11:00:00+01:00/2026-12-15T12:00:00+01:00\n2026-12-22T11:00:00+01:00/2026-12-22T12:00:00+01:00\n2026-12-29T11:00:00+01:00/2026-12-29T12:00:00+01:00\n"},
		{"thunderbird_cancel_occurrences.eml", OccurrenceCancelled, 2,
			"2026-12-08T11:00:00+01:00/2026-12-08T12:00:00+01:00\n2026-12-15T11:00:00+01:00/2026-12-15T12:00:00+01:00\n"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			inv := readSample(t, tc.file)
			if inv.RecurrenceID == "" || inv.Organizer != "erin@example.org" {
				t.Fatalf("read %+v", inv)
			}
			if ids := OccurrenceIDs(inv.ICS, inv.UID); len(ids) != tc.applied {
				t.Errorf("OccurrenceIDs %v, want %d", ids, tc.applied)
			}
			out, ch, err := ApplyOccurrences(series(inv.UID), inv, berlin)
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, c := range ch {
				if c.Applied && c.Kind == tc.kind {
					n++
				}
			}
			if n != tc.applied || len(ch) != tc.applied {
				t.Errorf("changes %+v, want %d applied %s", ch, tc.applied, tc.kind)
			}
			if got := busyOf(t, out, window); got != tc.busy {
				t.Errorf("busy\n%swant\n%s", got, tc.busy)
			}
		})
	}
}
