package demo

import (
	"fmt"
	"strings"
	"time"
)

// The demo account's scheduling preferences, as `mailagent demo` writes
// them into [scheduling]. They follow OwnerProfile: calls Tuesday to
// Thursday, 10:00–17:00. UTC keeps the demo the same on every machine
// (no time-zone database needed).
const (
	Timezone     = "UTC"
	WorkingHours = "10:00-17:00"
	WorkingDays  = "tue-thu"
	MinNotice    = "4h"
	SlotLength   = "30m"
)

// CalendarICS returns Ada's calendar as an iCalendar file, with busy
// events placed relative to now (in UTC): a daily lunch (a recurring
// event), a workshop tomorrow morning, a client call the day after, and a
// board meeting 14:00–16:00 on the coming Thursday (today, if today is
// one), so the "Thursday 3pm" Charles asks for is always taken. Every
// working day keeps free time (10:00–12:00 or 13:00–14:00 at least), so
// a slot at least SlotLength long always exists within the next week,
// whatever the weekday and time the demo runs.
func CalendarICS(now time.Time) []byte {
	now = now.UTC()
	today := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	at := func(days, hour, minute int) time.Time {
		return today.AddDate(0, 0, days).Add(time.Duration(hour)*time.Hour + time.Duration(minute)*time.Minute)
	}
	thursday := (int(time.Thursday) - int(today.Weekday()) + 7) % 7
	type event struct {
		uid, summary string
		start, end   time.Time
		rrule        string
	}
	events := []event{
		{"lunch", "Lunch", at(0, 12, 0), at(0, 13, 0), "FREQ=DAILY"},
		{"workshop", "Workshop preparation", at(1, 10, 0), at(1, 11, 30), ""},
		{"client-call", "Client call", at(2, 14, 30), at(2, 15, 30), ""},
		{"board", "Board meeting", at(thursday, 14, 0), at(thursday, 16, 0), ""},
	}
	const stamp = "20060102T150405Z"
	var b strings.Builder
	line := func(format string, args ...any) { fmt.Fprintf(&b, format+"\r\n", args...) }
	line("BEGIN:VCALENDAR")
	line("VERSION:2.0")
	line("PRODID:-//mailagent//demo calendar//EN")
	for _, e := range events {
		line("BEGIN:VEVENT")
		line("UID:%s-%s@demo.example", e.uid, today.Format("20060102"))
		line("DTSTAMP:%s", now.Format(stamp))
		line("DTSTART:%s", e.start.Format(stamp))
		line("DTEND:%s", e.end.Format(stamp))
		if e.rrule != "" {
			line("RRULE:%s", e.rrule)
		}
		line("SUMMARY:%s", e.summary)
		line("END:VEVENT")
	}
	line("END:VCALENDAR")
	return []byte(b.String())
}
