package mail

import (
	"bytes"
	"io"
	"strings"
	"sync/atomic"
	"unicode"
	"unicode/utf8"
)

// Forward is a message attached to another as a message/rfc822 (or
// message/global) part outside a delivery report: a forward "as
// attachment" (Thunderbird's default, Outlook, Apple Mail's option), or one
// entry of a multipart/digest.
//
// Message is the attached message parsed by the same rules as Parse, so
// it is never nil, all its strings are valid UTF-8, and its own attached
// messages are in Message.Forwards (nested forwards, down to
// MaxForwardDepth). Everything in it was written by whoever wrote the
// attached message: its From, Reply-To and Authentication-Results prove
// nothing. The header fields a reply is built from (Subject, names,
// addresses, ids) carry no control characters and Subject is at most
// MaxForwardSubject runes.
type Forward struct {
	// Part is where the attachment sits in the outer message ("part 2",
	// "part 1.3").
	Part string `json:"part"`
	// Message is the attached message.
	Message *Message `json:"message"`
	// Broken is true when the attachment could not be read whole: its
	// bytes were cut (a truncated fetch, a missing MIME boundary, bad
	// transfer encoding), it was larger than MaxForwardBytes, or it has no
	// header or no From address. Problems says what; Message holds what
	// could be read.
	Broken bool `json:"broken,omitempty"`
	// Problems lists what was wrong with the attachment, in words a user
	// can read. The attached message's own parse problems are in
	// Message.Problems.
	Problems []string `json:"problems,omitempty"`
}

// Limits on attached messages.
const (
	// MaxForwards is how many attached messages one message has parsed;
	// more are kept as attachment metadata only, with a Problem.
	MaxForwards = 20
	// MaxForwardDepth is how deep attached messages are parsed: a forward
	// of a forward of a forward. Deeper ones are attachment metadata only.
	MaxForwardDepth = 3
	// MaxForwardBytes caps the bytes of one attached message that are
	// parsed; a larger one is parsed from its first MaxForwardBytes and
	// marked Broken.
	MaxForwardBytes = 4 << 20
	// MaxForwardSubject caps an attached message's Subject, in runes.
	MaxForwardSubject = 300
)

// isAttachedMessage reports whether the media type is an attached message.
func isAttachedMessage(mt string) bool {
	return mt == "message/rfc822" || mt == "message/global"
}

// forward reads an attached message part into a Forward. It returns the
// attachment's decoded size. body is drained whatever happens.
func (p *parser) forward(body io.Reader, encoding, path string) int64 {
	var (
		buf bytes.Buffer
		fw  = Forward{Part: path}
	)
	n, err := io.Copy(&buf, io.LimitReader(body, MaxForwardBytes+1))
	if err != nil {
		fw.Broken = true
		fw.Problems = append(fw.Problems, "the attached message could not be read whole ("+short(strings.TrimSpace(encoding+" "+err.Error()))+"): only its first bytes were kept")
	}
	raw := buf.Bytes()
	if n > MaxForwardBytes {
		rest, _ := io.Copy(io.Discard, body)
		n += rest
		raw = raw[:MaxForwardBytes]
		fw.Broken = true
		fw.Problems = append(fw.Problems, "the attached message is larger than 4 MiB: only its first 4 MiB were read")
	}
	sub := &parser{m: &Message{Size: len(raw)}, fwdDepth: p.fwdDepth + 1}
	sub.run(raw)
	fw.Message = sub.m
	if sub.damaged {
		fw.Broken = true
		fw.Problems = append(fw.Problems, "the attached message is damaged (see its problems)")
	}
	if fw.Message.From.Email == "" {
		fw.Broken = true
		fw.Problems = append(fw.Problems, "the attached message has no From address")
	}
	if !forwardCleanOff.Load() {
		cleanForwardHeaders(fw.Message)
	}
	if fw.Broken {
		why := "broken"
		if len(fw.Problems) > 0 {
			why = fw.Problems[0]
		}
		p.problem("forwarded message in %s: %s", path, why)
	}
	p.m.Forwards = append(p.m.Forwards, fw)
	return n
}

// forwardCleanOff makes forward keep the attached message's fields as
// its parse left them (cleanForwardHeaders is skipped). It exists only
// for the positive control of TestParseForwardHostileHeaders (package
// mail); nothing in the product sets it. Never from a parallel test.
var forwardCleanOff atomic.Bool

// cleanForwardHeaders takes control characters (CR, LF, NUL, escapes…)
// out of the fields of an attached message that a reply or a display is
// built from, and caps its Subject.
func cleanForwardHeaders(m *Message) {
	m.Subject = capRunes(headerText(m.Subject), MaxForwardSubject)
	m.MessageID = headerText(m.MessageID)
	if strings.ContainsAny(m.MessageID, " \t") || m.MessageID == "" {
		m.MessageID = strings.Join(strings.Fields(m.MessageID), "")
		if m.MessageID == "" {
			m.MessageID = synthID(m)
			m.Synthesized = true
		}
	}
	ids := func(l []string) []string {
		out := l[:0]
		for _, id := range l {
			if id = strings.Join(strings.Fields(headerText(id)), ""); id != "" {
				out = append(out, id)
			}
		}
		return out
	}
	m.InReplyTo, m.References = ids(m.InReplyTo), ids(m.References)
	addr := func(a *Address) {
		a.Name = capRunes(headerText(a.Name), 200)
		a.Email = strings.Join(strings.Fields(headerText(a.Email)), "")
	}
	addr(&m.From)
	if m.Sender != nil {
		addr(m.Sender)
	}
	for _, l := range [][]Address{m.ReplyTo, m.To, m.Cc} {
		for i := range l {
			addr(&l[i])
		}
	}
}

// headerText replaces every control character with a space and trims.
func headerText(s string) string {
	if strings.IndexFunc(s, unicode.IsControl) < 0 {
		return strings.TrimSpace(s)
	}
	return strings.TrimSpace(strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s))
}

// capRunes cuts s to at most n runes, marking the cut with "…".
func capRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i, k := 0, 0
	for i = range s {
		if k == n-1 {
			break
		}
		k++
	}
	return s[:i] + "…"
}
