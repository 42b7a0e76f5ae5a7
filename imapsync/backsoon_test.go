package imapsync

import (
	"context"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mailagent/mailagent/internal/retry"
)

// TestDefaultReconnectWaitsStayShort: with the default bounds, the first
// wait after a lost connection is a fraction of a second and no wait of
// a long outage (30 attempts) is longer than DefaultMaxBackoff plus its
// jitter, so mail is handled within seconds of the server's return. The
// old bounds (1s to 5 minutes) reach 95 s after seven failures: the
// control.
func TestDefaultReconnectWaitsStayShort(t *testing.T) {
	t.Parallel()
	longest := func(lo, hi time.Duration) (first, top time.Duration) {
		bo := retry.Jittered(lo, hi)
		for i := range 30 {
			w := bo.NextBackOff()
			if i == 0 {
				first = w
			}
			top = max(top, w)
		}
		return first, top
	}
	first, top := longest(DefaultMinBackoff, DefaultMaxBackoff)
	if first > DefaultMinBackoff*3/2 || top > DefaultMaxBackoff*3/2 || top > 5*time.Second {
		t.Errorf("default waits: first %v, longest %v; want at most %v and %v (and under 5s)", first, top, DefaultMinBackoff*3/2, DefaultMaxBackoff*3/2)
	}
	if _, old := longest(time.Second, 5*time.Minute); old < 60*time.Second {
		t.Errorf("control: the old bounds' longest wait %v, want over a minute", old)
	}
}

// faultProxy is a TCP proxy in front of a test server that can be cut:
// while down it closes every connection it had and every new one at
// once (the client sees the server vanish, as in an outage or restart).
type faultProxy struct {
	ln      net.Listener
	target  string
	down    atomic.Bool
	mu      sync.Mutex
	conns   []net.Conn
	refused atomic.Int32
}

func startFaultProxy(t *testing.T, target string) *faultProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &faultProxy{ln: ln, target: target}
	t.Cleanup(func() { _ = ln.Close(); p.cut() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if p.down.Load() {
				p.refused.Add(1)
				_ = c.Close()
				continue
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				_ = c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, up)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(up, c); _ = up.Close() }()
			go func() { _, _ = io.Copy(c, up); _ = c.Close() }()
		}
	}()
	return p
}

// cut closes every proxied connection.
func (p *faultProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.conns = nil
}

func (p *faultProxy) port() int { return p.ln.Addr().(*net.TCPAddr).Port }

// TestWatcherBackAfterOutage: a fault-injecting proxy cuts the watcher's
// IDLE connection and refuses connections for a while, then lets them
// through: with the default (zero) backoff bounds every wait reported
// through OnRetry is within the defaults, the first connection after the
// outage succeeds, and the mail that arrived meanwhile is handled.
//
// The watcher runs in a synctest bubble, so its backoff waits (the
// defaults, seconds in all) pass on the bubble's fake clock. The server
// and the proxy run outside it: their goroutines wait on real sockets,
// and so does the watcher while it talks to them, which stops the fake
// clock (a goroutine blocked on I/O is not durably blocked), so time
// jumps only while every goroutine of the bubble waits on a timer or on
// another of them.
func TestWatcherBackAfterOutage(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverConfig{})
	proxy := startFaultProxy(t, net.JoinHostPort("127.0.0.1", strconv.Itoa(ts.port)))
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var waits []time.Duration
		w := &Watcher{
			Dial: func(ctx context.Context) (*Client, error) {
				o := ts.options()
				o.Port = proxy.port()
				return Dial(ctx, o)
			},
			Mailbox: "INBOX",
			OnRetry: func(_ error, wait time.Duration) {
				mu.Lock()
				waits = append(waits, wait)
				mu.Unlock()
			},
		}
		rec := newRecorder()
		stop := runWatcher(t, w, rec.sync)
		first := ts.add(t, "INBOX", textMessage("before", "<before@x>", "x"), time.Time{})
		rec.waitFor(t, first)

		proxy.down.Store(true)
		proxy.cut()
		deadline := time.Now().Add(waitLimit)
		for proxy.refused.Load() < 3 { // three refused reconnects: the outage is on
			if time.Now().After(deadline) {
				t.Fatal("the watcher never tried to reconnect")
			}
			time.Sleep(20 * time.Millisecond) // polling the proxy, nothing asserted on time
		}
		uid := ts.add(t, "INBOX", textMessage("waiting", "<back@x>", "x"), time.Time{})
		proxy.down.Store(false)
		rec.waitFor(t, uid)
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(waits) < 3 {
			t.Errorf("%d waits %v, want one per refused attempt", len(waits), waits)
		}
		for i, wt := range waits {
			if wt > DefaultMaxBackoff*3/2 || (i == 0 && wt > DefaultMinBackoff*3/2) {
				t.Errorf("wait %d is %v: over the default bounds", i+1, wt)
			}
		}
	})
}
