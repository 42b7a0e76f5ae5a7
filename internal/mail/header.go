package mail

import (
	"io"
	"mime"
	netmail "net/mail"
	"net/textproto"
	"strings"
	"time"
	"unicode/utf8"

	gomail "github.com/emersion/go-message/mail"
	"golang.org/x/text/encoding/charmap"

	"github.com/emersion/go-message/charset"
)

func canonicalKey(name string) string { return textproto.CanonicalMIMEHeaderKey(name) }

// charsetReader converts from a named charset to UTF-8 for encoded words.
func charsetReader(cs string, input io.Reader) (io.Reader, error) {
	switch strings.ToLower(cs) {
	case "utf-8", "utf8", "us-ascii", "ascii":
		return input, nil
	}
	return charset.Reader(cs, input)
}

var wordDecoder = &mime.WordDecoder{CharsetReader: charsetReader}

// decodeHeaderValue decodes RFC 2047 encoded words and returns valid UTF-8.
// Raw 8-bit bytes that are not UTF-8 are read as Windows-1252, what such
// headers almost always are. ok is false when an encoded word named a
// charset we cannot decode; the value is then returned undecoded.
func decodeHeaderValue(s string) (string, bool) {
	ok := true
	if strings.Contains(s, "=?") {
		if d, err := wordDecoder.DecodeHeader(s); err == nil {
			s = d
		} else {
			ok = false
		}
	}
	return legacyToUTF8(s), ok
}

// legacyToUTF8 returns s if it is valid UTF-8, otherwise s read as
// Windows-1252 (a superset of Latin-1 for printable bytes).
func legacyToUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	if d, err := charmap.Windows1252.NewDecoder().String(s); err == nil && utf8.ValidString(d) {
		return d
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

// parseAddressList parses an address header value. On a parse error it falls
// back to bestEffortAddresses and reports ok=false.
func parseAddressList(v string) (addrs []Address, ok bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return nil, true
	}
	list, err := gomail.ParseAddressList(legacyToUTF8(v))
	if err == nil {
		for _, a := range list {
			if a == nil {
				continue
			}
			addrs = append(addrs, Address{Name: legacyToUTF8(a.Name), Email: legacyToUTF8(a.Address)})
		}
		return addrs, true
	}
	return bestEffortAddresses(v), false
}

// bestEffortAddresses pulls mailboxes out of an address header that the RFC
// 5322 parser rejected (unquoted specials in names, missing brackets, stray
// semicolons, raw 8-bit names). Hand-written because there is no library for
// "parse what a broken mailer meant".
func bestEffortAddresses(v string) []Address {
	dec, _ := decodeHeaderValue(v)
	var out []Address
	var carry strings.Builder // text before an unquoted comma in a display name
	for _, piece := range splitOutside(dec) {
		piece = strings.TrimSpace(piece)
		if piece == "" {
			continue
		}
		if !strings.Contains(piece, "@") {
			if carry.Len() < 1024 {
				carry.WriteString(piece + ", ")
			}
			continue
		}
		if carry.Len() > 0 {
			piece = carry.String() + piece
			carry.Reset()
		}
		// Group syntax "name: a@b, c@d;" leaves "name: a@b" here.
		if i := strings.IndexByte(piece, ':'); i >= 0 && !strings.Contains(piece[:i], "@") && !strings.Contains(piece[:i], "<") {
			piece = strings.TrimSpace(piece[i+1:])
		}
		var a Address
		if lt := strings.LastIndexByte(piece, '<'); lt >= 0 {
			inner := piece[lt+1:]
			if gt := strings.IndexByte(inner, '>'); gt >= 0 {
				inner = inner[:gt]
			}
			a.Email = strings.TrimSpace(inner)
			a.Name = cleanName(piece[:lt])
		} else {
			for _, f := range strings.Fields(piece) {
				f = strings.Trim(f, `"'(),;<>[]`)
				if strings.Contains(f, "@") {
					a.Email = f
					break
				}
			}
			if a.Email != "" {
				rest := strings.Replace(piece, a.Email, "", 1)
				a.Name = cleanName(rest)
			}
		}
		if !strings.Contains(a.Email, "@") {
			continue
		}
		out = append(out, a)
	}
	return out
}

// splitOutside splits on ',' and ';' that are not inside quotes, angle
// brackets or comments.
func splitOutside(s string) []string {
	var parts []string
	depthAngle, depthParen := 0, 0
	inQuote := false
	start := 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\' && inQuote:
			i++
		case c == '"':
			inQuote = !inQuote
		case inQuote:
		case c == '<':
			depthAngle++
		case c == '>':
			if depthAngle > 0 {
				depthAngle--
			}
		case c == '(':
			depthParen++
		case c == ')':
			if depthParen > 0 {
				depthParen--
			}
		case (c == ',' || c == ';') && depthAngle == 0 && depthParen == 0:
			parts = append(parts, s[start:i])
			start = i + 1
		}
	}
	return append(parts, s[start:])
}

func cleanName(s string) string {
	s = strings.TrimSpace(s)
	s = strings.Trim(s, `"' `)
	if strings.HasPrefix(s, "(") && strings.HasSuffix(s, ")") {
		s = s[1 : len(s)-1]
	}
	s = strings.ReplaceAll(s, `\"`, `"`)
	return collapseSpace(s)
}

// dateLayouts are the broken Date forms seen in real mail that
// net/mail.ParseDate rejects, tried after stripping comments and the day
// name.
var dateLayouts = []string{
	"2 Jan 2006 15:04:05 -0700",
	"2 Jan 2006 15:04:05 MST",
	"2 Jan 2006 15:04:05 -0700 MST",
	"2 Jan 2006 15:04 -0700",
	"2 Jan 2006 15:04:05",
	"2 Jan 06 15:04:05 -0700",
	"2 Jan 06 15:04:05 MST",
	"2 Jan 06 15:04 -0700",
	"2 Jan 06 15:04:05",
	"2-Jan-2006 15:04:05 -0700",
	"2 January 2006 15:04:05 -0700",
	"Jan 2 15:04:05 2006",        // asctime
	"Jan 2 15:04:05 MST 2006",    // date(1)
	"Jan 2 15:04:05 -0700 2006",  // broken asctime
	"Jan 2, 2006 15:04:05 -0700", // US order
	"Jan 2 2006 15:04:05 -0700",  // US order, no comma
	"2006-01-02 15:04:05 -0700",  // ISO-ish
	"2006-01-02T15:04:05Z07:00",  // RFC 3339
	"2006-01-02 15:04:05",        // ISO-ish, no zone
	"2 Jan 2006 15:04:05 -0700 (MST)",
}

// parseDate parses a Date header leniently; the zero time when hopeless.
func parseDate(v string) time.Time {
	v = strings.TrimSpace(v)
	if v == "" {
		return time.Time{}
	}
	if t, ok := commonDate(v); ok {
		return t
	}
	if t, err := netmail.ParseDate(v); err == nil {
		return t
	}
	s := v
	// Drop comments.
	for {
		i := strings.IndexByte(s, '(')
		if i < 0 {
			break
		}
		j := strings.IndexByte(s[i:], ')')
		if j < 0 {
			s = s[:i]
			break
		}
		s = s[:i] + " " + s[i+j+1:]
	}
	s = strings.ReplaceAll(s, ",", " ")
	f := strings.Fields(s)
	// Drop a leading day name ("Mon", "Monday", "Mon.").
	if len(f) > 0 && len(f[0]) >= 3 && isLetters(strings.TrimSuffix(f[0], ".")) && dayName(f[0]) {
		f = f[1:]
	}
	// "GMT+0200", "UT+2" style zones → numeric.
	for i, w := range f {
		up := strings.ToUpper(w)
		for _, z := range []string{"GMT", "UTC", "UT"} {
			if strings.HasPrefix(up, z) && len(up) > len(z) && (up[len(z)] == '+' || up[len(z)] == '-') {
				f[i] = fixZone(up[len(z):])
			}
		}
		if len(w) == 5 && (w[0] == '+' || w[0] == '-') {
			continue
		}
		if len(w) == 4 && isDigits(w) && i >= 4 && i == len(f)-1 && strings.Contains(f[i-1], ":") && isDigits(f[i-4]) && isLetters(f[i-3]) {
			f[i] = "+" + w // "12:00:00 0200"
		}
	}
	s = strings.Join(f, " ")
	for _, l := range dateLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return fixYear(t)
		}
	}
	// Last resort: ignore what follows a numeric zone.
	for i, w := range f {
		if len(w) == 5 && (w[0] == '+' || w[0] == '-') && isDigits(w[1:]) {
			if t, err := netmail.ParseDate(strings.Join(f[:i+1], " ")); err == nil {
				return t
			}
		}
	}
	return time.Time{}
}

// commonLayouts are the shapes nearly every Date header has.
var commonLayouts = []string{"Mon, 2 Jan 2006 15:04:05 -0700", "2 Jan 2006 15:04:05 -0700"}

// commonDate parses the common shapes of a Date header (with or without
// a day name, a numeric zone, and at most a trailing "(PDT)"-style
// comment) with one layout each. net/mail.ParseDate, which accepts them
// too, tries up to 48 layouts in a fixed order, each failure allocating
// an error: that was 6 % of parsing a message. A date time.Parse accepts
// with one layout is the same instant with any other that accepts it, so
// the answer is net/mail's (TestCommonDateMatchesNetMail).
func commonDate(v string) (time.Time, bool) {
	if i := strings.LastIndex(v, " ("); i > 0 && strings.HasSuffix(v, ")") {
		for _, c := range v[i+2 : len(v)-1] {
			if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == ' ' || c == '+' || c == '-' || c == ':') {
				return time.Time{}, false
			}
		}
		v = v[:i]
	}
	if n := len(v); n < 5 || (v[n-5] != '+' && v[n-5] != '-') {
		return time.Time{}, false
	}
	for _, l := range commonLayouts {
		if t, err := time.Parse(l, v); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

func fixZone(z string) string {
	sign := z[:1]
	d := z[1:]
	d = strings.ReplaceAll(d, ":", "")
	if !isDigits(d) {
		return "+0000"
	}
	switch len(d) {
	case 1:
		return sign + "0" + d + "00"
	case 2:
		return sign + d + "00"
	case 3:
		return sign + "0" + d
	case 4:
		return sign + d
	}
	return "+0000"
}

func fixYear(t time.Time) time.Time {
	if y := t.Year(); y < 100 {
		if y < 50 {
			return t.AddDate(2000, 0, 0)
		}
		return t.AddDate(1900, 0, 0)
	}
	return t
}

func isLetters(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i] | 0x20
		if c < 'a' || c > 'z' {
			return false
		}
	}
	return s != ""
}

func dayName(s string) bool {
	s = strings.ToLower(strings.TrimSuffix(s, "."))
	if len(s) < 3 {
		return false
	}
	switch s[:3] {
	case "mon", "tue", "wed", "thu", "fri", "sat", "sun":
		return true
	}
	return false
}
