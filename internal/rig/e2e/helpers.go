package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"
	"github.com/emersion/go-smtp"
)

// ioTimeout bounds every network step of a helper, so a wedged server fails
// the test instead of hanging it until go test's global timeout.
const ioTimeout = 30 * time.Second

// Deliver sends raw to the recipients through Postfix, unauthenticated from
// loopback, the way mail from the outside world arrives. Delivery to the
// mailboxes happens asynchronously afterwards; use WaitForMessages.
//
// A temporary refusal (4xx) is tried again for up to deliverRetryFor, as
// a sending MTA would: Postfix answers 451 while a milter restarts
// (after a crash the stack's supervisor loop starts OpenDKIM again, see
// scripts/e2e-stack.sh).
func (s *Stack) Deliver(t testing.TB, from string, to []string, raw []byte) {
	t.Helper()
	deadline := time.Now().Add(deliverRetryFor)
	for {
		err := s.deliver(from, to, raw)
		if err == nil {
			return
		}
		var se *smtp.SMTPError
		if !errors.As(err, &se) || se.Code < 400 || se.Code >= 500 || time.Now().After(deadline) {
			t.Fatalf("e2e: deliver from %s to %v: %v", from, to, err)
		}
		t.Logf("e2e: deliver from %s: %v; trying again", from, err)
		time.Sleep(time.Second)
	}
}

// deliverRetryFor is how long Deliver tries again after a temporary
// refusal.
const deliverRetryFor = 30 * time.Second

func (s *Stack) deliver(from string, to []string, raw []byte) error {
	conn, err := net.DialTimeout("tcp", s.SMTPAddr(), ioTimeout)
	if err != nil {
		return fmt.Errorf("dial smtp: %w", err)
	}
	c := smtp.NewClient(conn)
	defer func() { _ = c.Close() }()
	c.CommandTimeout = ioTimeout
	c.SubmissionTimeout = ioTimeout
	if err := c.SendMail(from, to, bytes.NewReader(raw)); err != nil {
		return err
	}
	if err := c.Quit(); err != nil {
		return fmt.Errorf("quit: %w", err)
	}
	return nil
}

// IMAP returns a client logged in as user over STARTTLS (verified against the
// stack's CA), with no mailbox selected. It is logged out and closed when the
// test ends.
func (s *Stack) IMAP(t testing.TB, user string) *imapclient.Client {
	t.Helper()
	c, err := s.dialIMAP(t, user)
	if err != nil {
		t.Fatalf("e2e: imap login %s: %v", user, err)
	}
	t.Cleanup(func() {
		// The server may be gone (RestartDovecot); errors don't matter here.
		_ = c.Logout().Wait()
		_ = c.Close()
	})
	return c
}

func (s *Stack) dialIMAP(t testing.TB, user string) (*imapclient.Client, error) {
	t.Helper()
	return s.dialIMAPWith(t, user, true)
}

// dialIMAPWith logs user in, over STARTTLS when tls is true. Plaintext is
// for bulk loading only: Dovecot's TLS proxy in imap-login adds tens of
// milliseconds to every APPEND (measured: ~40 ms vs ~6 ms), which makes
// loading a corpus of thousands of messages take minutes.
func (s *Stack) dialIMAPWith(t testing.TB, user string, tls bool) (*imapclient.Client, error) {
	t.Helper()
	pass := s.Password(t, user)
	opts := &imapclient.Options{Dialer: &net.Dialer{Timeout: ioTimeout}}
	var (
		c   *imapclient.Client
		err error
	)
	if tls {
		opts.TLSConfig = s.TLSConfig(t)
		c, err = imapclient.DialStartTLS(s.IMAPAddr(), opts)
	} else {
		c, err = imapclient.DialInsecure(s.IMAPAddr(), opts)
	}
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", s.IMAPAddr(), err)
	}
	if err := c.Login(user, pass).Wait(); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("login: %w", err)
	}
	return c, nil
}

// WaitForMessages polls STATUS until mailbox of user holds at least n
// messages, and fails the test with the last count it saw once timeout has
// passed. It waits for an asynchronous delivery; it asserts nothing about
// speed.
func (s *Stack) WaitForMessages(t testing.TB, user, mailbox string, n int, timeout time.Duration) {
	t.Helper()
	c := s.IMAP(t, user)
	deadline := time.Now().Add(timeout)
	var (
		got     uint32
		lastErr error
	)
	for {
		data, err := c.Status(mailbox, &imap.StatusOptions{NumMessages: true}).Wait()
		lastErr = err
		if err == nil && data.NumMessages != nil {
			got = *data.NumMessages
			if int(got) >= n {
				return
			}
		}
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if lastErr != nil {
		t.Fatalf("e2e: %s %s: got error %v after %v, want ≥ %d messages", user, mailbox, lastErr, timeout, n)
	}
	t.Fatalf("e2e: %s %s: got %d messages after %v, want ≥ %d", user, mailbox, got, timeout, n)
}

// ResetMailbox makes mailbox of user exist and be empty: it creates a
// missing mailbox and expunges every message of an existing one.
func (s *Stack) ResetMailbox(t testing.TB, user, mailbox string) {
	t.Helper()
	c, err := s.dialIMAP(t, user)
	if err != nil {
		t.Fatalf("e2e: reset %s %s: %v", user, mailbox, err)
	}
	defer func() {
		_ = c.Logout().Wait()
		_ = c.Close()
	}()
	if err := resetMailbox(c, mailbox); err != nil {
		t.Fatalf("e2e: reset %s %s: %v", user, mailbox, err)
	}
}

func resetMailbox(c *imapclient.Client, mailbox string) error {
	sel, err := c.Select(mailbox, nil).Wait()
	if err != nil {
		// Dovecot 2.3 answers a missing mailbox with a plain NO (no
		// NONEXISTENT code), so try to create it and report the SELECT
		// error if that fails too. Under the parallel suite Dovecot has
		// once answered "doesn't exist" to the SELECT and ALREADYEXISTS
		// to the CREATE of the same new folder: then it exists, and is
		// selected again.
		cerr := c.Create(mailbox, nil).Wait()
		if cerr == nil {
			return nil
		}
		var ierr *imap.Error
		if !errors.As(cerr, &ierr) || ierr.Code != imap.ResponseCodeAlreadyExists {
			return fmt.Errorf("select: %w (create: %v)", err, cerr)
		}
		if sel, err = c.Select(mailbox, nil).Wait(); err != nil {
			return fmt.Errorf("select after ALREADYEXISTS: %w", err)
		}
	}
	if sel.NumMessages > 0 {
		all := imap.SeqSet{}
		all.AddRange(1, 0) // 1:*
		store := &imap.StoreFlags{Op: imap.StoreFlagsAdd, Silent: true, Flags: []imap.Flag{imap.FlagDeleted}}
		if err := c.Store(all, store, nil).Close(); err != nil {
			return fmt.Errorf("store \\Deleted: %w", err)
		}
		if err := c.Expunge().Close(); err != nil {
			return fmt.Errorf("expunge: %w", err)
		}
	}
	if err := c.Unselect().Wait(); err != nil {
		return fmt.Errorf("unselect: %w", err)
	}
	return nil
}

// Append stores raw in mailbox of user (which must exist) with the given
// flags and returns its UID. Its connection is closed when it returns.
func (s *Stack) Append(t testing.TB, user, mailbox string, raw []byte, flags ...imap.Flag) imap.UID {
	t.Helper()
	c := s.imapNow(t, user)
	defer closeIMAP(c)
	uid, err := appendMessage(c, mailbox, raw, &imap.AppendOptions{Flags: flags})
	if err != nil {
		t.Fatalf("e2e: append to %s %s: %v", user, mailbox, err)
	}
	return uid
}

func appendMessage(c *imapclient.Client, mailbox string, raw []byte, opts *imap.AppendOptions) (imap.UID, error) {
	cmd := c.Append(mailbox, int64(len(raw)), opts)
	if _, err := cmd.Write(raw); err != nil {
		_ = cmd.Close()
		return 0, fmt.Errorf("write literal: %w", err)
	}
	if err := cmd.Close(); err != nil {
		return 0, fmt.Errorf("close literal: %w", err)
	}
	data, err := cmd.Wait()
	if err != nil {
		return 0, err
	}
	if data.UID == 0 {
		return 0, errors.New("server sent no APPENDUID")
	}
	return data.UID, nil
}

// RestartDovecot stops and starts Dovecot (scripts/e2e-stack.sh
// restart-dovecot), keeping all mail. Every IMAP connection is cut; use it
// to test reconnects. It first waits until no other test binary uses the
// stack (see the stack lock), so it may block while other packages' tests
// run. It needs the same rights as starting the stack (root).
func (s *Stack) RestartDovecot(t testing.TB) {
	t.Helper()
	script := filepath.Join(RepoRoot(t), "scripts", "e2e-stack.sh")
	withExclusiveLock(t, s.Dir, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "bash", script, "restart-dovecot", s.Dir)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("e2e: %s restart-dovecot: %v\n%s", script, err, out)
		}
	})
}

// WaitForMessageID polls mailbox of user until a message whose Message-ID
// header contains messageID is there, and returns its UID. It fails the
// test once timeout has passed. Unlike WaitForMessages it is not confused
// by mail other tests deliver to the same account at the same time. Its
// connection is closed when it returns (many tests at once wait on one
// account, and Dovecot limits connections per user).
func (s *Stack) WaitForMessageID(t testing.TB, user, mailbox, messageID string, timeout time.Duration) imap.UID {
	t.Helper()
	c := s.imapNow(t, user)
	defer closeIMAP(c)
	return waitMessageID(t, c, user, mailbox, messageID, timeout, true)
}

// imapNow is IMAP for a helper that closes the client itself.
func (s *Stack) imapNow(t testing.TB, user string) *imapclient.Client {
	t.Helper()
	c, err := s.dialIMAP(t, user)
	if err != nil {
		t.Fatalf("e2e: imap login %s: %v", user, err)
	}
	return c
}

func closeIMAP(c *imapclient.Client) {
	_ = c.Logout().Wait()
	_ = c.Close()
}

// waitMessageID selects mailbox on c (read-only unless readOnly is false)
// and polls it until a message whose Message-ID header contains messageID
// is there; it returns its UID.
func waitMessageID(t testing.TB, c *imapclient.Client, user, mailbox, messageID string, timeout time.Duration, readOnly bool) imap.UID {
	t.Helper()
	if _, err := c.Select(mailbox, &imap.SelectOptions{ReadOnly: readOnly}).Wait(); err != nil {
		t.Fatalf("e2e: select %s %s: %v", user, mailbox, err)
	}
	criteria := &imap.SearchCriteria{Header: []imap.SearchCriteriaHeaderField{{Key: "Message-ID", Value: messageID}}}
	deadline := time.Now().Add(timeout)
	for {
		// NOOP lets the server report mail delivered since the last poll.
		if err := c.Noop().Wait(); err != nil {
			t.Fatalf("e2e: noop %s %s: %v", user, mailbox, err)
		}
		data, err := c.UIDSearch(criteria, nil).Wait()
		if err != nil {
			t.Fatalf("e2e: search %s %s for Message-ID %s: %v", user, mailbox, messageID, err)
		}
		if uids := data.AllUIDs(); len(uids) > 0 {
			return uids[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("e2e: %s %s: got no message with Message-ID %s after %v, want one", user, mailbox, messageID, timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// MoveMessageID waits, as WaitForMessageID does, until a message whose
// Message-ID header contains messageID is in user's mailbox from, then
// moves it to mailbox to (UID MOVE, RFC 6851) with its flags and returns
// its UID there. A test that watches a mailbox of its own uses it to take
// the mail Postfix delivered to the shared INBOX out of every other
// test's way, as the owner's server would file it. Its connection is
// closed when it returns.
func (s *Stack) MoveMessageID(t testing.TB, user, from, to, messageID string, timeout time.Duration) imap.UID {
	t.Helper()
	c := s.imapNow(t, user)
	defer closeIMAP(c)
	uid := waitMessageID(t, c, user, from, messageID, timeout, false)
	data, err := c.Move(imap.UIDSetNum(uid), to).Wait()
	if err != nil {
		t.Fatalf("e2e: move %s from %s %s to %s: %v", messageID, user, from, to, err)
	}
	if data == nil || data.DestUIDs == nil {
		t.Fatalf("e2e: move %s to %s %s: the server sent no COPYUID", messageID, user, to)
	}
	dest, ok := data.DestUIDs.(imap.UIDSet)
	if !ok || len(dest) != 1 || dest[0].Start != dest[0].Stop {
		t.Fatalf("e2e: move %s to %s %s: COPYUID names %v, want one UID", messageID, user, to, data.DestUIDs)
	}
	return dest[0].Start
}

// DeleteMailbox deletes mailbox of user with the messages in it. It is a
// cleanup step: an error is logged, not fatal.
func (s *Stack) DeleteMailbox(t testing.TB, user, mailbox string) {
	t.Helper()
	c, err := s.dialIMAP(t, user)
	if err != nil {
		t.Logf("e2e: delete %s %s: %v", user, mailbox, err)
		return
	}
	defer func() {
		_ = c.Logout().Wait()
		_ = c.Close()
	}()
	if err := c.Delete(mailbox).Wait(); err != nil {
		t.Logf("e2e: delete %s %s: %v", user, mailbox, err)
	}
}
