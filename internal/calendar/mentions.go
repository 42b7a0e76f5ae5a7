package calendar

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Mention is a date, a time of day, or both, found in text and resolved
// against a reference time (weekday names and dates without a year mean
// the next such day on or after the reference).
type Mention struct {
	Text    string    // as written
	Day     time.Time // local midnight; zero when only a time was given
	Minute  int       // minutes after midnight; -1 when only a day was given
	HasTime bool
}

// At returns the instant of a mention that has both a day and a time.
func (m Mention) At(loc *time.Location) time.Time {
	return time.Date(m.Day.Year(), m.Day.Month(), m.Day.Day(), m.Minute/60, m.Minute%60, 0, 0, loc)
}

var weekdays = map[string]time.Weekday{
	"sunday": time.Sunday, "sun": time.Sunday, "monday": time.Monday, "mon": time.Monday,
	"tuesday": time.Tuesday, "tue": time.Tuesday, "tues": time.Tuesday, "wednesday": time.Wednesday, "wed": time.Wednesday,
	"thursday": time.Thursday, "thu": time.Thursday, "thur": time.Thursday, "thurs": time.Thursday,
	"friday": time.Friday, "fri": time.Friday, "saturday": time.Saturday, "sat": time.Saturday,
}

var months = map[string]time.Month{
	"january": 1, "jan": 1, "february": 2, "feb": 2, "march": 3, "mar": 3, "april": 4, "apr": 4, "may": 5,
	"june": 6, "jun": 6, "july": 7, "jul": 7, "august": 8, "aug": 8, "september": 9, "sep": 9, "sept": 9,
	"october": 10, "oct": 10, "november": 11, "nov": 11, "december": 12, "dec": 12,
}

type mentionREs struct{ iso, dmy, monthDay, dayMonth, weekday, relative, clock, ampm, noon *regexp.Regexp }

var mentionPatterns = sync.OnceValue(func() *mentionREs {
	mon := `(january|jan|february|feb|march|mar|april|apr|may|june|jun|july|jul|august|aug|september|sept|sep|october|oct|november|nov|december|dec)\.?`
	return &mentionREs{
		iso:      regexp.MustCompile(`\b(20\d\d)-(\d\d)-(\d\d)\b`),
		dmy:      regexp.MustCompile(`\b(\d{1,2})\.(\d{1,2})\.(20\d\d)?`),
		monthDay: regexp.MustCompile(`(?i)\b` + mon + `\s+(\d{1,2})(?:st|nd|rd|th)?\b`),
		dayMonth: regexp.MustCompile(`(?i)\b(\d{1,2})(?:st|nd|rd|th)?(?:\s+of)?\s+` + mon + `\b`),
		weekday:  regexp.MustCompile(`(?i)\b(sunday|monday|tuesday|wednesday|thursday|friday|saturday|sun|mon|tues|tue|wed|thurs|thur|thu|fri|sat)\b\.?`),
		relative: regexp.MustCompile(`(?i)\b(today|tomorrow)\b`),
		clock:    regexp.MustCompile(`\b([01]?\d|2[0-3])[:.h]([0-5]\d)\b\s*(?i:(am|pm|a\.m\.|p\.m\.))?`),
		ampm:     regexp.MustCompile(`(?i)\b(1[0-2]|0?[1-9])\s*(am|pm|a\.m\.|p\.m\.)`),
		noon:     regexp.MustCompile(`(?i)\b(noon|midday)\b`),
	}
})

type span struct {
	i, j int
	m    Mention
}

// Mentions finds the dates and times in text. A time is joined to the
// nearest day mentioned before it in the same sentence (or, failing that,
// right after it: "10:00 on Tuesday"); a day with no time stands alone, as
// does a time with no day.
func Mentions(text string, ref time.Time, loc *time.Location) []Mention {
	if loc == nil {
		loc = time.UTC
	}
	ref = ref.In(loc)
	today := time.Date(ref.Year(), ref.Month(), ref.Day(), 0, 0, 0, 0, loc)
	p := mentionPatterns()
	var days, times []span
	taken := make([]bool, len(text)+1)
	mark := func(i, j int) bool {
		for k := i; k < j; k++ {
			if taken[k] {
				return false
			}
		}
		for k := i; k < j; k++ {
			taken[k] = true
		}
		return true
	}
	nextDate := func(mo time.Month, d int) (time.Time, bool) {
		if d < 1 || d > 31 {
			return time.Time{}, false
		}
		t := time.Date(today.Year(), mo, d, 0, 0, 0, 0, loc)
		if t.Month() != mo {
			return time.Time{}, false
		}
		if t.Before(today) {
			t = time.Date(today.Year()+1, mo, d, 0, 0, 0, 0, loc)
		}
		return t, true
	}
	addDay := func(i, j int, t time.Time) {
		if mark(i, j) {
			days = append(days, span{i, j, Mention{Text: text[i:j], Day: t, Minute: -1}})
		}
	}
	for _, m := range p.iso.FindAllStringSubmatchIndex(text, -1) {
		y, _ := strconv.Atoi(text[m[2]:m[3]])
		mo, _ := strconv.Atoi(text[m[4]:m[5]])
		d, _ := strconv.Atoi(text[m[6]:m[7]])
		t := time.Date(y, time.Month(mo), d, 0, 0, 0, 0, loc)
		if mo >= 1 && mo <= 12 && t.Day() == d {
			addDay(m[0], m[1], t)
		}
	}
	// Clock times before the other dates: "March 09:00" is a time, "31.3." a date.
	for _, m := range p.clock.FindAllStringSubmatchIndex(text, -1) {
		if text[m[3]] == '.' && m[6] < 0 && (m[1] < len(text) && text[m[1]] == '.' || m[0] > 0 && text[m[0]-1] == '.') {
			continue // "31.03." or "1.10.2026" is a date
		}
		h, _ := strconv.Atoi(text[m[2]:m[3]])
		mi, _ := strconv.Atoi(text[m[4]:m[5]])
		if m[6] >= 0 {
			h = ampm(h, text[m[6]:m[7]])
		}
		if mark(m[0], m[1]) {
			times = append(times, span{m[0], m[1], Mention{Text: strings.TrimSpace(text[m[0]:m[1]]), Minute: h*60 + mi, HasTime: true}})
		}
	}
	for _, m := range p.dayMonth.FindAllStringSubmatchIndex(text, -1) {
		d, _ := strconv.Atoi(text[m[2]:m[3]])
		if t, ok := nextDate(months[strings.ToLower(text[m[4]:m[5]])], d); ok {
			addDay(m[0], m[1], t)
		}
	}
	for _, m := range p.monthDay.FindAllStringSubmatchIndex(text, -1) {
		d, _ := strconv.Atoi(text[m[4]:m[5]])
		if t, ok := nextDate(months[strings.ToLower(text[m[2]:m[3]])], d); ok {
			addDay(m[0], m[1], t)
		}
	}
	for _, m := range p.dmy.FindAllStringSubmatchIndex(text, -1) {
		d, _ := strconv.Atoi(text[m[2]:m[3]])
		mo, _ := strconv.Atoi(text[m[4]:m[5]])
		if mo < 1 || mo > 12 {
			continue
		}
		var t time.Time
		ok := true
		if m[6] >= 0 {
			y, _ := strconv.Atoi(text[m[6]:m[7]])
			t = time.Date(y, time.Month(mo), d, 0, 0, 0, 0, loc)
			ok = t.Day() == d
		} else {
			t, ok = nextDate(time.Month(mo), d)
		}
		if ok {
			addDay(m[0], m[1], t)
		}
	}
	for _, m := range p.weekday.FindAllStringSubmatchIndex(text, -1) {
		word := text[m[2]:m[3]]
		if len(word) <= 5 && !strings.HasSuffix(strings.ToLower(word), "day") && (word[0] < 'A' || word[0] > 'Z') {
			continue // "sat", "sun", "wed" in lower case are words, not days
		}
		wd := weekdays[strings.ToLower(word)]
		t := today.AddDate(0, 0, (int(wd)-int(today.Weekday())+7)%7)
		addDay(m[0], m[1], t)
	}
	for _, m := range p.relative.FindAllStringSubmatchIndex(text, -1) {
		t := today
		if strings.EqualFold(text[m[2]:m[3]], "tomorrow") {
			t = today.AddDate(0, 0, 1)
		}
		addDay(m[0], m[1], t)
	}
	for _, m := range p.ampm.FindAllStringSubmatchIndex(text, -1) {
		h, _ := strconv.Atoi(text[m[2]:m[3]])
		if mark(m[0], m[1]) {
			times = append(times, span{m[0], m[1], Mention{Text: text[m[0]:m[1]], Minute: ampm(h, text[m[4]:m[5]]) * 60, HasTime: true}})
		}
	}
	for _, m := range p.noon.FindAllStringIndex(text, -1) {
		if mark(m[0], m[1]) {
			times = append(times, span{m[0], m[1], Mention{Text: text[m[0]:m[1]], Minute: 12 * 60, HasTime: true}})
		}
	}

	// Join each time to a day in its sentence.
	sentence := func(i int) int { // index of the sentence holding byte i
		n := 0
		for k := 0; k < i && k < len(text); k++ {
			c := text[k]
			if c == '.' && k > 0 && isDigit(text[k-1]) {
				continue // "31.03. um 10" is one sentence
			}
			if c == '\n' || ((c == '.' || c == '!' || c == '?' || c == ';') && (k+1 >= len(text) || text[k+1] == ' ' || text[k+1] == '\n')) {
				n++
			}
		}
		return n
	}
	used := map[int]bool{}
	var out []Mention
	for _, t := range times {
		best := -1
		for di, d := range days {
			if sentence(d.i) != sentence(t.i) {
				continue
			}
			if d.i < t.i && (best < 0 || days[best].i > t.i || d.i > days[best].i) {
				best = di
			} else if d.i > t.i && best < 0 {
				best = di
			}
		}
		m := t.m
		if best >= 0 {
			used[best] = true
			m.Day = days[best].m.Day
			m.Text = days[best].m.Text + " " + m.Text
		}
		out = append(out, m)
	}
	for di, d := range days {
		if !used[di] {
			out = append(out, d.m)
		}
	}
	return out
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func ampm(h int, suffix string) int {
	pm := strings.HasPrefix(strings.ToLower(suffix), "p")
	switch {
	case pm && h < 12:
		return h + 12
	case !pm && h == 12:
		return 0
	}
	return h
}

// TimeCheck is the verdict on the dates and times a draft proposes.
type TimeCheck struct {
	Mentions int
	// Outside lists mentions that lie in no offered slot and were not
	// already in the thread: the draft must not go out as written.
	Outside []string
	// FromThread lists mentions that are not in an offered slot but
	// repeat a time from the thread (a confirmation or a refusal): fine
	// for a queued draft, never for an automatic send.
	FromThread []string
}

// OK reports whether every mention came from the offered slots.
func (c TimeCheck) OK() bool { return len(c.Outside) == 0 && len(c.FromThread) == 0 }

// CheckTimes checks every date and time in draft against the offered
// slots and the dates and times already in thread. A day and time must
// lie inside an offered slot (its end included, for "until 17:30"); a day
// alone must have an offered slot; a time alone must fall inside an
// offered slot on some day.
func CheckTimes(draft, thread string, offered []Interval, ref time.Time, loc *time.Location) TimeCheck {
	if loc == nil {
		loc = time.UTC
	}
	inThread := map[string]bool{}
	for _, m := range Mentions(thread, ref, loc) {
		inThread[mentionKey(m)] = true
		if m.HasTime {
			inThread[mentionKey(Mention{Minute: m.Minute, HasTime: true})] = true
		}
		if !m.Day.IsZero() {
			inThread[mentionKey(Mention{Day: m.Day, Minute: -1})] = true
		}
	}
	var c TimeCheck
	for _, m := range Mentions(draft, ref, loc) {
		c.Mentions++
		if offeredMention(m, offered, loc) {
			continue
		}
		if inThread[mentionKey(m)] {
			c.FromThread = append(c.FromThread, m.Text)
			continue
		}
		c.Outside = append(c.Outside, m.Text)
	}
	return c
}

func mentionKey(m Mention) string {
	day := ""
	if !m.Day.IsZero() {
		day = m.Day.Format("2006-01-02")
	}
	return fmt.Sprintf("%s/%d", day, m.Minute)
}

func offeredMention(m Mention, offered []Interval, loc *time.Location) bool {
	for _, s := range offered {
		st, en := s.Start.In(loc), s.End.In(loc)
		switch {
		case !m.Day.IsZero() && m.HasTime:
			at := m.At(loc)
			if !at.Before(st) && !at.After(en) {
				return true
			}
		case !m.Day.IsZero():
			if sameDay(st, m.Day) || sameDay(en.Add(-time.Nanosecond), m.Day) {
				return true
			}
		default:
			for d := time.Date(st.Year(), st.Month(), st.Day(), 0, 0, 0, 0, loc); !d.After(en); d = d.AddDate(0, 0, 1) {
				at := time.Date(d.Year(), d.Month(), d.Day(), m.Minute/60, m.Minute%60, 0, 0, loc)
				if !at.Before(st) && !at.After(en) {
					return true
				}
			}
		}
	}
	return false
}

func sameDay(a, b time.Time) bool {
	return a.Year() == b.Year() && a.Month() == b.Month() && a.Day() == b.Day()
}

// FormatSlots renders slots for the drafting prompt, one per line, in
// loc: "Tue 31 Mar 2026 09:00–10:00 (Europe/Berlin)".
func FormatSlots(slots []Interval, loc *time.Location) string {
	var b strings.Builder
	for _, s := range slots {
		st, en := s.Start.In(loc), s.End.In(loc)
		fmt.Fprintf(&b, "%s–%s (%s)\n", st.Format("Mon 02 Jan 2006 15:04"), en.Format("15:04"), loc)
	}
	return b.String()
}
