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

// uidInviteMail is an invitation with uid from from (authenticated by the
// owner's server) naming organizer: what a stranger sends to reuse the UID
// of a meeting the owner accepted from someone else.
func uidInviteMail(subject, uid, from, organizer string, seq int, start time.Time) string {
	ics := "BEGIN:VCALENDAR\nPRODID:-//evil//EN\nVERSION:2.0\nMETHOD:REQUEST\nBEGIN:VEVENT\n" +
		"UID:" + uid + "\nDTSTAMP:20261120T090000Z\n" + fmt.Sprintf("SEQUENCE:%d\n", seq) + "SUMMARY:" + subject + "\n" +
		"ORGANIZER:mailto:" + organizer + "\nATTENDEE;PARTSTAT=NEEDS-ACTION;CN=Ada:mailto:ada@example.com\n" +
		"DTSTART:" + start.Add(2*time.Hour).UTC().Format("20060102T150405Z") + "\nDTEND:" + start.Add(3*time.Hour).UTC().Format("20060102T150405Z") + "\n" +
		"END:VEVENT\nEND:VCALENDAR\n"
	return rawMail(from, subject, "--alt\nContent-Type: text/plain; charset=utf-8\n\nJoin me.\n--alt\n"+
		"Content-Type: text/calendar; charset=utf-8; method=REQUEST\n\n"+ics+"--alt--",
		"MIME-Version: 1.0", "Content-Type: multipart/alternative; boundary=alt")
}

// TestInvitationUIDCollisionRadicaleE2E is the calendar class of issue 25
// through the binary and a real Radicale ([accounts.calendar] write =
// true), the red team's reproduction: the owner accepts Bob's meeting
// (UID X, on Radicale); Mallory, authenticated, sends an invitation with
// UID X; the owner declines hers; Bob's event on Radicale is unchanged
// (same ETag, same data), and the decline shows as a UID conflict in
// `queue show`, its --json and a notice item. Mallory's authenticated
// CANCEL of UID X then leaves Bob's event too. The positive control runs the same
// decline with the identity layer switched off: Bob's event is
// overwritten. It needs the e2e stack (source DIR/env); else it skips.
func TestInvitationUIDCollisionRadicaleE2E(t *testing.T) {
	base := os.Getenv("MAILAGENT_E2E_CALDAV_URL")
	if base == "" {
		t.Skip("no Radicale: run scripts/e2e-stack.sh start DIR (with the radicale package) and source DIR/env")
	}
	user, pass := os.Getenv("MAILAGENT_E2E_CALDAV_USER"), os.Getenv("MAILAGENT_E2E_CALDAV_PASSWORD")
	do := func(method, url string) (int, string, string) {
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
		return resp.StatusCode, resp.Header.Get("ETag"), string(b)
	}
	// scenario runs the reproduction on a calendar of its own and returns
	// whether Bob's event was left exactly as written.
	type outcome struct {
		h                 *harness
		mallorysID, uid   string
		event, etag, data string
		start             time.Time
		untouched         bool
	}
	scenario := func(t *testing.T, name string) outcome {
		calURL := fmt.Sprintf("%s%s/uid-%s-%d/", base, user, name, time.Now().UnixNano())
		if code, _, _ := do("MKCALENDAR", calURL); code != http.StatusCreated {
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
		start := time.Now().UTC().Truncate(time.Hour).AddDate(0, 0, 5)
		uid := fmt.Sprintf("e2e-uid-%s-%d@example.org", name, time.Now().UnixNano())
		h.deliver(inviteMail("Board meeting", "Please come.", uid, "bob@example.org", start))
		h.watchOnce(t)
		bobsID := queueIDBySubject(t, h, "Board meeting")
		if _, stderr, code := h.run("queue", "rsvp", bobsID, "accept"); code != 0 || !strings.Contains(stderr, "calendar: stored as") {
			t.Fatalf("rsvp accept: exit %d: %s", code, stderr)
		}
		event := calURL + calendar.ResourceName(uid)
		code, etag, data := do("GET", event)
		if code != http.StatusOK || !strings.Contains(data, "ACCEPTED") {
			t.Fatalf("Bob's accepted event is not on Radicale: %d\n%s", code, data)
		}
		h.deliver(uidInviteMail("Drinks", uid, "Mallory <mallory@evil.example>", "mallory@evil.example", 0, start))
		h.watchOnce(t)
		mallorysID := queueIDBySubject(t, h, "Drinks")
		if _, stderr, code := h.run("queue", "rsvp", mallorysID, "decline"); code != 0 {
			t.Fatalf("rsvp decline: exit %d: %s", code, stderr)
		}
		c2, etag2, data2 := do("GET", event)
		return outcome{h: h, mallorysID: mallorysID, uid: uid, event: event, etag: etag, data: data, start: start,
			untouched: c2 == http.StatusOK && etag2 == etag && data2 == data}
	}

	t.Run("defended", func(t *testing.T) {
		o := scenario(t, "def")
		h, id := o.h, o.mallorysID
		tried, through := 0, 0
		tried++ // Mallory's invitation with Bob's UID, declined by the owner
		if !o.untouched {
			through++
			t.Errorf("declining Mallory's invitation changed Bob's event on Radicale")
		}
		out, _, _ := h.run("queue", "show", id)
		if !strings.Contains(out, store.InvitationUIDConflict+": another organizer's invitation with the same UID") {
			t.Errorf("queue show of the declined invitation does not show the conflict:\n%s", out)
		}
		js, _, _ := h.run("queue", "show", id, "--json")
		if !strings.Contains(js, `"status":"`+store.InvitationUIDConflict+`"`) && !strings.Contains(js, `"status": "`+store.InvitationUIDConflict+`"`) {
			t.Errorf("queue show --json lacks the uid_conflict status:\n%s", js)
		}
		if out, _, code := h.run("queue", "show", id+"_calendar", "--json"); code != 0 || !strings.Contains(out, "another organizer's invitation") {
			t.Errorf("no conflict notice (exit %d):\n%s", code, out)
		}
		// Mallory cancels "her" meeting with the same UID.
		tried++
		cancel := strings.Replace(cancelMail("Cancelled: Drinks", o.uid, "mallory@evil.example", 1, o.start, true),
			"From: Bob <mallory@evil.example>", "From: Mallory <mallory@evil.example>", 1)
		h.deliver(cancel)
		h.watchOnce(t)
		if code, etag, data := do("GET", o.event); code != http.StatusOK || etag != o.etag || data != o.data {
			through++
			t.Errorf("Mallory's CANCEL changed Bob's event on Radicale: %d %s", code, etag)
		}
		t.Logf("calendar UID e2e attacks: %d tried, %d got through", tried, through)
		if through != 0 {
			t.Fatalf("%d of %d attacks got through", through, tried)
		}
	})

	t.Run("identity off", func(t *testing.T) {
		restore := store.SwitchOffIdentityForTest()
		defer restore()
		if o := scenario(t, "off"); o.untouched {
			t.Fatal("positive control: with the identity layer off, declining Mallory's invitation left Bob's event as it was")
		}
	})
}
