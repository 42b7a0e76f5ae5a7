package tui

import (
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/mailagent/mailagent/internal/humantime"
	"github.com/mailagent/mailagent/internal/termsafe"
)

// --- text helpers ----------------------------------------------------------------

// labelIndent lines a wrapped label value up under its first line.
const labelIndent = "            "

// bodyIndent sets message text off from the labels around it.
const bodyIndent = "  "

// wrapIndent wraps already-sanitised one-line text at words so that the
// first line fits in width minus the indent's width (the caller has drawn
// that much already) and each further line starts with indent. Widths are
// display cells (CJK, emoji); a word longer than a line is broken.
func wrapIndent(s string, width int, indent string) string {
	iw := ansi.StringWidth(indent)
	if width-iw < 8 || ansi.StringWidth(s) <= width-iw {
		return s
	}
	return strings.ReplaceAll(ansi.Wrap(s, width-iw, ""), "\n", "\n"+indent)
}

// wrapBody indents sanitised multi-line text by bodyIndent and wraps each
// line at words to width cells, continuation lines indented alike.
func wrapBody(s string, width int) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if l == "" {
			continue
		}
		lines[i] = bodyIndent + wrapIndent(l, width, bodyIndent)
	}
	return strings.Join(lines, "\n")
}

// clean makes untrusted one-line text safe to draw (termsafe.Line): escape
// sequences and other control characters from a hostile email could
// otherwise drive the terminal. Line breaks and tabs become spaces.
func clean(s string) string {
	if cleanOff.Load() {
		return s
	}
	return termsafe.Line(s)
}

// cleanText is clean for multi-line text (termsafe.Text): it keeps line
// breaks and turns tabs into spaces.
func cleanText(s string) string {
	if cleanOff.Load() {
		return s
	}
	return strings.ReplaceAll(termsafe.Text(s), "\t", " ")
}

// editorText is untrusted multi-line text as the inline editor shows
// it (termsafe.Text): line breaks and tabs stay, escape sequences and
// format characters (a bidi override in a draft the model wrote) go.
func editorText(s string) string {
	if cleanOff.Load() {
		return s
	}
	return termsafe.Text(s)
}

// cleanOff switches the TUI's sanitising off: clean, cleanText,
// editorText, quote's escaping and Address.String's termsafe.Address.
// Only the positive controls of the hostile-text tests set it (never
// in parallel, restored before they return), to show the attacks landing
// without them; nothing in the product sets it.
var cleanOff atomic.Bool

// newWarning explains the new-address marks in the detail view.
func newWarning(n int) string {
	if n == 1 {
		return "you have never written to the address marked [new]"
	}
	return fmt.Sprintf("you have never written to the %d addresses marked [new]", n)
}

// newMark prefixes an address the owner has never written to, in every
// mode (the colour is extra).
const newMark = "[new] "

// toCell is the TO column of a row: the first new recipient (else the
// first), by its address alone, marked when any is new, and how many more
// there are.
func toCell(as []Address) (text string, isNew bool) {
	if len(as) == 0 {
		return "", false
	}
	for _, a := range as {
		isNew = isNew || a.New
	}
	first := as[0]
	for _, a := range as {
		if a.New {
			first = a
			break
		}
	}
	text = clean(first.Email) // the address itself: a narrow column would cut it after a name
	if isNew {
		text = newMark + text
	}
	if len(as) > 1 {
		text += fmt.Sprintf(" +%d", len(as)-1)
	}
	return text, isNew
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

// sendWhen describes a sent item's timing: "sending in 1m20s" while it can
// still be cancelled, else "sent 5m ago".
func sendWhen(now time.Time, it *Item) string {
	if it.Status != StatusSent && it.SendAt.After(now) {
		return "sending in " + countdown(it.SendAt.Sub(now))
	}
	t := sentTime(it)
	if t.IsZero() {
		return it.Status
	}
	a := humantime.Age(now, t)
	if a == "now" {
		return "sent just now"
	}
	return "sent " + a + " ago"
}

// ago is age as a phrase: "just now", "5m ago".
func ago(now, t time.Time) string {
	a := humantime.Age(now, t)
	switch a {
	case "now":
		return "just now"
	case "-":
		return a
	}
	return a + " ago"
}

// countdown formats a remaining duration, rounded up to the second.
func countdown(d time.Duration) string {
	s := int((d + time.Second - 1) / time.Second)
	switch {
	case s >= 3600:
		return fmt.Sprintf("%dh%02dm", s/3600, (s%3600)/60)
	case s >= 60:
		return fmt.Sprintf("%dm%02ds", s/60, s%60)
	default:
		return fmt.Sprintf("%ds", s)
	}
}
