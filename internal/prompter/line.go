package prompter

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"golang.org/x/term"
)

// linePrompter is the Prompter of a real session: it asks questions on w and
// reads answers from r. Reads happen on one goroutine, one at a time and
// only on request, so that a prompt can give up when ctx ends (Ctrl-C)
// even though a read from a terminal cannot be interrupted. That goroutine is owned by the prompter: Close stops it
// once no read is pending; a read abandoned on cancel ends with stdin's EOF
// or the process, which exits right after.
type linePrompter struct {
	w    io.Writer
	in   *bufio.Reader
	fd   int // the terminal to read passwords from without echo, or -1
	reqs chan bool
	res  chan readResult
}

var _ Prompter = (*linePrompter)(nil)

type readResult struct {
	line string
	err  error
}

func newLine(r io.Reader, w io.Writer) *linePrompter {
	if r == nil {
		r = strings.NewReader("")
	}
	p := &linePrompter{w: w, in: bufio.NewReader(r), fd: -1, reqs: make(chan bool), res: make(chan readResult, 1)}
	if fh, ok := r.(*os.File); ok && term.IsTerminal(int(fh.Fd())) {
		p.fd = int(fh.Fd())
	}
	go p.loop()
	return p
}

func (p *linePrompter) loop() {
	for secret := range p.reqs {
		p.res <- p.read(secret)
	}
}

// Close stops the reading goroutine.
func (p *linePrompter) Close() { close(p.reqs) }

func (p *linePrompter) read(secret bool) readResult {
	if secret && p.fd >= 0 && p.in.Buffered() == 0 {
		b, err := term.ReadPassword(p.fd)
		fmt.Fprintln(p.w)
		return readResult{line: string(b), err: err}
	}
	line, err := p.in.ReadString('\n')
	if errors.Is(err, io.EOF) && line != "" {
		err = nil // a last line without a newline still counts
	}
	return readResult{line: strings.TrimRight(line, "\r\n"), err: err}
}

// readLine reads one answer; secret answers are read without echo from a
// terminal.
func (p *linePrompter) readLine(ctx context.Context, secret bool) (string, error) {
	var state *term.State
	if secret && p.fd >= 0 {
		state, _ = term.GetState(p.fd)
	}
	select {
	case p.reqs <- secret:
	case <-ctx.Done():
		return "", ctx.Err()
	}
	select {
	case r := <-p.res:
		if errors.Is(r.err, io.EOF) {
			return "", ErrInputEnded
		}
		if r.err != nil {
			return "", fmt.Errorf("read answer: %w", r.err)
		}
		return r.line, nil
	case <-ctx.Done():
		if state != nil {
			_ = term.Restore(p.fd, state) // give the echo back
		}
		return "", ctx.Err()
	}
}

// Say writes a message for the user.
func (p *linePrompter) Say(format string, a ...any) { fmt.Fprintf(p.w, format, a...) }

// Text asks until check accepts the answer; an empty answer means def.
func (p *linePrompter) Text(ctx context.Context, label, def string, check func(string) error) (string, error) {
	for {
		if def != "" {
			p.Say("%s [%s]: ", label, def)
		} else {
			p.Say("%s: ", label)
		}
		v, err := p.readLine(ctx, false)
		if err != nil {
			return "", err
		}
		v = strings.TrimSpace(v)
		if v == "" {
			v = def
		}
		if check == nil {
			return v, nil
		}
		if err := check(v); err != nil {
			p.Say("  %v\n", err)
			continue
		}
		return v, nil
	}
}

// Password asks for a secret until it is non-empty. The answer is never
// echoed back or logged.
func (p *linePrompter) Password(ctx context.Context, label string) (string, error) {
	for {
		p.Say("%s: ", label)
		v, err := p.readLine(ctx, true)
		if err != nil {
			return "", err
		}
		if v != "" {
			return v, nil
		}
		p.Say("  the password cannot be empty\n")
	}
}

// YesNo asks a y/n question; an empty answer means def.
func (p *linePrompter) YesNo(ctx context.Context, label string, def bool) (bool, error) {
	d := "n"
	if def {
		d = "y"
	}
	v, err := p.Text(ctx, label+" (y/n)", d, func(v string) error {
		switch strings.ToLower(v) {
		case "y", "yes", "n", "no":
			return nil
		}
		return fmt.Errorf("%q: type y or n", v)
	})
	if err != nil {
		return false, err
	}
	return strings.HasPrefix(strings.ToLower(v), "y"), nil
}

// Choose shows a numbered menu and returns the chosen key. The answer may
// be the number or the key.
func (p *linePrompter) Choose(ctx context.Context, label string, items []Choice, def string) (string, error) {
	p.Say("%s\n", label)
	defNum := ""
	for i, c := range items {
		p.Say("  %d) %s\n", i+1, c.Label)
		if c.Key == def {
			defNum = strconv.Itoa(i + 1)
		}
	}
	var picked string
	_, err := p.Text(ctx, fmt.Sprintf("Choose 1-%d", len(items)), defNum, func(v string) error {
		if n, err := strconv.Atoi(v); err == nil && n >= 1 && n <= len(items) {
			picked = items[n-1].Key
			return nil
		}
		for _, c := range items {
			if strings.EqualFold(v, c.Key) {
				picked = c.Key
				return nil
			}
		}
		return fmt.Errorf("%q: type a number from 1 to %d", v, len(items))
	})
	return picked, err
}

// Confirm implements Prompter.
func (p *linePrompter) Confirm(question string, def bool) (bool, error) {
	p.Say("%s%s", question, confirmSuffix(def))
	line, err := p.readLine(context.Background(), false)
	if errors.Is(err, ErrInputEnded) {
		return def, nil
	}
	if err != nil {
		return false, err
	}
	return confirmAnswer(line, def), nil
}
