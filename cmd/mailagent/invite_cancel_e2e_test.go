package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mailagent/mailagent/internal/calendar"
	"github.com/mailagent/mailagent/store"
)

// cancelMail is the organizer's METHOD:CANCEL for uid; authenticated
// says whether the owner's server vouches for its From.
func cancelMail(subject, uid, organizer string, seq int, start time.Time, authenticated bool) string {
	ics := "BEGIN:VCALENDAR\nPRODID:-//Google Inc//Google Calendar 70.9054//EN\nVERSION:2.0\nMETHOD:CANCEL\nBEGIN:VEVENT\n" +
		"UID:" + uid + "\nDTSTAMP:20261121T090000Z\n" + fmt.Sprintf("SEQUENCE:%d\n", seq) + "STATUS:CANCELLED\nSUMMARY:" + subject + "\n" +
		"ORGANIZER;CN=Bob:mailto:" + organizer + "\nATTENDEE;CN=Ada:mailto:ada@example.com\n" +
		"DTSTART:" + start.UTC().Format("20060102T150405Z") + "\nDTEND:" + start.Add(time.Hour).UTC().Format("20060102T150405Z") + "\n" +
		"END:VEVENT\nEND:VCALENDAR\n"
	body := "--alt\nContent-Type: text/plain; charset=utf-8\n\nThis event has been cancelled.\n--alt\n" +
		"Content-Type: text/calendar; charset=utf-8; method=CANCEL\n\n" + ics + "--alt--"
	hdr := []string{"MIME-Version: 1.0", "Content-Type: multipart/alternative; boundary=alt"}
	if authenticated {
		return rawMail("Bob <"+organizer+">", subject, body, hdr...)
	}
	return unauthenticatedMail("Bob <"+organizer+">", subject, body, hdr...)
}

// TestInvitationCancelRadicaleE2E: through the binary and a real Radicale
// ([accounts.calendar] write = true), an invitation the owner accepted is
// on the calendar; a CANCEL with a spoofed From or an older SEQUENCE
// leaves it there; the organizer's authenticated CANCEL removes it, and
// `queue show` says so on both items. An event another client changed
// after mailagent wrote it is not removed (Radicale answers 412) and the
// owner is told. It needs the e2e stack (source DIR/env, which sets
// MAILAGENT_E2E_CALDAV_URL when radicale is installed); else it skips.
func TestInvitationCancelRadicaleE2E(t *testing.T) {
	base := os.Getenv("MAILAGENT_E2E_CALDAV_URL")
	if base == "" {
		t.Skip("no Radicale: run scripts/e2e-stack.sh start DIR (with the radicale package) and source DIR/env")
	}
	user, pass := os.Getenv("MAILAGENT_E2E_CALDAV_USER"), os.Getenv("MAILAGENT_E2E_CALDAV_PASSWORD")
	calURL := fmt.Sprintf("%s%s/cancel-%d/", base, user, time.Now().UnixNano())
	do := func(method, url, body string) (int, string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.SetBasicAuth(user, pass)
		if body != "" {
			req.Header.Set("Content-Type", "text/calendar; charset=utf-8")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, url, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := do("MKCALENDAR", calURL, ""); code != http.StatusCreated {
		t.Fatalf("MKCALENDAR: %d", code)
	}
	t.Cleanup(func() { do("DELETE", calURL, "") })
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
	start := time.Now().UTC().Truncate(time.Hour).AddDate(0, 0, 4)
	accept := func(subject, uid string) string {
		t.Helper()
		h.deliver(inviteMail(subject, "Please come.", uid, "bob@example.org", start)) // SEQUENCE:3
		h.watchOnce(t)
		id := queueIDBySubject(t, h, subject)
		if _, stderr, code := h.run("queue", "rsvp", id, "accept"); code != 0 || !strings.Contains(stderr, "calendar: stored as") {
			t.Fatalf("rsvp: exit %d: %s", code, stderr)
		}
		return id
	}
	const uid = "e2e-cancel-1@example.org"
	id := accept("Offsite", uid)
	event := calURL + calendar.ResourceName(uid)
	if code, _ := do("GET", event, ""); code != http.StatusOK {
		t.Fatalf("the accepted event is not on Radicale: %d", code)
	}

	attacks := []struct {
		subject       string
		seq           int
		authenticated bool
	}{
		{"Cancelled spoofed", 3, false},
		{"Cancelled stale", 2, true},
	}
	tried, through := 0, 0
	for _, a := range attacks {
		tried++
		h.deliver(cancelMail(a.subject, uid, "bob@example.org", a.seq, start, a.authenticated))
		h.watchOnce(t)
		if code, _ := do("GET", event, ""); code != http.StatusOK {
			through++
			t.Errorf("%s removed the event: %d", a.subject, code)
			break // the event is gone: later attacks would prove nothing
		}
	}
	t.Logf("CANCEL attacks on Radicale: %d tried, %d got through", tried, through)
	if through > 0 {
		t.FailNow()
	}
	out, _, _ := h.run("queue", "show", queueIDBySubject(t, h, "Cancelled spoofed"))
	if !strings.Contains(out, "applied: not applied") || !strings.Contains(out, "not authenticated") {
		t.Errorf("spoofed CANCEL:\n%s", out)
	}

	h.deliver(cancelMail("Cancelled: Offsite", uid, "bob@example.org", 3, start, true))
	h.watchOnce(t)
	if code, _ := do("GET", event, ""); code != http.StatusNotFound {
		t.Fatalf("the organizer's CANCEL left the event: %d", code)
	}
	out, _, _ = h.run("queue", "show", queueIDBySubject(t, h, "Cancelled: Offsite"))
	if !strings.Contains(out, "applied: "+id+": the event mailagent wrote was removed from your calendar") {
		t.Errorf("CANCEL item:\n%s", out)
	}
	out, _, _ = h.run("explain", "cancelled:-offsite@test.example")
	if !strings.Contains(out, "invitation") || !strings.Contains(out, "removed from your calendar") {
		t.Errorf("explain of the CANCEL does not show what it did:\n%s", out)
	}
	out, _, _ = h.run("queue", "show", id)
	if !strings.Contains(out, "cancelled: cancelled by the organizer") {
		t.Errorf("answered item:\n%s", out)
	}

	// Another client edits an accepted event: the CANCEL leaves the edit.
	const uid2 = "e2e-cancel-2@example.org"
	accept("Workshop", uid2)
	event2 := calURL + calendar.ResourceName(uid2)
	edited := vcal("BEGIN:VEVENT\nUID:" + uid2 + "\nDTSTAMP:20260101T000000Z\nDTSTART:" + start.Format("20060102T150405Z") +
		"\nDTEND:" + start.Add(2*time.Hour).Format("20060102T150405Z") + "\nSUMMARY:Workshop (my notes)\nEND:VEVENT")
	if code, _ := do("PUT", event2, edited); code/100 != 2 {
		t.Fatalf("the other client's PUT: %d", code)
	}
	h.deliver(cancelMail("Cancelled: Workshop", uid2, "bob@example.org", 3, start, true))
	h.watchOnce(t)
	if code, body := do("GET", event2, ""); code != http.StatusOK || !strings.Contains(body, "my notes") {
		t.Fatalf("the edited event was removed or changed: %d\n%s", code, body)
	}
	out, _, _ = h.run("queue", "show", queueIDBySubject(t, h, "Cancelled: Workshop"))
	if !strings.Contains(out, "changed by another client") || !strings.Contains(out, "remove it yourself") {
		t.Errorf("CANCEL of an edited event:\n%s", out)
	}

	// Positive control: with the identity layer off
	// (store.SwitchOffIdentityForTest), the same spoofed CANCEL removes an
	// accepted event from Radicale. (The stale one meets the SEQUENCE
	// rule, which has no switch.)
	const uid3 = "e2e-cancel-3@example.org"
	accept("Retreat", uid3)
	event3 := calURL + calendar.ResourceName(uid3)
	func() {
		defer store.SwitchOffIdentityForTest()()
		h.deliver(cancelMail("Cancelled spoofed retreat", uid3, "bob@example.org", 3, start, false))
		h.watchOnce(t)
	}()
	if code, _ := do("GET", event3, ""); code != http.StatusNotFound {
		t.Errorf("positive control: with the identity layer off the spoofed CANCEL left the event (%d): it does not test the identity layer", code)
	}
}
