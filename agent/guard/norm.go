package guard

import (
	"regexp"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
	"mvdan.cc/xurls/v2"
)

// This file turns outbound (and trusted) text into the canonical form the
// output guard checks: what a reader would take the text to say, whatever
// characters were used to write it. Every byte of the canonical text keeps
// the span of the original it came from, so that a problem can quote what
// was actually written.

// ntext is normalised text with, for each of its bytes, the byte span of
// the original text it came from.
type ntext struct {
	orig       string // the text as written
	s          string // the text as read
	start, end []int  // for each byte of s, its span in orig
}

// source returns the original text behind s[i:j], with the characters
// dropped right before and after it (a direction override, a zero-width
// space), so that a quote shows them.
func (t ntext) source(i, j int) string {
	if i >= j || j > len(t.s) {
		return ""
	}
	a, b := t.start[i], t.end[j-1]
	switch {
	case i == 0:
		a = 0
	case t.end[i-1] <= a:
		a = t.end[i-1]
	}
	switch {
	case j == len(t.s):
		b = len(t.orig)
	case t.start[j] >= b:
		b = t.start[j]
	}
	if a > b || b > len(t.orig) {
		return ""
	}
	return t.orig[a:b]
}

type nbuilder struct {
	b          []byte
	start, end []int
}

func (nb *nbuilder) add(s string, from, to int) {
	for i := 0; i < len(s); i++ {
		nb.b = append(nb.b, s[i])
		nb.start = append(nb.start, from)
		nb.end = append(nb.end, to)
	}
}

// keep copies t.s[i:j] with its own spans.
func (nb *nbuilder) keep(t ntext, i, j int) {
	nb.b = append(nb.b, t.s[i:j]...)
	nb.start = append(nb.start, t.start[i:j]...)
	nb.end = append(nb.end, t.end[i:j]...)
}

func (nb *nbuilder) text(orig string) ntext {
	return ntext{orig: orig, s: string(nb.b), start: nb.start, end: nb.end}
}

// piece is one part of a replacement: either t.s[a:b] kept as it is, or
// the text s standing for t.s[a:b].
type piece struct {
	s    string
	a, b int
	keep bool
}

// replace rewrites every match of re with the pieces f returns (nil keeps
// the match unchanged).
func (t ntext) replace(re *regexp.Regexp, f func(t ntext, m []int) []piece) ntext {
	ms := re.FindAllStringSubmatchIndex(t.s, -1)
	if len(ms) == 0 {
		return t
	}
	var nb nbuilder
	last := 0
	for _, m := range ms {
		ps := f(t, m)
		if ps == nil {
			continue
		}
		nb.keep(t, last, m[0])
		for _, p := range ps {
			switch {
			case p.keep:
				nb.keep(t, p.a, p.b)
			case p.a < p.b:
				nb.add(p.s, t.start[p.a], t.end[p.b-1])
			case p.a < len(t.s):
				nb.add(p.s, t.start[p.a], t.start[p.a])
			default:
				nb.add(p.s, len(t.orig), len(t.orig))
			}
		}
		last = m[1]
	}
	nb.keep(t, last, len(t.s))
	return nb.text(t.orig)
}

// normalize is the first step: NFKC, then format characters (Unicode
// category Cf: zero-width characters, bidi controls, soft hyphens, tags),
// combining marks, fillers and invalid bytes dropped; other spaces,
// dashes, dots, slashes and colons of every script mapped to their ASCII
// counterparts; decimal digits of every script folded to 0-9.
func normalize(s string) ntext {
	var nb nbuilder
	nb.b = make([]byte, 0, len(s))
	nb.start = make([]int, 0, len(s))
	nb.end = make([]int, 0, len(s))
	var it norm.Iter
	it.InitString(norm.NFKC, s)
	var tmp [utf8.UTFMax]byte
	for !it.Done() {
		from := it.Pos()
		seg := it.Next()
		to := it.Pos()
		for len(seg) > 0 {
			r, size := utf8.DecodeRune(seg)
			seg = seg[size:]
			if r == utf8.RuneError && size <= 1 {
				continue // invalid byte: dropped, like an invisible character
			}
			orig := r
			r = foldRune(r)
			if r < 0 {
				continue
			}
			if r == '.' && (orig != '.' || s[from:to] != ".") {
				nb.add(string(foreignDot), from, to)
				continue
			}
			n := utf8.EncodeRune(tmp[:], r)
			nb.add(string(tmp[:n]), from, to)
		}
	}
	placeForeignDots(nb.b)
	foldLookalikes(nb.b)
	return nb.text(s)
}

// foreignDot marks, until placeForeignDots decides, a dot of another
// script or width (。 ． ･ · and the like). No other control character
// survives foldRune, so the byte is free.
const foreignDot = '\x01'

// placeForeignDots reads a foreign dot as '.' when it touches a Latin
// letter or a digit ("evil。test", "ｅｖｉｌ．ｔｅｓｔ"), and as a space
// when it sits between words of its own script: "谢谢。公司会回复" or
// "ありがとうございます。ポイントは…" are sentences, not the domain names
// they would make with a '.' (公司 and ポイント are top-level domains).
// The price is that a link written wholly in such a script with such a
// dot is not seen as one.
func placeForeignDots(b []byte) {
	alnum := func(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
	for i, c := range b {
		if c != foreignDot {
			continue
		}
		if i > 0 && alnum(b[i-1]) || i+1 < len(b) && alnum(b[i+1]) {
			b[i] = '.'
		} else {
			b[i] = ' '
		}
	}
}

// foldRune maps one rune of NFKC text to the rune the guard reads, or -1
// to drop it.
func foldRune(r rune) rune {
	switch {
	case r == '\n' || r == '\t' || r == ' ':
		return r
	case r < 0x80 && r >= 0x20 && r != 0x7f:
		return r
	case r == '\r' || r == '\u2028' || r == '\u2029':
		return '\n'
	case unicode.In(r, unicode.Cf, unicode.Mn, unicode.Me) || invisible(r):
		return -1
	case unicode.Is(unicode.Cc, r):
		return ' '
	case unicode.Is(unicode.Zs, r):
		return ' '
	case unicode.Is(unicode.Pd, r) || r == '\u2212' || r == '\u2043' || r == '\uFE63' || r == '\uFF0D':
		return '-'
	case unicode.Is(unicode.Nd, r):
		return '0' + digitValue(r)
	}
	switch r {
	case '\u3002', '\uFF61', '\uFE12', '\u06D4', '\u0701', '\u0702', '\u2E3C', '\u00B7', '\u0387',
		'\u2024', '\uFE52', '\u0589', '\u1362', '\u1803', '\u30FB', '\uFF65', '\u2027', '\u22C5',
		'\u2219', '\uA60E', '\u0964', '\u2E2E':
		return '.'
	case '\u2215', '\u2044', '\u29F8', '\uFF0F', '\u2571':
		return '/'
	case '\u2236', '\uA789', '\uFF1A', '\u02D0':
		return ':'
	case '\uFE6B', '\uFF20':
		return '@'
	}
	return r
}

// invisible reports characters that render as nothing (or as blank) but
// are not in category Cf.
func invisible(r rune) bool {
	switch r {
	case '\u115F', '\u1160', '\u3164', '\uFFA0', '\u2800', '\u180E', '\u17B4', '\u17B5', '\uFFFC':
		return true
	}
	return false
}

// digitValue returns the value of a decimal digit (category Nd) of any
// script. Unicode encodes every such digit in a contiguous run of ten,
// from zero to nine, so the value is the offset in the run (ranges in the
// Nd table are whole runs of ten, possibly several together).
func digitValue(r rune) rune {
	for _, rg := range unicode.Nd.R16 {
		if r >= rune(rg.Lo) && r <= rune(rg.Hi) && rg.Stride == 1 {
			return (r - rune(rg.Lo)) % 10
		}
	}
	for _, rg := range unicode.Nd.R32 {
		if r >= rune(rg.Lo) && r <= rune(rg.Hi) && rg.Stride == 1 {
			return (r - rune(rg.Lo)) % 10
		}
	}
	return 0
}

// foldLookalikes rewrites, in place, letters that stand for digits in a
// number: O and o for 0, I, l and | for 1. A word made only of digits and
// those letters is folded when it has a digit ("O1O", "2O26"), or when it
// is at least two characters long and next to a number ("555 OlO 9999").
// Ordinary words ("I", "Oil", "lol") are left alone.
func foldLookalikes(b []byte) {
	type word struct {
		i, j      int
		hasDigit  bool
		lookalike bool
	}
	var words []word
	for i := 0; i < len(b); {
		if !isLookalikeByte(b[i]) || (i > 0 && isWordByte(b[i-1])) {
			i++
			continue
		}
		j := i
		w := word{i: i}
		for j < len(b) && isLookalikeByte(b[j]) {
			if b[j] >= '0' && b[j] <= '9' {
				w.hasDigit = true
			} else {
				w.lookalike = true
			}
			j++
		}
		w.j = j
		if j == len(b) || !isWordByte(b[j]) {
			words = append(words, w)
		}
		i = j
	}
	near := func(a, b2 word) bool { // a before b2, separated by one to three separators
		gap := string(b[a.j:b2.i])
		return len(gap) >= 1 && len(gap) <= 3 && strings.Trim(gap, " -./()") == ""
	}
	for k, w := range words {
		if !w.lookalike {
			continue
		}
		fold := w.hasDigit
		if !fold && w.j-w.i >= 2 {
			fold = (k > 0 && words[k-1].hasDigit && near(words[k-1], w)) ||
				(k+1 < len(words) && words[k+1].hasDigit && near(w, words[k+1]))
		}
		if !fold {
			continue
		}
		for i := w.i; i < w.j; i++ {
			switch b[i] {
			case 'O', 'o':
				b[i] = '0'
			case 'I', 'l', '|':
				b[i] = '1'
			}
		}
	}
}

func isLookalikeByte(c byte) bool {
	return c >= '0' && c <= '9' || c == 'O' || c == 'o' || c == 'I' || c == 'l' || c == '|'
}

// isWordByte reports a byte that continues a word: an ASCII letter or
// digit, or part of a non-ASCII character (letters of other scripts).
func isWordByte(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

// Patterns that undo obfuscation, compiled on first use.
type deobREs struct {
	hxxp, bracketDot, bracketAt, bracketColon, bracketSlash, spaced, spacedDot *regexp.Regexp
	tlds                                                                       map[string]bool
}

var deobPatterns = sync.OnceValue(func() *deobREs {
	const hs = `[ \t]`
	const open, closing = `[\[({<]`, `[\])}>]`
	label := `[\p{L}\p{N}](?:[\p{L}\p{N}\-]*[\p{L}\p{N}])?`
	local := `[\p{L}\p{N}._%+\-]+`
	d := &deobREs{
		hxxp:         regexp.MustCompile(`(?i)\bh(?:xx|\*\*|__)p(s?)(` + hs + `*(?:` + open + hs + `*:` + hs + `*` + closing + `|:)` + hs + `*(?:` + open + hs + `*//` + hs + `*` + closing + `|//))?`),
		bracketDot:   regexp.MustCompile(`(?i)` + hs + `*` + open + hs + `*(?:\.|dot|punkt|period)` + hs + `*` + closing + hs + `*`),
		bracketAt:    regexp.MustCompile(`(?i)` + hs + `*` + open + hs + `*(?:@|at)` + hs + `*` + closing + hs + `*`),
		bracketColon: regexp.MustCompile(open + hs + `*:` + hs + `*` + closing),
		bracketSlash: regexp.MustCompile(`(?i)` + open + hs + `*(?:/|//|slash)` + hs + `*` + closing),
		spaced: regexp.MustCompile(`(?i)(?:(` + local + `)(` + hs + `+at` + hs + `+|` + hs + `*@` + hs + `*))?(` +
			label + `(?:(?:\.|` + hs + `+dot` + hs + `+)` + label + `)+)`),
		spacedDot: regexp.MustCompile(`(?i)` + hs + `+dot` + hs + `+`),
		tlds:      map[string]bool{},
	}
	for _, tld := range xurls.TLDs {
		d.tlds[strings.ToLower(tld)] = true
	}
	for _, tld := range xurls.PseudoTLDs {
		d.tlds[tld] = true
	}
	return d
})

// spacedDotStop are words after which " dot " is the English word
// ("on the dot at 9", "a polka dot dress"), not an obfuscated dot.
var spacedDotStop = map[string]bool{
	"the": true, "a": true, "an": true, "on": true, "that": true, "this": true, "one": true, "each": true,
	"every": true, "polka": true, "single": true, "tiny": true, "small": true, "little": true, "big": true,
	"red": true, "blue": true, "green": true, "black": true, "white": true, "yellow": true, "no": true, "per": true,
	"and": true, "or": true, "with": true, "to": true, "for": true, "from": true, "by": true, "of": true, "in": true,
	"at": true, "is": true, "was": true, "me": true, "you": true, "we": true, "i": true, "my": true, "your": true,
}

// deobfuscate rewrites the forms people use to hide links and addresses
// from filters: hxxp and h**p schemes; [.] (dot) {dot} <.>; [at] (@);
// [:] and [/]; and the spaced "pay at evil dot test" form, which is only
// read as an address when the domain ends with a known top-level domain.
func deobfuscate(t ntext) ntext {
	p := deobPatterns()
	lower := strings.ToLower(t.s)
	// Each pattern runs only when the text holds what it needs; most
	// replies hold none of it.
	if strings.Contains(lower, "xxp") || strings.Contains(lower, "**p") || strings.Contains(lower, "__p") {
		t = t.replace(p.hxxp, func(t ntext, m []int) []piece {
			s := "http" + t.s[m[2]:m[3]]
			if m[4] >= 0 {
				s += "://"
			}
			return []piece{{s: s, a: m[0], b: m[1]}}
		})
	}
	if hasBracketForm(lower) {
		t = t.replace(p.bracketDot, func(t ntext, m []int) []piece { return []piece{{s: ".", a: m[0], b: m[1]}} })
		t = t.replace(p.bracketAt, func(t ntext, m []int) []piece { return []piece{{s: "@", a: m[0], b: m[1]}} })
		t = t.replace(p.bracketColon, func(t ntext, m []int) []piece { return []piece{{s: ":", a: m[0], b: m[1]}} })
		t = t.replace(p.bracketSlash, func(t ntext, m []int) []piece {
			if strings.Contains(t.s[m[0]:m[1]], "//") {
				return []piece{{s: "//", a: m[0], b: m[1]}}
			}
			return []piece{{s: "/", a: m[0], b: m[1]}}
		})
	}
	if strings.Contains(t.s, "@") || hasSpacedWord(lower, "at") || hasSpacedWord(lower, "dot") {
		t = t.replace(p.spaced, func(t ntext, m []int) []piece { return spacedPieces(t, m, p) })
	}
	return t
}

// hasBracketForm reports an opening bracket followed (after spaces) by a
// character or word the bracket patterns replace.
func hasBracketForm(lower string) bool {
	for i := 0; i < len(lower); i++ {
		switch lower[i] {
		case '[', '(', '{', '<':
		default:
			continue
		}
		rest := strings.TrimLeft(lower[i+1:], " \t")
		if rest == "" {
			continue
		}
		switch rest[0] {
		case '.', '@', ':', '/':
			return true
		}
		for _, w := range []string{"dot", "at", "punkt", "period", "slash"} {
			if strings.HasPrefix(rest, w) {
				return true
			}
		}
	}
	return false
}

// hasSpacedWord reports w standing alone between spaces or tabs in lower.
func hasSpacedWord(lower, w string) bool {
	for i := 0; ; {
		k := strings.Index(lower[i:], w)
		if k < 0 {
			return false
		}
		k += i
		e := k + len(w)
		if k > 0 && (lower[k-1] == ' ' || lower[k-1] == '\t') && e < len(lower) && (lower[e] == ' ' || lower[e] == '\t') {
			return true
		}
		i = k + 1
	}
}

// spacedPieces decides one match of the spaced pattern: groups 1 (local
// part), 2 (the "at" or "@"), 3 (the domain with "." or " dot ").
func spacedPieces(t ntext, m []int, p *deobREs) []piece {
	dom := t.s[m[6]:m[7]]
	seps := p.spacedDot.FindAllStringIndex(dom, -1)
	labels := strings.Split(p.spacedDot.ReplaceAllString(dom, "."), ".")
	validTLD := p.tlds[strings.ToLower(labels[len(labels)-1])]
	convertDots := len(seps) > 0 && validTLD
	if convertDots {
		for _, sp := range seps {
			before := dom[:sp[0]]
			if k := strings.LastIndexAny(before, ". \t"); k >= 0 {
				before = before[k+1:]
			}
			if spacedDotStop[strings.ToLower(before)] {
				convertDots = false
			}
		}
	}
	var ps []piece
	atChanged := false
	if m[2] >= 0 {
		ps = append(ps, piece{a: m[2], b: m[3], keep: true})
		at := t.s[m[4]:m[5]]
		switch {
		case strings.TrimSpace(at) == "@":
			ps = append(ps, piece{s: "@", a: m[4], b: m[5]})
			atChanged = at != "@"
		default:
			// " at " is read as @ only before a domain that was itself
			// disguised ("pay at evil dot test", "pay at evil[.]test"); "the
			// agenda is at docs.example.org" stays a sentence.
			disguised := convertDots || (validTLD && t.source(m[6], m[7]) != t.s[m[6]:m[7]])
			if disguised {
				ps = append(ps, piece{s: "@", a: m[4], b: m[5]})
				atChanged = true
			} else {
				ps = append(ps, piece{a: m[4], b: m[5], keep: true})
			}
		}
	}
	if !convertDots {
		if !atChanged {
			return nil
		}
		return append(ps, piece{a: m[6], b: m[7], keep: true})
	}
	last := m[6]
	for _, sp := range seps {
		ps = append(ps, piece{a: last, b: m[6] + sp[0], keep: true}, piece{s: ".", a: m[6] + sp[0], b: m[6] + sp[1]})
		last = m[6] + sp[1]
	}
	return append(ps, piece{a: last, b: m[7], keep: true})
}
