package prompter

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// checkSecurity accepts the IMAP security words, as init's check does.
func checkSecurity(v string) error {
	switch v {
	case "tls", "ssl", "starttls", "none":
		return nil
	}
	return fmt.Errorf("%q: type tls, starttls or none", v)
}

// TestConfirm: the one y/N confirmation, in both prompters, prints the
// question with its y/N suffix and reads one answer; only y or yes says
// yes, the end of input keeps the default, a failed read is an error.
func TestConfirm(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, input string
		def, want   bool
		prompt      string
	}{
		{"yes", "y\n", false, true, "forget x? y/N: "},
		{"YES any case", "YES\n", false, true, "forget x? y/N: "},
		{"no", "n\n", false, false, "forget x? y/N: "},
		{"other word is no", "sure\n", false, false, "forget x? y/N: "},
		{"empty is the default no", "\n", false, false, "forget x? y/N: "},
		{"empty is the default yes", "\n", true, true, "forget x? Y/n: "},
		{"no even when the default is yes", "no\n", true, false, "forget x? Y/n: "},
		{"end of input keeps the default", "", false, false, "forget x? y/N: "},
		{"a last line without newline counts", "y", false, true, "forget x? y/N: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, kind := range []string{"line", "huh"} {
				var out bytes.Buffer
				var p Closer
				if kind == "line" {
					p = newLine(strings.NewReader(tt.input), &out)
				} else {
					p = &huhPrompter{in: strings.NewReader(tt.input), out: &out}
				}
				got, err := p.Confirm("forget x?", tt.def)
				p.Close()
				if err != nil || got != tt.want {
					t.Errorf("%s: got %v, %v; want %v", kind, got, err, tt.want)
				}
				if out.String() != tt.prompt {
					t.Errorf("%s: prompt %q, want %q", kind, out.String(), tt.prompt)
				}
			}
		})
	}
}

func TestConfirmReadErrorIsAnError(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	for _, p := range []Closer{newLine(iotest.ErrReader(boom), &bytes.Buffer{}), &huhPrompter{in: iotest.ErrReader(boom), out: &bytes.Buffer{}}} {
		got, err := p.Confirm("go?", true)
		p.Close()
		if !errors.Is(err, boom) || got {
			t.Errorf("%T: got %v, %v; want false and the read error", p, got, err)
		}
	}
}

// TestLinePrompterInputEnded: a question whose input ends is
// ErrInputEnded, so that a half-answered interview says so.
func TestLinePrompterInputEnded(t *testing.T) {
	t.Parallel()
	p := newLine(strings.NewReader(""), &bytes.Buffer{})
	defer p.Close()
	if _, err := p.Text(context.Background(), "Email", "", nil); !errors.Is(err, ErrInputEnded) {
		t.Fatalf("got %v, want ErrInputEnded", err)
	}
}

// TestPrompterCancel checks that a prompt waiting for input gives up when
// the context ends (Ctrl-C), and that the reading goroutine stops once
// stdin ends.
func TestPrompterCancel(t *testing.T) {
	t.Parallel()
	r, w := io.Pipe()
	p := newLine(r, io.Discard)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := p.Text(ctx, "Email address", "", nil)
		errc <- err
	}()
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("got %v, want context.Canceled", err)
	}
	p.Close()
	_ = w.Close() // stdin ends: the pending read returns and the goroutine exits
}
