package calendar

import (
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"
)

// The words Mentions reads. English is read in full; French, German,
// Spanish, Italian and Dutch weekday and month names are read too (a
// month only with its day: "31 mars", "31. März", "31 de marzo"). Words
// that name a time in those languages in a way the reader does not pin
// down ("halb elf", "et demie", "morgen", "mañana") are listed in
// unreadWords: a draft that uses them is not read as free of times.

var weekdays = map[string]time.Weekday{
	"sunday": time.Sunday, "sun": time.Sunday, "monday": time.Monday, "mon": time.Monday,
	"tuesday": time.Tuesday, "tue": time.Tuesday, "tues": time.Tuesday, "wednesday": time.Wednesday, "wed": time.Wednesday,
	"thursday": time.Thursday, "thu": time.Thursday, "thur": time.Thursday, "thurs": time.Thursday,
	"friday": time.Friday, "fri": time.Friday, "saturday": time.Saturday, "sat": time.Saturday,
	// French
	"lundi": time.Monday, "mardi": time.Tuesday, "mercredi": time.Wednesday, "jeudi": time.Thursday,
	"vendredi": time.Friday, "samedi": time.Saturday, "dimanche": time.Sunday,
	// German
	"montag": time.Monday, "dienstag": time.Tuesday, "mittwoch": time.Wednesday, "donnerstag": time.Thursday,
	"freitag": time.Friday, "samstag": time.Saturday, "sonnabend": time.Saturday, "sonntag": time.Sunday,
	// Spanish
	"lunes": time.Monday, "martes": time.Tuesday, "miércoles": time.Wednesday, "miercoles": time.Wednesday,
	"jueves": time.Thursday, "viernes": time.Friday, "sábado": time.Saturday, "sabado": time.Saturday, "domingo": time.Sunday,
	// Italian
	"lunedì": time.Monday, "lunedi": time.Monday, "martedì": time.Tuesday, "martedi": time.Tuesday,
	"mercoledì": time.Wednesday, "mercoledi": time.Wednesday, "giovedì": time.Thursday, "giovedi": time.Thursday,
	"venerdì": time.Friday, "venerdi": time.Friday, "domenica": time.Sunday,
	// Dutch
	"maandag": time.Monday, "dinsdag": time.Tuesday, "woensdag": time.Wednesday, "donderdag": time.Thursday,
	"vrijdag": time.Friday, "zaterdag": time.Saturday, "zondag": time.Sunday,
}

var months = map[string]time.Month{
	"january": 1, "jan": 1, "february": 2, "feb": 2, "march": 3, "mar": 3, "april": 4, "apr": 4, "may": 5,
	"june": 6, "jun": 6, "july": 7, "jul": 7, "august": 8, "aug": 8, "september": 9, "sep": 9, "sept": 9,
	"october": 10, "oct": 10, "november": 11, "nov": 11, "december": 12, "dec": 12,
	// French
	"janvier": 1, "février": 2, "fevrier": 2, "mars": 3, "avril": 4, "mai": 5, "juin": 6, "juillet": 7,
	"août": 8, "aout": 8, "septembre": 9, "octobre": 10, "novembre": 11, "décembre": 12, "decembre": 12,
	// German
	"januar": 1, "jänner": 1, "februar": 2, "märz": 3, "maerz": 3, "juni": 6, "juli": 7,
	"oktober": 10, "dezember": 12,
	// Spanish
	"enero": 1, "febrero": 2, "marzo": 3, "abril": 4, "mayo": 5, "junio": 6, "julio": 7, "agosto": 8,
	"septiembre": 9, "setiembre": 9, "octubre": 10, "noviembre": 11, "diciembre": 12,
	// Italian
	"gennaio": 1, "febbraio": 2, "aprile": 4, "maggio": 5, "giugno": 6, "luglio": 7,
	"settembre": 9, "ottobre": 10, "dicembre": 12,
	// Dutch
	"januari": 1, "februari": 2, "maart": 3, "mei": 5, "augustus": 8,
}

// englishAbbrevs are weekday abbreviations that, in lower case, are
// words ("sat", "sun").
var englishAbbrevs = []string{"sun", "mon", "tue", "tues", "wed", "thu", "thur", "thurs", "fri", "sat"}

// englishMonths are the month names an English date may start with
// ("March 31"); the other languages write the day first.
var englishMonths = []string{"january", "jan", "february", "feb", "march", "mar", "april", "apr", "may",
	"june", "jun", "july", "jul", "august", "aug", "september", "sept", "sep", "october", "oct",
	"november", "nov", "december", "dec"}

// relativeDays are words for a day counted from today.
var relativeDays = map[string]int{
	"today": 0, "tomorrow": 1, "aujourd'hui": 0, "demain": 1, "heute": 0, "hoy": 0, "oggi": 0,
	"domani": 1, "vandaag": 0,
	"the day after tomorrow": 2, "day after tomorrow": 2, "après-demain": 2, "apres-demain": 2,
	"übermorgen": 2, "pasado mañana": 2, "dopodomani": 2, "overmorgen": 2,
}

// numberWords are the hours written as words.
var numberWords = map[string]int{"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
	"eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12}

// unreadWords look like a time or a day the reader does not pin down: a
// draft that uses one fails the check instead of passing unread. Each
// maps to why.
var unreadWords = []struct{ re, why string }{
	{`next\s+(?:` + alt(weekdayNames()) + `)`, "could not tell which week 'next' means"},
	{`(?:next|this|coming|following)\s+(?:week|weekend|month)`, "names a period, not a time"},
	{`(?:the|over\s+the)\s+weekend`, "names a period, not a time"},
	{`end\s+of\s+(?:the\s+)?(?:day|week|month)|eod|eow|cob`, "names a period, not a time"},
	{`in\s+(?:a|one|two|three|four|five|a\s+few|\d+)\s+(?:days?|weeks?)`, "names a period, not a time"},
	{`(?:later|earlier)\s+today`, "names a period, not a time"},
	{`morgen|mañana|manana`, "could not tell 'tomorrow' from 'morning'"},
	{`halb\s+\w+|viertel\s+(?:nach|vor)\s+\w+|dreiviertel\s+\w+`, "a German clock phrase the reader does not read"},
	{`et\s+demie|et\s+quart|moins\s+(?:le\s+)?quart|midi|minuit`, "a French clock phrase the reader does not read"},
	{`y\s+media|y\s+cuarto|menos\s+cuarto|mediodía|mediodia|medianoche`, "a Spanish clock phrase the reader does not read"},
	{`e\s+mezza|e\s+un\s+quarto|meno\s+un\s+quarto|mezzogiorno|mezzanotte`, "an Italian clock phrase the reader does not read"},
	{`(?:vor|nach)mittags?|abends?|nachts|matin(?:ée)?|après-midi|apres-midi|soir(?:ée)?|tarde|noche|mattina|pomeriggio|stasera|stamattina|ochtend|middag|avond`,
		"a part of the day in a language the reader does not read"},
	{`(?:um|à|a\s+las|a\s+la|alle|om|vers|gegen|ab|bis|dès|des)\s+\d{1,2}(?:[.:]\d\d)?`, "a time without its unit, in a language the reader does not read"},
	{`\d{1,2}\s*horas?|ore\s+\d{1,2}`, "a time without its unit, in a language the reader does not read"},
	{`\d{1,2}\s*[-–—]\s*\d{1,2}`, "could not tell a time range from other numbers"},
	{`\d{1,2}\s*-?\s*ish|half\s+(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|\d{1,2})`, "a time the reader does not read"},
	{`uhr|heures?|o'?\s?clock|horas?|uur`, "a time the reader does not read"},
	{`\d{1,2}\s+on`, "a bare number before a day: a time or a date?"},
	{`(?:days?|weeks?)\s+from\s+(?:now|today)`, "names a period, not a time"},
	{`any\s*time|whenever|any\s+(?:day|weekday|morning|afternoon|evening)`, "offers any time, not a time the calendar has free"},
	{`(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)\s+(?:fifteen|thirty|forty-five|forty\s+five|o\s+clock)`, "a time written in words the reader does not read"},
}

func weekdayNames() []string {
	var out []string
	for w := range weekdays {
		out = append(out, w)
	}
	return out
}

// alt joins words for a regexp alternation, longest first so that
// "tuesday" wins over "tue".
func alt(words []string) string {
	s := make([]string, 0, len(words))
	for _, w := range words {
		s = append(s, regexp.QuoteMeta(w))
	}
	sort.Slice(s, func(i, j int) bool { return len(s[i]) > len(s[j]) || len(s[i]) == len(s[j]) && s[i] < s[j] })
	return strings.Join(s, "|")
}

func monthNames() []string {
	var out []string
	for m := range months {
		out = append(out, m)
	}
	return out
}

func relativeNames() []string {
	var out []string
	for m := range relativeDays {
		out = append(out, m)
	}
	return out
}

type mentionREs struct {
	iso, dmy, dmSlash, monthDay, dayMonth, ordinal, weekday, relative  *scanRE
	rangeSuffix, clock, hourUnit, ampm, wordTime, noon, atHour, period *scanRE
	monthAlone                                                         *scanRE
	zone                                                               *regexp.Regexp
	unread                                                             []*scanRE
}

// Names are matched without \b (Go's \b knows only ASCII letters, and
// "lunedì" ends in one it does not know); nameAt checks the boundaries.

var mentionPatterns = sync.OnceValue(func() *mentionREs {
	mon := `(` + alt(monthNames()) + `)\.?`
	enMon := `(` + alt(englishMonths) + `)\.?`
	year := `(?:,?\s+(20\d\d))?`
	ap := `(am|pm|a\.m\.|p\.m\.)`
	hourWord := `(one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|1[0-2]|0?[1-9])`
	r := &mentionREs{
		iso:      mustScanRE(`\b(20\d\d)[-/](\d{1,2})[-/](\d{1,2})\b`),
		dmy:      mustScanRE(`\b(\d{1,2})\.(\d{1,2})\.(20\d\d)?`),
		dmSlash:  mustScanRE(`\b(\d{1,2})/(\d{1,2})(?:/(20\d\d|\d\d))?\b`),
		monthDay: mustScanRE(`(?i)` + enMon + `\s+(?:the\s+)?(\d{1,2})(?:st|nd|rd|th)?\b` + year),
		dayMonth: mustScanRE(`(?i)\b(\d{1,2})(?:st|nd|rd|th|er|\.)?(?:\s+(?:of|de|di))?\s+` + mon + year),
		ordinal:  mustScanRE(`(?i)\b(?:the\s+)?(\d{1,2})(st|nd|rd|th)\b`),
		weekday:  mustScanRE(`(?i)(` + alt(weekdayNames()) + `)\.?`),
		relative: mustScanRE(`(?i)(` + strings.ReplaceAll(alt(relativeNames()), " ", `\s+`) + `)`),
		// "10–11am", "9-10 Uhr", "14 – 15h": the unit of the end is the
		// unit of the start.
		rangeSuffix: mustScanRE(`(?i)\b([01]?\d|2[0-3])(?:[:.]([0-5]\d))?\s*(?:-|–|—|to|until|till|bis)\s*([01]?\d|2[0-3])(?:[:.]([0-5]\d))?\s*` +
			`(am\b|pm\b|a\.m\.|p\.m\.|uhr\b|h\b|heures?\b)`),
		clock: mustScanRE(`\b([01]?\d|2[0-3])[:.h]([0-5]\d)\b(?:\s*(?i:(am|pm|a\.m\.|p\.m\.)|uhr\b|h\b))?`),
		// "10h", "10 Uhr", "15 heures": a 24-hour clock.
		hourUnit: mustScanRE(`(?i)\b([01]?\d|2[0-3])\s*(?:h|uhr|uur|heures?)\b(?:\s*([0-5]\d)\b)?`),
		ampm:     mustScanRE(`(?i)\b` + hourWord + `\s*` + ap),
		// "half past ten", "quarter to eleven", "ten o'clock", "10 o'clock".
		wordTime: mustScanRE(`(?i)\b(?:(half|quarter)\s+(past|to)\s+` + hourWord + `|` + hourWord + `\s+o'?\s?clock)\b(?:\s*` + ap + `|\s+in\s+the\s+(morning|afternoon|evening))?`),
		noon:     mustScanRE(`(?i)\b(?:12\s+)?(noon|midday|midnight)\b`),
		// "at 10", "around 3": an hour with no unit, read as a working
		// hour (7–11 in the morning, 12 noon, 1–6 in the afternoon).
		atHour: mustScanRE(`(?i)(?:\b(?:at|around|from|after|before|until|till|by|between|and|or|to)|@)\s*` + hourWord + `\b`),
		// A zone written after a time: "10:00 UTC", "3pm (Europe/Berlin)".
		zone:   regexp.MustCompile(`^\s*\(?\s*((?:UTC|GMT)?[+-]\d{1,2}(?::?\d\d)?|UTC|GMT|Z|MEZ|MESZ|[A-Z]{1,4}T|[A-Z][A-Za-z_]+/[A-Za-z_/+-]+)\b\)?`),
		period: mustScanRE(`(?i)\b(good\s+)?(tonight|this\s+(?:morning|afternoon|evening)|(?:in\s+the\s+)?(?:morning|afternoon|evening|lunchtime|lunch\s+time))\b`),
		// A month without a day ("in March") names no day.
		monthAlone: mustScanRE(`(?i)(` + alt(monthNames()) + `)`),
	}
	for _, u := range unreadWords {
		r.unread = append(r.unread, mustScanRE(`(?i)(`+u.re+`)`))
	}
	return r
})
