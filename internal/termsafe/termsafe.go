// Package termsafe makes untrusted text safe to print on a terminal.
//
// Everything that comes from mail (subjects, names, addresses, bodies),
// from the model (summaries, drafts, rationales) or from a server (greeting
// lines, error texts) is untrusted: printed raw, an escape sequence in it
// can set the window title, clear the screen, move the cursor over other
// rows, define hyperlinks or, on some terminals, answer back to the shell;
// a bidi override can reverse an address so that it reads as another.
//
// The contract: the output of [Line] and [Text] contains
//
//   - no C0 control character (U+0000–U+001F), except '\n' and '\t' from
//     Text; '\r' never survives (Text turns CRLF and lone CR into '\n');
//   - no DEL (U+007F) and no C1 control (U+0080–U+009F), whether it came
//     as a UTF-8 rune or as a raw 8-bit byte;
//   - no escape sequence: ESC, CSI, OSC, DCS, SOS, PM and APC sequences
//     are removed whole, parameters and payload included (7-bit and 8-bit
//     introducers alike), so "\x1b]0;pwned\x07" leaves nothing behind. A
//     string sequence that is never terminated removes the rest of the
//     string, as a terminal would swallow it;
//   - no Unicode format character (category Cf): bidi embeddings,
//     overrides and isolates (U+202A–U+202E, U+2066–U+2069), marks
//     (U+200E, U+200F, U+061C), zero-width space and joiners, soft hyphen,
//     word joiner, BOM, tag characters; nor the blank Hangul fillers
//     (U+115F, U+1160, U+3164, U+FFA0) that render as nothing;
//   - valid UTF-8 only (invalid bytes that are not C1 are dropped).
//
// U+2028 and U+2029 count as line breaks. Line turns every line break and
// tab into one space. Nothing else is changed: printable text, including
// '@', quotes and brackets, passes through untouched. A consequence worth
// knowing: emoji built with zero-width joiners are shown as their parts.
//
// Sanitise before truncating or padding: a cut made first could split a
// sequence and leave its tail printable, or its head live.
//
// JSON output is left exact: encoding/json writes every control character
// below U+0020 as \u00XX (ESC as \u001b) and U+2028/U+2029 as escapes, so
// no 7-bit escape sequence reaches a terminal that shows it. It writes C1
// runes and bidi characters as they are; --json is for programs.
//
// The functions are pure and safe for concurrent use.
package termsafe

import (
	"strings"
	"sync/atomic"
	"unicode"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"
)

// Line sanitises s for a single line: line breaks and tabs become spaces.
func Line(s string) string { return clean(s, false) }

// Text sanitises multi-line s: it keeps '\n' and '\t' (CRLF and lone CR
// become '\n').
func Text(s string) string { return clean(s, true) }

// Lines sanitises each string with Line, in place, and returns ss.
func Lines(ss []string) []string {
	for i := range ss {
		ss[i] = Line(ss[i])
	}
	return ss
}

// Safe reports whether s is already what Line (multiline false) or Text
// (multiline true) would return, so a caller can skip the copy.
func Safe(s string, multiline bool) bool {
	for i, r := range s {
		if r == utf8.RuneError {
			if _, n := utf8.DecodeRuneInString(s[i:]); n <= 1 {
				return false
			}
		}
		if drop(r) || r == '\r' || r == '\u2028' || r == '\u2029' {
			return false
		}
		if (r == '\n' || r == '\t') && !multiline {
			return false
		}
	}
	return true
}

// cleanOff makes Line and Text (and so Lines) return their input as it
// is. It exists only for the positive controls of the hostile-text tests
// (package termsafe): nothing in the product sets it. Never from a
// parallel test.
var cleanOff atomic.Bool

func clean(s string, multiline bool) string {
	if cleanOff.Load() || Safe(s, multiline) {
		return s
	}
	s = ansi.Strip(sevenBit(s))
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		i += n
		switch {
		case r == utf8.RuneError && n <= 1:
			// invalid byte left over: drop it
		case r == '\r':
			// CRLF and lone CR are one line break (a lone CR would
			// let the text after it overprint the text before).
			if i < len(s) && s[i] == '\n' {
				i++
			}
			b.WriteByte(lineBreak(multiline))
		case r == '\n' || r == '\u2028' || r == '\u2029':
			b.WriteByte(lineBreak(multiline))
		case r == '\t':
			if multiline {
				b.WriteByte('\t')
			} else {
				b.WriteByte(' ')
			}
		case drop(r):
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func lineBreak(multiline bool) byte {
	if multiline {
		return '\n'
	}
	return ' '
}

// drop reports the runes removed outright (line breaks and tabs are
// handled by the caller).
func drop(r rune) bool {
	switch {
	case r == '\n' || r == '\t':
		return false
	case r < 0x20, r >= 0x7f && r <= 0x9f:
		return true
	case unicode.Is(unicode.Cf, r):
		return true
	case r == '\u115f', r == '\u1160', r == '\u3164', r == '\uffa0':
		return true
	}
	return false
}

// sevenBit rewrites C1 controls, whether UTF-8 runes (U+0080–U+009F) or
// raw bytes, as their 7-bit equivalents (ESC followed by r-0x40), so that
// ansi.Strip removes a sequence they introduce whole: "\u009b2J" becomes
// "\x1b[2J", which Strip removes, rather than "2J".
func sevenBit(s string) string {
	var b strings.Builder
	changed := false
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		c := -1
		switch {
		case r == utf8.RuneError && n == 1 && s[i] >= 0x80 && s[i] <= 0x9f:
			c = int(s[i])
		case r >= 0x80 && r <= 0x9f:
			c = int(r)
		}
		if c >= 0 {
			if !changed {
				b.Grow(len(s) + 8)
				b.WriteString(s[:i])
				changed = true
			}
			b.WriteByte(0x1b)
			b.WriteByte(byte(c - 0x40))
		} else if changed {
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	if !changed {
		return s
	}
	return b.String()
}
