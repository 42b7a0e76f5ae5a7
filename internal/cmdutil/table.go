package cmdutil

import (
	"fmt"
	"io"
	"strings"

	"github.com/charmbracelet/x/ansi"
)

// Table is a plain-text table whose columns are padded by display width
// (a CJK character or an emoji takes two cells), like the TUI's, where
// text/tabwriter counts runes and misaligns them. Cells must already be
// sanitised (termsafe): they are measured, not escaped.
type Table struct {
	rows [][]string
}

// Row adds one row of cells.
func (t *Table) Row(cells ...string) { t.rows = append(t.rows, cells) }

// Fit makes the table at most width cells wide (0: no limit, as for a
// pipe, where scripts want whole rows). First the columns named in drop
// go, in that order, while the table is too wide; then the columns named
// in shrink are cut, the widest first, down to minShrink cells each,
// their cells ending in "…". The first row is the header.
func (t *Table) Fit(width int, drop, shrink []int) {
	if width <= 0 || len(t.rows) == 0 {
		return
	}
	widths := t.widths()
	total := func() int {
		n := 0
		for i, w := range widths {
			if w >= 0 {
				n += w
				if i < len(widths)-1 {
					n += 2
				}
			}
		}
		return n
	}
	for _, c := range drop {
		if total() <= width {
			break
		}
		widths[c] = -1
	}
	const minShrink = 10
	for total() > width {
		widest := -1
		for _, c := range shrink {
			if widths[c] > minShrink && (widest < 0 || widths[c] > widths[widest]) {
				widest = c
			}
		}
		if widest < 0 {
			break
		}
		widths[widest]--
	}
	for r, row := range t.rows {
		var out []string
		for i, c := range row {
			switch {
			case i < len(widths) && widths[i] < 0:
				continue
			case i < len(widths) && ansi.StringWidth(c) > widths[i]:
				c = Truncate(c, widths[i])
			}
			out = append(out, c)
		}
		t.rows[r] = out
	}
}

// Width is the table's width as Write lays it out.
func (t *Table) Width() int {
	ws := t.widths()
	n := 0
	for i, w := range ws {
		n += w
		if i < len(ws)-1 {
			n += 2
		}
	}
	return n
}

// widths is each column's widest cell.
func (t *Table) widths() []int {
	var widths []int
	for _, r := range t.rows {
		for i, c := range r {
			if i >= len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], ansi.StringWidth(c))
		}
	}
	return widths
}

// Write pads every cell but the last of each row to its column's widest
// cell plus two spaces, as tabwriter.NewWriter(w, 0, 0, 2, ' ', 0) did.
func (t *Table) Write(w io.Writer) error {
	var widths []int
	for _, r := range t.rows {
		for i, c := range r[:max(len(r)-1, 0)] {
			if i >= len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], ansi.StringWidth(c))
		}
	}
	var b strings.Builder
	for _, r := range t.rows {
		for i, c := range r {
			b.WriteString(c)
			if i < len(r)-1 {
				b.WriteString(strings.Repeat(" ", widths[i]-ansi.StringWidth(c)+2))
			}
		}
		b.WriteByte('\n')
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("write table: %w", err)
	}
	return nil
}

// Truncate cuts s to at most n display cells, ending in "…" when cut.
func Truncate(s string, n int) string {
	if ansi.StringWidth(s) <= n {
		return s
	}
	return ansi.Truncate(s, n, "…")
}

// Plural is "1 message", "2 messages".
func Plural(n int, word string) string { return PluralWord(n, word, word+"s") }

// PluralWord is Plural for a word whose plural is not word+"s".
func PluralWord(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}
