// Package html2text renders HTML as plain text, for the model and for
// people: paragraphs and divs become line breaks, links "text ( url )",
// headings underlined, block quotes prefixed with ">".
//
// It is github.com/inbucket/html2text v1.0.0 (MIT, LICENSE in this
// directory; copyright Jay Taylor and the inbucket authors) cut down to
// the one configuration mailagent uses (the default options: no pretty
// tables, links kept), with the same output byte for byte
// (TestMatchesUpstream holds it to the upstream package over the
// SpamAssassin corpus and generated hostile HTML). What changed is speed:
// upstream runs a regular expression over every text node and writes
// text a rune at a time, which was 40 % of converting a mail's HTML and
// 5 % of a whole triage; here both are byte loops. Upstream has no
// release since, so a patch would not reach us.
//
// FromString never panics, whatever its input.
package html2text

import (
	"bytes"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// FromString parses HTML from the input string, then renders the text
// form. A leading byte-order mark (two, as upstream) is dropped.
func FromString(input string) (string, error) {
	const bomMark = "\xef\xbb\xbf"
	input = strings.TrimPrefix(strings.TrimPrefix(input, bomMark), bomMark)
	doc, err := html.Parse(strings.NewReader(input))
	if err != nil {
		return "", err
	}
	return fromHTMLNode(doc), nil
}

// fromHTMLNode renders text output from a parsed HTML document.
func fromHTMLNode(doc *html.Node) string {
	var ctx textifyTraverseContext
	ctx.traverse(doc)
	return strings.TrimSpace(collapseNewlines(strings.ReplaceAll(ctx.buf.String(), "\n ", "\n")))
}

// textifyTraverseContext is the state of one rendering.
type textifyTraverseContext struct {
	buf bytes.Buffer

	prefix          string
	endsWithSpace   bool
	justClosedDiv   bool
	blockquoteLevel int
	lineLength      int
	isPre           bool
}

func (ctx *textifyTraverseContext) handleElement(node *html.Node) {
	ctx.justClosedDiv = false

	switch node.DataAtom {
	case atom.Br:
		ctx.emit("\n")

	case atom.H1, atom.H2, atom.H3:
		var subCtx textifyTraverseContext
		subCtx.traverseChildren(node)
		str := subCtx.buf.String()
		dividerLen := 0
		for line := range strings.SplitSeq(str, "\n") {
			if lineLen := utf8.RuneCountInString(line); lineLen-1 > dividerLen {
				dividerLen = lineLen - 1
			}
		}
		divider := strings.Repeat("-", dividerLen)
		if node.DataAtom == atom.H1 {
			divider = strings.Repeat("*", dividerLen)
		}
		if node.DataAtom == atom.H3 {
			ctx.emit("\n\n" + str + "\n" + divider + "\n\n")
			return
		}
		ctx.emit("\n\n" + divider + "\n" + str + "\n" + divider + "\n\n")

	case atom.Blockquote:
		ctx.blockquoteLevel++
		ctx.prefix = strings.Repeat(">", ctx.blockquoteLevel) + " "
		ctx.emit("\n")
		if ctx.blockquoteLevel == 1 {
			ctx.emit("\n")
		}
		ctx.traverseChildren(node)
		ctx.blockquoteLevel--
		ctx.prefix = strings.Repeat(">", ctx.blockquoteLevel)
		if ctx.blockquoteLevel > 0 {
			ctx.prefix += " "
		}
		ctx.emit("\n\n")

	case atom.Div:
		if ctx.lineLength > 0 {
			ctx.emit("\n")
		}
		ctx.traverseChildren(node)
		if !ctx.justClosedDiv {
			ctx.emit("\n")
		}
		ctx.justClosedDiv = true

	case atom.Li:
		ctx.emit("* ")
		ctx.traverseChildren(node)
		ctx.emit("\n")

	case atom.B, atom.Strong:
		var subCtx textifyTraverseContext
		subCtx.endsWithSpace = true
		subCtx.traverseChildren(node)
		ctx.emit("*" + subCtx.buf.String() + "*")

	case atom.A:
		linkText := ""
		// For simple link element content with single text node only, peek at the link text.
		if node.FirstChild != nil && node.FirstChild.NextSibling == nil && node.FirstChild.Type == html.TextNode {
			linkText = node.FirstChild.Data
		}
		// If image is the only child, take its alt text as the link text.
		if img := node.FirstChild; img != nil && node.LastChild == img && img.DataAtom == atom.Img {
			if altText := getAttrVal(img, "alt"); altText != "" {
				ctx.emit(altText)
			}
		} else {
			ctx.traverseChildren(node)
		}
		hrefLink := ""
		if attrVal := getAttrVal(node, "href"); attrVal != "" {
			attrVal = normalizeHrefLink(attrVal)
			// Don't print link href if it matches link element content or if the link is empty.
			if attrVal != "" && linkText != attrVal {
				hrefLink = "( " + attrVal + " )"
			}
		}
		ctx.emit(hrefLink)

	case atom.P, atom.Ul, atom.Table:
		ctx.paragraphHandler(node)

	case atom.Pre:
		ctx.isPre = true
		ctx.traverseChildren(node)
		ctx.isPre = false

	case atom.Style, atom.Script, atom.Head:
		// Ignore the subtree.

	default:
		ctx.traverseChildren(node)
	}
}

// paragraphHandler renders node children surrounded by double newlines.
func (ctx *textifyTraverseContext) paragraphHandler(node *html.Node) {
	ctx.emit("\n\n")
	ctx.traverseChildren(node)
	ctx.emit("\n\n")
}

func (ctx *textifyTraverseContext) traverse(node *html.Node) {
	switch node.Type {
	default:
		ctx.traverseChildren(node)

	case html.TextNode:
		data := node.Data
		if !ctx.isPre {
			data = strings.TrimSpace(collapseSpacing(data))
		}
		ctx.emit(data)

	case html.ElementNode:
		ctx.handleElement(node)
	}
}

func (ctx *textifyTraverseContext) traverseChildren(node *html.Node) {
	for c := node.FirstChild; c != nil; c = c.NextSibling {
		ctx.traverse(c)
	}
}

func (ctx *textifyTraverseContext) emit(data string) {
	if data == "" {
		return
	}
	for _, line := range ctx.breakLongLines(data) {
		first, _ := utf8.DecodeRuneInString(line)
		if !unicode.IsSpace(first) && !ctx.endsWithSpace && !strings.HasPrefix(data, ".") {
			ctx.buf.WriteByte(' ')
			ctx.lineLength++
		}
		last, _ := utf8.DecodeLastRuneInString(line)
		ctx.endsWithSpace = unicode.IsSpace(last)
		valid := utf8.ValidString(line)
		for {
			i := strings.IndexByte(line, '\n')
			seg := line
			if i >= 0 {
				seg = line[:i]
			}
			if valid {
				ctx.buf.WriteString(seg)
			} else {
				// Upstream writes rune by rune: each invalid byte
				// becomes U+FFFD.
				for _, c := range seg {
					ctx.buf.WriteRune(c)
				}
			}
			ctx.lineLength += utf8.RuneCountInString(seg)
			if i < 0 {
				break
			}
			ctx.buf.WriteByte('\n')
			ctx.lineLength = 0
			ctx.buf.WriteString(ctx.prefix)
			line = line[i+1:]
		}
	}
}

const maxLineLen = 74

func (ctx *textifyTraverseContext) breakLongLines(data string) []string {
	// Only break lines when in blockquotes.
	if ctx.blockquoteLevel == 0 {
		return []string{data}
	}
	var (
		ret      = []string{}
		runes    = []rune(data)
		l        = len(runes)
		existing = ctx.lineLength
	)
	if existing >= maxLineLen {
		ret = append(ret, "\n")
		existing = 0
	}
	for l+existing > maxLineLen {
		i := maxLineLen - existing
		for i >= 0 && !unicode.IsSpace(runes[i]) {
			i--
		}
		if i == -1 {
			// No spaces, so go the other way.
			i = maxLineLen - existing
			for i < l && !unicode.IsSpace(runes[i]) {
				i++
			}
		}
		ret = append(ret, string(runes[:i])+"\n")
		for i < l && unicode.IsSpace(runes[i]) {
			i++
		}
		runes = runes[i:]
		l = len(runes)
		existing = 0
	}
	if len(runes) > 0 {
		ret = append(ret, string(runes))
	}
	return ret
}

func normalizeHrefLink(link string) string {
	link = strings.TrimSpace(link)
	link = strings.TrimPrefix(link, "mailto:")
	return link
}

func getAttrVal(node *html.Node, attrName string) string {
	for _, attr := range node.Attr {
		if attr.Key == attrName {
			return attr.Val
		}
	}
	return ""
}

// isSpacing reports the bytes upstream's `[ \r\n\t]+` matches.
func isSpacing(c byte) bool { return c == ' ' || c == '\r' || c == '\n' || c == '\t' }

// collapseSpacing replaces each run of spaces, tabs, CRs and LFs with one
// space (upstream: regexp `[ \r\n\t]+` → " ").
func collapseSpacing(s string) string {
	// Most text nodes need no change: return them as they are.
	i := 0
	for ; i < len(s); i++ {
		if isSpacing(s[i]) && (s[i] != ' ' || i+1 < len(s) && isSpacing(s[i+1])) {
			break
		}
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	b.WriteString(s[:i])
	for i < len(s) {
		if !isSpacing(s[i]) {
			b.WriteByte(s[i])
			i++
			continue
		}
		b.WriteByte(' ')
		for i < len(s) && isSpacing(s[i]) {
			i++
		}
	}
	return b.String()
}

// collapseNewlines replaces each run of two or more LFs with exactly two
// (upstream: regexp `\n\n+` → "\n\n").
func collapseNewlines(s string) string {
	if !strings.Contains(s, "\n\n\n") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		if s[i] != '\n' || i+1 >= len(s) || s[i+1] != '\n' {
			b.WriteByte(s[i])
			i++
			continue
		}
		b.WriteString("\n\n")
		for i < len(s) && s[i] == '\n' {
			i++
		}
	}
	return b.String()
}
