package cmdutil

import (
	"bytes"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
)

// TestTableWritePadsByDisplayWidth: wide characters take two cells, so
// the next column starts at the same display column on every row.
func TestTableWritePadsByDisplayWidth(t *testing.T) {
	t.Parallel()
	var tb Table
	tb.Row("NAME", "COUNT")
	tb.Row("会議", "1")
	tb.Row("ab", "2")
	var out bytes.Buffer
	if err := tb.Write(&out); err != nil {
		t.Fatal(err)
	}
	want := "NAME  COUNT\n会議  1\nab    2\n"
	if out.String() != want {
		t.Fatalf("got %q, want %q", out.String(), want)
	}
	tb.Fit(8, []int{1}, nil)
	out.Reset()
	if err := tb.Write(&out); err != nil {
		t.Fatal(err)
	}
	if want := "NAME\n会議\nab\n"; out.String() != want {
		t.Fatalf("fit to 8 cells dropping column 1: got %q, want %q", out.String(), want)
	}
}

func TestTruncateByDisplayWidth(t *testing.T) {
	t.Parallel()
	for _, s := range []string{strings.Repeat("会", 30), strings.Repeat("🎉", 30), strings.Repeat("a", 60)} {
		if got := Truncate(s, 40); ansi.StringWidth(got) > 40 || !strings.HasSuffix(got, "…") {
			t.Errorf("Truncate(%q, 40) = %q: %d cells", s, got, ansi.StringWidth(got))
		}
	}
	if got := Truncate("短い", 40); got != "短い" {
		t.Errorf("short text changed: %q", got)
	}
}

func TestPlural(t *testing.T) {
	t.Parallel()
	for n, want := range map[int]string{0: "0 messages", 1: "1 message", 2: "2 messages"} {
		if got := Plural(n, "message"); got != want {
			t.Errorf("Plural(%d) = %q, want %q", n, got, want)
		}
	}
	if got := PluralWord(1, "IMAP copy", "IMAP copies"); got != "1 IMAP copy" {
		t.Errorf("PluralWord(1) = %q", got)
	}
	if got := PluralWord(3, "address", "addresses"); got != "3 addresses" {
		t.Errorf("PluralWord(3) = %q", got)
	}
}

func TestWriteJSONIndentsAndEndsTheLine(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	if err := WriteJSON(&b, map[string]any{"a": []int{1}}); err != nil {
		t.Fatal(err)
	}
	if want := "{\n  \"a\": [\n    1\n  ]\n}\n"; b.String() != want {
		t.Fatalf("got %q, want %q", b.String(), want)
	}
}

func TestPositiveDuration(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"12h": "12h0m0s", "7d": "168h0m0s"} {
		d, err := PositiveDuration(in)
		if err != nil || d.String() != want {
			t.Errorf("PositiveDuration(%q) = %v, %v; want %s", in, d, err, want)
		}
	}
	for _, bad := range []string{"", "0s", "-1h", "soon"} {
		if _, err := PositiveDuration(bad); err == nil {
			t.Errorf("PositiveDuration(%q): no error", bad)
		}
	}
}
