package archtest

import (
	"strings"
	"testing"

	"github.com/mailagent/mailagent/internal/rig/e2e"
)

// maxReadingWords bounds what a newcomer reads of docs/ARCHITECTURE.md:
// ten minutes at about 250 words a minute.
const maxReadingWords = 2500

// readingWords counts the words of an ARCHITECTURE.md a reader reads: all
// of it but the package tables' imports column, which is looked up, not
// read (an index).
func readingWords(md string) int {
	n := 0
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "|") {
			if cells := splitCells(line); len(cells) == 3 {
				line = cells[0] + " " + cells[1]
			}
		}
		n += len(strings.Fields(line))
	}
	return n
}

// TestArchitectureIsShort: docs/ARCHITECTURE.md stays a ten-minute read.
// Detail belongs in the packages' doc comments.
func TestArchitectureIsShort(t *testing.T) {
	t.Parallel()
	n := readingWords(readArchitecture(t, e2e.RepoRoot(t)))
	t.Logf("%d words to read (at most %d)", n, maxReadingWords)
	if n > maxReadingWords {
		t.Errorf("docs/ARCHITECTURE.md has %d words to read, more than %d (ten minutes): move detail into the packages' doc comments", n, maxReadingWords)
	}
	if n < 1000 {
		t.Errorf("counted %d words: the count is broken", n)
	}
}

// TestArchitectureIsShortCatches is the positive control: prose past the
// budget is counted, and so is a long purpose cell; a long imports cell
// is not.
func TestArchitectureIsShortCatches(t *testing.T) {
	t.Parallel()
	table := "| package | purpose | imports |\n|---|---|---|\n| `a` | one two three | `b`, `c`, `d` |\n"
	if got := readingWords(table); got != 8 { // header 2, rule 2, row 4
		t.Errorf("a one-row table: %d words, want 8", got)
	}
	long := strings.Repeat("word ", maxReadingWords+1)
	if got := readingWords(long); got <= maxReadingWords {
		t.Errorf("%d words of prose counted as %d", maxReadingWords+1, got)
	}
	if got := readingWords("| `a` | " + long + " | `b` |"); got <= maxReadingWords {
		t.Errorf("a long purpose cell counted as %d words", got)
	}
	if got := readingWords("| `a` | p | " + strings.Repeat("`x`, ", maxReadingWords+1) + "`y` |"); got != 2 {
		t.Errorf("a long imports cell counted: %d words, want 2", got)
	}
}
