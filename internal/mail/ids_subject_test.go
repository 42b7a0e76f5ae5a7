package mail

import (
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestNormalizeIDAndKey(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, norm, key string
	}{
		{"brackets", "<Abc@Example.COM>", "Abc@Example.COM", "abc@example.com"},
		{"space", "  <a@b>  ", "a@b", "a@b"},
		{"folded inside", "<abc\r\n def@x>", "abcdef@x", "abcdef@x"},
		{"bare", "a@b", "a@b", "a@b"},
		{"empty", " <> ", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := NormalizeID(tt.in); got != tt.norm {
				t.Errorf("NormalizeID(%q): got %q, want %q", tt.in, got, tt.norm)
			}
			if got := IDKey(tt.in); got != tt.key {
				t.Errorf("IDKey(%q): got %q, want %q", tt.in, got, tt.key)
			}
		})
	}
}

func TestParseIDList(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{"references", "<a@x> <b@x>\r\n\t<c@x>", []string{"a@x", "b@x", "c@x"}},
		{"junk between", `Your message of "Mon, 19 Aug 2002" <a@x> and also <b@x>`, []string{"a@x", "b@x"}},
		{"no brackets", "a@x b@x", []string{"a@x", "b@x"}},
		{"commas", "<a@x>,<b@x>", []string{"a@x", "b@x"}},
		{"dedup keeps first, case-insensitively", "<a@x> <b@x> <A@X>", []string{"a@x", "b@x"}},
		{"unterminated last", "<a@x> <b@x", []string{"a@x", "b@x"}},
		{"nested open bracket", "<junk <a@x>", []string{"a@x"}},
		{"single bare token without at", "12345.local", []string{"12345.local"}},
		{"prose without ids", "your message of yesterday", nil},
		{"empty", "", nil},
		{"empty brackets", "<>", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ParseIDList(tt.in); !slices.Equal(got, tt.want) {
				t.Errorf("ParseIDList(%q): got %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestBaseSubject(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in    string
		want  string
		reply bool
	}{
		{"Hello world", "Hello world", false},
		{"Re: Hello", "Hello", true},
		{"RE: re: Fwd: Hello", "Hello", true},
		{"Fw: Hello", "Hello", true},
		{"Re[2]: Hello", "Hello", true},
		{"Re (3): Hello", "Hello", true},
		{"Re^2: Hello", "Hello", true},
		{"AW: WG: Hello", "Hello", true},
		{"SV: VS: Antw: Hello", "Hello", true},
		{"RIF: Réf: Odp: Vá: Hello", "Hello", true},
		{"[ILUG] Re: Hello", "Hello", true},
		{"Re: [ILUG] Hello", "Hello", true},
		{"[SAdev] [Bug 123] crash", "crash", false},
		{"[ILUG]", "[ILUG]", false},
		{"Hello (fwd)", "Hello", true},
		{"Hello (fwd) (FWD)  ", "Hello", true},
		{"[Fwd: Hello]", "Hello", true},
		{"Re: [Fwd: Re: Hello] (fwd)", "Hello", true},
		{"  Hello \t  world  ", "Hello world", false},
		{"Reuters: market up", "Reuters: market up", false},
		{"Fwdx: thing", "Fwdx: thing", false},
		{"回复：你好", "你好", true},
		{"Re:", "", true},
		{"", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := BaseSubject(tt.in); got != tt.want {
				t.Errorf("BaseSubject(%q): got %q, want %q", tt.in, got, tt.want)
			}
			if got := IsReplySubject(tt.in); got != tt.reply {
				t.Errorf("IsReplySubject(%q): got %v, want %v", tt.in, got, tt.reply)
			}
		})
	}
	if a, b := SubjectKey("Re: HELLO  World"), SubjectKey("hello world"); a != b {
		t.Errorf("SubjectKey: got %q and %q, want equal", a, b)
	}
}

func TestReplySubject(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, in, want string }{
		{"plain", "Hello", "Re: Hello"},
		{"already re", "Re: Hello", "Re: Hello"},
		{"stacked", "RE: Re: re: Hello", "Re: Hello"},
		{"upper", "RE: Hello", "Re: Hello"},
		{"german", "Aw: Hello", "Re: Hello"},
		{"german upper then nordic", "AW: SV: Hello", "Re: Hello"},
		{"nordic", "SV: Re: Hello", "Re: Hello"},
		{"norwegian svar", "Svar: Hello", "Re: Hello"},
		{"finnish", "VS: Hello", "Re: Hello"},
		{"dutch", "Antw: Hello", "Re: Hello"},
		{"counted brackets", "Re[2]: Hello", "Re: Hello"},
		{"counted parens", "Re(3): Hello", "Re: Hello"},
		{"counted caret", "Re^4: Hello", "Re: Hello"},
		{"counted then plain", "Re[2]: Re: Hello", "Re: Hello"},
		{"space before colon", "Re : Hello", "Re: Hello"},
		{"no space after colon", "Re:Hello", "Re: Hello"},
		{"fullwidth colon", "回复：午饭", "Re: 午饭"},
		{"forward kept", "Fwd: Hello", "Re: Fwd: Hello"},
		{"reply to a forward", "Re: Fwd: Hello", "Re: Fwd: Hello"},
		{"fw kept", "FW: Hello", "Re: FW: Hello"},
		{"word starting with re", "Report: Q3", "Re: Report: Q3"},
		{"reuters", "Reuters: news", "Re: Reuters: news"},
		{"regarding", "Regarding lunch", "Re: Regarding lunch"},
		{"re without colon", "Re Hello", "Re: Re Hello"},

		{"list tag then re", "[list] Re: topic", "Re: [list] topic"},
		{"re, list tag, re", "Re: [list] Re: topic", "Re: [list] topic"},
		{"list tag stacked by replies", "Re: [list] Re: [list] Re: topic", "Re: [list] topic"},
		{"list tag case differs", "[List] Re: [LIST] topic", "Re: [List] topic"},
		{"list tag only", "[list] topic", "Re: [list] topic"},
		{"list tag glued", "[list]Re: topic", "Re: [list] topic"},
		{"two tags", "[list] [Bug 12] Re: crash", "Re: [list] [Bug 12] crash"},
		{"re before tag", "Re: [list] topic", "Re: [list] topic"},
		{"tag is the whole subject", "[ILUG]", "Re: [ILUG]"},
		{"re and tag only", "Re: [ILUG]", "Re: [ILUG]"},
		{"bracket not a tag", "[unclosed Re: x", "Re: [unclosed Re: x"},
		{"tag then aw", "[Verein] AW: Termin", "Re: [Verein] Termin"},

		{"encoded word", "=?utf-8?q?Re=3A_Gr=C3=BC=C3=9Fe?=", "Re: Grüße"},
		{"encoded word base64", "=?UTF-8?B?UmU6IGhlbGxv?=", "Re: hello"},
		{"encoded list tag", "=?iso-8859-1?q?=5Bliste=5D_Re=3A_caf=E9?=", "Re: [liste] café"},
		{"undecodable charset kept", "=?x-unknown?q?Re=3A_x?=", "Re: =?x-unknown?q?Re=3A_x?="},
		{"latin-1 bytes", "Re: caf\xe9", "Re: café"},

		{"whitespace", "  Re:   Hello \t plans ", "Re: Hello plans"},
		{"folded", "Re: Hello\r\n world", "Re: Hello world"},
		{"crlf injection", "Lunch\r\nBcc: x@y", "Re: Lunch Bcc: x@y"},
		{"control characters", "Lu\x00n\x1bch\x7f", "Re: Lunch"},
		{"non-breaking space", "Re:\u00a0Hello", "Re: Hello"},
		{"empty", "", "Re:"},
		{"only prefix", "Re:", "Re:"},
		{"only prefixes", "Re: AW: ", "Re:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ReplySubject(tt.in)
			if got != tt.want {
				t.Errorf("ReplySubject(%q): got %q, want %q", tt.in, got, tt.want)
			}
			if again := ReplySubject(got); again != got {
				t.Errorf("ReplySubject(%q) = %q, not stable: got %q", got, got, again)
			}
		})
	}
}

// FuzzReplySubject: whatever the subject, the reply's starts with exactly
// one "Re:", holds no control character, and replying again changes nothing
// (unless the reply still holds an encoded word: a doubly-encoded subject is
// decoded once per reply, as mail clients do).
func FuzzReplySubject(f *testing.F) {
	for _, s := range []string{"[list] Re: topic", "Re[2]: x", "=?utf-8?q?Re=3A_x?=", "Re: [a] Re: [a] Aw: x", "\r\n[", "[]Re:"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := ReplySubject(s)
		if got != "Re:" && !strings.HasPrefix(got, "Re: ") {
			t.Fatalf("ReplySubject(%q) = %q, want it to start with \"Re: \"", s, got)
		}
		if n := matchPrefix(strings.TrimPrefix(got, "Re: "), replyPrefixes); n > 0 && got != "Re:" {
			t.Fatalf("ReplySubject(%q) = %q: a second reply prefix follows", s, got)
		}
		if strings.ContainsFunc(got, unicode.IsControl) || !utf8.ValidString(got) {
			t.Fatalf("ReplySubject(%q) = %q: control characters or invalid UTF-8", s, got)
		}
		if again := ReplySubject(got); again != got && !strings.Contains(got, "=?") {
			t.Fatalf("ReplySubject not stable on %q: %q then %q", s, got, again)
		}
	})
}

func TestParseIDListIgnoresPossessiveProse(t *testing.T) {
	t.Parallel()
	// exmh and nmh write "user@host's message of <date>" with no brackets:
	// that is prose, not a message id.
	if got := ParseIDList("yyyy@spamassassin.taint.org's message of Mon, 12 Aug 2002"); len(got) != 0 {
		t.Errorf("got %q, want no ids", got)
	}
}
