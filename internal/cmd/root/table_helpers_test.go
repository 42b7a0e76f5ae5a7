package root

import (
	"strings"

	"github.com/charmbracelet/x/ansi"
)

// displayColAt is the display column where needle starts in line, -1 if
// absent: the tables of queue list and contacts list are checked with it.
func displayColAt(line, needle string) int {
	i := strings.Index(line, needle)
	if i < 0 {
		return -1
	}
	return ansi.StringWidth(line[:i])
}

// wideSubjects are texts whose display width is not their length, for the
// tables' alignment tests.
var wideSubjects = []string{
	"会議の時間について",        // CJK: two cells per character
	"Party 🎉🎂 tonight", // emoji
	"plain ascii subject",
	"한국어 제목 🇰🇷 mixed",
}
