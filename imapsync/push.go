package imapsync

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/emersion/go-imap/v2"
)

// ServerName names the server software: the name (and version) its ID
// answer gives (RFC 2971: "Cyrus IMAPD", "Dovecot"), else
// "Courier-IMAP" for a server that announces a Courier extension
// (XCOURIEROUTBOX), else the name its greeting announces (Courier-IMAP,
// which answers no ID and, with stock settings, announces no extension of
// its own: "* OK [...] Courier-IMAP ready."), else "". It never fails: a
// refused ID is an unknown name.
func (c *Client) ServerName(ctx context.Context) string {
	if c.Has(string(imap.CapID)) {
		var data *imap.IDData
		err := c.guard(ctx, func() error {
			var err error
			data, err = c.ic.ID(&imap.IDData{Name: "mailagent"}).Wait()
			return err
		})
		if err == nil && data != nil && data.Name != "" {
			return strings.TrimSpace(data.Name + " " + data.Version)
		}
	}
	if n := nameFromCaps(c.caps); n != "" {
		return n
	}
	return nameFromGreeting(c.greeting)
}

// nameFromCaps names a server by a capability only it announces:
// Courier-IMAP's XCOURIEROUTBOX (Courier answers no ID).
func nameFromCaps(caps map[string]bool) string {
	for cp := range caps {
		if strings.HasPrefix(strings.ToUpper(cp), "XCOURIER") {
			return "Courier-IMAP"
		}
	}
	return ""
}

// PushProbe is one measure of how soon the server tells a client in IDLE
// about new mail.
type PushProbe struct {
	// Latency is from the APPEND's completion to the sync that the
	// server's EXISTS started; Arrived is false when no EXISTS came
	// within the wait (Latency is then the wait).
	Latency time.Duration
	Arrived bool
	// Mailbox is the scratch folder used (created and deleted).
	Mailbox string
}

// ProbePush measures push latency the way new mail meets `watch`: a
// Watcher on a scratch folder of its own (created under the personal
// namespace, "mailagent-push-probe-<random>"), in IDLE on a second
// connection from dial, while c APPENDs one small message to it; it waits
// at most wait for the EXISTS. The folder is deleted at the end, also on
// failure. ErrUnsupported when the server lacks IDLE.
func (c *Client) ProbePush(ctx context.Context, dial func(context.Context) (*Client, error), wait time.Duration) (p PushProbe, err error) {
	if !c.Has("IDLE") {
		return p, fmt.Errorf("imap push probe: %w", ErrUnsupported)
	}
	prefix, _, err := c.Namespace(ctx)
	if err != nil {
		return p, err
	}
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	p.Mailbox = prefix + "mailagent-push-probe-" + hex.EncodeToString(rnd[:])
	if err := c.create(ctx, p.Mailbox, ""); err != nil {
		return p, err
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if derr := c.guard(dctx, func() error { return c.ic.Delete(p.Mailbox).Wait() }); derr != nil && err == nil {
			err = fmt.Errorf("imap delete %q: %w", p.Mailbox, derr)
		}
	}()

	wctx, stop := context.WithCancel(ctx)
	defer stop()
	ready := make(chan struct{})
	var once sync.Once
	seen := make(chan time.Time, 1)
	syncs := 0
	w := &Watcher{
		Dial: dial, Mailbox: p.Mailbox, MinBackoff: time.Second, MaxBackoff: time.Second,
		OnState: func(s State) {
			if s == StateIdle {
				once.Do(func() { close(ready) })
			}
		},
	}
	done := make(chan error, 1)
	go func() {
		done <- w.Run(wctx, func(_ context.Context, _ *Client, st MailboxStatus) error {
			syncs++
			if syncs > 1 && st.NumMessages > 0 {
				select {
				case seen <- time.Now():
				default:
				}
			}
			return nil
		})
	}()
	stopped := false // the watcher's result was received
	defer func() {
		stop()
		if stopped {
			return
		}
		// Run returns nil once stopped; anything else is worth saying
		// when the probe has nothing worse to report.
		if werr := <-done; werr != nil && err == nil {
			err = fmt.Errorf("imap push probe: the watcher: %w", werr)
		}
	}()
	select {
	case <-ready:
	case err := <-done:
		stopped = true
		return p, fmt.Errorf("imap push probe: the watcher stopped: %w", errors.Join(err, ctx.Err()))
	case <-time.After(wait):
		return p, fmt.Errorf("imap push probe: no IDLE on %q within %s", p.Mailbox, wait)
	}
	raw := "From: mailagent doctor <doctor@localhost>\r\nSubject: mailagent push probe\r\nMessage-ID: <" + hex.EncodeToString(rnd[:]) + "@push-probe.mailagent>\r\n\r\nA probe of how soon new mail reaches IDLE; mailagent doctor deletes it.\r\n"
	if _, err := c.Append(ctx, p.Mailbox, nil, time.Now(), []byte(raw)); err != nil {
		return p, err
	}
	appended := time.Now()
	select {
	case at := <-seen:
		p.Latency, p.Arrived = at.Sub(appended), true
	case <-time.After(wait):
		p.Latency = wait
	case <-ctx.Done():
		return p, ctx.Err()
	}
	return p, nil
}
