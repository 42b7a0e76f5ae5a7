package termsafe

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// hostile is the table of attacks every sanitiser test runs over. want is
// what Line must return.
var hostile = []struct {
	name string
	in   string
	want string
}{
	{"OSC title set (BEL)", "a\x1b]0;pwned\x07b", "ab"},
	{"OSC title set (ST)", "a\x1b]2;pwned\x1b\\b", "ab"},
	{"OSC 8 hyperlink", "a\x1b]8;;http://evil.test\x1b\\click\x1b]8;;\x1b\\b", "aclickb"},
	{"OSC 52 clipboard write", "a\x1b]52;c;cm0gLXJmIH4=\x07b", "ab"},
	{"CSI clear screen", "a\x1b[2J\x1b[Hb", "ab"},
	{"CSI cursor up and erase line", "a\x1b[1A\x1b[2Kb", "ab"},
	{"CSI cursor position", "a\x1b[10;20Hb", "ab"},
	{"CSI colour hides text", "a\x1b[8msecret\x1b[0mb", "asecretb"},
	{"alternate screen", "a\x1b[?1049hb", "ab"},
	{"C1 CSI as UTF-8", "a\u009b2Jb", "ab"},
	{"C1 CSI as raw byte", "a\x9b2Jb", "ab"},
	{"C1 OSC as UTF-8", "a\u009d0;pwned\u009cb", "ab"},
	{"C1 NEL alone", "a\u0085b", "ab"},
	{"DCS", "a\x1bP1$r q\x1b\\b", "ab"},
	{"APC", "a\x1b_payload\x1b\\b", "ab"},
	{"RIS full reset", "a\x1bcb", "ab"},
	{"charset switch", "a\x1b(0b", "ab"},
	{"lone ESC at end", "ab\x1b", "ab"},
	{"bidi override reverses an address", "\u202etset.knab@bob\u202c", "tset.knab@bob"},
	{"bidi isolates", "a\u2066b\u2067c\u2068d\u2069e", "abcde"},
	{"bidi marks", "a\u200eb\u200fc\u061cd", "abcd"},
	{"bidi embeddings", "a\u202ab\u202bc\u202dd", "abcd"},
	{"zero-width joiner and space", "b\u200do\u200bb\u200c\u2060\ufeff", "bob"},
	{"soft hyphen", "pay\u00adpal", "paypal"},
	{"tag characters", "hi\U000E0041\U000E0042", "hi"},
	{"hangul filler", "a\u3164b\u115fc", "abc"},
	{"NUL", "a\x00b", "ab"},
	{"DEL", "a\x7fb", "ab"},
	{"BEL", "a\x07b", "ab"},
	{"backspace overprinting", "a\bb", "ab"},
	{"carriage return overprinting", "good\rEVIL", "good EVIL"},
	{"vertical tab and form feed", "a\vb\fc", "abc"},
	{"newline and tab", "a\nb\tc", "a b c"},
	{"line separator", "a\u2028b\u2029c", "a b c"},
	{"invalid UTF-8", "a\xff\xfeb", "ab"},
	{"plain text untouched", `Ünïcödé "quoted" <bob@bank.test> 日本語 😀`, `Ünïcödé "quoted" <bob@bank.test> 日本語 😀`},
}

// assertSafe fails when out has a byte or rune that the contract forbids.
func assertSafe(t *testing.T, out string, multiline bool) {
	t.Helper()
	for _, p := range unsafeRunes(out, multiline) {
		t.Error(p)
	}
}

// unsafeRunes returns what in out the contract forbids, one entry per
// offending rune (and one for invalid UTF-8); none when out is safe.
func unsafeRunes(out string, multiline bool) []string {
	var problems []string
	if !utf8.ValidString(out) {
		problems = append(problems, fmt.Sprintf("invalid UTF-8 in %q", out))
	}
	for _, r := range out {
		switch {
		case r == '\n' || r == '\t':
			if !multiline {
				problems = append(problems, fmt.Sprintf("%q: line break or tab in a single line", out))
			}
		case r < 0x20 || r == 0x7f:
			problems = append(problems, fmt.Sprintf("%q: C0/DEL %U", out, r))
		case r >= 0x80 && r <= 0x9f:
			problems = append(problems, fmt.Sprintf("%q: C1 %U", out, r))
		case unicode.Is(unicode.Cf, r):
			problems = append(problems, fmt.Sprintf("%q: format character %U", out, r))
		case r == '\u2028' || r == '\u2029':
			problems = append(problems, fmt.Sprintf("%q: separator %U", out, r))
		case r == '\u115f' || r == '\u1160' || r == '\u3164' || r == '\uffa0':
			problems = append(problems, fmt.Sprintf("%q: blank Hangul filler %U", out, r))
		}
	}
	return problems
}

// lineProblems is what is wrong with Line's answer to the hostile input
// in: a rune the contract forbids, another result than tc.want, Safe
// disagreeing, or a second Line changing it.
func lineProblems(in, want string) []string {
	out := Line(in)
	problems := unsafeRunes(out, false)
	if out != want {
		problems = append(problems, fmt.Sprintf("Line(%q) = %q, want %q", in, out, want))
	}
	if !Safe(out, false) {
		problems = append(problems, fmt.Sprintf("Safe(%q) = false after Line", out))
	}
	if Line(out) != out {
		problems = append(problems, fmt.Sprintf("Line is not idempotent on %q", out))
	}
	return problems
}

// TestLineHostile runs every hostile string through Line: none may keep
// a rune the contract forbids or come out other than its want.
func TestLineHostile(t *testing.T) {
	t.Parallel()
	tried, through := 0, 0
	for _, tc := range hostile {
		tried++
		t.Run(tc.name, func(t *testing.T) {
			if problems := lineProblems(tc.in, tc.want); len(problems) > 0 {
				through++
				for _, p := range problems {
					t.Error(p)
				}
			}
		})
	}
	t.Logf("Line: %d hostile strings tried, %d got through", tried, through)
	if tried != len(hostile) || through != 0 {
		t.Errorf("Line: got %d of %d through, want 0 of %d", through, tried, len(hostile))
	}
}

// TestTextHostile runs every hostile string through Text (which keeps
// '\n' and '\t'): none may keep a rune the contract forbids, and line
// breaks come out as '\n'.
func TestTextHostile(t *testing.T) {
	t.Parallel()
	tried, through := 0, 0
	for _, tc := range hostile {
		tried++
		t.Run(tc.name, func(t *testing.T) {
			if problems := unsafeRunes(Text(tc.in), true); len(problems) > 0 {
				through++
				for _, p := range problems {
					t.Error(p)
				}
			}
		})
	}
	tests := []struct{ in, want string }{
		{"a\r\nb\rc\nd", "a\nb\nc\nd"},
		{"col1\tcol2", "col1\tcol2"},
		{"line1\n\x1b[1Aline2", "line1\nline2"},
		{"p1\u2029p2", "p1\np2"},
	}
	for _, tc := range tests {
		tried++
		if got := Text(tc.in); got != tc.want {
			through++
			t.Errorf("Text(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	t.Logf("Text: %d hostile strings tried, %d got through", tried, through)
	if tried != len(hostile)+len(tests) || through != 0 {
		t.Errorf("Text: got %d of %d through, want 0 of %d", through, tried, len(hostile)+len(tests))
	}
}

// textAttack reports whether the hostile row (in, want) attacks Text:
// whether in differs from its Line want by more than the line breaks and
// tabs Text keeps (the plain row and the newline-and-tab row do not).
func textAttack(in, want string) bool {
	return strings.NewReplacer("\n", " ", "\t", " ").Replace(in) != want
}

// TestLineTextHostileLandWithoutClean is the positive control of
// TestLineHostile and TestTextHostile: with the cleaning off (cleanOff,
// Line and Text return their input), every hostile row is caught by the
// contract check (unsafeRunes) alone, the want comparison aside: for
// Line, each row whose want differs from its input (all but the plain
// text); for Text, each row that textAttack names (all but the plain
// text and the newline-and-tab row). Not parallel: the switch is global.
func TestLineTextHostileLandWithoutClean(t *testing.T) {
	cleanOff.Store(true)
	defer cleanOff.Store(false)
	lineTried, lineLanded, textTried, textLanded := 0, 0, 0, 0
	for _, tc := range hostile {
		if tc.in != tc.want {
			lineTried++
			if len(unsafeRunes(Line(tc.in), false)) > 0 {
				lineLanded++
			} else {
				t.Errorf("Line, %s: %q passes the contract check with the cleaning off: the row does not test the cleaning", tc.name, tc.in)
			}
		}
		if textAttack(tc.in, tc.want) {
			textTried++
			if len(unsafeRunes(Text(tc.in), true)) > 0 {
				textLanded++
			} else {
				t.Errorf("Text, %s: %q passes the contract check with the cleaning off: the row does not test the cleaning", tc.name, tc.in)
			}
		}
	}
	t.Logf("without the cleaning: Line %d of %d landed, Text %d of %d landed (of %d rows)", lineLanded, lineTried, textLanded, textTried, len(hostile))
	if lineTried == 0 || lineLanded != lineTried {
		t.Errorf("positive control, Line: got %d of %d landed, want all", lineLanded, lineTried)
	}
	if textTried == 0 || textLanded != textTried {
		t.Errorf("positive control, Text: got %d of %d landed, want all", textLanded, textTried)
	}
}

// TestSanitiseBeforeTruncate shows why the order matters: a cut after
// sanitising never leaves a live sequence or its visible tail.
func TestSanitiseBeforeTruncate(t *testing.T) {
	t.Parallel()
	in := strings.Repeat("x", 5) + "\x1b]0;pwned\x07" + "tail"
	out := Line(in)
	if out != "xxxxxtail" {
		t.Fatalf("got %q, want %q", out, "xxxxxtail")
	}
	for n := range len(out) + 1 {
		assertSafe(t, out[:n], false)
	}
}

func TestUnterminatedStringSequence(t *testing.T) {
	t.Parallel()
	out := Line("subject\x1b]0;never terminated, rest of the line")
	assertSafe(t, out, false)
	if out != "subject" {
		t.Errorf("got %q, want %q", out, "subject")
	}
}

func TestLines(t *testing.T) {
	t.Parallel()
	ss := Lines([]string{"a\x1b[2J", "\u202eb"})
	if ss[0] != "a" || ss[1] != "b" {
		t.Errorf("got %q", ss)
	}
}

func TestAddress(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, dname, email, want string
	}{
		{"bare", "", "bob@bank.test", "bob@bank.test"},
		{"plain name", "Bob Smith", "bob@bank.test", "Bob Smith <bob@bank.test>"},
		{"name equals address", "BOB@bank.test", "bob@bank.test", "bob@bank.test"},
		{"name is another address", "bob@bank.test", "evil@x.test", `evil@x.test (name "bob@bank.test" looks like an address)`},
		{"name with angle address", "Bob <bob@bank.test>", "evil@x.test", `evil@x.test (name "Bob <bob@bank.test>" looks like an address)`},
		{"fullwidth at", "bob＠bank.test", "evil@x.test", `evil@x.test (name "bob＠bank.test" looks like an address)`},
		{"small at", "bob﹫bank.test", "evil@x.test", `evil@x.test (name "bob﹫bank.test" looks like an address)`},
		{"bidi reversed name", "\u202etset.knab@bob", "evil@x.test", `evil@x.test (name "tset.knab@bob" looks like an address)`},
		{"escapes in name", "Bob\x1b[2J\x1b]0;t\x07", "bob@bank.test", "Bob <bob@bank.test>"},
		{"escapes in address", "", "evil@x.test\x1b[8m", "evil@x.test"},
		{"no address", "Bob", "", "Bob"},
		{"no address, name with @", "bob@bank.test", "", `(no address) (name "bob@bank.test" looks like an address)`},
		{"nothing", "", "", ""},
		{"zero-width at split", "bob\u200b@\u200dbank.test", "evil@x.test", `evil@x.test (name "bob@bank.test" looks like an address)`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Address(tc.dname, tc.email)
			if got != tc.want {
				t.Errorf("Address(%q, %q) = %q, want %q", tc.dname, tc.email, got, tc.want)
			}
			assertSafe(t, got, false)
			if LooksLikeAddress(tc.dname) && !strings.HasPrefix(got, Line(tc.email)) {
				t.Errorf("%q does not start with the real address", got)
			}
		})
	}
}

// TestJSONEscapesControls backs the claim in the package doc that --json
// output needs no sanitising.
func TestJSONEscapesControls(t *testing.T) {
	t.Parallel()
	b, err := json.Marshal("a\x1b]0;pwned\x07\x00\x9b\u2028")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for _, c := range []byte{0x1b, 0x07, 0x00} {
		if strings.IndexByte(s, c) >= 0 {
			t.Errorf("json output %q has raw byte %#x", s, c)
		}
	}
	if !strings.Contains(s, `\u001b`) || !strings.Contains(s, `\u2028`) {
		t.Errorf("json output %q: want \\u001b and \\u2028 escapes", s)
	}
}

func FuzzLine(f *testing.F) {
	for _, tc := range hostile {
		f.Add(tc.in)
	}
	f.Fuzz(func(t *testing.T, s string) {
		assertSafe(t, Line(s), false)
		assertSafe(t, Text(s), true)
	})
}
