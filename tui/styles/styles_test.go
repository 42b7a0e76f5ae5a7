package styles

import (
	"strings"
	"testing"

	"charm.land/lipgloss/v2"
)

func TestDetectPlain(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		env       map[string]string
		wantASCII bool
		wantNoCol bool
	}{
		{name: "ordinary terminal", env: map[string]string{"TERM": "xterm-256color"}, wantASCII: false, wantNoCol: false},
		{name: "NO_COLOR set", env: map[string]string{"TERM": "xterm", "NO_COLOR": "1"}, wantASCII: true, wantNoCol: true},
		{name: "NO_COLOR empty is ignored", env: map[string]string{"TERM": "xterm", "NO_COLOR": ""}, wantASCII: false, wantNoCol: false},
		{name: "dumb terminal", env: map[string]string{"TERM": "dumb"}, wantASCII: true, wantNoCol: true},
		{name: "empty environment", env: map[string]string{}, wantASCII: false, wantNoCol: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ascii, noColor := DetectPlain(func(k string) string { return tt.env[k] })
			if ascii != tt.wantASCII || noColor != tt.wantNoCol {
				t.Fatalf("DetectPlain: got (ascii=%v, noColor=%v), want (%v, %v)", ascii, noColor, tt.wantASCII, tt.wantNoCol)
			}
		})
	}
	if a, n := DetectPlain(nil); a || n {
		t.Fatalf("DetectPlain(nil): got (%v, %v), want (false, false)", a, n)
	}
}

func TestPlainStylesEmitNoEscapes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		noColor bool
		wantESC bool
	}{
		{name: "plain", noColor: true, wantESC: false},
		{name: "colour", noColor: false, wantESC: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := DefaultStyles(tt.noColor, tt.noColor)
			all := []lipgloss.Style{s.Title, s.TabActive, s.TabInactive, s.Header, s.Row, s.RowSelected,
				s.RiskHigh, s.RiskMedium, s.RiskLow, s.GateOK, s.GateFail, s.Section, s.Label, s.Muted,
				s.Error, s.Success, s.StatusBar, s.Online, s.Offline, s.Prompt, s.Body}
			var out strings.Builder
			for _, st := range all {
				out.WriteString(st.Render("x"))
			}
			if got := strings.Contains(out.String(), "\x1b"); got != tt.wantESC {
				t.Fatalf("escape sequences: got %v, want %v (%q)", got, tt.wantESC, out.String())
			}
		})
	}
}

func TestASCIIGlyphs(t *testing.T) {
	t.Parallel()
	g := DefaultStyles(false, true).Glyphs
	for _, s := range []string{g.GateOK, g.GateFail, g.Cursor, g.NoCursor, g.Online, g.Offline, g.Sep, g.Ellipsis, g.Rule, g.HelpSep, g.FilterMrk} {
		for _, r := range s {
			if r > 0x7e {
				t.Errorf("glyph %q: got non-ASCII %q, want ASCII", s, r)
			}
		}
	}
	if g.GateOK != "[ok]" || g.GateFail != "[x]" {
		t.Fatalf("gate glyphs: got %q/%q, want [ok]/[x]", g.GateOK, g.GateFail)
	}
}
