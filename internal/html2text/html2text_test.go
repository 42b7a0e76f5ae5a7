package html2text

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/emersion/go-message"
	upstream "github.com/inbucket/html2text"

	"github.com/mailagent/mailagent/internal/rig/testsize"
)

// same fails t unless FromString and upstream agree on in, output and
// error alike.
func same(t *testing.T, name, in string) {
	t.Helper()
	want, werr := upstream.FromString(in)
	got, gerr := FromString(in)
	if (werr == nil) != (gerr == nil) || got != want {
		t.Fatalf("%s: differs from upstream\ninput: %q\n got: %q, %v\nwant: %q, %v", name, in, got, gerr, want, werr)
	}
}

// TestMatchesUpstream: every shape of HTML the converter handles comes out
// exactly as github.com/inbucket/html2text renders it with the default
// options, including whitespace runs, invalid UTF-8, Unicode spaces,
// block quotes that wrap long lines, and byte-order marks.
func TestMatchesUpstream(t *testing.T) {
	t.Parallel()
	cases := []string{
		"", "plain", "  \t\r\n  ", "<p>a</p><p>b</p>", "a<br>b<br/><br>c",
		"<div>one</div><div><div>two</div></div>three",
		"<h1>Title</h1><h2>Sub\ntitle</h2><h3>Small</h3>",
		"<blockquote>quoted <blockquote>twice " + strings.Repeat("word ", 40) + "</blockquote></blockquote>after",
		"<blockquote>" + strings.Repeat("x", 200) + "</blockquote>",
		"<a href='https://e.test/x'>https://e.test/x</a> <a href=' mailto:bob@e.test '>Bob</a> <a href=''>empty</a>",
		"<a href='u'><img alt='pic'></a><a href='v'><img></a>",
		"<ul><li>one</li><li>two <b>bold</b> <strong>strong</strong></li></ul>",
		"<table><tr><th>h</th><td>c1</td><td>c2</td></tr><tfoot><tr><td>f</td></tr></tfoot></table>",
		"<pre>  keep\n\n\n   this\t</pre> then   collapse\n\n\n\nthis",
		"<style>p{}</style><script>x()</script><head><title>t</title></head>body",
		"\xef\xbb\xbf\xef\xbb\xbf\xef\xbb\xbfthree boms", "bad \xff\xfe utf8 \xe2\x82", "<p>nbsp\u00a0\u00a0and\u2003em</p>",
		".dot start", "<p>a</p>.<p>b</p>", "&amp; &lt;b&gt; &nbsp; &#0; \x00 nul",
		"<noscript><p>inner</p></noscript>", "<xmp><b>raw</b></xmp>",
	}
	for i, c := range cases {
		same(t, fmt.Sprint("case ", i), c)
	}
}

// TestMatchesUpstreamGenerated: 4,000 random documents (testsize: a tenth
// under -race) built from the elements above, text with every kind of
// space, invalid bytes and long words, nested up to six deep.
func TestMatchesUpstreamGenerated(t *testing.T) {
	t.Parallel()
	rnd := rand.New(rand.NewPCG(16, 2026))
	tags := []string{"p", "div", "br", "h1", "h2", "h3", "blockquote", "a", "b", "strong", "ul", "li",
		"table", "tr", "td", "th", "tfoot", "pre", "style", "span", "img", "font", "center", "noscript"}
	texts := []string{" ", "  ", "\t", "\r\n", "\n\n\n", "word", ".", "\u00a0", "\u2003", "\xff", "\xe2\x82",
		"é", "日本", strings.Repeat("long", 30), "&amp;", "&nbsp;", "https://e.test/p?q=1", "<", ">"}
	var gen func(depth int) string
	gen = func(depth int) string {
		var b strings.Builder
		for range 1 + rnd.IntN(4) {
			if depth < 6 && rnd.IntN(2) == 0 {
				tag := tags[rnd.IntN(len(tags))]
				attr := ""
				switch tag {
				case "a":
					attr = fmt.Sprintf(" href=%q", texts[rnd.IntN(len(texts))])
				case "img":
					attr = fmt.Sprintf(" alt=%q", texts[rnd.IntN(len(texts))])
				}
				fmt.Fprintf(&b, "<%s%s>%s", tag, attr, gen(depth+1))
				if rnd.IntN(5) > 0 {
					fmt.Fprintf(&b, "</%s>", tag)
				}
			} else {
				b.WriteString(texts[rnd.IntN(len(texts))])
			}
		}
		return b.String()
	}
	for i := range testsize.N(4000, 400) {
		same(t, fmt.Sprint("generated ", i), gen(0))
	}
}

// TestMatchesUpstreamOnCorpus: every text/html part of the SpamAssassin
// corpus converts exactly as upstream converts it. Skips without the
// corpus. Under -race it reads every testsize.Divisor-th message file
// (spread over all the corpus folders), so the walk's sanity bound is a
// tenth of the 500 the full walk must find; without -race every file is
// read and the bound is 500.
func TestMatchesUpstreamOnCorpus(t *testing.T) {
	t.Parallel()
	dir := corpusDir(t)
	every := 1
	if testsize.Race {
		every = testsize.Divisor
	}
	docs, err := corpusHTML(dir, every)
	if err != nil {
		t.Fatal(err)
	}
	if least := 500 / every; len(docs) < least {
		t.Fatalf("only %d HTML parts found in every %d-th file of the corpus, want at least %d: the walk is broken", len(docs), every, least)
	}
	for _, d := range docs {
		same(t, d.name, d.html)
	}
	t.Logf("%d HTML parts, all equal to upstream", len(docs))
}

type htmlDoc struct{ name, html string }

// corpusHTML returns the text/html parts of every every-th file of the
// SpamAssassin corpus under dir (1: every file), decoded from their
// transfer encoding.
func corpusHTML(dir string, every int) ([]htmlDoc, error) {
	var docs []htmlDoc
	seen := 0
	err := filepath.WalkDir(filepath.Join(dir, "spamassassin"), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if seen++; (seen-1)%every != 0 {
			return nil
		}
		raw, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if bytes.HasPrefix(raw, []byte("From ")) { // the mbox envelope line
			if i := bytes.IndexByte(raw, '\n'); i >= 0 {
				raw = raw[i+1:]
			}
		}
		e, _ := message.Read(bytes.NewReader(raw)) // an unknown charset still gives the body
		if e == nil {
			return nil // not a message: the corpus's licence files
		}
		_ = e.Walk(func(_ []int, part *message.Entity, err error) error {
			if err != nil || part == nil {
				return nil
			}
			if ct, _, _ := part.Header.ContentType(); ct == "text/html" {
				if body, _ := io.ReadAll(part.Body); len(body) > 0 {
					docs = append(docs, htmlDoc{name: p, html: string(body)})
				}
			}
			return nil
		}) // a broken multipart ends the walk there; the parts before count
		return nil
	})
	return docs, err
}

// corpusDir is ../shared/corpora beside the repository root (or
// $MAILAGENT_CORPORA), or the test skips.
func corpusDir(tb testing.TB) string {
	if c := os.Getenv("MAILAGENT_CORPORA"); c != "" {
		return c
	}
	dir, err := os.Getwd()
	if err != nil {
		tb.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		if filepath.Dir(dir) == dir {
			tb.Skip("repository root not found")
		}
		dir = filepath.Dir(dir)
	}
	c := filepath.Join(dir, "..", "shared", "corpora")
	if _, err := os.Stat(c); err != nil {
		tb.Skipf("corpus not found at %s", c)
	}
	return c
}

// BenchmarkFromString compares this package with upstream over the
// corpus's HTML parts (skips without the corpus):
//
//	go test -run '^$' -bench FromString -count 6 ./internal/html2text
func BenchmarkFromString(b *testing.B) {
	docs, err := corpusHTML(corpusDir(b), 1)
	if err != nil {
		b.Fatal(err)
	}
	for _, impl := range []struct {
		name string
		fn   func(string) (string, error)
	}{{"mailagent", FromString}, {"upstream", func(s string) (string, error) { return upstream.FromString(s) }}} {
		b.Run(impl.name, func(b *testing.B) {
			for b.Loop() {
				for _, d := range docs {
					if _, err := impl.fn(d.html); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
