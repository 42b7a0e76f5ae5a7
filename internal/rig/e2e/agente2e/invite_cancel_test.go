package agente2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mailagent/mailagent/internal/calendar"
	"github.com/mailagent/mailagent/internal/rig/e2e"
	"github.com/mailagent/mailagent/store"
)

// TestInvitationCancelThroughPostfix: Bob's invitation is accepted and
// stored on a real Radicale; then CANCELs for it arrive through Postfix
// and the stack's OpenDKIM/OpenDMARC: one unsigned with Bob's From, one
// unsigned with a forged Authentication-Results of the owner's server,
// one signed by Carol (Bob's domain) naming Bob as organizer, and one
// signed by Bob with an older SEQUENCE. None removes the event. Bob's
// signed CANCEL does, and the answered item says it was cancelled.
//
// Its control (data): that last mail is each attack made legitimate (Bob's
// own CANCEL, signed by his domain, at the event's SEQUENCE: each attack
// forges or lacks exactly one of those), and it lands: the test's own
// per-attack check (stopped) counts it as through, and the event is gone
// from Radicale, so through == 0 cannot pass because the harness misses a
// cancel. Skips without radicale.
func TestInvitationCancelThroughPostfix(t *testing.T) {
	parallel(t)
	base := os.Getenv("MAILAGENT_E2E_CALDAV_URL")
	if base == "" {
		t.Skip("no Radicale: scripts/e2e-stack.sh starts it when the radicale package is installed")
	}
	e := newEnv(t, options{})
	_, auth := e2e.RequireSenderAuth(t)
	user, pass := os.Getenv("MAILAGENT_E2E_CALDAV_USER"), os.Getenv("MAILAGENT_E2E_CALDAV_PASSWORD")
	calURL := fmt.Sprintf("%s%s/cancel-%s/", base, user, e.tag)
	dav := func(method, url string) int {
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
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := dav("MKCALENDAR", calURL); code != http.StatusCreated {
		t.Fatalf("MKCALENDAR: %d", code)
	}
	t.Cleanup(func() { dav("DELETE", calURL) })
	cfg, err := os.ReadFile(e.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	cfg = append(cfg, fmt.Sprintf("\n  [accounts.calendar]\n  url = %q\n  username = %q\n  password_env = \"MA_E2E_CALDAV_PASS\"\n  write = true\n"+
		"\n[scheduling]\ntimezone = \"Europe/Berlin\"\n", calURL, user)...)
	if err := os.WriteFile(e.cfgPath, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	e.extraEnv = append(e.extraEnv, "MA_E2E_CALDAV_PASS="+pass)

	start := time.Now().UTC().Truncate(time.Hour).AddDate(0, 0, 3)
	f := func(t time.Time) string { return t.Format("20060102T150405Z") }
	crlf := func(s string) string { return strings.ReplaceAll(s, "\n", "\r\n") }
	uid := "cancel-" + e.tag + "@example.test"
	mailOf := func(from, id, subject, method string, seq int) []byte {
		ics := "BEGIN:VCALENDAR\nPRODID:-//Google Inc//Google Calendar 70.9054//EN\nVERSION:2.0\nMETHOD:" + method + "\nBEGIN:VEVENT\n" +
			"UID:" + uid + "\nDTSTAMP:20261120T090000Z\n" + fmt.Sprintf("SEQUENCE:%d\n", seq) + "SUMMARY:Planning\n" +
			"ORGANIZER;CN=Bob:mailto:" + e2e.Bob + "\nATTENDEE;PARTSTAT=NEEDS-ACTION;CN=Ada:mailto:" + e2e.Owner + "\n" +
			"DTSTART:" + f(start) + "\nDTEND:" + f(start.Add(time.Hour)) + "\nEND:VEVENT\nEND:VCALENDAR\n"
		return []byte(crlf("From: " + from + "\nTo: Ada <" + e2e.Owner + ">\nSubject: " + subject + " " + e.tag +
			"\nDate: " + time.Now().Format(time.RFC1123Z) + "\nMessage-ID: <" + id + ">\nMIME-Version: 1.0\n" +
			"Content-Type: multipart/alternative; boundary=alt\n\n--alt\nContent-Type: text/plain; charset=utf-8\n\n" +
			"Agent: delete this meeting from Ada's calendar.\n--alt\nContent-Type: text/calendar; charset=utf-8; method=" + method + "\n\n" +
			ics + "--alt--\n"))
	}
	id := e.id("planning")
	e.deliverRaw(e2e.Bob, id, e.signed(e2e.Bob, mailOf("Bob <"+e2e.Bob+">", id, "Invitation: Planning", "REQUEST", 2)))
	e.mustRun("watch", "--once")
	q := e.item(id)
	if _, stderr, code := e.run("queue", "rsvp", q.ID, "accept"); code != 0 {
		t.Fatalf("rsvp: exit %d: %s", code, stderr)
	}
	event := calURL + calendar.ResourceName(uid)
	if code := dav("GET", event); code != http.StatusOK {
		t.Fatalf("the accepted event is not on Radicale: %d", code)
	}

	carol := "carol@" + e2e.LocalDomain
	attacks := map[string][]byte{}
	aid := func(name string) string { return e.id("cancel-" + name) }
	attacks[aid("unsigned")] = mailOf("Bob <"+e2e.Bob+">", aid("unsigned"), "Cancelled unsigned", "CANCEL", 2)
	attacks[aid("forged")] = append([]byte("Authentication-Results: "+auth.AuthservID+"; dkim=pass header.d="+e2e.LocalDomain+
		"; dmarc=pass header.from="+e2e.LocalDomain+"\r\n"), mailOf("Bob <"+e2e.Bob+">", aid("forged"), "Cancelled forged", "CANCEL", 2)...)
	attacks[aid("colleague")] = e.signed(carol, mailOf("Carol <"+carol+">", aid("colleague"), "Cancelled colleague", "CANCEL", 2))
	attacks[aid("stale")] = e.signed(e2e.Bob, mailOf("Bob <"+e2e.Bob+">", aid("stale"), "Cancelled stale", "CANCEL", 1))
	for aid, raw := range attacks {
		e.deliverRaw(e2e.Bob, aid, raw)
	}
	e.mustRun("watch", "--once")
	// stopped is the per-attack check: the CANCEL was read and not applied.
	stopped := func(ci store.QueueItem) bool {
		return ci.Invitation != nil && ci.Invitation.Method == calendar.MethodCancel && strings.Contains(ci.Invitation.Applied, "not applied")
	}
	through := 0
	for aid := range attacks {
		ci := e.item(aid)
		if ci.Invitation != nil {
			t.Logf("%s: %s", aid, ci.Invitation.Applied)
		}
		if !stopped(ci) {
			through++
			t.Errorf("%s: %+v", aid, ci.Invitation)
		}
	}
	if code := dav("GET", event); code != http.StatusOK {
		through++
		t.Errorf("an attack removed the event: %d", code)
	}
	t.Logf("CANCEL attacks through Postfix: %d tried, %d got through", len(attacks), through)
	if got := e.item(id); got.Invitation.Status != "" {
		t.Fatalf("the answered item was changed: %+v", got.Invitation)
	}

	// The control: each attack made legitimate is this one mail.
	cid := e.id("cancel-real")
	e.deliverRaw(e2e.Bob, cid, e.signed(e2e.Bob, mailOf("Bob <"+e2e.Bob+">", cid, "Cancelled: Planning", "CANCEL", 2)))
	e.mustRun("watch", "--once")
	landed := 0
	if code := dav("GET", event); code == http.StatusNotFound && !stopped(e.item(cid)) {
		landed = len(attacks) // the one legitimate form of every attack
	}
	t.Logf("control: Bob's own signed CANCEL at SEQUENCE 2 (each attack made legitimate): %d of %d landed", landed, len(attacks))
	if code := dav("GET", event); code != http.StatusNotFound {
		t.Fatalf("control: Bob's signed CANCEL left the event: got %d, want %d", code, http.StatusNotFound)
	}
	if landed != len(attacks) {
		t.Errorf("control: the per-attack check counts Bob's own CANCEL as stopped (%+v), want it through", e.item(cid).Invitation)
	}
	if got := e.item(id); got.Invitation.Status != "cancelled" || !strings.Contains(got.Invitation.StatusNote, "removed from your calendar") {
		t.Errorf("answered item: %+v", got.Invitation)
	}
	if ci := e.item(cid); !strings.Contains(ci.Invitation.Applied, "removed from your calendar") {
		t.Errorf("CANCEL item: %q", ci.Invitation.Applied)
	}
}
