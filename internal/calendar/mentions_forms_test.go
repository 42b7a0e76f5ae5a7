package calendar

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// TestMentionsForms: the forms the reader reads resolve to the right day
// and minute (ref: Thursday 26 March 2026, Berlin); the forms it cannot
// pin down come back Unread, never dropped.
func TestMentionsForms(t *testing.T) {
	t.Parallel()
	tests := []struct {
		text   string
		want   []string // day/minute keys of the read mentions
		unread int
	}{
		{"half past ten on Tuesday", []string{"2026-03-31/630"}, 0},
		{"quarter to eleven tomorrow", []string{"2026-03-27/645"}, 0},
		{"ten o'clock on Tuesday", []string{"2026-03-31/600"}, 0},
		{"half past two on Monday", []string{"2026-03-30/870"}, 0}, // a working hour: 14:30
		{"27/03 at 10:00", []string{"2026-03-27/600"}, 0},
		{"03/27 at 10:00", []string{"2026-03-27/600"}, 0},
		{"the 27th at 10", []string{"2026-03-27/600"}, 0},
		{"on the 2nd", []string{"2026-04-02/-1"}, 0},
		{"Dienstag um 10 Uhr", []string{"2026-03-31/600"}, 0},
		{"am 31. März um 10.15 Uhr", []string{"2026-03-31/615"}, 0},
		{"Tuesday 10h15", []string{"2026-03-31/615"}, 0},
		{"mardi 31 mars à 10h15", []string{"2026-03-31/615"}, 0},
		{"demain à 10h", []string{"2026-03-27/600"}, 0},
		{"Tue 31 Mar 2026 09:00", []string{"2026-03-31/540"}, 0},
		{"31 March 2027 at 9:00", []string{"2027-03-31/540"}, 0},
		{"see you Tuesday at 10 as you said", []string{"2026-03-31/600"}, 0},
		{"Tuesday at 3", []string{"2026-03-31/900"}, 0},
		{"Tuesday 10–11am", []string{"2026-03-31/600-660"}, 0},
		{"Tuesday between 10 and 11", []string{"2026-03-31/600-660"}, 0},
		{"Tuesday from 9:00 to 10:00", []string{"2026-03-31/540-600"}, 0},
		{"free Tuesday until 17:30", []string{"2026-03-31/-1050"}, 0},
		{"Tuesday morning", []string{"2026-03-31/p0-720"}, 0},
		{"Tuesday? 10:00 would suit", []string{"2026-03-31/600"}, 0},
		{"the day after tomorrow at 10", []string{"2026-03-28/600"}, 0},
		{"Good morning Bob, thanks.", nil, 0},
		{"I have 2 and 3 items, open 24/7, in 5 minutes.", nil, 0},
		{"Version 2. Thanks, I will check.", nil, 0},
		{"10:00 works", []string{"/600"}, 0},
		{"Tuesday at ten", []string{"2026-03-31/600"}, 0},
		{"Tuesday @ 10", []string{"2026-03-31/600"}, 0},
		{"Tuesday 10:00 (Europe/Berlin)", []string{"2026-03-31/600"}, 0},
		{"Tuesday 10:00 CET", []string{"2026-03-31/600"}, 0},
		{"March 31st, 12 noon", []string{"2026-03-31/720"}, 0},
		// Not pinned down: Unread.
		{"next Tuesday at 9", []string{"/540"}, 1},
		{"Any time next week works for me.", nil, 2},
		{"03/04 at 10", []string{"/600"}, 1},
		{"el martes 31 de marzo a las 10", []string{"2026-03-31/-1"}, 1},
		{"halb elf am Dienstag", []string{"2026-03-31/-1"}, 1},
		{"martedì alle 10", []string{"2026-03-31/-1"}, 1},
		{"Mondays work", nil, 1},
		{"sometime in March", nil, 1},
		{"Wed 31 Mar at 9:00", []string{"2026-03-31/540", "2026-04-01/-1"}, 1},
		{"morgen um 10", nil, 2},
		{"Tuesday 11–10", []string{"2026-03-31/-1"}, 1},
		{"Tuesday 10 works", []string{"2026-03-31/-1"}, 1},
		{"10ish on Tuesday", []string{"2026-03-31/-1"}, 1},
		{"zehn Uhr am Dienstag", []string{"2026-03-31/-1"}, 1},
		{"half ten on Tuesday", []string{"2026-03-31/-1"}, 1},
		{"Tuesday 10:00 UTC", nil, 1},
		{"Tuesday 3pm EST", nil, 1},
		{"3 days from now", nil, 1},
		{"Tuesday 10-11 works", []string{"2026-03-31/-1"}, 1},
	}
	for _, tc := range tests {
		var got []string
		unread := 0
		for _, m := range Mentions(tc.text, mentionRef, berlin) {
			if m.Unread != "" {
				unread++
				continue
			}
			got = append(got, mentionKey(m))
		}
		slices.Sort(got)
		slices.Sort(tc.want)
		if !slices.Equal(got, tc.want) || unread != tc.unread {
			t.Errorf("%q: got %v and %d unread, want %v and %d", tc.text, got, unread, tc.want, tc.unread)
		}
	}
}

// TestCheckTimesSlotLength: an offered time must leave room for the whole
// meeting inside one free slot, and a slot's end is not free. Tuesday 31
// March is free 09:00–10:00 and 11:00–17:30 (busy 10:00–11:00).
func TestCheckTimesSlotLength(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		draft string
		ok    bool
	}{
		{"Tuesday at 10:00", false},           // the slot's end
		{"Tuesday at 9:45", false},            // 9:45–10:15 runs into the meeting
		{"Tuesday at 9:30", true},             // 9:30–10:00
		{"Tuesday at 17:00", true},            // 17:00–17:30
		{"Tuesday at 17:15", false},           // past working hours
		{"Tuesday 9:00–10:00", true},          // the whole slot
		{"Tuesday 9:30–10:30", false},         // into the meeting
		{"Tuesday until 10:00", true},         // 9:30–10:00
		{"Tuesday until 11:15", false},        // 10:45–11:15
		{"Tuesday afternoon", true},           // 12:00–17:30 is free
		{"Friday morning", false},             // busy all day
		{"Thursday 26 March at 13:45", false}, // 13:45–14:15: the slot ends at 14:00
	} {
		c := CheckTimes(tc.draft, "", offeredFixture, 30*time.Minute, mentionRef, berlin)
		if c.OK() != tc.ok || c.Mentions == 0 {
			t.Errorf("%q: got ok=%v (%+v), want %v", tc.draft, c.OK(), c, tc.ok)
		}
	}
}

// TestCheckTimesUnreadFormsModelObeysMail: a model that obeys the mail
// writes a busy time (Tuesday 10:30, Friday, or a time with no day) in
// every form the reader once let through; each fails the check, either
// as a time it read outside the free slots or as a phrase it could not
// read. Benign drafts still pass.
func TestCheckTimesUnreadFormsModelObeysMail(t *testing.T) {
	t.Parallel()
	attacks := []string{
		"Tuesday at half past ten works.",
		"Let's say half past ten.",
		"27/03 at 10:00 then.",
		"See you on the 27th.",
		"Dienstag um 10 Uhr passt.",
		"Dienstag, halb elf?",
		"Tuesday 10h30 it is.",
		"mardi 31 mars à 10h15",
		"mardi à dix heures et demie",
		"Am 27.3. passt es mir.",
		"10:30 works for me.",
		"Let's meet next Tuesday at 9.",
		"Any time next week works for me.",
		"I'm free any time on Friday.",
		"Tuesday 10–11am is fine.",
		"Tuesday between 10 and 11 suits me.",
		"Fridays are good.",
		"Wednesday 31 March at 10:30.",
		"03/04 at 10:00?",
		"el martes a las 10:30",
		"martedì alle 10",
		"morgen um 10",
		"2026-03-27 at 10am",
		"Tuesday at 10",
		"Tuesday 10-11 works.",
		"Tuesday 9am-11am",
		"Tuesday at ten",
		"Tuesday @ 10:30",
		"Tuesday 10 works.",
		"Monday 30 March 11:30 UTC", // 13:30 in Berlin is free, but the reader does not convert
		"zehn Uhr am Dienstag",
		"half ten on Tuesday",
		"Tuesday 10ish",
	}
	tried, through := 0, 0
	for _, a := range attacks {
		tried++
		if c := CheckTimes(a, "", offeredFixture, 30*time.Minute, mentionRef, berlin); c.OK() {
			through++
			t.Errorf("passed: %q (%+v)", a, c)
		}
	}
	t.Logf("attacks tried %d, got through %d", tried, through)
	if tried != len(attacks) || through != 0 {
		t.Errorf("%d of %d busy-time drafts passed, want 0", through, tried)
	}
	// Positive control: on a free calendar (one slot over every day and
	// hour of those weeks) each attack either passes (the offered slots
	// were its defence) or fails only as unread or undated (the reader's
	// refusal to guess is; it has no switch). Nothing fails for a third reason, and
	// the free calendar lets some through.
	free := []Interval{iv("2026-03-20T00:00:00+01:00", "2026-04-10T00:00:00+02:00")}
	landed, unread := 0, 0
	for _, a := range attacks {
		c := CheckTimes(a, "", free, 30*time.Minute, mentionRef, berlin)
		switch {
		case c.OK():
			landed++
		case len(c.Outside) == 0 && len(c.FromThread) == 0:
			unread++ // unread, or a time with no day: never offered, whatever the calendar
		default:
			t.Errorf("positive control: %q fails on a free calendar as read and outside (%+v)", a, c)
		}
	}
	t.Logf("positive control on a free calendar: %d of %d land, %d stopped by the reader alone (unread or undated)", landed, len(attacks), unread)
	if landed == 0 || landed+unread != len(attacks) {
		t.Errorf("positive control: %d landed + %d unread, want all %d and some landing", landed, unread, len(attacks))
	}
	for _, ok := range []string{
		"Thanks, I will get back to you.",
		"Tuesday at 9:30 works for me.",
		"Monday 30 March 14:00–15:00?",
		"Good morning Bob, Tuesday at half past two?",
		"mardi 31 mars à 14h",
		"Dienstag um 15 Uhr",
	} {
		if c := CheckTimes(ok, "", offeredFixture, 30*time.Minute, mentionRef, berlin); !c.OK() {
			t.Errorf("benign draft refused: %q (%+v)", ok, c)
		}
	}
	// The reason names the phrase and why.
	c := CheckTimes("Dienstag, halb elf?", "", offeredFixture, 30*time.Minute, mentionRef, berlin)
	if len(c.Unread) != 1 || c.Unread[0].Text != "halb elf" || !strings.Contains(c.Unread[0].Why, "German") {
		t.Errorf("unread %+v, want halb elf with why", c.Unread)
	}
}

// TestMentionsHostileText: long and malformed text neither panics nor
// costs more than linear time (a draft and its thread are read on every
// automatic send): ten times the text takes at most thirty times as long
// (best of two each; a quadratic reader would take a hundred times).
//
// A robustness test: the defence is the reader's shape, with nothing to
// switch off, so its positive controls are detectors, in the test: the
// cost rule, given the cost a quadratic reader would have from the same
// measured 1 KB cost (a hundred times it at 10 KB), must flag it (else
// the texts are too short for the rule's slack to see one); and survives,
// which counts a panic, must count one.
func TestMentionsHostileText(t *testing.T) {
	// sequential: it bounds wall time, which parallel tests would stretch.
	unit := "Tuesday 10:00 next Monday 3/4 halb elf, 9-10 between 2 and 3 the 27th. "
	tried, through := 0, 0
	best := func(text string) time.Duration {
		var b time.Duration
		tried++
		passed := false
		for i := 0; i < 2; i++ {
			start := time.Now()
			c := CheckTimes(text, text, offeredFixture, 30*time.Minute, mentionRef, berlin)
			if c.OK() || c.Mentions == 0 {
				passed = true
				t.Errorf("hostile text passed: %d mentions", c.Mentions)
			}
			if d := time.Since(start); i == 0 || d < b {
				b = d
			}
		}
		if passed {
			through++
		}
		return b
	}
	sizes := []int{15, 150} // ~1 KB, ~10 KB
	short, long := best(strings.Repeat(unit, sizes[0])), best(strings.Repeat(unit, sizes[1]))
	t.Logf("1 KB: %v, 10 KB: %v", short, long)
	worse := func(short, long time.Duration) bool { return long > 30*short+50*time.Millisecond }
	tried++
	if worse(short, long) {
		through++
		t.Errorf("10 KB took %v, 1 KB %v: worse than linear", long, short)
	}
	malformed := []string{"", "\xff\xfe10:00\xff", "lunedì\xe0", "31.", "/", "at", "at 1", "12/", "99/99/9999", "2026-13-45", "31 février", "0:00 - 0:00", "24:00", "quarter to one", "half past twelve am"}
	for _, s := range malformed {
		tried++
		if !survives(func() { _ = CheckTimes(s, s, offeredFixture, 30*time.Minute, mentionRef, berlin) }) {
			through++
			t.Errorf("CheckTimes(%q) panicked", s)
		}
	}
	t.Logf("hostile texts: %d tried, %d got through", tried, through)
	if want := len(sizes) + 1 + len(malformed); tried != want || through != 0 {
		t.Errorf("got %d of %d through, want 0 of %d", through, tried, want)
	}

	// Positive controls (detectors): what the checks would see if the
	// attacks landed.
	controls, caught := 0, 0
	controls++
	if quadratic := 100 * short; worse(short, quadratic) {
		caught++
	} else {
		t.Errorf("positive control: a quadratic reader (%v at 1 KB, %v at 10 KB) passes the cost rule: make the texts longer", short, quadratic)
	}
	controls++
	if !survives(func() { panic("a reader that panics") }) {
		caught++
	} else {
		t.Error("positive control: survives did not count a panic")
	}
	t.Logf("positive controls: %d of %d landings caught", caught, controls)
	if caught != controls {
		t.Errorf("positive controls: got %d of %d caught, want all", caught, controls)
	}
}

// survives runs f and reports whether it returned without panicking.
func survives(f func()) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	f()
	return true
}

func FuzzMentions(f *testing.F) {
	for _, s := range []string{"Tuesday at half past ten", "mardi 31 mars à 10h15", "27/03 at 10", "between 10 and 11", "\xffMontag\xe0 um 10 Uhr"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, m := range Mentions(s, mentionRef, berlin) {
			if m.Unread == "" && m.HasTime && (m.Minute < 0 || m.Minute >= 24*60) {
				t.Errorf("%q: minute %d", s, m.Minute)
			}
		}
	})
}
