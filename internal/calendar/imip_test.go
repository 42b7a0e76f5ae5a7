package calendar

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-ical"
)

func readSample(t *testing.T, name string) *Invitation {
	t.Helper()
	raw, err := os.ReadFile("testdata/imip/" + name)
	if err != nil {
		t.Fatal(err)
	}
	inv, err := ParseInvitation(raw)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if inv == nil {
		t.Fatalf("%s: no invitation found", name)
	}
	return inv
}

func TestParseInvitationSamples(t *testing.T) {
	t.Parallel()
	ny, _ := time.LoadLocation("America/New_York")
	berlin, _ := time.LoadLocation("Europe/Berlin")
	london, _ := time.LoadLocation("Europe/London")
	cases := []struct {
		file, method, uid, summary, organizer, tzid, recurID string
		seq                                                  int
		start, end                                           time.Time
		recurring                                            bool
		attendees                                            int
	}{
		{"thunderbird_request.eml", MethodRequest, "6b1c2f0e-3c1a-4b7e-9d55-tb000001", "Project review", "bob@example.org", "Europe/Berlin", "", 0,
			time.Date(2026, 12, 1, 10, 0, 0, 0, berlin), time.Date(2026, 12, 1, 11, 0, 0, 0, berlin), false, 2},
		{"google_request.eml", MethodRequest, "0gq7m1h5ab2c3d4e5f6g7h8i9j@google.com", "Weekly sync", "dana@example.org", "America/New_York", "", 0,
			time.Date(2026, 12, 2, 9, 0, 0, 0, ny), time.Date(2026, 12, 2, 9, 30, 0, 0, ny), true, 2},
		{"outlook_request.eml", MethodRequest, "040000008200E00074C5B7101A82E00800000000D0C0A1B2C3D4DA01000000000000000010000000A1B2C3D4E5F60718293A4B5C6D7E8F90", "Budget planning", "erin@example.org", "Europe/London", "", 2,
			time.Date(2026, 12, 3, 14, 0, 0, 0, london), time.Date(2026, 12, 3, 15, 0, 0, 0, london), false, 1},
		{"google_cancel.eml", MethodCancel, "0gq7m1h5ab2c3d4e5f6g7h8i9j@google.com", "Weekly sync", "dana@example.org", "", "20261202T090000", 1,
			time.Date(2026, 12, 2, 14, 0, 0, 0, time.UTC), time.Date(2026, 12, 2, 14, 30, 0, 0, time.UTC), false, 1},
		{"thunderbird_counter.eml", MethodCounter, "6b1c2f0e-3c1a-4b7e-9d55-tb000001", "Project review", "ada@example.com", "", "", 0,
			time.Date(2026, 12, 1, 13, 0, 0, 0, time.UTC), time.Date(2026, 12, 1, 14, 0, 0, 0, time.UTC), false, 1},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			inv := readSample(t, c.file)
			if inv.Method != c.method || inv.UID != c.uid || inv.Summary != c.summary || inv.Organizer != c.organizer ||
				inv.TZID != c.tzid || inv.RecurrenceID != c.recurID || inv.Sequence != c.seq || inv.Recurring != c.recurring {
				t.Errorf("got method=%q uid=%q summary=%q organizer=%q tzid=%q recur-id=%q seq=%d recurring=%v",
					inv.Method, inv.UID, inv.Summary, inv.Organizer, inv.TZID, inv.RecurrenceID, inv.Sequence, inv.Recurring)
			}
			if !inv.Start.Equal(c.start) || !inv.End.Equal(c.end) {
				t.Errorf("times %v–%v, want %v–%v", inv.Start, inv.End, c.start, c.end)
			}
			if len(inv.Attendees) != c.attendees {
				t.Errorf("%d attendees, want %d: %+v", len(inv.Attendees), c.attendees, inv.Attendees)
			}
		})
	}
}

func TestParseInvitationNone(t *testing.T) {
	t.Parallel()
	inv, err := ParseInvitation([]byte("From: a@example.org\r\nSubject: hi\r\n\r\nno calendar here\r\n"))
	if err != nil || inv != nil {
		t.Fatalf("plain mail: %v, %v", inv, err)
	}
}

func TestConflicts(t *testing.T) {
	t.Parallel()
	inv := readSample(t, "google_request.eml") // Wednesdays 14:00–14:30 UTC
	busy := []Interval{
		{time.Date(2026, 12, 9, 14, 15, 0, 0, time.UTC), time.Date(2026, 12, 9, 15, 0, 0, 0, time.UTC)}, // 2nd Wednesday: conflict
		{time.Date(2026, 12, 2, 15, 0, 0, 0, time.UTC), time.Date(2026, 12, 2, 16, 0, 0, 0, time.UTC)},  // after: none
		{time.Date(2026, 12, 3, 14, 0, 0, 0, time.UTC), time.Date(2026, 12, 3, 14, 30, 0, 0, time.UTC)}, // Thursday: none
		{time.Date(2027, 3, 3, 14, 0, 0, 0, time.UTC), time.Date(2027, 3, 3, 14, 30, 0, 0, time.UTC)},   // beyond ConflictDays
	}
	got, err := inv.Conflicts(busy)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || !got[0].Start.Equal(busy[0].Start) {
		t.Fatalf("conflicts %v, want only %v", got, busy[0])
	}
	one := readSample(t, "thunderbird_request.eml") // 09:00–10:00 UTC
	got, err = one.Conflicts([]Interval{{time.Date(2026, 12, 1, 9, 30, 0, 0, time.UTC), time.Date(2026, 12, 1, 9, 45, 0, 0, time.UTC)},
		{time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC), time.Date(2026, 12, 1, 11, 0, 0, 0, time.UTC)}})
	if err != nil || len(got) != 1 {
		t.Fatalf("single event conflicts %v, %v: want the 09:30 one only (half-open)", got, err)
	}
}

func decodeOne(t *testing.T, data []byte) (*ical.Calendar, *ical.Component) {
	t.Helper()
	cal, err := ical.NewDecoder(bytes.NewReader(data)).Decode()
	if err != nil {
		t.Fatalf("decode %s: %v", data, err)
	}
	for _, c := range cal.Children {
		if c.Name == ical.CompEvent {
			return cal, c
		}
	}
	t.Fatalf("no VEVENT in %s", data)
	return nil, nil
}

func TestReply(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 23, 17, 0, 0, 0, time.UTC)
	for _, f := range []string{"thunderbird_request.eml", "google_request.eml", "outlook_request.eml"} {
		for _, ps := range []string{PartStatAccepted, PartStatDeclined, PartStatTentative} {
			inv := readSample(t, f)
			data, err := inv.Reply("Ada@Example.com", ps, now)
			if err != nil {
				t.Fatalf("%s %s: %v", f, ps, err)
			}
			cal, ev := decodeOne(t, data)
			if m := cal.Props.Get(ical.PropMethod); m == nil || m.Value != "REPLY" {
				t.Errorf("%s: METHOD %v", f, m)
			}
			if propValue(ev, ical.PropUID) != inv.UID || propValue(ev, ical.PropDateTimeStamp) != "20261123T170000Z" {
				t.Errorf("%s: UID %q DTSTAMP %q", f, propValue(ev, ical.PropUID), propValue(ev, ical.PropDateTimeStamp))
			}
			if inv.Sequence > 0 && propValue(ev, ical.PropSequence) != "2" {
				t.Errorf("%s: SEQUENCE %q", f, propValue(ev, ical.PropSequence))
			}
			atts := ev.Props.Values(ical.PropAttendee)
			if len(atts) != 1 || atts[0].Value != "mailto:ada@example.com" || atts[0].Params.Get(ical.ParamParticipationStatus) != ps {
				t.Errorf("%s: attendees %+v, want only ada with %s", f, atts, ps)
			}
			if mailtoAddr(propValue(ev, ical.PropOrganizer)) != inv.Organizer {
				t.Errorf("%s: organizer %q", f, propValue(ev, ical.PropOrganizer))
			}
			if ev.Props.Get(ical.PropDescription) != nil {
				t.Errorf("%s: the organizer's description travelled back", f)
			}
			start, err := ev.Props.Get(ical.PropDateTimeStart).DateTime(time.UTC)
			if inv.TZID != "" {
				// The TZID must resolve from the reply itself or the zone db.
				if err != nil || !start.Equal(inv.Start) {
					t.Errorf("%s: DTSTART %v, %v; want %v", f, start, err, inv.Start)
				}
			}
		}
	}
	cancel := readSample(t, "google_cancel.eml")
	if _, err := cancel.Reply("ada@example.com", PartStatAccepted, now); err == nil {
		t.Error("a CANCEL was answered")
	}
	inv := readSample(t, "thunderbird_request.eml")
	if _, err := inv.Reply("ada@example.com", "DELEGATED", now); err == nil {
		t.Error("PARTSTAT DELEGATED accepted")
	}
}

func TestAccepted(t *testing.T) {
	t.Parallel()
	inv := readSample(t, "thunderbird_request.eml")
	data, err := inv.Accepted("ada@example.com", PartStatTentative)
	if err != nil {
		t.Fatal(err)
	}
	cal, ev := decodeOne(t, data)
	if cal.Props.Get(ical.PropMethod) != nil {
		t.Error("stored event carries METHOD")
	}
	var ada, carol string
	for _, a := range ev.Props.Values(ical.PropAttendee) {
		switch mailtoAddr(a.Value) {
		case "ada@example.com":
			ada = a.Params.Get(ical.ParamParticipationStatus)
		case "carol@example.net":
			carol = a.Params.Get(ical.ParamParticipationStatus)
		}
	}
	if ada != PartStatTentative || carol != "NEEDS-ACTION" || propValue(ev, ical.PropStatus) != "TENTATIVE" {
		t.Errorf("ada %q carol %q status %q", ada, carol, propValue(ev, ical.PropStatus))
	}
	if !strings.Contains(string(data), "BEGIN:VTIMEZONE") {
		t.Error("time zone dropped")
	}
}

// TestDeclinedIsNotBusy: an invitation stored as declined stays on the
// calendar but takes no time; accepted and tentative ones are busy.
func TestDeclinedIsNotBusy(t *testing.T) {
	t.Parallel()
	inv := readSample(t, "thunderbird_request.eml")
	for ps, wantBusy := range map[string]bool{PartStatAccepted: true, PartStatTentative: true, PartStatDeclined: false} {
		data, err := inv.Accepted("ada@example.com", ps)
		if err != nil {
			t.Fatal(err)
		}
		cal, ev := decodeOne(t, data)
		start, err := (&ical.Event{Component: ev}).DateTimeStart(time.UTC)
		if err != nil {
			t.Fatal(err)
		}
		busy, err := Busy([]*ical.Calendar{cal}, Interval{Start: start.Add(-24 * time.Hour), End: start.Add(24 * time.Hour)}, time.UTC)
		if err != nil {
			t.Fatal(err)
		}
		if got := len(busy) > 0; got != wantBusy {
			t.Errorf("%s: busy %v (%v), want %v", ps, got, busy, wantBusy)
		}
	}
}
