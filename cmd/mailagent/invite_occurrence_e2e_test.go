package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mailagent/mailagent/internal/calendar"
)

// berlinTZ is the VTIMEZONE Google Calendar sends for Europe/Berlin.
const berlinTZ = "BEGIN:VTIMEZONE\nTZID:Europe/Berlin\nX-LIC-LOCATION:Europe/Berlin\nBEGIN:DAYLIGHT\nTZOFFSETFROM:+0100\nTZOFFSETTO:+0200\n" +
	"TZNAME:CEST\nDTSTART:19700329T020000\nRRULE:FREQ=YEARLY;BYMONTH=3;BYDAY=-1SU\nEND:DAYLIGHT\nBEGIN:STANDARD\nTZOFFSETFROM:+0200\n" +
	"TZOFFSETTO:+0100\nTZNAME:CET\nDTSTART:19701025T030000\nRRULE:FREQ=YEARLY;BYMONTH=10;BYDAY=-1SU\nEND:STANDARD\nEND:VTIMEZONE\n"

// occurrenceMail is Bob's iTIP message about the weekly series uid, in
// the shape Google Calendar sends: events are the VEVENT lines between
// the common head and tail.
func occurrenceMail(subject, method, uid string, seq int, authenticated bool, events ...string) string {
	var b strings.Builder
	b.WriteString("BEGIN:VCALENDAR\nPRODID:-//Google Inc//Google Calendar 70.9054//EN\nVERSION:2.0\nMETHOD:" + method + "\n" + berlinTZ)
	for _, e := range events {
		b.WriteString("BEGIN:VEVENT\nUID:" + uid + "\nDTSTAMP:20261121T090000Z\n" + fmt.Sprintf("SEQUENCE:%d\n", seq) +
			"SUMMARY:Weekly sync\nORGANIZER;CN=Bob:mailto:bob@example.org\nATTENDEE;CN=Ada;PARTSTAT=NEEDS-ACTION;RSVP=TRUE:mailto:ada@example.com\n" +
			e + "END:VEVENT\n")
	}
	b.WriteString("END:VCALENDAR\n")
	body := "--alt\nContent-Type: text/plain; charset=utf-8\n\nWeekly sync.\n--alt\nContent-Type: text/calendar; charset=utf-8; method=" + method +
		"\n\n" + b.String() + "--alt--"
	hdr := []string{"MIME-Version: 1.0", "Content-Type: multipart/alternative; boundary=alt"}
	if authenticated {
		return rawMail("Bob <bob@example.org>", subject, body, hdr...)
	}
	return unauthenticatedMail("Bob <bob@example.org>", subject, body, hdr...)
}

// TestInvitationOccurrenceRadicaleE2E: through the binary and a real
// Radicale, the owner accepts Bob's weekly series (TZID Europe/Berlin);
// Bob's authenticated CANCEL of one occurrence (RECURRENCE-ID in UTC, as
// Outlook writes it) becomes an EXDATE in the series' TZID, his REQUEST
// moving another one an override (both handled in one watch pass); a
// spoofed CANCEL of a third changes nothing. `calendar free --json` then offers the cancelled time and the
// moved one's old time, and not its new time; `queue show` and --json say
// what was done in words; Bob's CANCEL of the series then removes it.
func TestInvitationOccurrenceRadicaleE2E(t *testing.T) {
	base := os.Getenv("MAILAGENT_E2E_CALDAV_URL")
	if base == "" {
		t.Skip("no Radicale: run scripts/e2e-stack.sh start DIR (with the radicale package) and source DIR/env")
	}
	user, pass := os.Getenv("MAILAGENT_E2E_CALDAV_USER"), os.Getenv("MAILAGENT_E2E_CALDAV_PASSWORD")
	calURL := fmt.Sprintf("%s%s/occurrence-%d/", base, user, time.Now().UnixNano())
	do := func(method, url string) (int, string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, method, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.SetBasicAuth(user, pass)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, url, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := do("MKCALENDAR", calURL); code != http.StatusCreated {
		t.Fatalf("MKCALENDAR: %d", code)
	}
	t.Cleanup(func() { do("DELETE", calURL) })
	var sawSlots bool
	h := newHarness(t, schedulingModel(&sawSlots), autoPolicy)
	t.Setenv("MA_TEST_CALDAV_PASS", pass)
	cfg, err := os.ReadFile(h.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	cal := fmt.Sprintf("\n[accounts.calendar]\nurl = %q\nusername = %q\npassword_env = \"MA_TEST_CALDAV_PASS\"\nwrite = true\n", calURL, user)
	if err := os.WriteFile(h.cfgPath, append(cfg, []byte(cal+schedulingTOML)...), 0o600); err != nil {
		t.Fatal(err)
	}

	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	// The first Tuesday at least two days ahead, 11:00 Berlin.
	d := time.Now().In(berlin).AddDate(0, 0, 2)
	for d.Weekday() != time.Tuesday {
		d = d.AddDate(0, 0, 1)
	}
	first := time.Date(d.Year(), d.Month(), d.Day(), 11, 0, 0, 0, berlin)
	occ := func(i int) time.Time { return first.AddDate(0, 0, 7*i) }
	local := func(t time.Time) string { return t.In(berlin).Format("20060102T150405") }
	const uid = "e2e-weekly-1@example.org"
	h.deliver(occurrenceMail("Weekly sync", "REQUEST", uid, 0, true,
		"DTSTART;TZID=Europe/Berlin:"+local(first)+"\nDTEND;TZID=Europe/Berlin:"+local(first.Add(time.Hour))+"\nRRULE:FREQ=WEEKLY;COUNT=4\n"))
	h.watchOnce(t)
	id := queueIDBySubject(t, h, "Weekly sync")
	if _, stderr, code := h.run("queue", "rsvp", id, "accept"); code != 0 || !strings.Contains(stderr, "calendar: stored as") {
		t.Fatalf("rsvp: exit %d: %s", code, stderr)
	}
	event := calURL + calendar.ResourceName(uid)

	moved := time.Date(occ(2).Year(), occ(2).Month(), occ(2).Day()+1, 14, 0, 0, 0, berlin) // Wednesday 14:00
	h.deliver(occurrenceMail("Cancelled: Weekly sync @ week 2", "CANCEL", uid, 1, true,
		"RECURRENCE-ID:"+occ(1).UTC().Format("20060102T150405Z")+"\nSTATUS:CANCELLED\n"))
	h.deliver(occurrenceMail("Updated: Weekly sync @ week 3", "REQUEST", uid, 1, true,
		"RECURRENCE-ID;TZID=Europe/Berlin:"+local(occ(2))+"\nDTSTART;TZID=Europe/Berlin:"+local(moved)+
			"\nDTEND;TZID=Europe/Berlin:"+local(moved.Add(time.Hour))+"\n"))
	h.deliver(occurrenceMail("Cancelled spoofed @ week 4", "CANCEL", uid, 2, false,
		"RECURRENCE-ID;TZID=Europe/Berlin:"+local(occ(3))+"\nSTATUS:CANCELLED\n"))
	h.watchOnce(t)

	code, body := do("GET", event)
	if code != http.StatusOK {
		t.Fatalf("the series is gone from Radicale: %d", code)
	}
	for _, want := range []string{"EXDATE;TZID=Europe/Berlin:" + local(occ(1)), "RECURRENCE-ID;TZID=Europe/Berlin:" + local(occ(2)),
		"DTSTART;TZID=Europe/Berlin:" + local(moved)} {
		if !strings.Contains(strings.ReplaceAll(body, "\r\n ", ""), want) {
			t.Errorf("Radicale's copy lacks %q:\n%s", want, body)
		}
	}
	if strings.Contains(body, local(occ(3))+"\r\n") && strings.Contains(body, "EXDATE;TZID=Europe/Berlin:"+local(occ(3))) {
		t.Errorf("the spoofed CANCEL was applied:\n%s", body)
	}

	out, stderr, code := h.run("calendar", "free", "--days", "28", "--json")
	if code != 0 {
		t.Fatalf("calendar free: exit %d: %s", code, stderr)
	}
	var slots []struct{ Start, End time.Time }
	if err := json.Unmarshal([]byte(out), &slots); err != nil {
		t.Fatalf("calendar free --json: %v\n%s", err, out)
	}
	free := func(at time.Time) bool {
		for _, s := range slots {
			if !at.Before(s.Start) && !at.Add(time.Hour).After(s.End) {
				return true
			}
		}
		return false
	}
	overlaps := func(at time.Time) bool {
		for _, s := range slots {
			if s.Start.Before(at.Add(time.Hour)) && at.Before(s.End) {
				return true
			}
		}
		return false
	}
	for name, c := range map[string]struct {
		at   time.Time
		free bool
	}{
		"first occurrence": {occ(0), false}, "cancelled occurrence": {occ(1), true}, "moved occurrence's old time": {occ(2), true},
		"moved occurrence's new time": {moved, false}, "occurrence the spoofed CANCEL named": {occ(3), false},
	} {
		if c.free && !free(c.at) || !c.free && overlaps(c.at) {
			t.Errorf("%s %s: free %v, want %v (slots %s)", name, c.at.Format(time.RFC3339), !c.free, c.free, out)
		}
	}

	show, _, _ := h.run("queue", "show", queueIDBySubject(t, h, "Cancelled: Weekly sync @ week 2"))
	want := "cancels the occurrence on " + occ(1).Format("Mon 2 January 2006 15:04 MST") + " of 'Weekly sync': done on your calendar"
	if !strings.Contains(show, want) {
		t.Errorf("queue show of the CANCEL lacks %q:\n%s", want, show)
	}
	show, _, _ = h.run("queue", "show", queueIDBySubject(t, h, "Updated: Weekly sync @ week 3"))
	if !strings.Contains(show, "moves the occurrence on "+occ(2).Format("Mon 2 January 2006 15:04 MST")) || !strings.Contains(show, "done on your calendar") ||
		!strings.Contains(show, "recurring one occurrence of a series (RECURRENCE-ID "+local(occ(2))+")") {
		t.Errorf("queue show of the move:\n%s", show)
	}
	show, _, _ = h.run("queue", "show", queueIDBySubject(t, h, "Cancelled spoofed @ week 4"))
	if !strings.Contains(show, "not applied") || !strings.Contains(show, "not authenticated") {
		t.Errorf("queue show of the spoofed CANCEL:\n%s", show)
	}
	js, _, _ := h.run("queue", "show", "--json", queueIDBySubject(t, h, "Cancelled: Weekly sync @ week 2"))
	if !strings.Contains(js, `"occurrences"`) || !strings.Contains(js, `"kind": "cancelled"`) {
		t.Errorf("queue show --json lacks the occurrence:\n%s", js)
	}

	// The item that wrote the series still holds its current version, so
	// Bob's CANCEL of the whole series removes it (DELETE with If-Match).
	h.deliver(occurrenceMail("Cancelled: Weekly sync", "CANCEL", uid, 2, true, "STATUS:CANCELLED\n"))
	h.watchOnce(t)
	if code, body := do("GET", event); code != http.StatusNotFound {
		t.Errorf("the series CANCEL left the series: %d\n%s", code, body)
	}
}
