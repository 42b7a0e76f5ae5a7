package watch

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/mailagent/mailagent/imapsync"
	"github.com/mailagent/mailagent/internal/app/daemon"
	"github.com/mailagent/mailagent/internal/config"
	"github.com/mailagent/mailagent/internal/termsafe"
)

// watchProgress prints what watch is doing, one line at a time, on a
// terminal: which mailboxes it watches, when each account is idle, and
// every reconnection with its reason and wait. Under a service manager
// (stderr not a terminal, or systemd's INVOCATION_ID / launchd's LAUNCHD
// set) it prints nothing: the log file has it all, and the journal only
// gets errors.
type watchProgress struct {
	w     io.Writer
	addrs map[string]string // account name → IMAP host:port

	mu   sync.Mutex
	last map[string]string // account name → the last line kind printed
}

func newWatchProgress(w io.Writer, accounts []*config.Account) *watchProgress {
	p := &watchProgress{w: w, addrs: map[string]string{}, last: map[string]string{}}
	for _, a := range accounts {
		p.addrs[a.Name] = net.JoinHostPort(a.IMAP.Host, strconv.Itoa(a.IMAP.Port))
	}
	return p
}

func (p *watchProgress) printf(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, format+"\n", args...)
}

// start says what will be watched, and with adviseReview how to stop
// and where the queue is.
func (p *watchProgress) start(accounts []*config.Account, once, adviseReview bool) {
	verb := "watching"
	if once {
		verb = "catching up on"
	}
	for _, a := range accounts {
		mailbox := a.Mailbox
		if mailbox == "" {
			mailbox = "INBOX"
		}
		p.printf("%s: %s %s of %s on %s", termsafe.Line(a.Name), verb, termsafe.Line(mailbox),
			termsafe.Line(a.Email), termsafe.Line(p.addrs[a.Name]))
	}
	if adviseReview {
		p.printf("press Ctrl-C to stop; `mailagent review` shows the queue")
	}
}

// hook wires the printer into the daemon's status hooks.
func (p *watchProgress) hook(d *daemon.Daemon) {
	d.OnState = p.state
	d.OnRetry = p.retry
}

func (p *watchProgress) state(account string, s imapsync.State) {
	var kind, line string
	switch s {
	case imapsync.StateIdle:
		kind, line = "idle", "idle, waiting for new mail"
	case imapsync.StatePolling:
		kind, line = "polling", "polling (the server has no IDLE)"
	default:
		return
	}
	p.mu.Lock()
	same := p.last[account] == kind
	p.last[account] = kind
	p.mu.Unlock()
	if !same {
		p.printf("%s: %s", termsafe.Line(account), line)
	}
}

func (p *watchProgress) retry(account string, err error, wait time.Duration) {
	p.mu.Lock()
	p.last[account] = "retry"
	p.mu.Unlock()
	p.printf("%s: %s, retrying in %s", termsafe.Line(account), p.reason(account, err), roundWait(wait))
}

// reason words err for the owner: the common network failures in a few
// words with the server's address, anything else as its message.
func (p *watchProgress) reason(account string, err error) string {
	addr := termsafe.Line(p.addrs[account])
	switch {
	case err == nil:
		return "connection closed"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused (" + addr + ")"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset (" + addr + ")"
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return "host unreachable (" + addr + ")"
	case errors.Is(err, net.ErrClosed), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.EPIPE):
		// The server (or something between) dropped the connection: the
		// error says which socket call noticed, which the owner needs not.
		return "the server closed the connection (" + addr + ")"
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return "cannot resolve " + termsafe.Line(dnsErr.Name)
	}
	var nerr net.Error
	if errors.As(err, &nerr) && nerr.Timeout() {
		return "timed out (" + addr + ")"
	}
	return termsafe.Line(err.Error())
}

// roundWait shows a backoff wait as a person would say it: whole seconds,
// or minutes and seconds.
func roundWait(d time.Duration) time.Duration {
	if d < time.Second {
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Second)
}
