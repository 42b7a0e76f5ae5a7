package calendar

import (
	"regexp"
	"regexp/syntax"
	"slices"
	"unicode"
	"unicode/utf8"
)

// scanRE finds what its regexp finds (FindAllStringSubmatchIndex), without
// running the regexp over all of the text. Most of Mentions' patterns
// hold a word of a long case-insensitive list (weekday and month names in
// six languages, the phrases of the unread list), and Go's regexp tries
// that list at every byte: reading a reply and its thread took tens of
// milliseconds. From the pattern's syntax a scanRE knows
//   - the runes a match can hold (consumable): a match lies within a
//     segment of the text made of them;
//   - literals one of which every match starts with (starts).
//
// It runs the regexp only over the segments in which a start is written
// (a pattern whose matches may start with something other than a letter
// runs over all of the text),
// each with the rune before and after it, so that \b and $ see what they
// see in the whole text. A segment's neighbours cannot be part of a match,
// so the matches in it are the whole text's, and a segment without a
// start holds none. TestScanREMatchesRegexp and FuzzScanRE compare the
// two. A segment is read once, so the work stays linear in the text.
type scanRE struct {
	re *regexp.Regexp // the pattern as written
	// starts holds the literals a match starts with, by the fold key of
	// their first rune (asciiStart: whether any starts with an ASCII
	// rune of that key); nil when the pattern's syntax does not bound
	// them (then re runs over all of the text).
	starts     map[rune][]startLit
	asciiStart [utf8.RuneSelf]bool
	// consumable: the runes a match may hold (ASCII, then the rest as
	// sorted ranges).
	asciiRune [utf8.RuneSelf]bool
	ranges    []rune // lo, hi pairs
}

// startLit is a literal a match may start with.
type startLit struct {
	runes []rune
	// fold: the runes are matched case-insensitively, as (?i) does. A
	// literal made of folded and exact parts is matched folded: a start
	// found in more places is still a start.
	fold bool
}

// Bounds of the starts worked out from a pattern's syntax: a class of
// more runes does not make starts, a start stops growing at maxStartLen
// runes, and a pattern with more starts runs over all of the text.
const (
	maxStartClass = 64
	maxStartLen   = 6
	maxStarts     = 512
)

func mustScanRE(expr string) *scanRE {
	s := &scanRE{re: regexp.MustCompile(expr)}
	tree, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		panic(err) // MustCompile accepted it
	}
	tree = tree.Simplify()
	pre, ok := prefixes(tree)
	if !ok || len(pre) > maxStarts {
		return s
	}
	var cons []rune
	if !consumable(tree, &cons) {
		return s
	}
	for _, p := range pre {
		if len(p.runes) == 0 || !unicode.IsLetter(p.runes[0]) {
			// A match may start anywhere (or be empty); or with a digit
			// or a sign, which are everywhere in dates and times, and
			// there the regexp alone is quicker.
			return s
		}
	}
	s.starts = map[rune][]startLit{}
	for _, p := range pre {
		k := foldKey(p.runes[0])
		s.starts[k] = append(s.starts[k], p.startLit)
	}
	for r := rune(0); r < utf8.RuneSelf; r++ {
		s.asciiStart[r] = len(s.starts[foldKey(r)]) > 0
	}
	slices.Sort(cons)
	for _, r := range slices.Compact(cons) {
		switch {
		case r < utf8.RuneSelf:
			s.asciiRune[r] = true
		case len(s.ranges) > 0 && s.ranges[len(s.ranges)-1] == r-1:
			s.ranges[len(s.ranges)-1] = r
		default:
			s.ranges = append(s.ranges, r, r)
		}
	}
	return s
}

// FindAllStringSubmatchIndex returns what s.re.FindAllStringSubmatchIndex(text, -1)
// returns.
func (s *scanRE) FindAllStringSubmatchIndex(text string) [][]int {
	if s.starts == nil {
		return s.re.FindAllStringSubmatchIndex(text, -1)
	}
	var out [][]int
	prev := 0      // where the rune before the segment starts
	seg := 0       // where the segment starts
	found := false // whether a start is written in the segment
	for p := 0; p <= len(text); {
		if p == len(text) {
			if found {
				out = s.appendSegment(out, text, prev, seg, p, p)
			}
			break
		}
		r, w := utf8.DecodeRuneInString(text[p:])
		if !s.consumes(r) {
			if found {
				out = s.appendSegment(out, text, prev, seg, p, p+w)
			}
			prev, seg, found = p, p+w, false
			p += w
			continue
		}
		if !found && s.startsAt(text, p, r) {
			found = true
		}
		p += w
	}
	return out
}

// appendSegment appends the matches of text[i:j], read within
// text[prev:next] (a rune on each side, where there is one).
func (s *scanRE) appendSegment(out [][]int, text string, prev, i, j, next int) [][]int {
	for _, m := range s.re.FindAllStringSubmatchIndex(text[prev:next], -1) {
		for k := range m {
			if m[k] >= 0 {
				m[k] += prev
			}
		}
		if m[0] >= i && m[1] <= j { // always: the neighbours cannot be matched
			out = append(out, m)
		}
	}
	return out
}

func (s *scanRE) consumes(r rune) bool {
	if r < utf8.RuneSelf {
		return s.asciiRune[r]
	}
	k, _ := slices.BinarySearch(s.ranges, r)
	// ranges are lo, hi pairs: r is in one when it is a bound or falls
	// between a lo (even index) and its hi.
	return k < len(s.ranges) && (s.ranges[k] == r || k%2 == 1)
}

// startsAt reports whether one of s's starts is written at p (r is the
// rune there).
func (s *scanRE) startsAt(text string, p int, r rune) bool {
	if r < utf8.RuneSelf && !s.asciiStart[r] {
		return false
	}
	for _, l := range s.starts[foldKey(r)] {
		if litAt(text, p, l) {
			return true
		}
	}
	return false
}

// litAt reports whether l is written at p, rune by rune as the regexp
// decodes the text.
func litAt(text string, p int, l startLit) bool {
	for _, want := range l.runes {
		if p >= len(text) {
			return false
		}
		r, w := utf8.DecodeRuneInString(text[p:])
		if r != want && (!l.fold || !sameFold(r, want)) {
			return false
		}
		p += w
	}
	return true
}

// sameFold reports whether a and b are one letter under Unicode simple
// case folding, as (?i) matches ("s", "S" and "ſ"; "k", "K" and the
// Kelvin sign).
func sameFold(a, b rune) bool {
	for f := unicode.SimpleFold(a); f != a; f = unicode.SimpleFold(f) {
		if f == b {
			return true
		}
	}
	return a == b
}

// foldKey is the smallest rune of r's case-folding orbit: the same for
// every rune sameFold counts as r.
func foldKey(r rune) rune {
	k := r
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		k = min(k, f)
	}
	return k
}

// prefix is the start of a match; whole: it is all of the match of the
// part of the pattern it was worked out for (what follows may extend it).
type prefix struct {
	startLit
	whole bool
}

func (p prefix) plus(q prefix) prefix {
	return prefix{startLit{slices.Concat(p.runes, q.runes), p.fold || q.fold}, q.whole}
}

// prefixes returns texts one of which every match of re starts with; ok
// is false when re's syntax does not bound them (any character, a large
// class). An empty prefix means a match may start with anything.
func prefixes(re *syntax.Regexp) (out []prefix, ok bool) {
	empty := []prefix{{whole: true}}
	switch re.Op {
	case syntax.OpNoMatch:
		return nil, true
	case syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText,
		syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return empty, true
	case syntax.OpLiteral:
		return []prefix{{startLit{re.Rune, re.Flags&syntax.FoldCase != 0}, true}}, true
	case syntax.OpCharClass:
		n := 0
		for i := 0; i < len(re.Rune); i += 2 {
			if n += int(re.Rune[i+1]-re.Rune[i]) + 1; n > maxStartClass {
				return nil, false
			}
		}
		for i := 0; i < len(re.Rune); i += 2 {
			for r := re.Rune[i]; r <= re.Rune[i+1]; r++ {
				out = append(out, prefix{startLit{[]rune{r}, false}, true})
			}
		}
		return out, true
	case syntax.OpCapture:
		return prefixes(re.Sub[0])
	case syntax.OpQuest:
		sub, ok := prefixes(re.Sub[0])
		return append(sub, empty...), ok
	case syntax.OpStar, syntax.OpPlus, syntax.OpRepeat:
		sub, ok := prefixes(re.Sub[0])
		for i := range sub {
			sub[i].whole = false // a repeat may follow
		}
		if re.Op == syntax.OpStar || re.Op == syntax.OpRepeat && re.Min == 0 {
			sub = append(sub, empty...)
		}
		return sub, ok
	case syntax.OpAlternate:
		for _, s := range re.Sub {
			sub, ok := prefixes(s)
			if !ok || len(out)+len(sub) > maxStarts {
				return nil, false
			}
			out = append(out, sub...)
		}
		return out, true
	case syntax.OpConcat:
		out = empty
		for _, s := range re.Sub {
			if !slices.ContainsFunc(out, func(p prefix) bool { return p.whole }) {
				break // nothing grows any more
			}
			sub, ok := prefixes(s)
			// Grow the prefixes by what s starts with, unless that makes
			// too many: then they stop here (still prefixes of every
			// match, only shorter).
			grow := ok && len(out)*max(len(sub), 1) <= maxStarts
			var next []prefix
			for _, p := range out {
				if !grow || !p.whole || len(p.runes) >= maxStartLen {
					p.whole = false
					next = append(next, p)
					continue
				}
				for _, q := range sub {
					next = append(next, p.plus(q))
				}
			}
			out = next
		}
		return out, true
	}
	return nil, false // any character
}

// consumable adds to runes every rune a match of re may hold; false when
// that is any rune.
func consumable(re *syntax.Regexp, runes *[]rune) bool {
	switch re.Op {
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return false
	case syntax.OpLiteral:
		for _, r := range re.Rune {
			*runes = append(*runes, r)
			if re.Flags&syntax.FoldCase != 0 {
				for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
					*runes = append(*runes, f)
				}
			}
		}
	case syntax.OpCharClass:
		n := 0
		for i := 0; i < len(re.Rune); i += 2 {
			if n += int(re.Rune[i+1]-re.Rune[i]) + 1; n > 4096 {
				return false
			}
			for r := re.Rune[i]; r <= re.Rune[i+1]; r++ {
				*runes = append(*runes, r)
			}
		}
	}
	for _, s := range re.Sub {
		if !consumable(s, runes) {
			return false
		}
	}
	return true
}
