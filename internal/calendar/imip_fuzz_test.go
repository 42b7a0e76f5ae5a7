package calendar

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode"
)

// FuzzParseInvitation feeds arbitrary mail to the invitation parser and
// to what is built from an invitation it returns (the REPLY, the
// calendar copy, the occurrences). The seeds are the sample invitations
// in testdata/imip (Thunderbird, Google, Outlook: REQUEST, CANCEL,
// COUNTER, occurrences) and the hostile ones of imip_hostile_test.go;
// testdata/fuzz/FuzzParseInvitation keeps the corpus go test runs.
//
// Whatever the input: no panic, an error or nil for what is not an
// invitation, and for an invitation the contract of Invitation: its text
// fields (not the identifiers UID and RECURRENCE-ID, kept as sent for
// the REPLY and quoted through noteText or termsafe wherever shown)
// without control or format characters, ICS within MaxICSBytes.
func FuzzParseInvitation(f *testing.F) {
	files, err := filepath.Glob("testdata/imip/*.eml")
	if err != nil || len(files) == 0 {
		f.Fatalf("no seed invitations in testdata/imip: %v", err)
	}
	for _, name := range files {
		raw, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw)
	}
	for _, ev := range []string{
		"SUMMARY:\x1b]0;pwned\x07Lunch\r\n",
		"RRULE:FREQ=SECONDLY;COUNT=100000\r\n",
		"ATTENDEE;CN=\"a\"b:mailto:a@example.org\r\n",
		"RECURRENCE-ID;TZID=Nowhere/Zone:20261201T100000\r\n",
	} {
		f.Add([]byte("From: mallory@example.org\r\nContent-Type: text/calendar; method=REQUEST\r\n\r\n" + string(hostileICS(ev))))
	}
	now := time.Date(2026, 11, 23, 17, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, raw []byte) {
		inv, err := ParseInvitation(raw)
		if err != nil {
			if inv != nil {
				t.Fatalf("an error (%v) with an invitation", err)
			}
			return
		}
		if inv == nil {
			return
		}
		if len(inv.ICS) > MaxICSBytes {
			t.Fatalf("ICS of %d bytes, more than MaxICSBytes", len(inv.ICS))
		}
		for name, s := range map[string]string{"method": inv.Method, "summary": inv.Summary, "location": inv.Location,
			"description": inv.Description, "organizer": inv.Organizer, "organizer cn": inv.OrganizerCN, "tzid": inv.TZID,
			"rrule": inv.RRule} {
			if i := strings.IndexFunc(s, func(r rune) bool { return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) }); i >= 0 {
				t.Fatalf("%s %q keeps a control or format character at %d", name, s, i)
			}
		}
		for _, a := range inv.Attendees {
			if strings.IndexFunc(a.Name+a.Email, unicode.IsControl) >= 0 {
				t.Fatalf("attendee %q <%s> keeps a control character", a.Name, a.Email)
			}
		}
		// What code builds from it must not panic either; errors are fine.
		_, _ = inv.Reply("ada@example.com", PartStatDeclined, now)
		_, _ = inv.Accepted("ada@example.com", PartStatAccepted)
		_, _ = inv.Occurrences()
	})
}
