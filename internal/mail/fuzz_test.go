package mail

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode"
)

// optionalCorpus returns corpus files for seeding fuzz targets, or nil when
// the corpus is absent (a fuzz target must not skip because of it). every
// keeps one file in n.
func optionalCorpus(tb testing.TB, every int, dirs ...string) [][]byte {
	tb.Helper()
	dir, err := os.Getwd()
	if err != nil {
		return nil
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return nil
		}
		dir = parent
	}
	root := filepath.Join(dir, "..", "shared", "corpora")
	var out [][]byte
	n := 0
	for _, d := range dirs {
		_ = filepath.WalkDir(filepath.Join(root, d), func(p string, e os.DirEntry, err error) error {
			if err != nil || e.IsDir() || strings.Contains(e.Name(), "LICENSE") {
				return nil
			}
			n++
			if n%every != 0 {
				return nil
			}
			if b, err := os.ReadFile(p); err == nil {
				out = append(out, b)
			}
			return nil
		})
	}
	return out
}

var parseSeeds = []string{
	"",
	"From: a@b\r\n\r\nhello",
	"Subject: =?x-bad?Q?abc?=\r\nContent-Type: text/plain; charset=x-bad\r\n\r\n\xff",
	"Content-Type: multipart/mixed\r\n\r\n--a\r\n\r\nx\r\n--a--",
	"Content-Type: multipart/alternative; boundary=b\r\n\r\n--b\r\nContent-Type: text/html\r\n\r\n<noframes><p>x</p></noframes>\r\n--b--\r\n",
	"Content-Type: text/plain\r\nContent-Transfer-Encoding: base64\r\n\r\n!!!!",
	"From x\n From: broken\r\n\r\n> quoted\n-- \nsig",
	"Content-Type: message/rfc822\r\n\r\nFrom: inner\r\n\r\nbody",
	"Date: Thu Aug 22 18:26:25 2002\r\nReferences: <a@b> junk <c@d\r\n\r\nOn Mon, 1 Jan 2001 x@y wrote:\n> q",
	"Content-Type: multipart/mixed; boundary=o\r\n\r\n--o\r\nContent-Type: message/rfc822\r\n\r\nFrom: a@b\r\nSubject: =?utf-8?q?x=0D=0Ay=00?=\r\n" +
		"Content-Type: multipart/mixed; boundary=i\r\n\r\n--i\r\nContent-Type: message/global\r\n\r\nFrom: c@d\r\n\r\nin\r\n--i--\r\n--o--\r\n",
	"Content-Type: message/rfc822\r\nContent-Transfer-Encoding: base64\r\n\r\nRnJvbTogYUBiDQoNCmhp",
}

// checkForwards asserts the Forward contract on every attached message,
// nested ones included: a parsed Message, no control character in the
// fields a reply is built from, Broken exactly when there are Problems.
func checkForwards(t *testing.T, m *Message, depth int) {
	t.Helper()
	if depth > MaxForwardDepth || len(m.Forwards) > MaxForwards {
		t.Fatalf("%d forwards at depth %d, limits %d and %d", len(m.Forwards), depth, MaxForwards, MaxForwardDepth)
	}
	for _, f := range m.Forwards {
		if f.Message == nil {
			t.Fatalf("%s: nil Message", f.Part)
		}
		checkValid(t, f.Message)
		if f.Broken != (len(f.Problems) > 0) {
			t.Errorf("%s: broken=%v with problems %v", f.Part, f.Broken, f.Problems)
		}
		for _, s := range []string{f.Message.Subject, f.Message.MessageID, f.Message.From.Name, f.Message.From.Email} {
			if strings.ContainsFunc(s, unicode.IsControl) {
				t.Errorf("%s: control character kept in %q", f.Part, s)
			}
		}
		checkForwards(t, f.Message, depth+1)
	}
}

// FuzzParse checks the Parse contract on arbitrary input: no panic, valid
// UTF-8 everywhere, a MessageID, a CleanText whenever there is Text.
func FuzzParse(f *testing.F) {
	for _, s := range parseSeeds {
		f.Add([]byte(s))
	}
	for _, b := range optionalCorpus(f, 1, edgeDirs...) {
		f.Add(b)
	}
	for _, b := range optionalCorpus(f, 25, append(append([]string{}, hamDirs...), spamDirs...)...) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		m := Parse(raw)
		checkValid(t, m)
		checkForwards(t, m, 0)
		if len(m.Text) > MaxTextBytes {
			t.Errorf("got Text of %d bytes, want at most %d", len(m.Text), MaxTextBytes)
		}
		if m.Size != len(raw) {
			t.Errorf("got Size %d, want %d", m.Size, len(raw))
		}
		if m2 := Parse(raw); m2.MessageID != m.MessageID {
			t.Errorf("same bytes: got ids %q and %q, want equal", m.MessageID, m2.MessageID)
		}
	})
}

// decodeThreadInputs turns fuzz text into messages, one per line:
// "id|ref ref ...|in-reply-to|subject".
func decodeThreadInputs(s string) []ThreadInput {
	var out []ThreadInput
	for _, line := range strings.Split(s, "\n") {
		f := strings.SplitN(line, "|", 4)
		for len(f) < 4 {
			f = append(f, "")
		}
		out = append(out, ThreadInput{
			MessageID:  f[0],
			References: strings.Fields(f[1]),
			InReplyTo:  strings.Fields(f[2]),
			Subject:    f[3],
		})
		if len(out) >= 200 {
			break
		}
	}
	return out
}

func encodeThreadInput(x ThreadInput) string {
	clean := func(s string) string { return strings.NewReplacer("|", " ", "\n", " ").Replace(s) }
	return clean(x.MessageID) + "|" + clean(strings.Join(x.References, " ")) + "|" +
		clean(strings.Join(x.InReplyTo, " ")) + "|" + clean(x.Subject)
}

// FuzzThread checks that grouping and thread ids do not depend on the order
// messages are added in, and that merged reports let a caller keep its
// labels right.
func FuzzThread(f *testing.F) {
	f.Add("a@x||| hello\nb@x|a@x|| Re: hello\nc@x|gone@x b@x||x")
	f.Add("a|b||l\nb|a||l\nc|c||self")
	f.Add("A@X||| s\na@x|||Re: s\n|||\n||| ")
	f.Add("m1|r1 c||a\nm2|r2 c||b\nm3||m1|[list] Re: a")
	var lines []string
	for _, b := range optionalCorpus(f, 40, hamDirs...) {
		lines = append(lines, encodeThreadInput(InputOf(Parse(b))))
	}
	if len(lines) > 0 {
		f.Add(strings.Join(lines, "\n"))
	}
	f.Fuzz(func(t *testing.T, s string) {
		inputs := decodeThreadInputs(s)
		orders := [][]int{make([]int, len(inputs)), make([]int, len(inputs)), make([]int, len(inputs))}
		for i := range inputs {
			orders[0][i] = i
			orders[1][i] = len(inputs) - 1 - i
			orders[2][i] = (i*7 + 3) % len(inputs)
		}
		// orders[2] is a permutation only when 7 is coprime to n.
		if len(inputs)%7 == 0 {
			orders = orders[:2]
		}
		var want string
		var ref *Threader
		for oi, order := range orders {
			th := NewThreader()
			label := map[string]string{}
			for _, i := range order {
				tid, merged := th.Add(inputs[i])
				if tid == "" {
					t.Fatalf("Add(%+v) returned an empty thread id", inputs[i])
				}
				for _, m := range merged {
					for k, v := range label {
						if v == m {
							label[k] = tid
						}
					}
				}
				label[IDKey(inputs[i].MessageID)] = tid
			}
			got := partition(th)
			if oi == 0 {
				want, ref = got, th
				for _, x := range inputs {
					if k := IDKey(x.MessageID); k != "" && label[k] != th.ThreadID(x.MessageID) {
						t.Fatalf("relabelled id of %q: got %q, want %q", x.MessageID, label[k], th.ThreadID(x.MessageID))
					}
				}
				continue
			}
			if got != want {
				t.Fatalf("order %d: got partition %q, want %q", oi, got, want)
			}
			for _, x := range inputs {
				if a, b := th.ThreadID(x.MessageID), ref.ThreadID(x.MessageID); a != b {
					t.Fatalf("order %d: ThreadID(%q) got %q, want %q", oi, x.MessageID, a, b)
				}
			}
		}
	})
}
