package mail

import "time"

// Address is one mailbox from an address header.
type Address struct {
	Name  string `json:"name,omitempty"`
	Email string `json:"email"` // as written; compare with EqualFold or Normalized
}

// Attachment is the metadata of one attachment. Its content is never kept.
type Attachment struct {
	Filename    string `json:"filename,omitempty"`
	ContentType string `json:"content_type"`
	Size        int64  `json:"size"` // decoded bytes, -1 when unknown (partial fetch)
	Inline      bool   `json:"inline,omitempty"`
}

// Message is the parsed, cleaned form of one email.
type Message struct {
	MessageID   string    `json:"message_id"` // angle brackets stripped, case kept; never empty. Compare with IDKey.
	Synthesized bool      `json:"synthesized,omitempty"`
	InReplyTo   []string  `json:"in_reply_to,omitempty"` // ids, brackets stripped
	References  []string  `json:"references,omitempty"`  // ids, brackets stripped, oldest first
	Subject     string    `json:"subject"`               // decoded
	From        Address   `json:"from"`
	Sender      *Address  `json:"sender,omitempty"`
	ReplyTo     []Address `json:"reply_to,omitempty"`
	To          []Address `json:"to,omitempty"`
	Cc          []Address `json:"cc,omitempty"`
	Date        time.Time `json:"date"` // zero when missing or unparseable

	// Header holds every top-level header field, decoded, keyed by the
	// canonical MIME key (textproto.CanonicalMIMEHeaderKey).
	Header map[string][]string `json:"header,omitempty"`
	// AuthResultsPos is, for each Header["Authentication-Results"] value,
	// its position among all top-level header fields (0 = topmost). Header
	// loses the order across field names; whether two results are adjacent
	// (nothing the sender could have written between them) needs it.
	AuthResultsPos []int `json:"auth_results_pos,omitempty"`

	ContentType string `json:"content_type"` // top-level media type, lowercased, e.g. "multipart/report"

	// Text is the whole readable body: text/plain when present, otherwise
	// HTML converted to text. Raw HTML is never kept here.
	Text string `json:"text"`
	// CleanText is Text with quoted history and the signature removed: the
	// part the sender actually wrote in this message.
	CleanText string `json:"clean_text"`
	Quoted    string `json:"quoted,omitempty"`
	Signature string `json:"signature,omitempty"`
	FromHTML  bool   `json:"from_html,omitempty"` // Text was converted from HTML
	// Forwarded is true when the body carries a forwarded message: a
	// "Forwarded message" block (kept in Quoted) or an attached
	// message/rfc822 outside a delivery report.
	Forwarded bool `json:"forwarded,omitempty"`
	// Forwards are the attached messages (forward.go), in the order they
	// appear; their text is not in Text.
	Forwards []Forward `json:"forwards,omitempty"`

	Attachments []Attachment `json:"attachments,omitempty"`
	// Calendar is true when a part may hold iCalendar data: a
	// text/calendar or application/ics part, or a file named *.ics.
	// Without one the message is no invitation (calendar.ParseInvitation
	// reads no other part), so the agent skips reading it a second time.
	Calendar  bool `json:"calendar,omitempty"`
	Size      int  `json:"size"`                // raw bytes given to Parse
	Truncated bool `json:"truncated,omitempty"` // only part of the message was fetched

	// Problems lists what was wrong with the input, in words a user can read
	// ("unknown charset \"x-foo\" in part 1.2: kept as raw bytes").
	Problems []string `json:"problems,omitempty"`
}

// HeaderValue returns the first value of the named header field, or "".
func (m *Message) HeaderValue(name string) string {
	if m == nil || m.Header == nil {
		return ""
	}
	if v := m.Header[canonicalKey(name)]; len(v) > 0 {
		return v[0]
	}
	return ""
}
