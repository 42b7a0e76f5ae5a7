package mail

import "strings"

// AutoSubmittedKeyword returns the keyword of m's Auto-Submitted header
// (RFC 3834 §5): comments (parenthesised, nestable, with quoted
// pairs) and the parameters after ";" removed, surrounding space trimmed,
// lower case. "" means the value names no keyword.
func (m *Message) AutoSubmittedKeyword() string {
	v := m.HeaderValue("Auto-Submitted")
	var b strings.Builder
	depth := 0
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c == '\\' && depth > 0:
			i++ // a quoted pair inside a comment
		case c == '(':
			depth++
		case c == ')' && depth > 0:
			depth--
		case depth > 0:
		case c == ';':
			return strings.ToLower(strings.TrimSpace(b.String()))
		default:
			b.WriteByte(c)
		}
	}
	return strings.ToLower(strings.TrimSpace(b.String()))
}

// AutoSubmitted reports whether m declares itself automatic: its
// Auto-Submitted header names a keyword other than "no" (auto-replied,
// auto-generated, auto-notified or any extension). "no", "No" and
// "no (a comment)" are not automatic, nor is a message without the
// header. It is the one reader of that header: routing, Sent learning and
// reply tracking all ask it.
func (m *Message) AutoSubmitted() bool {
	k := m.AutoSubmittedKeyword()
	return k != "" && k != "no"
}
