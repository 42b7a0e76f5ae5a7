package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mailagent/mailagent/internal/cmdutil"
)

// The calendar both `calendar free` tests read, as separate objects (one
// per CalDAV resource; the ICS-file test concatenates them). "Now" is
// Thursday 26 March 2026 08:00 in Berlin; with min_notice 4h and --days 9
// the window is Thu 26 March 12:00 (+01:00) to Sat 4 April 00:00 (+02:00),
// across Berlin's change to summer time on Sunday 29 March.
var (
	calNow  = time.Date(2026, 3, 26, 7, 0, 0, 0, time.UTC) // 08:00 Berlin
	calDays = "9"
)

const vtzBerlin = `BEGIN:VTIMEZONE
TZID:Europe/Berlin
BEGIN:DAYLIGHT
TZOFFSETFROM:+0100
TZOFFSETTO:+0200
TZNAME:CEST
DTSTART:19700329T020000
RRULE:FREQ=YEARLY;BYMONTH=3;BYDAY=-1SU
END:DAYLIGHT
BEGIN:STANDARD
TZOFFSETFROM:+0200
TZOFFSETTO:+0100
TZNAME:CET
DTSTART:19701025T030000
RRULE:FREQ=YEARLY;BYMONTH=10;BYDAY=-1SU
END:STANDARD
END:VTIMEZONE`

const vtzNewYork = `BEGIN:VTIMEZONE
TZID:America/New_York
BEGIN:DAYLIGHT
TZOFFSETFROM:-0500
TZOFFSETTO:-0400
TZNAME:EDT
DTSTART:19700308T020000
RRULE:FREQ=YEARLY;BYMONTH=3;BYDAY=2SU
END:DAYLIGHT
BEGIN:STANDARD
TZOFFSETFROM:-0400
TZOFFSETTO:-0500
TZNAME:EST
DTSTART:19701101T020000
RRULE:FREQ=YEARLY;BYMONTH=11;BYDAY=1SU
END:STANDARD
END:VTIMEZONE`

// calObjects maps a resource name to its VCALENDAR body (CRLF added by
// vcal).
var calObjects = map[string]string{
	// Weekly Tuesday and Thursday 10:00–11:00 Berlin; Thursday 2 April
	// excluded; Thursday 26 March moved to 14:00–15:00. Tuesday 31 March
	// is after the DST change: 10:00 +02:00.
	"weekly.ics": vtzBerlin + `
BEGIN:VEVENT
UID:weekly-e2e@example.test
DTSTAMP:20260301T000000Z
DTSTART;TZID=Europe/Berlin:20260303T100000
DTEND;TZID=Europe/Berlin:20260303T110000
RRULE:FREQ=WEEKLY;BYDAY=TU,TH
EXDATE;TZID=Europe/Berlin:20260402T100000
SUMMARY:Team sync
END:VEVENT
BEGIN:VEVENT
UID:weekly-e2e@example.test
DTSTAMP:20260301T000000Z
RECURRENCE-ID;TZID=Europe/Berlin:20260326T100000
DTSTART;TZID=Europe/Berlin:20260326T140000
DTEND;TZID=Europe/Berlin:20260326T150000
SUMMARY:Team sync (moved)
END:VEVENT`,
	// 05:00–06:00 New York (EDT since 8 March) = 11:00–12:00 Berlin (CEST).
	"newyork.ics": vtzNewYork + `
BEGIN:VEVENT
UID:ny-e2e@example.test
DTSTAMP:20260301T000000Z
DTSTART;TZID=America/New_York:20260330T050000
DTEND;TZID=America/New_York:20260330T060000
SUMMARY:Call with New York
END:VEVENT`,
	// All of Friday 27 March.
	"allday.ics": `BEGIN:VEVENT
UID:allday-e2e@example.test
DTSTAMP:20260301T000000Z
DTSTART;VALUE=DATE:20260327
DTEND;VALUE=DATE:20260328
SUMMARY:Offsite
END:VEVENT`,
	// Transparent: free.
	"transparent.ics": vtzBerlin + `
BEGIN:VEVENT
UID:transp-e2e@example.test
DTSTAMP:20260301T000000Z
DTSTART;TZID=Europe/Berlin:20260401T090000
DTEND;TZID=Europe/Berlin:20260401T173000
TRANSP:TRANSPARENT
SUMMARY:Working from home
END:VEVENT`,
	// Cancelled: free.
	"cancelled.ics": `BEGIN:VEVENT
UID:cancel-e2e@example.test
DTSTAMP:20260301T000000Z
DTSTART:20260403T080000Z
DTEND:20260403T120000Z
STATUS:CANCELLED
SUMMARY:Called off
END:VEVENT`,
	// 13:00–14:00 UTC = 15:00–16:00 Berlin.
	"utc.ics": `BEGIN:VEVENT
UID:utc-e2e@example.test
DTSTAMP:20260301T000000Z
DTSTART:20260401T130000Z
DTEND:20260401T140000Z
SUMMARY:UTC meeting
END:VEVENT`,
}

// calWant is the hand-computed answer of `calendar free --days 9 --json`.
const calWant = `[
{"start":"2026-03-26T12:00:00+01:00","end":"2026-03-26T14:00:00+01:00"},
{"start":"2026-03-26T15:00:00+01:00","end":"2026-03-26T17:30:00+01:00"},
{"start":"2026-03-30T09:00:00+02:00","end":"2026-03-30T11:00:00+02:00"},
{"start":"2026-03-30T12:00:00+02:00","end":"2026-03-30T17:30:00+02:00"},
{"start":"2026-03-31T09:00:00+02:00","end":"2026-03-31T10:00:00+02:00"},
{"start":"2026-03-31T11:00:00+02:00","end":"2026-03-31T17:30:00+02:00"},
{"start":"2026-04-01T09:00:00+02:00","end":"2026-04-01T15:00:00+02:00"},
{"start":"2026-04-01T16:00:00+02:00","end":"2026-04-01T17:30:00+02:00"},
{"start":"2026-04-02T09:00:00+02:00","end":"2026-04-02T17:30:00+02:00"},
{"start":"2026-04-03T09:00:00+02:00","end":"2026-04-03T17:30:00+02:00"}
]`

// vcal wraps components in a VCALENDAR with CRLF line ends.
func vcal(body string) string {
	s := "BEGIN:VCALENDAR\nVERSION:2.0\nPRODID:-//mailagent//test//EN\n" + strings.TrimSpace(body) + "\nEND:VCALENDAR\n"
	return strings.ReplaceAll(s, "\n", "\r\n")
}

const schedulingTOML = `
[scheduling]
timezone = "Europe/Berlin"
working_hours = "09:00-17:30"
days = "mon-fri"
min_notice = "4h"
slot_length = "30m"
`

// calConfig writes a config whose one account reads calendar (the TOML
// lines of [accounts.calendar]).
func calConfig(t *testing.T, calendar string) string {
	t.Helper()
	dir := t.TempDir()
	cfg := fmt.Sprintf(`state_dir = %q
[llm]
api_key_env = "MA_TEST_CAL_NO_KEY"
[[accounts]]
name = "personal"
email = "ada@example.test"
  [accounts.imap]
  host = "127.0.0.1"
  security = "insecure"
  password_env = "MA_TEST_CAL_PASS"
  [accounts.smtp]
  host = "127.0.0.1"
  security = "insecure"
  [accounts.calendar]
%s
%s`, filepath.Join(dir, "state"), calendar, schedulingTOML)
	path := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// runAt runs the command line in process with the clock at now.
func runAt(t *testing.T, cfgPath string, now time.Time, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	f := newFactory(strings.NewReader(""), &out, &errb)
	f.Now = func() time.Time { return now }
	defer f.Close()
	root := newRootCmd(f)
	root.SetArgs(append([]string{"--config", cfgPath}, args...))
	root.SetIn(strings.NewReader(""))
	root.SetOut(&out)
	root.SetErr(&errb)
	code := cmdutil.Report(&errb, root.ExecuteContext(context.Background()))
	return out.String(), errb.String(), code
}

// compactJSON removes the whitespace between JSON tokens of a slot list.
func compactJSON(s string) string {
	return strings.NewReplacer("\n", "", " ", "").Replace(s)
}
