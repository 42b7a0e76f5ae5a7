package mail

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Reply and forward prefixes recognised in subjects, lower case. RFC 5256
// only names "re", "fw" and "fwd"; the rest are what localised clients
// (Outlook, Thunderbird, Apple Mail, Gmail) write in place of them.
var (
	replyPrefixes = []string{
		"re", "aw", "sv", "svar", "antw", "antwort", "rif", "réf", "odp", "vá", "ynt",
		"res", "atb", "vs", "回复", "答复", "回覆", "απ", "σχετ", "отв", "השב",
	}
	forwardPrefixes = []string{
		"fwd", "fw", "wg", "tr", "enc", "rv", "pd", "doorst", "vb", "vl", "fs",
		"továbbítás", "转发", "轉寄", "πρθ", "пересл", "הועבר",
	}
)

// BaseSubject returns the RFC 5256 §2.1 base subject: reply and forward
// prefixes (including the localised ones above and counters such as
// "Re[2]:"), leading "[list-tag]" blobs, trailing "(fwd)" and "[fwd: …]"
// wrappers removed, repeatedly, and whitespace collapsed. Case is kept; use
// SubjectKey to compare.
func BaseSubject(s string) string {
	b, _ := baseSubject(s)
	return b
}

// SubjectKey is the comparison form of BaseSubject: lower case. Threading
// merges roots whose SubjectKey is equal and non-empty.
func SubjectKey(s string) string {
	return strings.ToLower(BaseSubject(s))
}

// IsReplySubject reports whether extracting the base subject removed a reply
// or forward marker (RFC 5256 calls such a subject "a reply or forward").
func IsReplySubject(s string) bool {
	_, r := baseSubject(s)
	return r
}

// ReplySubject returns the subject of a reply to a message with subject s.
// It is the one implementation: compose and agent both use it.
//
// RFC 5322 §3.6.5: a reply's subject may be "Re: " followed by the
// original's, and "only one instance of the literal string "Re: " ought to
// be used". So:
//
//   - RFC 2047 encoded words are decoded first (a raw "=?utf-8?q?Re=3A_x?="
//     is the reply prefix "Re:" too); text that is not UTF-8 is read as
//     Windows-1252; control characters are dropped and whitespace runs,
//     CR and LF included, become one space.
//   - Every leading reply prefix goes, in any case and language ("Re:",
//     "RE:", "Aw:", "SV:", "Antw:", "回复：", …), with a counter
//     ("Re[2]:", "Re(3):", "Re^2:"), and one "Re: " is put in front.
//   - List tags: a prefix after a leading "[tag]" goes too, and the tag
//     stays in front of the topic: "[list] Re: topic" becomes
//     "Re: [list] topic", and a tag repeated by earlier replies is kept
//     once ("Re: [l] Re: [l] x" → "Re: [l] x"). Thunderbird (NS_MsgStripRE)
//     and mutt's default $reply_regex strip prefixes only at the very
//     start and answer "Re: [list] Re: topic", the stacking RFC 5322 warns
//     about; a list manager such as Mailman moves its tag back in front
//     when it relays the reply, and threading ignores both (BaseSubject).
//   - Forward prefixes are kept: a reply to "Fwd: x" is "Re: Fwd: x".
//
// ReplySubject(ReplySubject(s)) == ReplySubject(s); an empty subject gives
// "Re:".
func ReplySubject(s string) string {
	s = cleanSubject(s)
	var tags []string
	for {
		if n := matchPrefix(s, replyPrefixes); n > 0 {
			s = strings.TrimLeft(s[n:], " ")
			continue
		}
		if n := blobLen(s); n > 0 {
			tag := strings.TrimRight(s[:n], " ")
			if !slices.ContainsFunc(tags, func(t string) bool { return strings.EqualFold(t, tag) }) {
				tags = append(tags, tag)
			}
			s = s[n:]
			continue
		}
		break
	}
	if len(tags) > 0 {
		s = strings.TrimSpace(strings.Join(tags, " ") + " " + s)
	}
	if s == "" {
		return "Re:"
	}
	return "Re: " + s
}

// cleanSubject decodes encoded words (once, as mail clients do: a
// doubly-encoded word stays encoded once), makes s valid UTF-8, drops control
// characters and collapses whitespace (CR and LF included) to single spaces.
// Controls go before decoding too, so that removing them cannot make an
// encoded word that a second call would decode.
func cleanSubject(s string) string {
	// Byte-wise first: the text may still be in a legacy charset, which
	// decodeHeaderValue converts (strings.Map would turn it into U+FFFD).
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\t' || c == '\r' || c == '\n':
			b = append(b, ' ')
		case c >= 0x20 && c != 0x7f:
			b = append(b, c)
		}
	}
	s, _ = decodeHeaderValue(string(b))
	s = strings.Map(func(r rune) rune {
		switch {
		case unicode.IsSpace(r):
			return ' '
		case unicode.IsControl(r):
			return -1
		}
		return r
	}, s)
	return strings.Join(strings.Fields(s), " ")
}

// blobLen returns the length of an RFC 5256 subj-blob ("[" text without
// brackets "]") at the start of s and the spaces after it; 0 when s does not
// start with one.
func blobLen(s string) int {
	if !strings.HasPrefix(s, "[") {
		return 0
	}
	end := strings.IndexAny(s[1:], "[]")
	if end < 0 || s[1+end] != ']' {
		return 0
	}
	return skipSpaces(s, end+2)
}

func baseSubject(s string) (base string, reply bool) {
	s = collapseSpace(s)
	for {
		// (2) trailers.
		for {
			t := strings.TrimRight(s, " ")
			if len(t) >= 5 && strings.EqualFold(t[len(t)-5:], "(fwd)") {
				t = t[:len(t)-5]
				reply = true
			}
			if t == s {
				break
			}
			s = t
		}
		// (3)/(4) leaders, repeated until nothing changes.
		for {
			n, r := leaderLen(s)
			if n == 0 {
				break
			}
			s = strings.TrimLeft(s[n:], " ")
			reply = reply || r
		}
		// (5) "[fwd: …]".
		if len(s) > 6 && strings.EqualFold(s[:5], "[fwd:") && s[len(s)-1] == ']' {
			s = strings.TrimSpace(s[5 : len(s)-1])
			reply = true
			continue
		}
		return s, reply
	}
}

// leaderLen returns the length of a removable leader at the start of s: blobs
// followed by a reply/forward prefix (reply=true), or a lone blob when text
// remains after it.
func leaderLen(s string) (n int, reply bool) {
	pos := 0
	lastBlobStart := -1
	for pos < len(s) && s[pos] == '[' {
		end := strings.IndexAny(s[pos+1:], "[]")
		if end < 0 || s[pos+1+end] != ']' {
			break
		}
		lastBlobStart = pos
		pos += end + 2
		for pos < len(s) && s[pos] == ' ' {
			pos++
		}
	}
	if m := matchPrefix(s[pos:], replyPrefixes); m > 0 {
		return pos + m, true
	}
	if m := matchPrefix(s[pos:], forwardPrefixes); m > 0 {
		return pos + m, true
	}
	// Blobs alone go while text remains after them. Removing them one at a
	// time, as RFC 5256 words it, gives the same result; all at once keeps
	// "[a][a][a]…" linear.
	switch {
	case lastBlobStart < 0:
		return 0, false
	case pos < len(s):
		return pos, false
	case lastBlobStart > 0:
		return lastBlobStart, false // keep the last blob: it is the subject
	}
	return 0, false
}

// matchPrefix matches `prefix *WSP [counter] *WSP ":"` at the start of s,
// case-insensitively, and returns its length (0 for no match). counter is
// "[n]", "(n)", "^n", "n" or an RFC 5256 subj-blob.
func matchPrefix(s string, prefixes []string) int {
	for _, p := range prefixes {
		if len(s) < len(p)+1 || !strings.EqualFold(s[:len(p)], p) {
			continue
		}
		i := len(p)
		// Not a prefix when the word goes on ("Reuters:", "Fwdx:").
		if r, _ := utf8.DecodeRuneInString(s[i:]); isWordRune(r) && !(r >= '0' && r <= '9') {
			continue
		}
		i = skipSpaces(s, i)
		switch {
		case i < len(s) && s[i] == '[':
			if end := strings.IndexByte(s[i:], ']'); end > 0 && !strings.ContainsRune(s[i+1:i+end], '[') {
				i += end + 1
			}
		case i < len(s) && s[i] == '(':
			if end := strings.IndexByte(s[i:], ')'); end > 0 && isDigits(s[i+1:i+end]) {
				i += end + 1
			}
		case i < len(s) && s[i] == '^':
			j := i + 1
			for j < len(s) && s[j] >= '0' && s[j] <= '9' {
				j++
			}
			i = j
		default:
			for i < len(s) && s[i] >= '0' && s[i] <= '9' {
				i++
			}
		}
		i = skipSpaces(s, i)
		if strings.HasPrefix(s[i:], ":") {
			return i + 1
		}
		if strings.HasPrefix(s[i:], "：") { // full-width colon
			return i + len("：")
		}
	}
	return 0
}

func isWordRune(r rune) bool {
	return r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= 0x80 && r != utf8.RuneError && r != '：'
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func skipSpaces(s string, i int) int {
	for i < len(s) && s[i] == ' ' {
		i++
	}
	return i
}

// collapseSpace turns every run of whitespace into one space and trims.
func collapseSpace(s string) string {
	clean := true
	prevSpace := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		sp := c == ' ' || c == '\t' || c == '\r' || c == '\n'
		if sp && (c != ' ' || prevSpace) {
			clean = false
			break
		}
		prevSpace = sp
	}
	if clean && !prevSpace {
		return s
	}
	return strings.Join(strings.Fields(s), " ")
}
