package imapsync

import (
	"bytes"
	"errors"
	"net"
	"strings"
	"sync"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"
)

// maxGreeting bounds the greeting line a greetingConn keeps.
const maxGreeting = 1024

// greetingConn is the connection itself, except that it keeps the first
// line the server sends: its greeting ("* OK [...] Courier-IMAP ready."),
// at most maxGreeting bytes, without the line end. go-imap parses the
// greeting but keeps none of its text, and Courier-IMAP, which answers no
// ID command, names itself only there. Safe for concurrent use.
type greetingConn struct {
	net.Conn

	mu   sync.Mutex
	line []byte
	done bool
}

func (g *greetingConn) Read(p []byte) (int, error) {
	n, err := g.Conn.Read(p)
	if n > 0 {
		g.record(p[:n])
	}
	return n, err
}

func (g *greetingConn) record(b []byte) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.done {
		return
	}
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		b = b[:i]
		g.done = true
	}
	if room := maxGreeting - len(g.line); len(b) > room {
		b = b[:room]
		g.done = true
	}
	g.line = append(g.line, b...)
}

// greeting is the greeting line read so far, without its CR LF.
func (g *greetingConn) greeting() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return strings.TrimSuffix(string(g.line), "\r")
}

// nameFromGreeting names a server by the words its greeting announces
// itself with: one of a few fixed names, never the greeting's own text
// (a server may write anything there), or "".
func nameFromGreeting(greeting string) string {
	for _, n := range []struct{ word, name string }{
		{"Courier-IMAP", "Courier-IMAP"},
		{"Cyrus IMAP", "Cyrus IMAP"},
		{"Dovecot", "Dovecot"},
	} {
		if strings.Contains(greeting, n.word) {
			return n.name
		}
	}
	return ""
}

// greetingTries bounds how often WaitGreeting asks again (below).
const greetingTries = 32

// WaitGreeting waits for the server's greeting on c and returns its
// error: a greeting of BYE or NO is the server's own words
// (*imap.Error). go-imap v2.0.0-beta.8's Client.WaitGreeting selects
// between "greeting read" and "reader stopped", and after a BYE greeting
// both are ready, so it says "connection closed before greeting" half
// the time and the server's words are lost. Asked again, it picks at
// random again: once it gives the server's error, that is the answer;
// when no greeting ever came, every answer is the same.
func WaitGreeting(c *imapclient.Client) error {
	err := c.WaitGreeting()
	for i := 1; i < greetingTries && err != nil; i++ {
		var imapErr *imap.Error
		if errors.As(err, &imapErr) {
			break
		}
		err = c.WaitGreeting()
	}
	return err
}
