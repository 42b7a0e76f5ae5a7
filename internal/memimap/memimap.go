// Package memimap runs go-imap's in-memory IMAP server (imapmemserver) on a
// loopback port, for the demo and for tests. It speaks the real protocol:
// clients connect over TCP exactly as they would to Dovecot.
//
// Contract: Start listens on 127.0.0.1 only, plaintext (mailagent allows
// plaintext to loopback only). Close stops the listener and every session.
// It is safe for concurrent use.
package memimap

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"
	"github.com/emersion/go-imap/v2/imapserver"
	"github.com/emersion/go-imap/v2/imapserver/imapmemserver"
)

// User is one account on the server.
type User struct {
	Name, Password string
}

// Options configures Start.
type Options struct {
	Users []User
	// Mailboxes created for every user; INBOX always exists. Sent and
	// Drafts (and Trash) carry their SPECIAL-USE attributes.
	Mailboxes []string
	// Caps overrides the advertised capabilities (nil: IMAP4rev1 with IDLE,
	// UIDPLUS, MOVE, SPECIAL-USE… as imapserver implements them).
	Caps imap.CapSet
	// Wrap, when set, wraps every session (tests inject faults this way:
	// a FETCH answered NO, a LOGIN answered NO [UNAVAILABLE]).
	Wrap func(imapserver.SessionIMAP4rev2) imapserver.SessionIMAP4rev2
	// Logger receives the server's own error lines ("failed to read
	// command: …"); nil means the standard log package (stderr), which a
	// command that owns the terminal must not use.
	Logger imapserver.Logger
	// Listener, when set, is served instead of a new loopback listener
	// (tests: an in-memory one, under testing/synctest); Host and Port are
	// then its address's, when it has them. Close closes it.
	Listener net.Listener
}

// Server is a running in-memory IMAP server.
type Server struct {
	Host string
	Port int

	mem   *imapmemserver.Server
	users map[string]*imapmemserver.User
	pass  map[string]string
	srv   *imapserver.Server
	done  chan struct{}
}

var specialUse = map[string]imap.MailboxAttr{
	"Sent": imap.MailboxAttrSent, "Drafts": imap.MailboxAttrDrafts,
	"Trash": imap.MailboxAttrTrash, "Junk": imap.MailboxAttrJunk,
}

// Start listens on a random loopback port and serves until Close.
func Start(opts Options) (*Server, error) {
	s := &Server{mem: imapmemserver.New(), users: map[string]*imapmemserver.User{}, pass: map[string]string{}, done: make(chan struct{})}
	for _, u := range opts.Users {
		mu := imapmemserver.NewUser(u.Name, u.Password)
		for _, mb := range append([]string{"INBOX"}, opts.Mailboxes...) {
			var co *imap.CreateOptions
			if attr, ok := specialUse[mb]; ok {
				co = &imap.CreateOptions{SpecialUse: []imap.MailboxAttr{attr}}
			}
			if err := mu.Create(mb, co); err != nil {
				return nil, fmt.Errorf("memimap: create %s for %s: %w", mb, u.Name, err)
			}
		}
		s.mem.AddUser(mu)
		s.users[u.Name] = mu
		s.pass[u.Name] = u.Password
	}
	caps := opts.Caps
	if caps == nil {
		caps = imap.CapSet{imap.CapIMAP4rev1: {}, imap.CapIMAP4rev2: {}}
	}
	s.srv = imapserver.New(&imapserver.Options{
		NewSession: func(*imapserver.Conn) (imapserver.Session, *imapserver.GreetingData, error) {
			var sess imapserver.SessionIMAP4rev2 = &session{SessionIMAP4rev2: s.mem.NewSession().(imapserver.SessionIMAP4rev2)}
			if opts.Wrap != nil {
				sess = opts.Wrap(sess)
			}
			return sess, nil, nil
		},
		Caps:         caps,
		Logger:       opts.Logger,
		InsecureAuth: true, // loopback only, see Start
	})
	ln := opts.Listener
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			return nil, fmt.Errorf("memimap: listen: %w", err)
		}
	}
	host, port, _ := net.SplitHostPort(ln.Addr().String())
	s.Host = host
	s.Port, _ = strconv.Atoi(port)
	go func() {
		defer close(s.done)
		_ = s.srv.Serve(ln)
	}()
	return s, nil
}

// Addr is host:port.
func (s *Server) Addr() string { return net.JoinHostPort(s.Host, strconv.Itoa(s.Port)) }

// Close stops the server and waits for its accept loop to end.
func (s *Server) Close() error {
	err := s.srv.Close()
	<-s.done
	return err
}

// Append adds a message to a user's mailbox through a real IMAP session
// (so that IDLE clients are told about it), and returns its UID.
func (s *Server) Append(ctx context.Context, user, mailbox string, raw []byte, flags []imap.Flag, date time.Time) (imap.UID, error) {
	c, err := s.dial(user)
	if err != nil {
		return 0, err
	}
	defer func() { _ = c.Close() }()
	stop := context.AfterFunc(ctx, func() { _ = c.Close() })
	defer stop()
	cmd := c.Append(mailbox, int64(len(raw)), &imap.AppendOptions{Flags: flags, Time: date})
	if _, err := cmd.Write(raw); err != nil {
		return 0, fmt.Errorf("memimap: append: %w", err)
	}
	if err := cmd.Close(); err != nil {
		return 0, fmt.Errorf("memimap: append: %w", err)
	}
	data, err := cmd.Wait()
	if err != nil {
		return 0, fmt.Errorf("memimap: append: %w", err)
	}
	return data.UID, nil
}

// Message is one stored message, for assertions.
type Message struct {
	UID   imap.UID
	Flags []imap.Flag
	Raw   []byte
}

// Messages returns every message in a user's mailbox, in UID order.
func (s *Server) Messages(ctx context.Context, user, mailbox string) ([]Message, error) {
	c, err := s.dial(user)
	if err != nil {
		return nil, err
	}
	defer func() { _ = c.Close() }()
	stop := context.AfterFunc(ctx, func() { _ = c.Close() })
	defer stop()
	if _, err := c.Select(mailbox, &imap.SelectOptions{ReadOnly: true}).Wait(); err != nil {
		return nil, fmt.Errorf("memimap: select %s: %w", mailbox, err)
	}
	section := &imap.FetchItemBodySection{Peek: true}
	msgs, err := c.Fetch(imap.SeqSet{imap.SeqRange{Start: 1, Stop: 0}}, &imap.FetchOptions{
		UID: true, Flags: true, BodySection: []*imap.FetchItemBodySection{section},
	}).Collect()
	if err != nil {
		var ierr *imap.Error
		if errors.As(err, &ierr) {
			return nil, nil // empty mailbox: "1:*" matches nothing
		}
		return nil, fmt.Errorf("memimap: fetch: %w", err)
	}
	out := make([]Message, 0, len(msgs))
	for _, m := range msgs {
		out = append(out, Message{UID: m.UID, Flags: m.Flags, Raw: bytes.Clone(m.FindBodySection(section))})
	}
	return out, nil
}

func (s *Server) dial(user string) (*imapclient.Client, error) {
	pw, ok := s.pass[user]
	if !ok {
		return nil, fmt.Errorf("memimap: no user %q", user)
	}
	c, err := imapclient.DialInsecure(s.Addr(), nil)
	if err != nil {
		return nil, fmt.Errorf("memimap: dial: %w", err)
	}
	if err := c.Login(user, pw).Wait(); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("memimap: login: %w", err)
	}
	return c, nil
}

// Recreate deletes a user's mailbox and creates it again, empty: the
// server gives it a new UIDVALIDITY, as a server does after a restore.
func (s *Server) Recreate(ctx context.Context, user, mailbox string) error {
	c, err := s.dial(user)
	if err != nil {
		return err
	}
	defer func() { _ = c.Close() }()
	stop := context.AfterFunc(ctx, func() { _ = c.Close() })
	defer stop()
	if err := c.Delete(mailbox).Wait(); err != nil {
		return fmt.Errorf("memimap: delete %s: %w", mailbox, err)
	}
	if err := c.Create(mailbox, nil).Wait(); err != nil {
		return fmt.Errorf("memimap: create %s: %w", mailbox, err)
	}
	return nil
}

// session fixes one gap of imapmemserver: its IDLE only reports changes
// made after IDLE began, so a message appended between a client's last
// command and its IDLE would go unreported until the next change. Real
// servers (Dovecot) report it. Polling the mailbox during IDLE does too.
type session struct {
	imapserver.SessionIMAP4rev2
}

// idlePoll is how often an IDLE session looks for changes.
const idlePoll = 20 * time.Millisecond

func (s *session) Idle(w *imapserver.UpdateWriter, stop <-chan struct{}) error {
	tick := time.NewTicker(idlePoll)
	defer tick.Stop()
	for {
		if err := s.Poll(w, true); err != nil {
			return err
		}
		select {
		case <-stop:
			return nil
		case <-tick.C:
		}
	}
}
