package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-ical"
)

// TestScheduleEventRadicaleE2E: a scheduling draft that picks one free
// slot waits for the owner; `queue approve` sends it and then PUTs one
// tentative event (the slot, slot_length long, Bob as ATTENDEE) on a real
// Radicale calendar ([accounts.calendar] write = true). Before the
// approval the calendar holds no event of mailagent's. It needs the e2e
// stack (source DIR/env, which sets MAILAGENT_E2E_CALDAV_URL when
// radicale is installed); else it skips.
func TestScheduleEventRadicaleE2E(t *testing.T) {
	base := os.Getenv("MAILAGENT_E2E_CALDAV_URL")
	if base == "" {
		t.Skip("no Radicale: run scripts/e2e-stack.sh start DIR (with the radicale package) and source DIR/env")
	}
	user, pass := os.Getenv("MAILAGENT_E2E_CALDAV_USER"), os.Getenv("MAILAGENT_E2E_CALDAV_PASSWORD")
	calPath := fmt.Sprintf("%s/sched-%d/", user, time.Now().UnixNano())
	calURL := base + calPath
	do := func(method, url, body string, hdr map[string]string, want ...int) []byte {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.SetBasicAuth(user, pass)
		for k, v := range hdr {
			req.Header.Set(k, v)
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
	ours := regexp.MustCompile(`mailagent-[0-9a-f]+\.ics`)
	listOurs := func() []string {
		b := do("PROPFIND", calURL, "", map[string]string{"Depth": "1"}, http.StatusMultiStatus)
		return ours.FindAllString(string(b), -1)
	}
	do("MKCALENDAR", calURL, "", nil, http.StatusCreated)
	t.Cleanup(func() { do("DELETE", calURL, "", nil, http.StatusOK, http.StatusNoContent) })

	var sawSlots bool
	h := newHarness(t, schedulingModel(&sawSlots), "[policy]\nmode = \"review\"\n")
	t.Setenv("MA_TEST_CALDAV_PASS", pass)
	cfg, err := os.ReadFile(h.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	cal := fmt.Sprintf("\n[accounts.calendar]\nurl = %q\nusername = %q\npassword_env = \"MA_TEST_CALDAV_PASS\"\nwrite = true\n", calURL, user)
	if err := os.WriteFile(h.cfgPath, append(cfg, []byte(cal+schedulingTOML)...), 0o600); err != nil {
		t.Fatal(err)
	}
	h.deliver(rawMail("Bob <bob@example.org>", "Re: Project sync\x1b[31m", "When are you free? Please pick a slot."))
	h.watchOnce(t)
	if !sawSlots {
		t.Fatal("the drafter saw no free slots")
	}
	if n := len(h.smtp.Messages()); n != 0 {
		t.Fatalf("%d messages sent before approval", n)
	}
	if got := listOurs(); len(got) != 0 {
		t.Fatalf("events before approval: %v", got)
	}
	id := queueIDBySubject(t, h, "Re: Project sync\x1b[31m")
	if _, stderr, code := h.run("queue", "approve", "--yes", id); code != 0 {
		t.Fatalf("approve: exit %d: %s", code, stderr)
	}
	msgs := h.smtp.Messages()
	if len(msgs) != 1 {
		t.Fatalf("%d messages sent, want the reply", len(msgs))
	}
	m := regexp.MustCompile(`How about \w{3} (\d\d \w{3} \d{4}) at (\d\d:\d\d)\?`).FindSubmatch(msgs[0].Data)
	if m == nil {
		t.Fatalf("the reply names no slot:\n%s", msgs[0].Data)
	}
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Skip(err)
	}
	start, err := time.ParseInLocation("02 Jan 2006 15:04", string(m[1])+" "+string(m[2]), berlin)
	if err != nil {
		t.Fatal(err)
	}
	got := listOurs()
	if len(got) == 0 {
		t.Fatal("no event on Radicale after the approved reply was sent")
	}
	stored := do("GET", calURL+got[0], "", nil, http.StatusOK)
	c, err := ical.NewDecoder(bytes.NewReader(stored)).Decode()
	if err != nil {
		t.Fatalf("stored event: %v\n%s", err, stored)
	}
	evs := c.Events()
	if len(evs) != 1 {
		t.Fatalf("%d events stored, want 1:\n%s", len(evs), stored)
	}
	ev := evs[0]
	st, err1 := ev.DateTimeStart(time.UTC)
	en, err2 := ev.DateTimeEnd(time.UTC)
	atts := ev.Props.Values(ical.PropAttendee)
	if err1 != nil || err2 != nil || !st.Equal(start) || !en.Equal(start.Add(30*time.Minute)) ||
		ev.Props.Get(ical.PropStatus).Value != "TENTATIVE" || len(atts) != 1 || atts[0].Value != "mailto:bob@example.org" ||
		ev.Props.Get(ical.PropSummary).Value != "Project sync[31m" {
		t.Errorf("stored event wrong (want %v, 30 min, TENTATIVE, bob):\n%s", start, stored)
	}
	// The free slots now count the tentative meeting as busy.
	out, _, _ := h.run("calendar", "free", "--days", "14", "--json")
	if strings.Contains(out, `"start":"`+start.Format(time.RFC3339)) {
		t.Errorf("a free slot still starts at the confirmed meeting: %s", out)
	}
}
