package iostreams

import (
	"os"
	"testing"
)

func TestTestStreamsAreNotTerminals(t *testing.T) {
	t.Parallel()
	s, in, out, errOut := Test()
	if s.IsStdinTTY() || s.IsStdoutTTY() || s.IsStderrTTY() || s.ColorEnabled() || s.ProgressEnabled() || s.CanPrompt() {
		t.Fatal("test streams claim a terminal")
	}
	if w := s.TerminalWidth(); w != 0 {
		t.Fatalf("width of a buffer: got %d, want 0", w)
	}
	in.WriteString("x")
	if s.In != in || s.Out != out || s.ErrOut != errOut {
		t.Fatal("Test returned buffers that are not the streams")
	}
}

func TestSetTTYDrivesColourProgressAndWidth(t *testing.T) {
	t.Parallel()
	s, _, _, _ := Test()
	s.SetStdoutTTY(true)
	s.SetTerminalWidth(100)
	if !s.ColorEnabled() || s.TerminalWidth() != 100 {
		t.Fatalf("stdout terminal: colour %v width %d, want true 100", s.ColorEnabled(), s.TerminalWidth())
	}
	if s.CanPrompt() {
		t.Fatal("CanPrompt with stdin not a terminal")
	}
	s.SetStdinTTY(true)
	s.SetStderrTTY(true)
	if !s.CanPrompt() || !s.ProgressEnabled() {
		t.Fatal("all terminals: want CanPrompt and ProgressEnabled")
	}
	s.SetStdoutTTY(false)
	if s.TerminalWidth() != 0 || s.ColorEnabled() {
		t.Fatal("stdout no longer a terminal: want width 0 and no colour")
	}
}

func TestNewDetectsPipesAndDumbTerminals(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = r.Close() }()
	defer func() { _ = w.Close() }()
	s := New(r, w, w)
	if s.IsStdinTTY() || s.IsStdoutTTY() || s.IsStderrTTY() || s.TerminalWidth() != 0 {
		t.Fatal("a pipe counted as a terminal")
	}
	t.Setenv("TERM", "dumb")
	d := New(r, w, w)
	d.SetStdoutTTY(true)
	d.SetStderrTTY(true)
	if d.ColorEnabled() || d.ProgressEnabled() {
		t.Fatal("TERM=dumb: colour or progress enabled")
	}
	if !d.IsStdoutTTY() {
		t.Fatal("TERM=dumb changed the TTY answer")
	}
}
