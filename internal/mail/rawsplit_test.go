package mail

import (
	"bytes"
	"testing"
)

// splitHeaderCopying is splitHeader as it was before it returned raw's own
// bytes for a header that needs no change: it copies every kept line.
// It separates the header block from the body, dropping header
// lines that are neither "Name: value" nor continuations (go-message's
// reader stops at the first such line and loses the rest). When a bad line
// is not followed by another header line, the body is taken to start there
// (noBlank). The returned header always ends in CRLF CRLF so the reader sees
// a complete block.
func splitHeaderCopying(raw []byte) (hdr, body []byte, dropped int, noBlank bool) {
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

// TestSplitHeaderMatchesCopying holds splitHeader, which returns raw's own
// bytes when the header needs no change, to the version that copied every
// line, on every corpus message and on edge cases of line endings.
func TestSplitHeaderMatchesCopying(t *testing.T) {
	t.Parallel()
	inputs := [][]byte{nil, []byte("\r\n"), []byte("\n"), []byte("A: b"), []byte("A: b\r"), []byte("A: b\r\r"), []byte("A: b\r\n"),
		[]byte("A: b\r\n\r\nbody"), []byte("A: b\n\nbody"), []byte("A: b\r\r\n\r\n"), []byte("A: b\r\n c\r\n\r\n"),
		[]byte(" c\r\nA: b\r\n\r\n"), []byte("A: b\r\nbad\r\nC: d\r\n\r\n"), []byte("A: b\r\nbad\r\nbody\r\n"),
		[]byte("A: b\r\n\r\r\nx"), []byte("A: b\r\n \r\n\r\n"), []byte("A: b\nC: d\r\n\r\n"), []byte("A: b\r\nC: d\n\r\n")}
	for _, s := range parseSeeds {
		inputs = append(inputs, []byte(s))
	}
	files := corpusFiles(t, append(append(append([]string{}, hamDirs...), spamDirs...), edgeDirs...)...)
	for _, raw := range readCorpus(t, files) { // the bytes alone: no Parse needed
		raw = stripMboxFrom(raw)
		// As an IMAP server sends them: CRLF lines.
		inputs = append(inputs, raw, bytes.ReplaceAll(bytes.ReplaceAll(raw, []byte("\r\n"), []byte("\n")), []byte("\n"), []byte("\r\n")))
	}
	shared := 0
	for _, raw := range inputs {
		h, b, d, nb := splitHeader(raw)
		wh, wb, wd, wnb := splitHeaderCopying(raw)
		if !bytes.Equal(h, wh) || !bytes.Equal(b, wb) || d != wd || nb != wnb {
			t.Errorf("splitHeader(%.80q):\ngot  %q %.40q %d %v\nwant %q %.40q %d %v", raw, h, b, d, nb, wh, wb, wd, wnb)
		}
		if len(h) > 0 && len(raw) > 0 && &h[0] == &raw[0] {
			shared++
		}
	}
	if shared == 0 {
		t.Errorf("no header returned as raw's own bytes: the fast path went untested")
	}
	t.Logf("%d of %d headers returned uncopied", shared, len(inputs))
}
