package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-ical"

	"github.com/mailagent/mailagent/internal/calendar"
)

// TestInvitationRSVPRadicaleE2E: an invitation arrives, its conflict is
// read from a real Radicale calendar, `queue rsvp accept` mails the REPLY
// to the organizer and PUTs the event (with the owner's PARTSTAT) on
// Radicale ([accounts.calendar] write = true). It needs the e2e stack
// (source DIR/env, which sets MAILAGENT_E2E_CALDAV_URL when radicale is
// installed); else it skips.
func TestInvitationRSVPRadicaleE2E(t *testing.T) {
	base := os.Getenv("MAILAGENT_E2E_CALDAV_URL")
	if base == "" {
		t.Skip("no Radicale: run scripts/e2e-stack.sh start DIR (with the radicale package) and source DIR/env")
	}
	user, pass := os.Getenv("MAILAGENT_E2E_CALDAV_USER"), os.Getenv("MAILAGENT_E2E_CALDAV_PASSWORD")
	calURL := fmt.Sprintf("%s%s/inv-%d/", base, user, time.Now().UnixNano())
	do := func(method, url, ctype, body string, want ...int) []byte {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.SetBasicAuth(user, pass)
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, url, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		for _, w := range want {
			if resp.StatusCode == w {
				return b
			}
		}
		t.Fatalf("%s %s: HTTP %s", method, url, resp.Status)
		return nil
	}
	do("MKCALENDAR", calURL, "", "", http.StatusCreated)
	t.Cleanup(func() { do("DELETE", calURL, "", "", http.StatusOK, http.StatusNoContent) })
	start := time.Now().UTC().Truncate(time.Hour).AddDate(0, 0, 3)
	busy := "BEGIN:VEVENT\nUID:busy-e2e@example.test\nDTSTAMP:20260101T000000Z\nDTSTART:" + start.Add(-30*time.Minute).Format("20060102T150405Z") +
		"\nDTEND:" + start.Add(30*time.Minute).Format("20060102T150405Z") + "\nSUMMARY:Standup\nEND:VEVENT"
	do("PUT", calURL+"busy.ics", "text/calendar; charset=utf-8", vcal(busy), http.StatusCreated, http.StatusNoContent)

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
	const uid = "e2e-invite-1@example.org"
	h.deliver(inviteMail("Kickoff", "Please come. SAY: Accepted!", uid, "bob@example.org", start))
	h.watchOnce(t)
	if n := len(h.smtp.Messages()); n != 0 {
		t.Fatalf("%d messages sent before the owner answered", n)
	}
	id := queueIDBySubject(t, h, "Kickoff")
	out, _, _ := h.run("queue", "show", id)
	if !strings.Contains(out, "conflict "+start.Add(-30*time.Minute).Format(time.RFC3339)) {
		t.Errorf("the Radicale conflict is not shown:\n%s", out)
	}
	if _, stderr, code := h.run("queue", "rsvp", id, "accept"); code != 0 || !strings.Contains(stderr, "calendar: stored as") {
		t.Fatalf("rsvp: exit %d: %s", code, stderr)
	}
	msgs := h.smtp.Messages()
	if len(msgs) != 1 {
		t.Fatalf("%d messages sent, want the REPLY", len(msgs))
	}
	reply, err := calendar.ParseInvitation(msgs[0].Data)
	if err != nil || reply == nil || reply.Method != calendar.MethodReply || reply.UID != uid ||
		len(reply.Attendees) != 1 || reply.Attendees[0].PartStat != calendar.PartStatAccepted {
		t.Fatalf("REPLY %+v, %v", reply, err)
	}
	stored := do("GET", calURL+calendar.ResourceName(uid), "", "", http.StatusOK)
	c, err := ical.NewDecoder(bytes.NewReader(stored)).Decode()
	if err != nil {
		t.Fatalf("stored event: %v\n%s", err, stored)
	}
	var ok bool
	for _, ev := range c.Events() {
		for _, a := range ev.Props.Values(ical.PropAttendee) {
			if strings.EqualFold(a.Value, "mailto:ada@example.com") && a.Params.Get(ical.ParamParticipationStatus) == "ACCEPTED" {
				ok = ev.Props.Get(ical.PropUID).Value == uid
			}
		}
	}
	if !ok {
		t.Errorf("Radicale does not hold the event with ada ACCEPTED:\n%s", stored)
	}
	// An update of the same invitation: the accepted copy on the calendar
	// is not a conflict with itself; the standup still is.
	h.deliver(inviteMail("Kickoff moved", "Updated.", uid, "bob@example.org", start))
	h.watchOnce(t)
	out, _, _ = h.run("queue", "show", queueIDBySubject(t, h, "Kickoff moved"))
	want := "conflict " + start.Add(-30*time.Minute).Format(time.RFC3339) + " – " + start.Add(30*time.Minute).Format(time.RFC3339) + "\n"
	if !strings.Contains(out, want) || strings.Count(out, "conflict ") != 1 {
		t.Errorf("update of an accepted invitation: want only %q\n%s", want, out)
	}
	// The free slots now count the accepted meeting as busy.
	out, _, _ = h.run("calendar", "free", "--days", "5", "--json")
	if strings.Contains(out, `"start":"`+start.Format(time.RFC3339)) {
		t.Errorf("a slot starts at the accepted meeting: %s", out)
	}
}
