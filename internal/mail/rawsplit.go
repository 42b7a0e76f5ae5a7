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
// a complete block.
func splitHeader(raw []byte) (hdr, body []byte, dropped int, noBlank bool) {
	out := make([]byte, 0, 4096)
	kept := 0
	pos := 0
	for pos < len(raw) {
		end := bytes.IndexByte(raw[pos:], '\n')
		next := len(raw)
		if end >= 0 {
			next = pos + end + 1
		}
		line := bytes.TrimRight(raw[pos:next], "\r\n")
		switch {
		case len(line) == 0:
			return append(out, "\r\n"...), raw[next:], dropped, false
		case line[0] == ' ' || line[0] == '\t':
			if kept > 0 {
				out = append(append(out, line...), "\r\n"...)
			} else {
				dropped++
			}
		case isFieldLine(line):
			out = append(append(out, line...), "\r\n"...)
			kept++
		default:
			nl := nextLine(raw, next)
			if kept > 0 && len(nl) > 0 && (isFieldLine(nl) || nl[0] == ' ' || nl[0] == '\t') {
				dropped++
				break
			}
			return append(out, "\r\n"...), raw[pos:], dropped, kept > 0
		}
		pos = next
	}
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

func bufioReader(b []byte) *bufio.Reader {
	return bufio.NewReaderSize(bytes.NewReader(b), 4096)
}
