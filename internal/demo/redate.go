package demo

import (
	"bytes"
	"net/mail"
	"time"
)

// Redate moves the Date headers of the demo mailbox by whole weeks so that
// its newest message is from the last seven days before now: the seeded
// mail reads as this week's (an age of days, not of months), and every
// weekday the mail names ("see you Thursday") still falls on the day its
// Date says. Spacing and order between messages are kept; a message
// without a readable Date is left as it is.
func Redate(msgs [][]byte, now time.Time) [][]byte {
	const week = 7 * 24 * time.Hour
	var newest time.Time
	for _, raw := range msgs {
		if d, ok := dateOf(raw); ok && d.After(newest) {
			newest = d
		}
	}
	if newest.IsZero() || !newest.Before(now.Add(-week)) {
		return msgs
	}
	shift := now.Sub(newest) / week * week
	out := make([][]byte, len(msgs))
	for i, raw := range msgs {
		out[i] = raw
		start, end, ok := dateLine(raw)
		if !ok {
			continue
		}
		d, err := mail.ParseDate(string(bytes.TrimSpace(raw[start:end])))
		if err != nil {
			continue
		}
		moved := d.Add(shift).Format(time.RFC1123Z)
		out[i] = append(append(append([]byte(nil), raw[:start]...), " "+moved...), raw[end:]...)
	}
	return out
}

// dateOf reads a message's Date header.
func dateOf(raw []byte) (time.Time, bool) {
	start, end, ok := dateLine(raw)
	if !ok {
		return time.Time{}, false
	}
	d, err := mail.ParseDate(string(bytes.TrimSpace(raw[start:end])))
	return d, err == nil
}

// dateLine finds the value of the Date header in the header block of raw:
// raw[start:end] is what follows "Date:" up to the line's CRLF. The demo's
// own files are single-line headers, which is all this needs to handle.
func dateLine(raw []byte) (start, end int, ok bool) {
	head := raw
	if i := bytes.Index(raw, []byte("\r\n\r\n")); i >= 0 {
		head = raw[:i+2]
	}
	for off := 0; off < len(head); {
		nl := bytes.Index(head[off:], []byte("\r\n"))
		if nl < 0 {
			return 0, 0, false
		}
		line := head[off : off+nl]
		if len(line) > 5 && bytes.EqualFold(line[:5], []byte("Date:")) {
			return off + 5, off + nl, true
		}
		off += nl + 2
	}
	return 0, 0, false
}
