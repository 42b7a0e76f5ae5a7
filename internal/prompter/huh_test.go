package prompter

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"
)

// slowReader hands out its keys one read at a time, a little apart, as
// a person types: bubbletea reads a terminal in chunks, and a burst
// would arrive before the field is drawn.
type slowReader struct {
	keys []string
	done chan struct{}
}

func (r *slowReader) Read(b []byte) (int, error) {
	if len(r.keys) == 0 {
		<-r.done // a terminal that stays open until the test ends
		return 0, io.EOF
	}
	time.Sleep(30 * time.Millisecond)
	n := copy(b, r.keys[0])
	r.keys = r.keys[1:]
	return n, nil
}

// TestHuhPrompter drives the terminal prompter's fields with keys: a
// text answer replaces nothing typed (Enter keeps the default), a check
// refuses a wrong answer until it is fixed, a password is never echoed,
// and a menu moves with the arrow keys.
func TestHuhPrompter(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	done := make(chan struct{})
	t.Cleanup(func() { close(done) })
	run := func(keys ...string) (*huhPrompter, *bytes.Buffer) {
		var out bytes.Buffer
		return &huhPrompter{in: &slowReader{keys: keys, done: done}, out: &out}, &out
	}

	p, out := run("\r")
	if v, err := p.Text(ctx, "IMAP port", "993", nil); err != nil || v != "993" {
		t.Fatalf("Enter: got %q, %v; want the default", v, err)
	}
	if !strings.Contains(out.String(), "IMAP port: 993\n") {
		t.Errorf("the answer is not echoed:\n%q", out.String())
	}

	// Typing replaces the default; a wrong answer cannot be submitted
	// until it is fixed.
	p, _ = run("x", "\r", "\x7f", "ssl", "\r")
	if v, err := p.Text(ctx, "IMAP security", "tls", func(v string) error { return checkSecurity(v) }); err != nil || v != "ssl" {
		t.Fatalf("edited: got %q, %v", v, err)
	}

	p, out = run("s3cret-Pw", "\r")
	if v, err := p.Password(ctx, "Password"); err != nil || v != "s3cret-Pw" {
		t.Fatalf("password: got %q, %v", v, err)
	}
	if strings.Contains(out.String(), "s3cret-Pw") {
		t.Errorf("the password was echoed:\n%q", out.String())
	}

	p, _ = run("\x1b[B", "\r") // down arrow, Enter
	items := []Choice{{"cmd", "a command"}, {"env", "an environment variable"}, {"keyring", "the keyring"}}
	if v, err := p.Choose(ctx, "Password source", items, "cmd"); err != nil || v != "env" {
		t.Fatalf("menu: got %q, %v; want env", v, err)
	}
}

// TestNewPlainForPipes: scripts and tests (stdin not a
// terminal) get the line prompter.
func TestNewPlainForPipes(t *testing.T) {
	t.Parallel()
	p := New(strings.NewReader(""), io.Discard)
	defer p.Close()
	if _, ok := p.(*linePrompter); !ok {
		t.Errorf("got %T, want the line prompter", p)
	}
}
