package mail

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/emersion/go-message"
	_ "github.com/emersion/go-message/charset" // registers legacy charsets with go-message
	gomail "github.com/emersion/go-message/mail"
	"github.com/emersion/go-message/textproto"
	"github.com/mailagent/mailagent/internal/html2text"
)

// Limits that keep one hostile message from costing unbounded memory or CPU.
const (
	// MaxTextBytes caps Message.Text; the rest is dropped with a Problem.
	MaxTextBytes = 256 << 10
	// maxHTMLBytes caps the HTML handed to the converter per part.
	maxHTMLBytes = 2 << 20
	// maxDepth caps multipart nesting.
	maxDepth = 32
	// maxParts caps the number of MIME parts walked.
	maxParts = 1000
)

// Parse parses one raw message. It never returns nil and never panics: every
// defect of the input is recorded in Problems and a usable Message comes
// back. A leading mbox "From " envelope line is ignored.
func Parse(raw []byte) *Message {
	p := &parser{m: &Message{Size: len(raw)}}
	p.run(raw)
	return p.m
}

// run parses raw into p.m; an attached message (forward.go) is parsed by
// run on a parser of its own.
func (p *parser) run(raw []byte) {
	func() {
		// go-message and x/net/html are third-party code fed hostile
		// input; a panic there must cost one message, not the process.
		defer func() {
			if r := recover(); r != nil {
				p.damage("internal parser error: %v", r)
			}
		}()
		p.parse(raw)
	}()
	p.finish()
}

type parser struct {
	m                *Message
	leaves           []textLeaf
	nAlt             int
	nParts           int
	report           bool // inside multipart/report
	rawFrom, rawDate string
	fwdDepth         int  // how deep in attached messages (forward.go) this parser is
	damaged          bool // bytes were cut or unreadable (see damage)
}

// textLeaf is one readable body part, kept until the alternatives are
// chosen.
type textLeaf struct {
	html bool
	text string
	alts []altPos
}

// altPos says which child of which multipart/alternative a leaf is under.
type altPos struct{ alt, child int }

func (p *parser) problem(format string, args ...any) {
	if len(p.m.Problems) >= 50 {
		return
	}
	p.m.Problems = append(p.m.Problems, strings.ToValidUTF8(fmt.Sprintf(format, args...), "\uFFFD"))
}

// damage records a problem that means the input was cut or unreadable,
// not merely unusual: an attached message with one is Forward.Broken.
func (p *parser) damage(format string, args ...any) {
	p.damaged = true
	p.problem(format, args...)
}

func (p *parser) parse(raw []byte) {
	raw = stripMboxFrom(raw)
	hdrBytes, body, dropped, noBlank := splitHeader(raw)
	if dropped > 0 {
		p.problem("%d malformed header line(s) dropped", dropped)
	}
	if noBlank {
		p.damage("header not followed by a blank line: the rest was read as body")
	}
	h, err := textproto.ReadHeader(bufioReader(hdrBytes))
	if err != nil {
		p.damage("read header: %v", err)
	}
	hdr := message.Header{Header: h}
	if h.Len() == 0 {
		p.damage("no header fields")
	}
	p.headers(hdr)

	ent, err := message.New(hdr, bytes.NewReader(body))
	mt := p.mediaType(hdr, "")
	p.m.ContentType = mt
	if ent == nil { // not reached with go-message v0.18, kept for safety
		p.leaf(mt, nil, hdr, bytes.NewReader(body), "body", nil)
		return
	}
	p.walk(ent, err, mt, "body", 0, nil)
}

// headers fills the header-derived fields.
func (p *parser) headers(hdr message.Header) {
	m := p.m
	fields := hdr.Fields()
	m.Header = make(map[string][]string, fields.Len())
	// One backing array for the values: a field name seen once (most)
	// gets a one-value slice of it, capped, so an append elsewhere never
	// writes into a neighbour.
	vals := make([]string, 0, fields.Len())
	badCharset := false
	for pos := 0; fields.Next(); pos++ {
		k := fields.Key()
		v, ok := decodeHeaderValue(fields.Value())
		if !ok {
			badCharset = true
		}
		if prev, seen := m.Header[k]; seen {
			m.Header[k] = append(prev, v)
		} else {
			vals = append(vals, v)
			m.Header[k] = vals[len(vals)-1 : len(vals) : len(vals)]
		}
		if k == "Authentication-Results" {
			m.AuthResultsPos = append(m.AuthResultsPos, pos)
		}
	}
	if badCharset {
		p.problem("header has encoded words in an unknown charset: kept undecoded")
	}

	m.Subject = strings.TrimSpace(m.HeaderValue("Subject"))

	get := func(k string) string { return hdr.Get(k) }
	if v := get("From"); v != "" {
		p.rawFrom = v
		list, ok := parseAddressList(v)
		if !ok {
			p.problem("malformed From header %q: best-effort parse", short(v))
		}
		if len(list) > 0 {
			m.From = list[0]
		} else {
			m.From = Address{Name: cleanName(m.HeaderValue("From"))}
		}
	} else {
		p.problem("no From header")
	}
	if v := get("Sender"); v != "" {
		list, ok := parseAddressList(v)
		if !ok {
			p.problem("malformed Sender header %q: best-effort parse", short(v))
		}
		if len(list) > 0 {
			m.Sender = &list[0]
		}
	}
	for _, f := range []struct {
		key string
		dst *[]Address
	}{{"Reply-To", &m.ReplyTo}, {"To", &m.To}, {"Cc", &m.Cc}} {
		vals := hdr.Values(f.key)
		for _, v := range vals {
			list, ok := parseAddressList(v)
			if !ok {
				p.problem("malformed %s header %q: best-effort parse", f.key, short(v))
			}
			*f.dst = append(*f.dst, list...)
		}
	}

	p.rawDate = get("Date")
	if p.rawDate != "" {
		m.Date = parseDate(p.rawDate)
		if m.Date.IsZero() {
			p.problem("unparseable Date header %q", short(p.rawDate))
		}
	} else {
		p.problem("no Date header")
	}
	m.MessageID, m.InReplyTo, m.References = idHeaders(hdr) // threadinput.go
}

func validIDs(ids []string) []string {
	for i, id := range ids {
		ids[i] = legacyToUTF8(id)
	}
	return ids
}

func short(s string) string {
	s = legacyToUTF8(s)
	if len(s) > 80 {
		cut := 80
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

// mediaType returns the lowercased media type of an entity, with RFC 2045
// defaults for a missing or broken Content-Type.
func (p *parser) mediaType(h message.Header, def string) string {
	if def == "" {
		def = "text/plain"
	}
	v := h.Get("Content-Type")
	if strings.TrimSpace(v) == "" {
		return def
	}
	t, _, err := h.ContentType()
	if err != nil || t == "" {
		// Lenient: whatever precedes the first ';'.
		t = strings.ToLower(strings.TrimSpace(strings.SplitN(v, ";", 2)[0]))
		t = strings.Trim(t, `"' `)
	}
	if !strings.Contains(t, "/") {
		return def
	}
	return strings.ToLower(t)
}

func (p *parser) walk(e *message.Entity, newErr error, mt, path string, depth int, alts []altPos) {
	p.nParts++
	p.entityError(newErr, e.Header, path)

	if strings.HasPrefix(mt, "multipart/") {
		if depth >= maxDepth {
			p.problem("multipart nested deeper than %d in %s: ignored", maxDepth, path)
			return
		}
		p.multipart(e, mt, path, depth, alts)
		return
	}
	p.leaf(mt, newErr, e.Header, e.Body, path, alts)
}

func (p *parser) entityError(err error, h message.Header, path string) {
	switch {
	case err == nil:
	case message.IsUnknownEncoding(err):
		p.problem("unknown content-transfer-encoding %q in %s: kept as raw bytes", short(h.Get("Content-Transfer-Encoding")), path)
	case message.IsUnknownCharset(err):
		_, params, _ := h.ContentType()
		p.problem("unknown charset %q in %s: kept as raw bytes", short(params["charset"]), path)
	default:
		p.problem("%s: %v", path, err)
	}
}

func (p *parser) multipart(e *message.Entity, mt, path string, depth int, alts []altPos) {
	body, err := io.ReadAll(e.Body)
	if err != nil {
		p.damage("read %s: %v", path, err)
	}
	_, params, _ := e.Header.ContentType()
	boundary := params["boundary"]
	if boundary == "" {
		boundary = sniffBoundary(body)
		if boundary == "" {
			p.problem("%s without boundary in %s: read as text", mt, path)
			p.leaf("text/plain", nil, message.Header{}, bytes.NewReader(body), path, alts)
			return
		}
		p.problem("%s without boundary in %s: guessed %q", mt, path, short(boundary))
	}
	if mt == "multipart/report" {
		p.report = true
	}
	altID := -1
	if mt == "multipart/alternative" {
		altID = p.nAlt
		p.nAlt++
	}
	childDefault := "text/plain"
	if mt == "multipart/digest" {
		childDefault = "message/rfc822"
	}
	mr := textproto.NewMultipartReader(bytes.NewReader(body), boundary)
	n := 0
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if n == 0 {
				p.damage("malformed %s in %s (%v): read as text", mt, path, err)
				p.leaf("text/plain", nil, message.Header{}, bytes.NewReader(body), path, alts)
			} else {
				p.damage("malformed %s in %s: %v", mt, path, err)
			}
			return
		}
		n++
		if p.nParts >= maxParts {
			p.problem("more than %d MIME parts: the rest ignored", maxParts)
			return
		}
		childHdr := message.Header{Header: part.Header}
		child, cerr := message.New(childHdr, part)
		childMT := p.mediaType(childHdr, childDefault)
		childAlts := alts
		if altID >= 0 {
			childAlts = append(append([]altPos(nil), alts...), altPos{altID, n})
		}
		childPath := fmt.Sprintf("part %d", n)
		if strings.HasPrefix(path, "part ") {
			childPath = fmt.Sprintf("%s.%d", path, n)
		}
		p.walk(child, cerr, childMT, childPath, depth+1, childAlts)
	}
	if n == 0 {
		p.problem("%s in %s has no parts: read as text", mt, path)
		p.leaf("text/plain", nil, message.Header{}, bytes.NewReader(body), path, alts)
	}
}

// sniffBoundary finds a boundary in a multipart body whose header lacks
// one: the first "--x" line that appears again later.
func sniffBoundary(body []byte) string {
	tries := 0
	for line := range bytes.Lines(body) {
		if tries > 20 { // each try scans the body; bound the work
			break
		}
		line = bytes.TrimRight(line, "\r\n \t")
		if len(line) > 2 && len(line) < 200 && line[0] == '-' && line[1] == '-' {
			tries++
			b := string(line[2:])
			if bytes.Count(body, line) >= 2 || bytes.Contains(body, []byte("--"+b+"--")) {
				return strings.TrimSuffix(b, "--")
			}
		}
	}
	return ""
}

// leaf handles a non-multipart entity: readable text is kept, anything
// else becomes attachment metadata.
func (p *parser) leaf(mt string, newErr error, h message.Header, body io.Reader, path string, alts []altPos) {
	disp, dparams, _ := h.ContentDisposition()
	disp = strings.ToLower(disp)
	filename := ""
	if dparams != nil {
		filename = dparams["filename"]
	}
	if filename == "" {
		ah := gomail.AttachmentHeader{Header: h}
		filename, _ = ah.Filename()
	}
	filename, _ = decodeHeaderValue(filename)
	if mt == "text/calendar" || mt == "application/ics" || icsName(filename) || (dparams != nil && icsName(dparams["filename"])) {
		p.m.Calendar = true
	}

	isText := (mt == "text/plain" || mt == "text/html") &&
		disp != "attachment" && (filename == "" || disp == "inline")
	if isText && body != nil {
		limit := int64(MaxTextBytes) + 1
		if mt == "text/html" {
			limit = maxHTMLBytes + 1
		}
		buf := leafBufs.Get().(*bytes.Buffer)
		defer putLeafBuf(buf)
		_, err := buf.ReadFrom(io.LimitReader(body, limit))
		b := buf.Bytes() // bodyToUTF8 copies what it keeps
		if err != nil {
			p.damage("bad %s content in %s (%v): kept what decoded", short(h.Get("Content-Transfer-Encoding")), path, err)
		}
		if int64(len(b)) == limit {
			b = b[:limit-1]
			if mt == "text/html" {
				p.problem("HTML in %s larger than %d bytes: truncated", path, maxHTMLBytes)
			} else {
				p.problem("text in %s longer than %d KiB: truncated", path, MaxTextBytes>>10)
			}
		}
		s := p.bodyToUTF8(b, h, newErr, path)
		html := mt == "text/html" || looksLikeHTML(s)
		p.leaves = append(p.leaves, textLeaf{html: html, text: s, alts: alts})
		return
	}

	a := Attachment{Filename: filename, ContentType: mt, Inline: disp == "inline" || (disp == "" && h.Get("Content-Id") != "")}
	fwd := isAttachedMessage(mt) && !p.report
	switch {
	case body == nil:
	case fwd && p.fwdDepth < MaxForwardDepth && len(p.m.Forwards) < MaxForwards:
		a.Size = p.forward(body, h.Get("Content-Transfer-Encoding"), path) // forward.go
	default:
		n, err := io.Copy(io.Discard, body)
		a.Size = n
		if err != nil {
			p.damage("bad %s content in %s (%v): size is partial", short(h.Get("Content-Transfer-Encoding")), path, err)
		}
		if fwd {
			p.problem("attached message in %s not read: more than %d attached messages or nested deeper than %d", path, MaxForwards, MaxForwardDepth)
		}
	}
	if isAttachedMessage(mt) {
		if fwd {
			p.m.Forwarded = true
		}
		if a.Filename == "" {
			a.Filename = "message.eml"
		}
	}
	a.Filename = strings.ToValidUTF8(a.Filename, "\uFFFD")
	p.m.Attachments = append(p.m.Attachments, a)
}

// icsName reports whether a file name says iCalendar data.
func icsName(name string) bool {
	return len(name) >= 4 && strings.EqualFold(name[len(name)-4:], ".ics")
}

// bodyToUTF8 makes decoded body bytes valid UTF-8. Text without a declared
// charset that is not UTF-8 is read as Windows-1252.
func (p *parser) bodyToUTF8(b []byte, h message.Header, newErr error, path string) string {
	if utf8.Valid(b) {
		return string(b)
	}
	_, params, _ := h.ContentType()
	switch strings.ToLower(params["charset"]) {
	case "", "us-ascii", "ascii":
		// Undeclared or falsely declared 8-bit text: legacy Western.
		return legacyToUTF8(string(b))
	}
	if newErr == nil {
		p.problem("invalid UTF-8 in %s: bad bytes replaced", path)
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// leafBufs hold a text part's decoded bytes until bodyToUTF8 has made its
// string: reading each part into a fresh, doubling buffer was an eighth
// of what a triage allocated.
var leafBufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

func putLeafBuf(b *bytes.Buffer) {
	if b.Cap() <= 1<<20 { // a rare huge part is not kept
		b.Reset()
		leafBufs.Put(b)
	}
}

// looksLikeHTML catches HTML mislabelled as text/plain, common in spam and
// in some mailers' single-part messages.
func looksLikeHTML(s string) bool {
	head := strings.TrimLeft(s, " \t\r\n")
	if len(head) > 1024 {
		head = head[:1024]
	}
	// Compared with ASCII case folded: what strings.ToLower of head would
	// give for these patterns (no other rune lowers to their letters),
	// without a lowered copy of every text part's first KiB.
	return hasPrefixFold(head, "<!doctype html") || hasPrefixFold(head, "<html") ||
		(strings.HasPrefix(head, "<") && (containsFold(head, "<body") || containsFold(head, "<html")))
}

// hasPrefixFold reports whether s begins with the lowercase ASCII prefix,
// ASCII letters compared without case.
func hasPrefixFold(s, prefix string) bool {
	if len(s) < len(prefix) {
		return false
	}
	for i := range len(prefix) {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != prefix[i] {
			return false
		}
	}
	return true
}

// containsFold reports whether s contains pat (lowercase ASCII, beginning
// with '<'), ASCII letters compared without case.
func containsFold(s, pat string) bool {
	for {
		i := strings.IndexByte(s, pat[0])
		if i < 0 {
			return false
		}
		if hasPrefixFold(s[i:], pat) {
			return true
		}
		s = s[i+1:]
	}
}

// finish assembles Text from the chosen leaves, splits it, synthesizes a
// missing Message-ID and guarantees valid UTF-8.
func (p *parser) finish() {
	m := p.m
	if m.ContentType == "" {
		m.ContentType = "text/plain"
	}
	m.Text = p.assemble()
	split := SplitText(m.Text)
	m.CleanText, m.Quoted, m.Signature = split.Clean, split.Quoted, split.Signature
	if split.Forwarded {
		m.Forwarded = true
	}
	if m.MessageID == "" {
		m.MessageID = synthID(m)
		m.Synthesized = true
		p.problem("no Message-ID: synthesized %s", m.MessageID)
	}
	validate(m)
}

func (p *parser) assemble() (text string) {
	defer func() {
		if r := recover(); r != nil {
			p.problem("internal error assembling text: %v", r)
			text = ""
		}
	}()
	// For every alternative, pick the first child holding plain text, else
	// the first holding HTML.
	plainChild := map[int]int{}
	htmlChild := map[int]int{}
	for _, l := range p.leaves {
		for _, a := range l.alts {
			dst := plainChild
			if l.html {
				dst = htmlChild
			}
			if c, ok := dst[a.alt]; !ok || a.child < c {
				dst[a.alt] = a.child
			}
		}
	}
	chosen := func(alt int) int {
		if c, ok := plainChild[alt]; ok {
			return c
		}
		return htmlChild[alt]
	}
	var b strings.Builder
	for _, l := range p.leaves {
		ok := true
		for _, a := range l.alts {
			if chosen(a.alt) != a.child {
				ok = false
				break
			}
		}
		if !ok {
			continue
		}
		s := l.text
		if l.html {
			s = p.htmlToText(s)
			p.m.FromHTML = true
		}
		s = strings.TrimSpace(normalizeNewlines(s))
		if s == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString(s)
		if b.Len() > MaxTextBytes {
			break
		}
	}
	text = b.String()
	if len(text) > MaxTextBytes {
		cut := MaxTextBytes
		for cut > 0 && !utf8.RuneStart(text[cut]) {
			cut--
		}
		text = text[:cut]
		p.problem("body text longer than %d KiB: truncated", MaxTextBytes>>10)
	}
	return text
}

// htmlToText converts HTML to text. Markup inside raw-text elements
// (<noframes>, <noscript>, <xmp>) comes out of the converter verbatim, so
// output that still has tags is converted again, at most twice more.
func (p *parser) htmlToText(s string) string {
	for range 3 {
		conv, err := html2text.FromString(s)
		if err != nil {
			p.problem("convert HTML: %v", err)
			return ""
		}
		if !hasTag(conv) {
			return conv
		}
		s = conv
	}
	return s
}

// htmlTags are the element names whose presence in converted text means
// markup survived conversion. A list, not "any <word>", so addresses such
// as "<bob@example.com>" in the text do not trigger another pass.
var htmlTags = map[string]bool{
	"html": true, "head": true, "body": true, "div": true, "p": true, "br": true, "table": true,
	"tr": true, "td": true, "font": true, "span": true, "a": true, "img": true, "b": true, "i": true,
	"center": true, "style": true, "script": true, "meta": true, "title": true, "frame": true, "ul": true, "li": true,
}

// hasTag reports whether s contains an HTML tag such as "<div" or "</p>".
func hasTag(s string) bool {
	for {
		i := strings.IndexByte(s, '<')
		if i < 0 {
			return false
		}
		s = s[i+1:]
		j := 0
		if j < len(s) && s[j] == '/' {
			j++
		}
		k := j
		for k < len(s) && k-j < 8 && (s[k]|0x20 >= 'a' && s[k]|0x20 <= 'z' || s[k] >= '0' && s[k] <= '9') {
			k++
		}
		if k > j && k < len(s) && (s[k] == '>' || s[k] == ' ' || s[k] == '/' || s[k] == '\n') && htmlTags[strings.ToLower(s[j:k])] {
			return true
		}
	}
}

func normalizeNewlines(s string) string {
	if !strings.Contains(s, "\r") {
		return s
	}
	s = strings.ReplaceAll(s, "\r\n", "\n")
	return strings.ReplaceAll(s, "\r", "\n")
}

// synthID derives a stable Message-ID from the parts of a message that
// survive re-transport: sender address, date, subject and body text.
func synthID(m *Message) string {
	h := sha256.New()
	date := ""
	if !m.Date.IsZero() {
		date = m.Date.UTC().Format(time.RFC3339)
	}
	for _, s := range []string{strings.ToLower(m.From.Email), date, collapseSpace(m.Subject), m.Text} {
		_, _ = io.WriteString(h, s)
		h.Write([]byte{0})
	}
	return "synth-" + hex.EncodeToString(h.Sum(nil)) + "@mailagent.invalid"
}

// validate enforces the all-strings-valid-UTF-8 contract on the result.
func validate(m *Message) {
	v := func(s *string) {
		if !utf8.ValidString(*s) {
			*s = strings.ToValidUTF8(*s, "\uFFFD")
		}
	}
	va := func(a *Address) { v(&a.Name); v(&a.Email) }
	for _, s := range []*string{&m.MessageID, &m.Subject, &m.ContentType, &m.Text, &m.CleanText, &m.Quoted, &m.Signature} {
		v(s)
	}
	for i := range m.InReplyTo {
		v(&m.InReplyTo[i])
	}
	for i := range m.References {
		v(&m.References[i])
	}
	va(&m.From)
	if m.Sender != nil {
		va(m.Sender)
	}
	for _, l := range [][]Address{m.ReplyTo, m.To, m.Cc} {
		for i := range l {
			va(&l[i])
		}
	}
	for k, vals := range m.Header {
		if !utf8.ValidString(k) {
			delete(m.Header, k)
			k = strings.ToValidUTF8(k, "\uFFFD")
			m.Header[k] = vals
		}
		for i := range vals {
			v(&vals[i])
		}
	}
	for i := range m.Attachments {
		v(&m.Attachments[i].Filename)
		v(&m.Attachments[i].ContentType)
	}
	for i := range m.Problems {
		v(&m.Problems[i])
	}
}
