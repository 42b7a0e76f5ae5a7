package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// drainWait bounds how long a server whose client closed its input keeps
// going to answer the requests it has already read.
const drainWait = 30 * time.Second

// DrainingTransport wraps a stdio transport so that the end of the
// client's input ends the session only once every request read before it
// has been answered. A client that writes `initialize` and `tools/list`
// and then closes stdin (a script, `printf … | mailagent mcp`) gets both
// answers; the SDK's own transport reports EOF at once, and the session
// ends with the second request still in flight. The SDK offers no hook
// for this, hence the wrapper.
type DrainingTransport struct {
	mcp.Transport
	// Wait bounds the wait for the answers (0: drainWait).
	Wait time.Duration
}

// Connect connects the wrapped transport.
func (t *DrainingTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	wait := t.Wait
	if wait <= 0 {
		wait = drainWait
	}
	return &drainingConn{Connection: c, wait: wait, pending: map[string]bool{}, idle: make(chan struct{}, 1)}, nil
}

type drainingConn struct {
	mcp.Connection
	wait time.Duration

	mu      sync.Mutex
	pending map[string]bool // ids of requests read and not yet answered
	idle    chan struct{}   // signalled when pending becomes empty
}

func idKey(id jsonrpc.ID) string { return fmt.Sprintf("%T:%v", id.Raw(), id.Raw()) }

// Read reads the next message; at the end of the input it first waits
// (at most c.wait, or until ctx ends) for the answers still owed.
func (c *drainingConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if err == nil {
		if req, ok := msg.(*jsonrpc.Request); ok && req.ID.IsValid() {
			c.mu.Lock()
			c.pending[idKey(req.ID)] = true
			c.mu.Unlock()
		}
		return msg, nil
	}
	if !errors.Is(err, io.EOF) {
		return nil, err
	}
	timer := time.NewTimer(c.wait)
	defer timer.Stop()
	for {
		c.mu.Lock()
		n := len(c.pending)
		c.mu.Unlock()
		if n == 0 {
			return nil, err
		}
		select {
		case <-c.idle:
		case <-timer.C:
			return nil, err
		case <-ctx.Done():
			return nil, err
		}
	}
}

// Write writes msg and, for a response, crosses its request off.
func (c *drainingConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	err := c.Connection.Write(ctx, msg)
	if resp, ok := msg.(*jsonrpc.Response); ok && resp.ID.IsValid() {
		c.mu.Lock()
		delete(c.pending, idKey(resp.ID))
		empty := len(c.pending) == 0
		c.mu.Unlock()
		if empty {
			select {
			case c.idle <- struct{}{}:
			default:
			}
		}
	}
	return err
}
