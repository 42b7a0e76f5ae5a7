package calendar

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-ical"
)

// hostileICS wraps an event body in a REQUEST.
func hostileICS(event string) []byte {
	s := "BEGIN:VCALENDAR\nVERSION:2.0\nPRODID:-//evil//EN\nMETHOD:REQUEST\nBEGIN:VEVENT\nUID:evil-1\nDTSTAMP:20261120T090000Z\n" +
		"DTSTART:20261201T100000Z\nDTEND:20261201T110000Z\nORGANIZER:mailto:mallory@example.org\n" +
		"ATTENDEE;PARTSTAT=NEEDS-ACTION:mailto:ada@example.com\n" + event + "END:VEVENT\nEND:VCALENDAR\n"
	return []byte(strings.ReplaceAll(s, "\n", "\r\n"))
}

// TestInvitationHostile counts attacks through the invitation's fields:
// terminal escapes and CRLF must not reach the display or the REPLY, the
// REPLY must carry no text of the attacker's but the cleaned summary,
// and a recurrence too dense to expand is an error, never "no conflicts".
func TestInvitationHostile(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 23, 17, 0, 0, 0, time.UTC)
	tried, through := 0, 0
	attack := func(name string, ok bool) {
		tried++
		if !ok {
			through++
			t.Errorf("attack got through: %s", name)
		}
	}
	for name, ev := range hostileFields {
		inv, err := ParseICS(hostileICS(ev), "")
		if err != nil {
			attack(name+" (parse)", true) // refused outright: nothing shown, nothing sent
			continue
		}
		attack(name+" (display)", noCtl(inv.Summary) && noCtl(inv.Description) && noCtl(inv.Location) &&
			len([]rune(inv.Summary)) <= maxSummary+1)
		reply, err := inv.Reply("ada@example.com", PartStatAccepted, now)
		if err != nil {
			attack(name+" (reply refused)", true)
			continue
		}
		cal, err := ical.NewDecoder(bytes.NewReader(reply)).Decode()
		if err != nil {
			attack(name+" (reply unreadable)", false)
			continue
		}
		var evs []*ical.Component
		for _, c := range cal.Children {
			if c.Name == ical.CompEvent {
				evs = append(evs, c)
			}
		}
		m := cal.Props.Get(ical.PropMethod)
		atts := []ical.Prop{}
		if len(evs) == 1 {
			atts = evs[0].Props.Values(ical.PropAttendee)
		}
		ok := len(evs) == 1 && m != nil && m.Value == MethodReply && len(atts) == 1 && atts[0].Value == "mailto:ada@example.com" &&
			evs[0].Props.Get(ical.PropDescription) == nil && evs[0].Props.Get(ical.PropLocation) == nil &&
			!bytes.ContainsAny(reply, "\x1b\x07\u009b\u202e") && noPropLine(reply, "BCC") && noPropLine(reply, "METHOD:CANCEL")
		attack(name+" (reply)", ok)
	}

	// An ORGANIZER that is not a plain mailto: address names no one.
	for _, org := range []string{"ORGANIZER:mailto:a@example.org,b@example.org", "ORGANIZER:http://evil.example/", "ORGANIZER:mailto:\"x\" <a@example.org>"} {
		s := strings.Replace(string(hostileICS("")), "ORGANIZER:mailto:mallory@example.org", org, 1)
		inv, err := ParseICS([]byte(s), "")
		attack("organizer "+org, err == nil && inv.Organizer == "")
	}

	// A huge RRULE: a second-by-second recurrence is refused when
	// conflicts are computed, in bounded time.
	inv, err := ParseICS(hostileICS("RRULE:FREQ=SECONDLY\n"), "")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = inv.Conflicts([]Interval{{inv.Start.Add(time.Hour), inv.Start.Add(2 * time.Hour)}})
	attack("FREQ=SECONDLY", err != nil && time.Since(start) < 10*time.Second)
	// A yearly rule with COUNT=1000000 is fine: few occurrences in the window.
	inv, err = ParseICS(hostileICS("RRULE:FREQ=YEARLY;COUNT=1000000\n"), "")
	if err == nil {
		_, err = inv.Conflicts(nil)
	}
	attack("COUNT=1000000 yearly", err == nil)

	// A calendar part larger than the cap is refused.
	big := hostileICS("DESCRIPTION:" + strings.Repeat("x", MaxICSBytes) + "\n")
	_, err = ParseICS(big, "")
	attack("oversized calendar", err != nil)

	t.Logf("invitation attacks: %d tried, %d got through", tried, through)
	if tried < 2*len(hostileFields) || through != 0 {
		t.Errorf("%d of %d invitation attacks got through (want 0 of at least %d)", through, tried, 2*len(hostileFields))
	}
}

// hostileFields are the event lines of TestInvitationHostile's field
// attacks, by name; displayControls are those the display cleaning
// (clean) alone stops.
var (
	hostileFields = map[string]string{
		"escape in SUMMARY":        "SUMMARY:\x1b]52;c;cGF5bG9hZA==\x07Lunch\x1b[2J\n",
		"escaped newline SUMMARY":  "SUMMARY:Lunch\\nBCC:victim@example.net\\r\\nATTENDEE:mailto:x@evil.example\n",
		"bidi in SUMMARY":          "SUMMARY:\u202eevil\u202c ok\n",
		"CRLF in DESCRIPTION":      "DESCRIPTION:line\\nMETHOD:CANCEL\\nEND:VEVENT\n",
		"C1 CSI in LOCATION":       "LOCATION:\u009b31mred\n",
		"quote in CN":              "ATTENDEE;CN=\"x\\\"y\";PARTSTAT=ACCEPTED:mailto:carol@example.net\n",
		"oversized SUMMARY":        "SUMMARY:" + strings.Repeat("A", 5000) + "\n",
		"organizer CN with escape": "X-FOO:bar\n",
	}
	displayControls = []string{"escape in SUMMARY", "bidi in SUMMARY", "CRLF in DESCRIPTION", "C1 CSI in LOCATION", "oversized SUMMARY"}
)

// noCtl reports whether s is safe to display: no escape, CR, LF, BEL,
// bidi override, NUL or C1 CSI.
func noCtl(s string) bool {
	return !strings.ContainsAny(s, "\x1b\r\n\x07\u202e\x00\u009b")
}

// TestInvitationHostileLandsWithoutClean is the positive control of
// TestInvitationHostile's display attacks: with the text cleaning off
// (textCleanOff), each hostile field reaches the invitation's display
// text with its control characters, or longer than the cap. Not
// parallel: the switch is global.
func TestInvitationHostileLandsWithoutClean(t *testing.T) {
	textCleanOff.Store(true)
	defer textCleanOff.Store(false)
	tried, landed := 0, 0
	for _, name := range displayControls {
		tried++
		inv, err := ParseICS(hostileICS(hostileFields[name]), "")
		if err != nil {
			t.Errorf("%s: refused with the cleaning off (%v): the attack does not test the cleaning", name, err)
			continue
		}
		if !(noCtl(inv.Summary) && noCtl(inv.Description) && noCtl(inv.Location) && len([]rune(inv.Summary)) <= maxSummary+1) {
			landed++
		} else {
			t.Errorf("%s: display text clean with the cleaning off: the attack does not test it", name)
		}
	}
	t.Logf("display attacks without the cleaning: %d tried, %d landed", tried, landed)
	if tried != len(displayControls) || landed != tried {
		t.Errorf("positive control: %d of %d landed, want all %d", landed, tried, len(displayControls))
	}
}

// noPropLine reports whether no content line of data starts with word:
// text the attacker wrote stayed inside a value.
func noPropLine(data []byte, word string) bool {
	for _, line := range strings.Split(string(data), "\r\n") {
		if strings.HasPrefix(line, word) {
			return false
		}
	}
	return true
}

// TestICSFeedMalformedParamIsAnError: go-ical panics on a stray character
// after a quoted parameter; a feed holding one is an error, not a crash.
func TestICSFeedMalformedParamIsAnError(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := dir + "/feed.ics"
	feed := "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nBEGIN:VEVENT\r\nUID:x\r\nATTENDEE;CN=\"a\"b:mailto:a@example.org\r\n" +
		"DTSTART:20261201T100000Z\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
	if err := os.WriteFile(path, []byte(feed), 0o600); err != nil {
		t.Fatal(err)
	}
	s := &Source{URL: path, ICS: true}
	_, err := s.Busy(context.Background(), Interval{time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)}, time.UTC)
	if err == nil || !strings.Contains(err.Error(), "malformed") {
		t.Fatalf("feed with a malformed parameter: %v", err)
	}
}
