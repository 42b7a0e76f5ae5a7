package bench

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
)

// CountingProxy forwards loopback TCP connections to a server and counts
// the bytes the server sends back, as they pass: what a client's reads
// cost on the wire (a test asserts a bound on it).
type CountingProxy struct {
	// Port is the proxy's port on 127.0.0.1.
	Port int
	ln   net.Listener
	down atomic.Int64
	wg   sync.WaitGroup
}

// StartCountingProxy listens on 127.0.0.1 and forwards every connection
// to target until the test ends.
func StartCountingProxy(t testing.TB, target string) *CountingProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &CountingProxy{Port: ln.Addr().(*net.TCPAddr).Port, ln: ln}
	t.Cleanup(func() { _ = ln.Close(); p.wg.Wait() })
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				_ = c.Close()
				continue
			}
			p.wg.Add(2)
			go func() { defer p.wg.Done(); _, _ = io.Copy(s, c); _ = s.Close() }()
			go func() {
				defer p.wg.Done()
				_, _ = io.Copy(c, countReader{s, &p.down})
				_ = c.Close()
			}()
		}
	}()
	return p
}

// Down is the number of bytes sent by the server so far, over every
// connection.
func (p *CountingProxy) Down() int64 { return p.down.Load() }

// countReader adds what it reads to n as it goes: before it is passed
// on, so that whatever a client has received is already counted (a count
// taken after the write lagged the client by up to a chunk).
type countReader struct {
	r io.Reader
	n *atomic.Int64
}

func (cr countReader) Read(b []byte) (int, error) {
	k, err := cr.r.Read(b)
	cr.n.Add(int64(k))
	return k, err
}
