package daemon

import (
	"context"
	"net"
	"net/netip"
	"sync"
)

// pipeListener is an in-memory network for a testing/synctest bubble: a
// real IMAP or SMTP server serves it, and its DialContext (for
// imapsync.Options or smtpsend.Options) hands the server one end of a
// net.Pipe. A goroutine waiting on a TCP socket is never durably blocked,
// so in a bubble it would stop the fake clock; one waiting on a pipe is.
type pipeListener struct {
	addr  net.Addr
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
	// mu orders Accept before Close as a TCP listener's descriptor lock
	// does: go-imap's imapserver.Server.Serve calls WaitGroup.Add before
	// its first Accept and Close calls Wait, which the race detector
	// accepts only when the Add happened before.
	mu sync.Mutex
}

// newPipeListener makes a listener whose address is addr (host:port),
// what the servers report as their Host and Port.
func newPipeListener(addr string) *pipeListener {
	return &pipeListener{addr: net.TCPAddrFromAddrPort(netip.MustParseAddrPort(addr)), conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	l.mu.Lock()
	//lint:ignore SA2001 the critical section is empty on purpose: see mu
	l.mu.Unlock()
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *pipeListener) Addr() net.Addr { return l.addr }

// DialContext connects to the listener's server, whatever the address.
func (l *pipeListener) DialContext(ctx context.Context, _, _ string) (net.Conn, error) {
	client, server := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.done:
		_, _ = client.Close(), server.Close()
		return nil, net.ErrClosed
	case <-ctx.Done():
		_, _ = client.Close(), server.Close()
		return nil, ctx.Err()
	}
}
