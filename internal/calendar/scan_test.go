package calendar

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// scanTexts are texts every scanRE must read as its regexp does: mail,
// the hostile text of TestMentionsHostileText, and the corners of the
// scan (case folding beyond ASCII, invalid bytes, words split by
// neighbours, text edges).
var scanTexts = []string{
	"",
	"Re: Meeting next week?\nHi Ada,\n\nCould we meet to go over the Q3 budget? I'm free Tuesday afternoon or Wednesday 1 April between 10 and 12. " +
		"If that doesn't work, Thursday at 3pm is fine too. The report is 25 pages and covers 2025-2026; I'll bring 3 copies.\n\nThanks,\nCarol\n\n" +
		"On Mon, 23 Mar 2026 at 09:14, Ada <ada@example.com> wrote:\n> Happy to meet. Let me know what suits you.\n> Best, Ada\n",
	strings.Repeat("Tuesday 10:00 next Monday 3/4 halb elf, 9-10 between 2 and 3 the 27th. ", 20),
	"mardi 31 mars à 10h15, Montag um 10 Uhr, miércoles 1 de abril a las 10, lunedì alle 9, maandag om 10 uur",
	"ſunday ſaturday \u212Aeep MONDAY Tue. tues. THURS. wed; fri, sat sun mon",
	"Samstag Sonntag sonnabend Übermorgen übermorgen PASADO   MAÑANA pasado\tmañana the  day\nafter tomorrow après-demain",
	"\xffMontag\xe0 um 10 Uhr\xff", "lunedì\xe0", "\xe2\x82tuesday", "tuesday\xe2\x82", "x\u0301monday",
	"Mondays monday_ _monday 1monday monday1 montag-morgen vormittags nachmittag abends nachts matinée soirée",
	"half past ten, quarter to eleven, ten o'clock, ten o clock, 10 oclock, twelve thirty, one fifteen, any time, whenever, anytime",
	"in a few days, in 3 weeks, in two days, later today, earlier today, end of the week, EOD, cob, the weekend, over the weekend",
	"next Tuesday, this week, coming month, following weekend, 2 weeks from now, a day from today",
	"at 10, around 3, from 2 to 4pm, by 5, @9, until 17:30, tonight, this morning, good morning, in the evening, lunch time, lunchtime",
	"et demie, et quart, moins le quart, midi, minuit, y media, y cuarto, menos cuarto, mediodía, medianoche, e mezza, e un quarto, mezzogiorno",
	"March, march 31, MARCH 31st, the 31st of March, 31 mars, 31. März, 31 de marzo, in August, august, Sept. 9, sep 9 2026, May",
	"um 10, à 10, a las 10, a la 1, alle 9, om 10, vers 10, gegen 10, ab 10, bis 10, dès 10, des 10, 10 horas, ore 10, 10 heures",
	"mon\u00adday, mon\u200bday, Mon-day, Tu\u0065sday, ｍｏｎｄａｙ", "sunday", "monday.", "s", "ſ", "\u212A",
}

func allScanREs() map[string]*scanRE {
	p := mentionPatterns()
	res := map[string]*scanRE{"iso": p.iso, "dmy": p.dmy, "dmSlash": p.dmSlash, "monthDay": p.monthDay, "dayMonth": p.dayMonth,
		"ordinal": p.ordinal, "weekday": p.weekday, "relative": p.relative, "rangeSuffix": p.rangeSuffix, "clock": p.clock,
		"hourUnit": p.hourUnit, "ampm": p.ampm, "wordTime": p.wordTime, "noon": p.noon, "atHour": p.atHour, "period": p.period,
		"monthAlone": p.monthAlone}
	for i, u := range p.unread {
		res[fmt.Sprintf("unread %d (%s)", i, unreadWords[i].why)] = u
	}
	return res
}

// TestScanREMatchesRegexp: every pattern of Mentions finds, through its
// scanRE, what its regexp finds; and the scan is used (has starts) for
// the patterns of words, where it saves the most.
func TestScanREMatchesRegexp(t *testing.T) {
	t.Parallel()
	for name, s := range allScanREs() {
		for _, text := range scanTexts {
			want := s.re.FindAllStringSubmatchIndex(text, -1)
			if got := s.FindAllStringSubmatchIndex(text); !reflect.DeepEqual(got, want) {
				t.Errorf("%s over %q: got %v, want %v", name, text, got, want)
			}
		}
	}
	p := mentionPatterns()
	for name, s := range map[string]*scanRE{"weekday": p.weekday, "monthAlone": p.monthAlone, "relative": p.relative, "monthDay": p.monthDay, "period": p.period} {
		if s.starts == nil {
			t.Errorf("%s: no starts, the regexp runs over all of the text", name)
		}
	}
}

func FuzzScanRE(f *testing.F) {
	for _, s := range scanTexts {
		f.Add(s)
	}
	res := allScanREs()
	f.Fuzz(func(t *testing.T, text string) {
		for name, s := range res {
			want := s.re.FindAllStringSubmatchIndex(text, -1)
			if got := s.FindAllStringSubmatchIndex(text); !reflect.DeepEqual(got, want) {
				t.Errorf("%s over %q: got %v, want %v", name, text, got, want)
			}
		}
	})
}
