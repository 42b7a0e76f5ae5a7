package mail

import "strings"

// NormalizeID returns a message id as mailagent stores it: surrounding space
// and one pair of angle brackets removed, inner whitespace (left by header
// folding) dropped, case kept. It returns "" for an id that is only space or
// brackets.
func NormalizeID(s string) string {
	s = strings.TrimSpace(s)
	s = strings.TrimPrefix(s, "<")
	s = strings.TrimSuffix(s, ">")
	if strings.ContainsAny(s, " \t\r\n") {
		s = strings.Join(strings.Fields(s), "")
	}
	return s
}

// IDKey returns the comparison key of a message id: NormalizeID, then lower
// case. Every index and every equality test on ids uses IDKey.
func IDKey(id string) string {
	return strings.ToLower(NormalizeID(id))
}

// ParseIDList extracts the message ids of a References or In-Reply-To value
// (or a Message-ID value), in order, brackets stripped, duplicates (by IDKey)
// removed keeping the first occurrence.
//
// It is hand-written rather than go-message's MsgIDList because real headers
// break the grammar in ways that parser rejects outright: junk between ids
// ("Your message of Mon, 12 Aug <a@b>"), missing brackets, whitespace folded
// into an id, an unterminated last id. Bracketed ids win; when there are
// none, bare tokens containing "@" are taken; when there are none of those
// either and the value is a single token, that token is the id.
func ParseIDList(s string) []string {
	var out []string
	seen := map[string]bool{}
	add := func(id string) {
		id = NormalizeID(id)
		if id == "" || id == "@" {
			return
		}
		k := strings.ToLower(id)
		if seen[k] {
			return
		}
		seen[k] = true
		out = append(out, id)
	}

	// Bracketed ids.
	rest := s
	for {
		i := strings.IndexByte(rest, '<')
		if i < 0 {
			break
		}
		rest = rest[i+1:]
		j := strings.IndexAny(rest, "<>")
		if j < 0 {
			// Unterminated: take up to the next space that follows
			// some id text.
			tok := strings.TrimLeft(rest, " \t\r\n")
			if k := strings.IndexAny(tok, " \t\r\n,;"); k >= 0 {
				tok = tok[:k]
			}
			if strings.Contains(tok, "@") {
				add(tok)
			}
			break
		}
		if rest[j] == '<' { // "<junk <id>": restart at the inner bracket
			rest = rest[j:]
			continue
		}
		add(rest[:j])
		rest = rest[j+1:]
	}
	if len(out) > 0 {
		return out
	}

	// No brackets: bare tokens with an "@".
	fields := strings.FieldsFunc(s, func(r rune) bool {
		return r == ' ' || r == '\t' || r == '\r' || r == '\n' || r == ',' || r == ';'
	})
	for _, f := range fields {
		f = strings.Trim(f, `"'()[]<>`)
		if strings.Contains(f, "'") {
			continue // "user@host's message of …": prose, not an id
		}
		if strings.Contains(f, "@") && !strings.HasPrefix(f, "@") && !strings.HasSuffix(f, "@") {
			add(f)
		}
	}
	if len(out) == 0 && len(fields) == 1 {
		add(strings.Trim(fields[0], `"'()[]<>`))
	}
	return out
}
