package mail

import (
	"slices"
	"testing"
)

func TestNormalizeIDAndKey(t *testing.T) {
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
	tests := []struct{ in, want string }{
		{"Hello", "Re: Hello"},
		{"Re: Hello", "Re: Hello"},
		{"RE: Re: re: Hello", "Re: Hello"},
		{"Aw: Hello", "Re: Hello"},
		{"AW: SV: Hello", "Re: Hello"},
		{"Re[2]: Hello", "Re: Hello"},
		{"Fwd: Hello", "Re: Fwd: Hello"},
		{"[list] Re: Hello", "Re: [list] Hello"},
		{"[list] Hello", "Re: [list] Hello"},
		{"  spaced\t out ", "Re: spaced out"},
		{"Reuters: news", "Re: Reuters: news"},
		{"", "Re:"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := ReplySubject(tt.in); got != tt.want {
				t.Errorf("ReplySubject(%q): got %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestParseIDListIgnoresPossessiveProse(t *testing.T) {
	// exmh and nmh write "user@host's message of <date>" with no brackets:
	// that is prose, not a message id.
	if got := ParseIDList("yyyy@spamassassin.taint.org's message of Mon, 12 Aug 2002"); len(got) != 0 {
		t.Errorf("got %q, want no ids", got)
	}
}
