package mail

import (
	"bytes"
	"strings"

	"github.com/emersion/go-message"
)

// HeaderThreadInput returns the ThreadInput of a raw message (or of its
// header alone) as InputOf(Parse(raw)) gives it, reading only the fields
// threading uses: Message-Id, In-Reply-To, References, Subject and Date.
// No other field, no address and no body is read, so a batch run can
// thread every header of a mailbox before it parses the messages
// (triage's prethreading) at a small part of Parse's cost.
//
// One difference: a message without a usable Message-ID gets MessageID
// "" and synthesized true, where Parse hashes one from the body text.
func HeaderThreadInput(raw []byte) (in ThreadInput, synthesized bool) {
	defer func() {
		// As in Parse, hostile input may make third-party code (the
		// charset decoders) panic: the message then takes Parse's way.
		if r := recover(); r != nil {
			m := Parse(raw)
			in, synthesized = InputOf(m), m.Synthesized
			if synthesized {
				in.MessageID = ""
			}
		}
	}()
	var subject, date, id, inReplyTo string
	var refs []string
	var seen [4]bool // subject, date, id, inReplyTo: the first field counts
	scanHeader(stripMboxFrom(raw), func(key, lines []byte) {
		switch {
		case asciiFold(key, "References"):
			refs = append(refs, joinTrimmed(lines))
		case !seen[0] && asciiFold(key, "Subject"):
			seen[0], subject = true, joinTrimmed(lines)
		case !seen[1] && asciiFold(key, "Date"):
			seen[1], date = true, joinTrimmed(lines)
		case !seen[2] && asciiFold(key, "Message-Id"):
			seen[2], id = true, joinTrimmed(lines)
		case !seen[3] && asciiFold(key, "In-Reply-To"):
			seen[3], inReplyTo = true, joinTrimmed(lines)
		}
	})
	subject, _ = decodeHeaderValue(subject)
	in.Subject = strings.TrimSpace(subject)
	in.Date = parseDate(date)
	in.MessageID, in.InReplyTo, in.References = idValues(id, inReplyTo, strings.Join(refs, " "))
	return in, in.MessageID == ""
}

// idHeaders reads the Message-ID (the first id of Message-Id, "" if none)
// and the In-Reply-To and References ids of a header.
func idHeaders(hdr message.Header) (id string, inReplyTo, references []string) {
	return idValues(hdr.Get("Message-Id"), hdr.Get("In-Reply-To"), strings.Join(hdr.Values("References"), " "))
}

func idValues(messageID, inReplyTo, references string) (id string, irt, refs []string) {
	if ids := ParseIDList(messageID); len(ids) > 0 {
		id = legacyToUTF8(ids[0])
	}
	return id, validIDs(ParseIDList(inReplyTo)), validIDs(ParseIDList(references))
}

// scanHeader calls fn with every field of raw's header, in order, as
// Parse reads them: the lines splitHeader keeps, read as go-message's
// textproto.ReadHeader reads them. key is the name trimmed of spaces and
// tabs; lines is the rest of its first line and its continuation lines,
// each ended by '\n', and joinTrimmed(lines) is the value ReadHeader
// gives. Both are valid only during the call.
func scanHeader(raw []byte, fn func(key, lines []byte)) {
	var key []byte   // the current field's name; nil before the first field
	var lines []byte // its first line after the colon, then its continuations, each ending in '\n'
	flush := func() {
		if key == nil {
			return
		}
		fn(key, lines)
	}
	kept := 0
	pos := 0
	for pos < len(raw) {
		line, next, _ := headerLine(raw, pos)
		switch {
		case len(line) == 0:
			flush()
			return
		case line[0] == ' ' || line[0] == '\t':
			if kept > 0 {
				lines = append(append(lines, line...), '\n')
			}
		case isFieldLine(line):
			flush()
			i := bytes.IndexByte(line, ':')
			key = trimSpaceTab(line[:i])
			lines = append(append(lines[:0], line[i+1:]...), '\n')
			kept++
		default:
			nl := nextLine(raw, next)
			if kept > 0 && len(nl) > 0 && (isFieldLine(nl) || nl[0] == ' ' || nl[0] == '\t') {
				break // dropped, as splitHeader drops it
			}
			flush()
			return
		}
		pos = next
	}
	flush()
}

// joinTrimmed joins the '\n'-ended lines of b (splitHeader's lines, so
// none ends in '\r'), each trimmed of spaces and tabs, the empty ones left
// out, with one space: go-message's trimAroundNewlines.
func joinTrimmed(b []byte) string {
	var out []byte
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		l := b[:i]
		b = b[i+1:]
		if l = trimSpaceTab(l); len(l) == 0 {
			continue
		}
		if len(out) > 0 {
			out = append(out, ' ')
		}
		out = append(out, l...)
	}
	return string(out)
}

func trimSpaceTab(b []byte) []byte { return bytes.Trim(b, " \t") }

// asciiFold reports whether b equals s, ASCII letters folded: header
// names are ASCII (isFieldLine), and textproto.CanonicalMIMEHeaderKey
// maps two names to the same key exactly when they are equal so.
func asciiFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range len(b) {
		c, d := b[i], s[i]
		if c|0x20 >= 'a' && c|0x20 <= 'z' {
			c |= 0x20
		}
		if d|0x20 >= 'a' && d|0x20 <= 'z' {
			d |= 0x20
		}
		if c != d {
			return false
		}
	}
	return true
}
