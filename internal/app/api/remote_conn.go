package api

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// commandConn is a net.Conn over a child process's stdin and stdout (the
// ssh of the remote transport), as docker's commandconn: what it writes on
// stderr is kept (the tail) for the error of a failed connection, and
// Close kills it and waits for it, so no process outlives its connection.
type commandConn struct {
	cmd    *exec.Cmd
	stdin  *os.File // our end: writes reach the child's stdin
	stdout *os.File // our end: reads come from the child's stdout
	stderr *lastStderr

	closeOnce sync.Once
	closeErr  error
}

var _ net.Conn = (*commandConn)(nil)

// startCommandConn starts program with args and returns the connection
// over its stdin and stdout. The child inherits the environment (ssh needs
// HOME, SSH_AUTH_SOCK and the terminal for a passphrase prompt).
func startCommandConn(program string, args []string, stderr *lastStderr) (*commandConn, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", program, err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		_ = inR.Close()
		_ = inW.Close()
		return nil, fmt.Errorf("start %s: %w", program, err)
	}
	cmd := exec.Command(program, args...)
	cmd.Stdin, cmd.Stdout = inR, outW
	stderr.reset()
	cmd.Stderr = stderr
	// A ControlMaster ssh forks may keep stderr open: Wait does not wait
	// for it beyond this.
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Start(); err != nil {
		for _, f := range []*os.File{inR, inW, outR, outW} {
			_ = f.Close()
		}
		return nil, fmt.Errorf("start %s: %w", program, err)
	}
	// The child has its copies; ours of its ends must go, so that a read
	// sees EOF when it exits.
	_ = inR.Close()
	_ = outW.Close()
	return &commandConn{cmd: cmd, stdin: inW, stdout: outR, stderr: stderr}, nil
}

func (c *commandConn) Read(p []byte) (int, error)  { return c.stdout.Read(p) }
func (c *commandConn) Write(p []byte) (int, error) { return c.stdin.Write(p) }

// CloseWrite closes the child's stdin: it reads EOF.
func (c *commandConn) CloseWrite() error { return c.stdin.Close() }

// Close closes both pipes, kills the child and waits for it. It is safe to
// call more than once; a child that had already exited is not an error.
func (c *commandConn) Close() error {
	c.closeOnce.Do(func() {
		_ = c.stdin.Close()
		_ = c.stdout.Close()
		if err := c.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
			c.closeErr = fmt.Errorf("close %s: %w", c.cmd.Path, err)
		}
		_ = c.cmd.Wait() // killed: its exit status says nothing
	})
	return c.closeErr
}

func (c *commandConn) LocalAddr() net.Addr  { return cmdAddr("local") }
func (c *commandConn) RemoteAddr() net.Addr { return cmdAddr(c.cmd.Path) }

func (c *commandConn) SetDeadline(t time.Time) error {
	return errors.Join(c.stdout.SetReadDeadline(t), c.stdin.SetWriteDeadline(t))
}
func (c *commandConn) SetReadDeadline(t time.Time) error  { return c.stdout.SetReadDeadline(t) }
func (c *commandConn) SetWriteDeadline(t time.Time) error { return c.stdin.SetWriteDeadline(t) }

// cmdAddr is the address of a command connection: the program.
type cmdAddr string

func (a cmdAddr) Network() string { return "cmd" }
func (a cmdAddr) String() string  { return string(a) }

// lastStderrMax bounds what is kept of a child's stderr.
const lastStderrMax = 4096

// lastStderr keeps the tail of what the last started child wrote on
// stderr. It is safe for concurrent use.
type lastStderr struct {
	mu  sync.Mutex
	buf []byte
}

func (l *lastStderr) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	if over := len(l.buf) - lastStderrMax; over > 0 {
		l.buf = append(l.buf[:0], l.buf[over:]...)
	}
	return len(p), nil
}

func (l *lastStderr) reset() {
	l.mu.Lock()
	l.buf = l.buf[:0]
	l.mu.Unlock()
}

// String is the kept text on one line, without ssh's own noise.
func (l *lastStderr) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var lines []string
	for _, line := range strings.Split(string(l.buf), "\n") {
		line = strings.TrimSpace(line)
		if line != "" {
			lines = append(lines, line)
		}
	}
	return strings.Join(lines, "; ")
}
