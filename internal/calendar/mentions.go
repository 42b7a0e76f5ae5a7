package calendar

import (
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"
)

// Mention is a date, a time of day, or both, found in text and resolved
// against a reference time (weekday names and dates without a year mean
// the next such day on or after the reference).
//
// Forms read (see mentions_words.go for the word lists):
//   - days: ISO dates (2026-03-31, 2026/3/31); "31.03." and "31.3.2026";
//     "31/03" when one number is over 12 (03/04 is Unread: day or month?);
//     "March 31st", "31 March 2026", "the 31st of March", "31 mars",
//     "31. März", "31 de marzo"; an ordinal alone ("the 27th": the next
//     27th); weekday names in English, French, German, Spanish, Italian and
//     Dutch ("next Tuesday" is Unread); today, tomorrow, the day after
//     tomorrow and their French, German, Spanish, Italian, Dutch words.
//     A weekday next to a date it does not match is Unread.
//   - times: 14:30, 14.30, 10h15, 10h, 10 Uhr, 10.15 Uhr, 15 heures,
//     10 uur (24-hour); 3pm, 3:30 p.m.; noon, midday, midnight; "half past
//     ten", "quarter to eleven", "ten o'clock"; a bare hour after at,
//     around, from, until, by, between ("at 10"), read as a working hour
//     (7–11 morning, 12 noon, 1–6 afternoon) unless am/pm says otherwise.
//   - ranges: "10:00–11:00", "from 2 to 4pm", "between 10 and 11",
//     "9-10 Uhr": one mention with Range set. "until 17:30" sets Until.
//   - parts of a day: "Tuesday morning", "tomorrow afternoon", "tonight",
//     "this evening" set Period ("good morning" is a greeting).
//
// Phrases that look like a date or time but are not pinned down are
// returned with Unread set (why), never dropped: "next week", "the
// weekend", "any time", "halb elf", "et demie", "um 10", "morgen", a month
// without a day ("in March"), "03/04".
type Mention struct {
	Text    string    // as written
	Day     time.Time // local midnight; zero when only a time was given
	Minute  int       // minutes after midnight; -1 when only a day was given
	HasTime bool
	// Range: the mention is a span from Minute to End ("10:00–11:00").
	Range bool
	// Period: the mention is a part of the day, Minute to End ("Tuesday
	// afternoon"): a meeting somewhere in it.
	Period bool
	// End is the end of a Range or Period in minutes after midnight (up
	// to 1440).
	End int
	// Until: Minute is when something ends ("until 17:30").
	Until bool
	// Unread says why a phrase that looks like a date or time could not
	// be pinned down; empty when the mention was read.
	Unread string
}

// At returns the instant of a mention that has both a day and a time.
func (m Mention) At(loc *time.Location) time.Time {
	return time.Date(m.Day.Year(), m.Day.Month(), m.Day.Day(), m.Minute/60, m.Minute%60, 0, 0, loc)
}

type span struct {
	i, j int
	m    Mention
}

// reader holds the state of one Mentions call.
type reader struct {
	text         string
	loc          *time.Location
	today        time.Time
	taken        []bool
	days, times  []span
	unread       []span
	timeEnds     map[int]bool
	dates        map[int]bool // the starts of spans that are dates (not weekdays)
	weekdaySpans []span
}

func (r *reader) mark(i, j int) bool {
	for k := i; k < j; k++ {
		if r.taken[k] {
			return false
		}
	}
	for k := i; k < j; k++ {
		r.taken[k] = true
	}
	return true
}

// nameAt reports whether text[i:j] is a whole word: no letter or digit
// right before or after it.
func nameAt(text string, i, j int) bool {
	if i > 0 {
		c, _ := utf8.DecodeLastRuneInString(text[:i])
		if unicode.IsLetter(c) || unicode.IsDigit(c) || c == '_' {
			return false
		}
	}
	if j < len(text) {
		c, _ := utf8.DecodeRuneInString(text[j:])
		if unicode.IsLetter(c) || unicode.IsDigit(c) || c == '_' {
			return false
		}
	}
	return true
}

// wordStart reports whether a word may start at i.
func wordStart(text string, i int) bool {
	if i == 0 {
		return true
	}
	c, _ := utf8.DecodeLastRuneInString(text[:i])
	return !unicode.IsLetter(c) && !unicode.IsDigit(c) && c != '_'
}

func (r *reader) addDay(i, j int, t time.Time) {
	if r.mark(i, j) {
		r.dates[i] = true
		r.days = append(r.days, span{i, j, Mention{Text: r.text[i:j], Day: t, Minute: -1}})
	}
}

func (r *reader) addTime(i, j int, m Mention) {
	if r.mark(i, j) {
		m.HasTime = true
		m.Text = strings.TrimSpace(r.text[i:j])
		r.times = append(r.times, span{i, j, m})
		r.timeEnds[j] = true
	}
}

func (r *reader) addUnread(i, j int, why string) {
	if r.mark(i, j) {
		r.unread = append(r.unread, span{i, j, Mention{Text: strings.TrimSpace(r.text[i:j]), Minute: -1, Unread: why}})
	}
}

// nextDate is the next day/month on or after today (year < 0), or that
// date in year.
func (r *reader) nextDate(year int, mo time.Month, d int) (time.Time, bool) {
	if d < 1 || d > 31 || mo < 1 || mo > 12 {
		return time.Time{}, false
	}
	if year >= 0 {
		if year < 100 {
			year += 2000
		}
		t := time.Date(year, mo, d, 0, 0, 0, 0, r.loc)
		return t, t.Day() == d
	}
	for y := r.today.Year(); y <= r.today.Year()+4; y++ { // 29 February waits for a leap year
		t := time.Date(y, mo, d, 0, 0, 0, 0, r.loc)
		if t.Day() == d && !t.Before(r.today) {
			return t, true
		}
	}
	return time.Time{}, false
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }

func group(text string, m []int, g int) string {
	if m[2*g] < 0 {
		return ""
	}
	return text[m[2*g]:m[2*g+1]]
}

// workHour reads an hour written without am or pm as a working hour.
func workHour(h int) int {
	if h >= 1 && h <= 6 {
		return h + 12
	}
	return h
}

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

// units after a bare number that make it a quantity, not an hour.
var quantity = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)^\s*(?:%|[.,/:]\d|minutes?\b|mins?\b|hours?\b|hrs?\b|days?\b|weeks?\b|months?\b|years?\b|people\b|persons?\b|percent\b|items?\b|times\b|euros?\b|dollars?\b|pounds?\b|pages?\b|points?\b|of\b)`)
})

// Mentions finds the dates and times in text. A time is joined to the
// nearest day mentioned before it in the same sentence (or, failing that,
// right after it: "10:00 on Tuesday"; or, failing that, the nearest day
// in an earlier sentence: "Tuesday? 10:00 would suit"); a day with no
// time stands alone, as does a time with no day anywhere before it.
// Phrases that look like dates or times but were not read come back with
// Unread set.
func Mentions(text string, ref time.Time, loc *time.Location) []Mention {
	if loc == nil {
		loc = time.UTC
	}
	ref = ref.In(loc)
	r := &reader{text: text, loc: loc, today: time.Date(ref.Year(), ref.Month(), ref.Day(), 0, 0, 0, 0, loc),
		taken: make([]bool, len(text)+1), timeEnds: map[int]bool{}, dates: map[int]bool{}}
	r.readDays1()
	r.readTimes()
	r.readDays2()
	r.readTimeWords()
	r.readUnread()
	r.checkWeekdays()
	return r.join()
}

// readDays1 reads ISO dates (before the clock, which would take 11-24).
func (r *reader) readDays1() {
	p, text := mentionPatterns(), r.text
	for _, m := range p.iso.FindAllStringSubmatchIndex(text) {
		if t, ok := r.nextDate(atoi(group(text, m, 1)), time.Month(atoi(group(text, m, 2))), atoi(group(text, m, 3))); ok {
			r.addDay(m[0], m[1], t)
		} else {
			r.addUnread(m[0], m[1], "not a date")
		}
	}
}

// readTimes reads clock times, before the dates: "March 09:00" is a time,
// "31.3." a date.
func (r *reader) readTimes() {
	p, text := mentionPatterns(), r.text
	for _, m := range p.rangeSuffix.FindAllStringSubmatchIndex(text) {
		h1, h2 := atoi(group(text, m, 1)), atoi(group(text, m, 3))
		m1, m2 := atoi(group(text, m, 2)), atoi(group(text, m, 4))
		unit := strings.ToLower(group(text, m, 5))
		if strings.HasPrefix(unit, "a") || strings.HasPrefix(unit, "p") {
			if h1 > 12 || h2 > 12 {
				continue
			}
			e := ampm(h2, unit)
			s := ampm(h1, unit)
			if s > e { // "11-1pm": the start is in the morning
				s = h1
			}
			h1, h2 = s, e
		}
		r.addTime(m[0], m[1], Mention{Minute: h1*60 + m1, Range: true, End: h2*60 + m2})
	}
	for _, m := range p.clock.FindAllStringSubmatchIndex(text) {
		if text[m[3]] == '.' && m[6] < 0 && (m[1] < len(text) && text[m[1]] == '.' || m[0] > 0 && text[m[0]-1] == '.') {
			continue // "31.03." or "1.10.2026" is a date
		}
		h, mi := atoi(group(text, m, 1)), atoi(group(text, m, 2))
		if m[6] >= 0 {
			if h > 12 {
				r.addUnread(m[0], m[1], "an hour over 12 with am or pm")
				continue
			}
			h = ampm(h, group(text, m, 3))
		}
		r.addTime(m[0], m[1], Mention{Minute: h*60 + mi})
	}
	for _, m := range p.hourUnit.FindAllStringSubmatchIndex(text) {
		r.addTime(m[0], m[1], Mention{Minute: atoi(group(text, m, 1))*60 + atoi(group(text, m, 2))})
	}
}

// readDays2 reads the other dates, weekdays and relative days.
func (r *reader) readDays2() {
	p, text := mentionPatterns(), r.text
	yearOf := func(m []int, g int) int {
		if s := group(text, m, g); s != "" {
			return atoi(s)
		}
		return -1
	}
	for _, m := range p.dayMonth.FindAllStringSubmatchIndex(text) {
		if !nameAt(text, m[4], m[5]) {
			continue
		}
		if t, ok := r.nextDate(yearOf(m, 3), months[strings.ToLower(group(text, m, 2))], atoi(group(text, m, 1))); ok {
			r.addDay(m[0], m[1], t)
		} else {
			r.addUnread(m[0], m[1], "not a date")
		}
	}
	for _, m := range p.monthDay.FindAllStringSubmatchIndex(text) {
		if !wordStart(text, m[2]) {
			continue
		}
		if t, ok := r.nextDate(yearOf(m, 3), months[strings.ToLower(group(text, m, 1))], atoi(group(text, m, 2))); ok {
			r.addDay(m[0], m[1], t)
		} else {
			r.addUnread(m[0], m[1], "not a date")
		}
	}
	for _, m := range p.dmy.FindAllStringSubmatchIndex(text) {
		if t, ok := r.nextDate(yearOf(m, 3), time.Month(atoi(group(text, m, 2))), atoi(group(text, m, 1))); ok {
			r.addDay(m[0], m[1], t)
		}
	}
	for _, m := range p.dmSlash.FindAllStringSubmatchIndex(text) {
		a, b := atoi(group(text, m, 1)), atoi(group(text, m, 2))
		y := yearOf(m, 3)
		switch {
		case a == 24 && b == 7 && y < 0:
			continue // "24/7"
		case a > 12 || a == b:
			if t, ok := r.nextDate(y, time.Month(b), a); ok {
				r.addDay(m[0], m[1], t)
				continue
			}
		case b > 12:
			if t, ok := r.nextDate(y, time.Month(a), b); ok {
				r.addDay(m[0], m[1], t)
				continue
			}
		default:
			r.addUnread(m[0], m[1], "could not tell the day from the month")
			continue
		}
		r.addUnread(m[0], m[1], "not a date")
	}
	for _, m := range p.ordinal.FindAllStringSubmatchIndex(text) {
		d := atoi(group(text, m, 1))
		var t time.Time
		for k := 0; k < 12 && t.IsZero(); k++ { // the next month that has that day
			c := time.Date(r.today.Year(), r.today.Month()+time.Month(k), d, 0, 0, 0, 0, r.loc)
			if c.Day() == d && !c.Before(r.today) {
				t = c
			}
		}
		if t.IsZero() {
			r.addUnread(m[0], m[1], "not a day of the month")
			continue
		}
		r.addDay(m[0], m[1], t)
	}
	for _, m := range p.weekday.FindAllStringSubmatchIndex(text) {
		word := group(text, m, 1)
		if !wordStart(text, m[2]) {
			continue
		}
		if slicesContains(englishAbbrevs, strings.ToLower(word)) && (word[0] < 'A' || word[0] > 'Z') {
			continue // "sat", "sun", "wed", "mon" in lower case are words
		}
		if m[3] < len(text) && (text[m[3]] == 's' || text[m[3]] == 'S') && nameAt(text, m[2], m[3]+1) {
			r.addUnread(m[2], m[3]+1, "names every such day, not one")
			continue
		}
		if !nameAt(text, m[2], m[3]) {
			continue
		}
		if n := nextRE().FindStringIndex(tail(text, m[2])); n != nil {
			r.addUnread(m[2]-len(tail(text, m[2]))+n[0], m[1], "could not tell which week 'next' means")
			continue
		}
		wd := weekdays[strings.ToLower(word)]
		t := r.today.AddDate(0, 0, (int(wd)-int(r.today.Weekday())+7)%7)
		if r.mark(m[0], m[1]) {
			s := span{m[0], m[1], Mention{Text: text[m[0]:m[1]], Day: t, Minute: -1}}
			r.days = append(r.days, s)
			r.weekdaySpans = append(r.weekdaySpans, s)
		}
	}
	for _, m := range p.relative.FindAllStringSubmatchIndex(text) {
		if !nameAt(text, m[2], m[3]) {
			continue
		}
		key := strings.Join(strings.Fields(strings.ToLower(group(text, m, 1))), " ")
		r.addDay(m[0], m[1], r.today.AddDate(0, 0, relativeDays[key]))
		delete(r.dates, m[0]) // not a date a weekday could contradict
	}
}

// readTimeWords reads times written with words or a bare hour.
func (r *reader) readTimeWords() {
	p, text := mentionPatterns(), r.text
	hourOf := func(s string) int {
		if n, ok := numberWords[strings.ToLower(s)]; ok {
			return n
		}
		return atoi(s)
	}
	for _, m := range p.ampm.FindAllStringSubmatchIndex(text) {
		r.addTime(m[0], m[1], Mention{Minute: ampm(hourOf(group(text, m, 1)), group(text, m, 2)) * 60})
	}
	for _, m := range p.wordTime.FindAllStringSubmatchIndex(text) {
		frac, dir := strings.ToLower(group(text, m, 1)), strings.ToLower(group(text, m, 2))
		h := hourOf(group(text, m, 3) + group(text, m, 4))
		switch ap, part := group(text, m, 5), strings.ToLower(group(text, m, 6)); {
		case ap != "":
			h = ampm(h, ap)
		case part == "morning":
			h = ampm(h, "am")
		case part != "":
			h = ampm(h, "pm")
		default:
			h = workHour(h)
		}
		mi := h * 60
		switch {
		case frac == "half" && dir == "past":
			mi += 30
		case frac == "quarter" && dir == "past":
			mi += 15
		case frac == "quarter" && dir == "to":
			mi -= 15
		case frac == "half": // "half to": not English
			r.addUnread(m[0], m[1], "could not read the time")
			continue
		}
		r.addTime(m[0], m[1], Mention{Minute: (mi + 1440) % 1440})
	}
	for _, m := range p.noon.FindAllStringSubmatchIndex(text) {
		mi := 12 * 60
		if strings.EqualFold(group(text, m, 1), "midnight") {
			mi = 0
		}
		r.addTime(m[0], m[1], Mention{Minute: mi})
	}
	for _, m := range p.period.FindAllStringSubmatchIndex(text) {
		if m[2] >= 0 { // "good morning"
			r.mark(m[0], m[1])
			continue
		}
		w := strings.ToLower(group(text, m, 2))
		from, to := 0, 12*60
		switch {
		case strings.Contains(w, "afternoon"):
			from, to = 12*60, 18*60
		case strings.Contains(w, "evening") || w == "tonight":
			from, to = 18*60, 24*60
		case strings.Contains(w, "lunch"):
			from, to = 12*60, 14*60
		}
		if w == "tonight" || strings.HasPrefix(w, "this") {
			if r.mark(m[0], m[1]) {
				r.days = append(r.days, span{m[0], m[1], Mention{Text: text[m[0]:m[1]], Day: r.today, Minute: from, HasTime: true, Period: true, End: to}})
			}
			continue
		}
		r.addTime(m[0], m[1], Mention{Minute: from, Period: true, End: to})
	}
	atHours := p.atHour.FindAllStringSubmatchIndex(text)
	for _, pass := range []bool{false, true} {
		for _, m := range atHours {
			word := "@"
			if f := strings.Fields(text[m[0]:m[2]]); len(f) > 0 {
				word = strings.ToLower(f[0])
			}
			follow := word == "and" || word == "or" || word == "to"
			if follow != pass || quantity().MatchString(text[m[3]:]) {
				continue
			}
			if follow { // "and 11" only right after a time: "between 10 and 11"
				k := m[0]
				for k > 0 && (text[k-1] == ' ' || text[k-1] == ',') {
					k--
				}
				if !r.timeEnds[k] {
					continue
				}
			}
			r.addTime(m[2], m[3], Mention{Minute: workHour(hourOf(group(text, m, 1))) * 60})
		}
	}
}

// readUnread marks what looks like a date or time and was not read.
func (r *reader) readUnread() {
	p, text := mentionPatterns(), r.text
	for k, re := range p.unread {
		for _, m := range re.FindAllStringSubmatchIndex(text) {
			if nameAt(text, m[2], m[3]) {
				r.addUnread(m[2], m[3], unreadWords[k].why)
			}
		}
	}
	// "Tuesday 10": a time or the 10th?
	for _, d := range r.days {
		if m := bareAfterDay().FindStringSubmatchIndex(text[d.j:]); m != nil {
			r.addUnread(d.j+m[2], d.j+m[3], "a bare number after a day: a time or a date?")
		}
	}
	// "10:00 UTC": a time in a zone that is not the owner's is not read.
	for k, t := range r.times {
		m := p.zone.FindStringSubmatchIndex(text[t.j:])
		if m == nil {
			continue
		}
		z := text[t.j+m[2] : t.j+m[3]]
		if r.ownZone(z) {
			r.mark(t.j, t.j+m[1])
			continue
		}
		r.times[k].m.Unread = "a time in another zone (" + z + "): the reader does not convert it"
		r.times[k].m.Text += " " + z
	}
	for _, m := range p.monthAlone.FindAllStringSubmatchIndex(text) {
		w := group(text, m, 1)
		lw := strings.ToLower(w)
		if !nameAt(text, m[2], m[3]) || utf8.RuneCountInString(w) < 4 || lw == "may" {
			continue
		}
		if slicesContains(englishMonths, lw) && (w[0] < 'A' || w[0] > 'Z') {
			continue // "march", "august": words
		}
		r.addUnread(m[2], m[3], "a month without a day")
	}
}

// ownZone reports whether z names the owner's zone: its IANA name, its
// abbreviation at today's date or the same offset, or UTC/GMT/Z for UTC.
func (r *reader) ownZone(z string) bool {
	if z == r.loc.String() {
		return true
	}
	name, off := r.today.Zone()
	if strings.EqualFold(z, name) {
		return true
	}
	switch strings.ToUpper(z) {
	case "UTC", "GMT", "Z", "UTC+0", "GMT+0", "+00:00", "+0000", "+0":
		return off == 0 && r.loc.String() == "UTC"
	}
	return false
}

func slicesContains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// checkWeekdays turns a weekday written next to a date it does not match
// ("Wednesday 24 November" when the 24th is a Tuesday) into Unread: which
// of the two does the writer mean? A weekday that matches its date is
// that date, not the next such weekday.
func (r *reader) checkWeekdays() {
	drop := map[int]bool{}
	sortSpans(r.days)
	for _, w := range r.weekdaySpans {
		k := sort.Search(len(r.days), func(k int) bool { return r.days[k].i >= w.j })
		if k == len(r.days) {
			continue
		}
		d := r.days[k]
		if !r.dates[d.i] || !weekdaySep().MatchString(r.text[w.j:d.i]) {
			continue
		}
		if d.m.Day.Weekday() != w.m.Day.Weekday() {
			r.unread = append(r.unread, span{w.i, d.j, Mention{Text: r.text[w.i:d.j], Minute: -1,
				Unread: "the weekday does not match the date"}})
			continue
		}
		drop[w.i] = true // "Monday 21 December": one day, the date's
	}
	days := r.days[:0]
	for _, d := range r.days {
		if !drop[d.i] {
			days = append(days, d)
		}
	}
	r.days = days
}

var (
	bareAfterDay = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[\s,]*(\d{1,2})\b[^:.\d]?`) })
	nextRE       = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)\b(?:next|following)\s+$`) })
	weekdaySep   = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[\s,]*(?:the\s+)?$`) })
	rangeSep     = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)^\s*(?:-|–|—|to|until|till|til|through|bis|à|a|and)\s*$`)
	})
	between = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)\bbetween\s+$`) })
	untilRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)\b(?:until|till|til|bis|up\s+to|no\s+later\s+than)\s+$`)
	})
)

// join merges ranges, marks untils, and joins each time to a day.
func (r *reader) join() []Mention {
	text := r.text
	sortSpans(r.times)
	sortSpans(r.days)
	// "10:00 to 11:00", "between 10 and 11": one range.
	var times []span
	for k := 0; k < len(r.times); k++ {
		t := r.times[k]
		if k+1 < len(r.times) && !t.m.Range && !t.m.Period && !r.times[k+1].m.Period && !r.times[k+1].m.Range {
			n := r.times[k+1]
			gap := text[t.j:n.i]
			if rangeSep().MatchString(gap) && (!strings.EqualFold(strings.TrimSpace(gap), "and") || between().MatchString(tail(text, t.i))) {
				t = span{t.i, n.j, Mention{Text: strings.TrimSpace(text[t.i:n.j]), Minute: t.m.Minute, HasTime: true, Range: true, End: n.m.Minute}}
				if t.m.End == 0 {
					t.m.End = 1440 // "until midnight"
				}
				k++
			}
		}
		if t.m.Range && t.m.End <= t.m.Minute {
			r.unread = append(r.unread, span{t.i, t.j, Mention{Text: t.m.Text, Minute: -1, Unread: "the range ends before it starts"}})
			continue
		}
		if !t.m.Range && !t.m.Period && untilRE().MatchString(tail(text, t.i)) {
			t.m.Until = true
		}
		times = append(times, t)
	}

	// sent[i] is the index of the sentence holding byte i.
	sent := make([]int, len(text)+1)
	for k, n := 0, 0; k < len(text); k++ {
		sent[k] = n
		c := text[k]
		if c == '.' && k > 0 && isDigit(text[k-1]) {
			continue // "31.03. um 10" is one sentence
		}
		if c == '\n' || ((c == '.' || c == '!' || c == '?' || c == ';') && (k+1 >= len(text) || text[k+1] == ' ' || text[k+1] == '\n')) {
			n++
		}
		sent[k+1] = n
	}
	sentence := func(i int) int { return sent[i] }
	used := map[int]bool{}
	var out []Mention
	var plain []int // indexes into r.days of the days a time can join
	for di, d := range r.days {
		if !d.m.Period {
			plain = append(plain, di)
		}
	}
	for _, t := range times {
		// The nearest day before it in its sentence, else the first after
		// it in its sentence, else the nearest before it.
		st := sentence(t.i)
		k := sort.Search(len(plain), func(k int) bool { return r.days[plain[k]].i >= t.i })
		best := -1
		switch {
		case k > 0 && sentence(r.days[plain[k-1]].i) == st:
			best = plain[k-1]
		case k < len(plain) && sentence(r.days[plain[k]].i) == st:
			best = plain[k]
		case k > 0:
			best = plain[k-1]
		}
		m := t.m
		if best >= 0 {
			used[best] = true
			m.Day = r.days[best].m.Day
			if sentence(r.days[best].i) == st {
				m.Text = r.days[best].m.Text + " " + m.Text
			} else {
				m.Text += " (" + r.days[best].m.Text + ")"
			}
		}
		out = append(out, m)
	}
	for di, d := range r.days {
		if !used[di] || d.m.Period {
			out = append(out, d.m)
		}
	}
	for _, u := range r.unread {
		out = append(out, u.m)
	}
	return out
}

// tail is the last few bytes of text before i: what a phrase before a
// match is looked for in.
func tail(text string, i int) string {
	const n = 48
	if i <= n {
		return text[:i]
	}
	return text[i-n : i]
}

func sortSpans(s []span) { sort.SliceStable(s, func(a, b int) bool { return s[a].i < s[b].i }) }

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
