package mail

import (
	"bufio"
	"bytes"
)

// stripMboxFrom drops a leading mbox "From " envelope line.
func stripMboxFrom(raw []byte) []byte {
	if bytes.HasPrefix(raw, []byte("From ")) {
		if i := bytes.IndexByte(raw, '\n'); i >= 0 {
			return raw[i+1:]
		}
		return nil
	}
	return raw
}

// splitHeader separates the header block from the body, dropping header
// lines that are neither "Name: value" nor continuations (go-message's
// reader stops at the first such line and loses the rest). When a bad line
// is not followed by another header line, the body is taken to start there
// (noBlank). The returned header always ends in CRLF CRLF so the reader sees
// a complete block. A header already in that form (CRLF lines, nothing
// dropped: what an IMAP server sends) is returned as raw's own bytes, not
// copied; the caller must not write to it.
func splitHeader(raw []byte) (hdr, body []byte, dropped int, noBlank bool) {
	var out []byte // nil while raw[:pos] is the header as it is to be read
	copying := false
	copyUpTo := func(pos int) {
		if !copying {
			out = append(make([]byte, 0, max(pos+256, 4096)), raw[:pos]...)
			copying = true
		}
	}
	kept := 0
	pos := 0
	for pos < len(raw) {
		line, next, ended := headerLine(raw, pos)
		// asIs: raw holds this line exactly as the header is to read it.
		asIs := ended && next-pos == len(line)+2 && raw[next-2] == '\r'
		switch {
		case len(line) == 0:
			if !copying && asIs {
				return raw[:next], raw[next:], dropped, false
			}
			copyUpTo(pos)
			return append(out, "\r\n"...), raw[next:], dropped, false
		case line[0] == ' ' || line[0] == '\t':
			if kept > 0 {
				if !asIs || copying {
					copyUpTo(pos)
					out = append(append(out, line...), "\r\n"...)
				}
			} else {
				copyUpTo(pos)
				dropped++
			}
		case isFieldLine(line):
			if !asIs || copying {
				copyUpTo(pos)
				out = append(append(out, line...), "\r\n"...)
			}
			kept++
		default:
			copyUpTo(pos)
			nl := nextLine(raw, next)
			if kept > 0 && len(nl) > 0 && (isFieldLine(nl) || nl[0] == ' ' || nl[0] == '\t') {
				dropped++
				break
			}
			return append(out, "\r\n"...), raw[pos:], dropped, kept > 0
		}
		pos = next
	}
	copyUpTo(pos)
	return append(out, "\r\n"...), nil, dropped, false
}

func nextLine(raw []byte, pos int) []byte {
	if pos >= len(raw) {
		return nil
	}
	end := bytes.IndexByte(raw[pos:], '\n')
	if end < 0 {
		return bytes.TrimRight(raw[pos:], "\r")
	}
	return bytes.TrimRight(raw[pos:pos+end], "\r")
}

// isFieldLine reports whether line looks like "Name: value" with a name
// go-message accepts (printable ASCII, no colon; trailing spaces allowed).
func isFieldLine(line []byte) bool {
	i := bytes.IndexByte(line, ':')
	if i <= 0 {
		return false
	}
	name := bytes.TrimRight(line[:i], " \t")
	if len(name) == 0 {
		return false
	}
	for _, c := range name {
		if c < 33 || c > 126 {
			return false
		}
	}
	return true
}

// bufioReader reads b through a buffer of at most 4096 bytes, and no
// larger than b: most headers are smaller, and Parse made one per message.
func bufioReader(b []byte) *bufio.Reader {
	return bufio.NewReaderSize(bytes.NewReader(b), min(len(b), 4096))
}

// headerLine is the header line of raw starting at pos, without its line
// ending (trailing CR and LF trimmed); next is where the following line
// starts, and ended whether this one ended in LF (false: the last bytes of
// raw). splitHeader and HeaderThreadInput read lines with it, so the two
// cannot disagree on where a line ends.
func headerLine(raw []byte, pos int) (line []byte, next int, ended bool) {
	next = len(raw)
	end := bytes.IndexByte(raw[pos:], '\n')
	if end >= 0 {
		next = pos + end + 1
	}
	return bytes.TrimRight(raw[pos:next], "\r\n"), next, end >= 0
}
