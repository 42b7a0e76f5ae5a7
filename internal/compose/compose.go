package compose

import (
	"bytes"
	"crypto/rand"
	"encoding/base32"
	"errors"
	"fmt"
	"mime"
	netmail "net/mail"
	"net/textproto"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	gomail "github.com/emersion/go-message/mail"

	"github.com/mailagent/mailagent/internal/mail"
)

// MaxReferences is how many message ids Build keeps in References. Longer
// chains keep the first id (the thread root) and the most recent ones, as
// RFC 5322 §3.6.4 suggests and most clients do.
const MaxReferences = 20

// Errors returned by Build and Recipients; match them with errors.Is.
var (
	// ErrNoRecipient means no valid recipient remained.
	ErrNoRecipient = errors.New("no valid recipient")
	// ErrInvalidAddress means an address given to Build is not a valid
	// addr-spec.
	ErrInvalidAddress = errors.New("invalid address")
	// ErrReservedHeader means ExtraHeaders tried to set a field that Build
	// owns (From, To, Subject, Content-Type, ...), or a malformed field name.
	ErrReservedHeader = errors.New("reserved or malformed extra header")
)

// Reply is everything Build needs to write one reply. Fields are copied into
// the message after CR and LF are removed from them.
type Reply struct {
	// From is the account address and display name. Its domain is used for
	// a generated Message-ID.
	From mail.Address
	// To and Cc are chosen by code (see Recipients), never by the model.
	To []mail.Address
	Cc []mail.Address
	// Subject is the parent's subject; Build turns it into "Re: …" with
	// mail.ReplySubject, so prefixes never stack.
	Subject string
	// ParentMessageID is the parent's Message-ID, brackets optional. Empty
	// when the parent had none (a synthesized id must not be used): then no
	// In-Reply-To is written.
	ParentMessageID string
	// ParentReferences is the parent's References, oldest first.
	ParentReferences []string
	// ParentInReplyTo is the parent's In-Reply-To. It is used only when the
	// parent had no References and a single In-Reply-To id (RFC 5322
	// §3.6.4).
	ParentInReplyTo []string
	// Body is the plain-text reply, UTF-8. Invalid UTF-8 is replaced with
	// U+FFFD; line endings are normalised.
	Body string
	// Footer is appended after "\n\n" when non-empty.
	Footer string
	// AutoSubmitted adds "Auto-Submitted: auto-replied" (RFC 3834). Set it
	// for every reply sent without a human approving it.
	AutoSubmitted bool
	// Date is the Date header; the zero time means time.Now().
	Date time.Time
	// MessageID is the new message's id without brackets. When empty,
	// Build generates one on From's domain with NewMessageID.
	MessageID string
	// ExtraHeaders are written after the standard fields, sorted by name
	// (e.g. X-Mailagent-Trace, used by the loop guard). Names Build owns are
	// refused with ErrReservedHeader. Non-ASCII values are RFC 2047 encoded.
	ExtraHeaders map[string]string
	// Calendar, when set, is an iTIP object (RFC 5546) sent with the text
	// as an iMIP message (RFC 6047): multipart/alternative with a
	// text/calendar part whose method parameter is CalendarMethod.
	Calendar       []byte
	CalendarMethod string
}

// reserved lists the canonical field names Build writes itself.
var reserved = map[string]bool{
	"From": true, "Sender": true, "Reply-To": true, "To": true, "Cc": true,
	"Bcc": true, "Subject": true, "Date": true, "Message-Id": true,
	"In-Reply-To": true, "References": true, "Mime-Version": true,
	"Content-Type": true, "Content-Transfer-Encoding": true,
	"Content-Disposition": true, "Auto-Submitted": true, "Return-Path": true,
	"Received": true,
}

// Build renders r as an RFC 5322 message with CRLF line endings. It returns
// the raw bytes and the Message-ID used (without brackets), which the caller
// records in the outbox before sending.
func Build(r Reply) (raw []byte, messageID string, err error) {
	from, err := toAddress(r.From)
	if err != nil {
		return nil, "", fmt.Errorf("build reply: from: %w", err)
	}
	to, err := toAddresses(r.To)
	if err != nil {
		return nil, "", fmt.Errorf("build reply: to: %w", err)
	}
	if len(to) == 0 {
		return nil, "", fmt.Errorf("build reply: to: %w", ErrNoRecipient)
	}
	cc, err := toAddresses(r.Cc)
	if err != nil {
		return nil, "", fmt.Errorf("build reply: cc: %w", err)
	}

	messageID = cleanID(r.MessageID)
	if r.MessageID != "" && messageID == "" {
		return nil, "", fmt.Errorf("build reply: message id %q is malformed", oneLine(r.MessageID))
	}
	if messageID == "" {
		messageID = NewMessageID(domainOf(from.Address))
	}
	date := r.Date
	if date.IsZero() {
		date = time.Now()
	}

	// Format each value with go-message's own encoders, then write the
	// fields in a fixed, readable order.
	var tmp gomail.Header
	tmp.SetAddressList("From", []*gomail.Address{from})
	tmp.SetAddressList("To", to)
	tmp.SetAddressList("Cc", cc)
	tmp.SetSubject(mail.ReplySubject(r.Subject))
	tmp.SetDate(date)
	tmp.SetMessageID(messageID)
	parent := cleanID(r.ParentMessageID)
	if parent != "" {
		tmp.SetMsgIDList("In-Reply-To", []string{parent})
	}
	tmp.SetMsgIDList("References", references(r.ParentReferences, r.ParentInReplyTo, parent))

	type field struct{ k, v string }
	var fields []field
	for _, k := range []string{"From", "To", "Cc", "Subject", "Date", "Message-Id", "In-Reply-To", "References"} {
		if v := tmp.Get(k); v != "" {
			fields = append(fields, field{k, v})
		}
	}
	if r.AutoSubmitted {
		fields = append(fields, field{"Auto-Submitted", "auto-replied"})
	}
	extra := make([]string, 0, len(r.ExtraHeaders))
	for k := range r.ExtraHeaders {
		extra = append(extra, k)
	}
	slices.Sort(extra)
	for _, k := range extra {
		ck := textproto.CanonicalMIMEHeaderKey(strings.TrimSpace(k))
		if !validFieldName(ck) || reserved[ck] {
			return nil, "", fmt.Errorf("build reply: header %q: %w", oneLine(k), ErrReservedHeader)
		}
		fields = append(fields, field{ck, mime.QEncoding.Encode("utf-8", oneLine(r.ExtraHeaders[k]))})
	}
	if r.Calendar != nil {
		fields = append(fields, field{"Mime-Version", "1.0"}, field{"Content-Type", "multipart/alternative"})
	} else {
		fields = append(fields,
			field{"Mime-Version", "1.0"},
			field{"Content-Type", "text/plain; charset=utf-8"},
			field{"Content-Transfer-Encoding", "quoted-printable"},
		)
	}

	// go-message writes the most recently added field first (trace-header
	// order), so add them in reverse.
	var h gomail.Header
	for i := len(fields) - 1; i >= 0; i-- {
		h.Add(fields[i].k, fields[i].v)
	}

	var buf bytes.Buffer
	if r.Calendar != nil {
		if err := writeCalendar(&buf, h, body(r.Body, r.Footer), r.Calendar, r.CalendarMethod); err != nil {
			return nil, "", err
		}
		return buf.Bytes(), messageID, nil
	}
	w, err := gomail.CreateSingleInlineWriter(&buf, h)
	if err != nil {
		return nil, "", fmt.Errorf("build reply: write header: %w", err)
	}
	if _, err := w.Write([]byte(body(r.Body, r.Footer))); err != nil {
		return nil, "", fmt.Errorf("build reply: write body: %w", err)
	}
	if err := w.Close(); err != nil {
		return nil, "", fmt.Errorf("build reply: write body: %w", err)
	}
	return buf.Bytes(), messageID, nil
}

// NewMessageID returns a fresh message id without brackets, of the form
// "<random>.<unix seconds>@domain", with 80 bits from crypto/rand. An empty or
// malformed domain is replaced by "mailagent.invalid".
func NewMessageID(domain string) string {
	domain = strings.ToLower(strings.TrimSpace(domain))
	if !validDomain(domain) {
		domain = "mailagent.invalid"
	}
	var b [10]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never returns an error (Go ≥ 1.24)
	enc := base32.StdEncoding.WithPadding(base32.NoPadding)
	return strings.ToLower(enc.EncodeToString(b[:])) + "." + strconv.FormatInt(time.Now().Unix(), 10) + "@" + domain
}

// references builds the References list for a reply: the parent's References
// (or its single In-Reply-To when it had none) plus the parent id, without
// duplicates or malformed ids, trimmed to MaxReferences keeping the first.
func references(parentRefs, parentInReplyTo []string, parent string) []string {
	base := parentRefs
	if len(cleanIDs(base)) == 0 && len(parentInReplyTo) == 1 {
		base = parentInReplyTo
	}
	var refs []string
	seen := map[string]bool{}
	for _, id := range append(slices.Clone(base), parent) {
		id = cleanID(id)
		if id == "" || seen[id] {
			continue
		}
		seen[id] = true
		refs = append(refs, id)
	}
	if len(refs) > MaxReferences {
		refs = append(refs[:1], refs[len(refs)-(MaxReferences-1):]...)
	}
	return refs
}

func cleanIDs(ids []string) []string {
	var out []string
	for _, id := range ids {
		if c := cleanID(id); c != "" {
			out = append(out, c)
		}
	}
	return out
}

// cleanID strips surrounding space and angle brackets from a message id and
// returns "" when what remains could not be written safely inside <...>.
func cleanID(id string) string {
	id = strings.TrimSpace(id)
	id = strings.TrimPrefix(id, "<")
	id = strings.TrimSuffix(id, ">")
	if id == "" {
		return ""
	}
	for _, r := range id {
		if r <= ' ' || r == 0x7f || r == '<' || r == '>' || r == '"' || r == '\\' || r >= utf8.RuneSelf {
			return ""
		}
	}
	return id
}

// body joins body and footer, normalises line endings to "\n" (the
// quoted-printable writer turns them into CRLF), and ends with a newline.
func body(b, footer string) string {
	b = strings.ToValidUTF8(b, "\uFFFD")
	if footer != "" {
		b = strings.TrimRight(b, "\r\n") + "\n\n" + strings.ToValidUTF8(footer, "\uFFFD")
	}
	b = strings.ReplaceAll(b, "\r\n", "\n")
	b = strings.ReplaceAll(b, "\r", "\n")
	if !strings.HasSuffix(b, "\n") {
		b += "\n"
	}
	return b
}

// oneLine removes CR and LF (replacing each run with a space) and other C0
// controls except tab, so a value cannot start a new header field.
func oneLine(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	var b strings.Builder
	lastSpace := false
	for _, r := range s {
		switch {
		case r == '\r' || r == '\n':
			if !lastSpace {
				b.WriteByte(' ')
			}
			lastSpace = true
			continue
		case r == '\t':
		case unicode.IsControl(r):
			continue
		}
		b.WriteRune(r)
		lastSpace = r == ' '
	}
	return b.String()
}

// cleanName makes a display name safe to write: one line, trimmed, and
// dropped entirely when it contains an '@' (a name like "ceo@bank.com" next
// to a different address is a spoofing device, and never needed).
func cleanName(name string) string {
	name = strings.Join(strings.Fields(oneLine(name)), " ")
	if strings.Contains(name, "@") {
		return ""
	}
	return name
}

// validEmail reports whether s is a bare addr-spec with a domain.
func validEmail(s string) bool {
	if s == "" || strings.ContainsAny(s, "\r\n\t <>,;\"") {
		return false
	}
	a, err := netmail.ParseAddress("<" + s + ">")
	if err != nil || a.Address != s {
		return false
	}
	return validDomain(domainOf(s))
}

func domainOf(addr string) string {
	i := strings.LastIndexByte(addr, '@')
	if i < 0 {
		return ""
	}
	return addr[i+1:]
}

// validDomain accepts a dotted host name or a bracketed address literal, with
// no characters that would break a header.
func validDomain(d string) bool {
	if d == "" || len(d) > 253 {
		return false
	}
	for _, r := range d {
		if r <= ' ' || r == 0x7f || strings.ContainsRune("<>()\",;:\\@", r) {
			return false
		}
	}
	return true
}

func validFieldName(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		if c := k[i]; c <= ' ' || c >= 0x7f || c == ':' {
			return false
		}
	}
	return true
}

func toAddress(a mail.Address) (*gomail.Address, error) {
	email := strings.TrimSpace(a.Email)
	if !validEmail(email) {
		return nil, fmt.Errorf("%q: %w", oneLine(a.Email), ErrInvalidAddress)
	}
	return &gomail.Address{Name: cleanName(a.Name), Address: email}, nil
}

func toAddresses(as []mail.Address) ([]*gomail.Address, error) {
	out := make([]*gomail.Address, 0, len(as))
	for _, a := range as {
		g, err := toAddress(a)
		if err != nil {
			return nil, err
		}
		out = append(out, g)
	}
	return out, nil
}
