package main

import (
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// outage is a TCP relay in front of the IMAP server that a test can take
// down (the listener and every relayed connection close, as when a
// server restarts) and bring up again on the same port.
type outage struct {
	t      *testing.T
	target string
	port   int

	mu    sync.Mutex
	ln    net.Listener
	conns []net.Conn
	wg    sync.WaitGroup // every goroutine of the relay; down waits for them
}

// newOutage relays a free loopback port to target until the test ends.
func newOutage(t *testing.T, target string) *outage {
	o := &outage{t: t, target: target, port: closedPort(t)}
	o.up()
	t.Cleanup(o.down)
	return o
}

func (o *outage) up() {
	o.t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(o.port)))
	if err != nil {
		o.t.Fatal(err)
	}
	o.mu.Lock()
	o.ln = ln
	o.mu.Unlock()
	o.wg.Add(1)
	go func() {
		defer o.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return // down closed the listener
			}
			o.relay(c)
		}
	}()
}

// relay copies c to a new connection to the target and back, until
// either side or down closes them.
func (o *outage) relay(c net.Conn) {
	s, err := net.Dial("tcp", o.target)
	if err != nil {
		_ = c.Close()
		return
	}
	o.mu.Lock()
	o.conns = append(o.conns, c, s)
	o.mu.Unlock()
	o.wg.Add(2)
	pipe := func(dst, src net.Conn) {
		defer o.wg.Done()
		_, _ = io.Copy(dst, src)
		_ = dst.Close()
		_ = src.Close()
	}
	go pipe(s, c)
	go pipe(c, s)
}

// down closes the listener and every relayed connection, and waits for
// the relay's goroutines to end.
func (o *outage) down() {
	o.mu.Lock()
	if o.ln != nil {
		_ = o.ln.Close()
		o.ln = nil
	}
	for _, c := range o.conns {
		_ = c.Close()
	}
	o.conns = nil
	o.mu.Unlock()
	o.wg.Wait()
}

// TestWatchLinesUnderTmux runs `mailagent watch` attached to a real
// terminal (tmux), in front of imapmemserver through a relay: it says
// which mailbox of which account on which server it watches, then
// "idle"; when the server goes away it says why and when it retries
// ("connection refused (127.0.0.1:port), retrying in …"); when the
// server is back it says "idle" again, and Ctrl-C ends it with
// "stopped" and exit 0. Started the same way but with systemd's
// INVOCATION_ID set, it prints nothing while it works (its log says it
// is idle).
func TestWatchLinesUnderTmux(t *testing.T) {
	t.Parallel()
	needTmux(t)
	t.Run("terminal", func(t *testing.T) {
		h := newHarness(t, compromisedModel, "")
		relay := newOutage(t, h.imap.Addr())
		withIMAPPort(t, h, relay.port)
		addr := "127.0.0.1:" + strconv.Itoa(relay.port)
		x := startTmux(t, h, 100, 30, nil, "watch")
		x.waitText("personal: idle, waiting for new mail")
		s := x.screen()
		for _, want := range []string{
			"personal: watching INBOX of " + ownerAddr + " on " + addr,
			"press Ctrl-C to stop; `mailagent review` shows the queue",
		} {
			if !strings.Contains(s, want) {
				t.Errorf("the terminal lacks %q:\n%s", want, s)
			}
		}
		if first := screenRows(s)[0]; !strings.HasPrefix(first, "personal: watching INBOX") {
			t.Errorf("first line %q: something was printed before what watch watches", first)
		}

		relay.down()
		x.waitText("personal: connection refused (" + addr + "), retrying in ")
		relay.up()
		s = x.waitFor("idle again after the reconnect", func(s string) bool {
			return strings.Count(s, "personal: idle, waiting for new mail") == 2
		})
		// Each line is one of watch's: nothing from a library or the log.
		for _, l := range screenRows(s) {
			if l == "" {
				continue
			}
			if !strings.HasPrefix(l, "personal: ") && !strings.HasPrefix(l, "press Ctrl-C") {
				t.Errorf("a line not of watch's: %q", l)
			}
		}
		if x.dead() {
			t.Fatal("watch ended on its own")
		}
		x.keys("C-c")
		st := x.exitStatus()
		if s := x.screen(); !strings.Contains(s, "stopped") {
			t.Errorf("Ctrl-C: no \"stopped\" line:\n%s", s)
		}
		if st != "0" {
			t.Errorf("watch exit status %q after Ctrl-C, want 0", st)
		}
	})
	t.Run("under systemd", func(t *testing.T) {
		h := newHarness(t, compromisedModel, "")
		x := startTmux(t, h, 100, 30, []string{"INVOCATION_ID=0123456789abcdef"}, "watch")
		eventually(t, "status says the account is idle", func() bool {
			status, _, _ := h.run("status")
			return strings.Contains(status, "idle")
		})
		time.Sleep(100 * time.Millisecond) // a line printed with the idle state would be on the screen by now
		if s := strings.TrimSpace(x.screen()); s != "" {
			t.Errorf("under systemd watch printed on the terminal:\n%s", s)
		}
		x.keys("C-c")
		x.waitFor("watch ending", func(string) bool { return x.dead() })
	})
}
