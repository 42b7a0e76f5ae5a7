package watch

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"
)

// TestRetryReasonsInAFewWords: a dropped connection reads as such, with
// the server's address, not as the socket call that noticed it.
func TestRetryReasonsInAFewWords(t *testing.T) {
	t.Parallel()
	p := &watchProgress{addrs: map[string]string{"personal": "127.0.0.1:993"}}
	for _, c := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("stop idle: write tcp 127.0.0.1:1->127.0.0.1:2: %w", net.ErrClosed), "the server closed the connection (127.0.0.1:993)"},
		{fmt.Errorf("read greeting: %w", io.EOF), "the server closed the connection (127.0.0.1:993)"},
		{fmt.Errorf("dial: %w", syscall.ECONNREFUSED), "connection refused (127.0.0.1:993)"},
		{errors.New("LOGIN failed \x1b[31m"), "LOGIN failed"},
	} {
		if got := p.reason("personal", c.err); !strings.HasPrefix(got, c.want) || strings.Contains(got, "\x1b") {
			t.Errorf("%v: %q, want %q", c.err, got, c.want)
		}
	}
}
