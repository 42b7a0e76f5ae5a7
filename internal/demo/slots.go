package demo

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"
)

// freeSlot is one free slot the drafting prompt offers.
type freeSlot struct {
	text  string    // its start as the slot list writes it: "Tue 24 Nov 2026 10:00"
	zone  string    // the zone name in brackets: "UTC"
	start time.Time // text, parsed (wall clock, zone ignored)
}

var (
	// freeTimeHeader opens the prompt's list of free slots (prompts/draft.tmpl).
	freeTimeHeader = "free time, computed from the owner's calendar"
	// slotLine is one line of calendar.FormatSlots: "Tue 24 Nov 2026 10:00–12:00 (UTC)".
	slotLine = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^((?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2})–\d{2}:\d{2} \(([^()\s]+)\)$`)
	})
)

// freeSlots reads the free slots listed after the free-time header, in
// the prompt's trusted text only: a fenced block (an email, its thread)
// cannot offer a slot, whatever it says.
func freeSlots(prompt string) []freeSlot {
	var (
		out     []freeSlot
		fence   string
		inSlots bool
	)
	for _, l := range strings.Split(strings.ReplaceAll(prompt, "\r\n", "\n"), "\n") {
		l = strings.TrimSpace(l)
		switch {
		case fence != "":
			if l == fence {
				fence = ""
			}
			continue
		case openFence().MatchString(l):
			fence, inSlots = openFence().FindStringSubmatch(l)[1]+">>>", false
			continue
		case strings.Contains(l, freeTimeHeader):
			inSlots = true
			continue
		case !inSlots:
			continue
		}
		mm := slotLine().FindStringSubmatch(l)
		if mm == nil {
			inSlots = false
			continue
		}
		t, err := time.Parse("Mon 02 Jan 2006 15:04", mm[1])
		if err != nil {
			inSlots = false
			continue
		}
		out = append(out, freeSlot{text: mm[1], zone: mm[2], start: t})
	}
	return out
}

var (
	germanDays = []string{"Sonntag", "Montag", "Dienstag", "Mittwoch", "Donnerstag", "Freitag", "Samstag"}
	frenchDays = []string{"dimanche", "lundi", "mardi", "mercredi", "jeudi", "vendredi", "samedi"}
)

// proposeSlot offers s: in English in the slot list's own words, in
// German and French as a numeric date (31.03.2026 um 10:00), which the
// schedule gate reads as well.
func proposeSlot(lang string, s freeSlot) string {
	date := s.start.Format("02.01.2006")
	clock := s.start.Format("15:04")
	switch lang {
	case "de":
		return fmt.Sprintf("danke für Ihre Nachricht. Ginge es bei Ihnen am %s, %s um %s (%s)? Das ist der erste freie Termin in meinem Kalender.",
			germanDays[s.start.Weekday()], date, clock, s.zone)
	case "fr":
		return fmt.Sprintf("Merci pour votre message. Seriez-vous disponible le %s %s à %s (%s) ? C'est le premier créneau libre de mon agenda.",
			frenchDays[s.start.Weekday()], date, clock, s.zone)
	}
	return fmt.Sprintf("Thanks for checking. Could we do %s (%s) instead? That's the first free slot in my calendar.", s.text, s.zone)
}
