package e2e

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"
	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// deliveryTimeout bounds the wait for Postfix → LMTP → Dovecot. It is a
// deadline for a failure message, not a performance assertion.
const deliveryTimeout = 30 * time.Second

func TestFromEnv(t *testing.T) {
	full := map[string]string{
		"MAILAGENT_E2E":            "1",
		"MAILAGENT_E2E_DIR":        "/tmp/x",
		"MAILAGENT_E2E_IMAP_HOST":  "127.0.0.1",
		"MAILAGENT_E2E_IMAP_PORT":  "10143",
		"MAILAGENT_E2E_IMAPS_PORT": "10993",
		"MAILAGENT_E2E_SMTP_HOST":  "127.0.0.1",
		"MAILAGENT_E2E_SMTP_PORT":  "10025",
		"MAILAGENT_E2E_CA":         "/tmp/x/ca.pem",
		"MAILAGENT_E2E_USERS":      "ada@example.test:ada-pass,Bob@Example.test:bob:pass",
	}
	with := func(k, v string) map[string]string {
		m := make(map[string]string, len(full))
		for key, val := range full {
			m[key] = val
		}
		m[k] = v
		return m
	}
	tests := []struct {
		name     string
		env      map[string]string
		wantErr  string // substring; "" means success
		disabled bool
	}{
		{name: "complete", env: full},
		{name: "not enabled", env: with("MAILAGENT_E2E", ""), disabled: true},
		{name: "enabled with 0", env: with("MAILAGENT_E2E", "0"), disabled: true},
		{name: "bad port", env: with("MAILAGENT_E2E_SMTP_PORT", "smtp"), wantErr: "MAILAGENT_E2E_SMTP_PORT"},
		{name: "port out of range", env: with("MAILAGENT_E2E_IMAP_PORT", "70000"), wantErr: "MAILAGENT_E2E_IMAP_PORT"},
		{name: "missing CA", env: with("MAILAGENT_E2E_CA", ""), wantErr: "MAILAGENT_E2E_CA is empty"},
		{name: "no users", env: with("MAILAGENT_E2E_USERS", ""), wantErr: "MAILAGENT_E2E_USERS is empty"},
		{name: "user without password", env: with("MAILAGENT_E2E_USERS", "ada@example.test:ada-pass,bob"), wantErr: "entry 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := fromEnv(func(k string) string { return tt.env[k] })
			switch {
			case tt.disabled:
				if !errors.Is(err, errDisabled) {
					t.Fatalf("got error %v, want errDisabled", err)
				}
				return
			case tt.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got error %v, want one mentioning %q", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), "ada-pass") {
					t.Fatalf("error %q contains a password", err)
				}
				return
			case err != nil:
				t.Fatalf("got error %v, want nil", err)
			}
			if got, want := s.IMAPAddr(), "127.0.0.1:10143"; got != want {
				t.Errorf("IMAPAddr: got %q, want %q", got, want)
			}
			if got, want := s.IMAPSAddr(), "127.0.0.1:10993"; got != want {
				t.Errorf("IMAPSAddr: got %q, want %q", got, want)
			}
			if got, want := s.SMTPAddr(), "127.0.0.1:10025"; got != want {
				t.Errorf("SMTPAddr: got %q, want %q", got, want)
			}
			// Addresses are lowercased; a password may contain ':'.
			want := map[string]string{"ada@example.test": "ada-pass", "bob@example.test": "bob:pass"}
			if fmt.Sprint(s.Users) != fmt.Sprint(want) {
				t.Errorf("Users: got %v, want %v", s.Users, want)
			}
		})
	}
}

func TestStripMboxFrom(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{name: "envelope line", in: "From a@b  Thu Aug 22 12:36:23 2002\nSubject: x\n\nbody\n", want: "Subject: x\n\nbody\n"},
		{name: "crlf envelope", in: "From a@b Thu\r\nSubject: x\r\n", want: "Subject: x\r\n"},
		{name: "no envelope", in: "Subject: x\n\nFrom here\n", want: "Subject: x\n\nFrom here\n"},
		{name: "From header is not an envelope", in: "From: a@b\n", want: "From: a@b\n"},
		{name: "envelope only", in: "From a@b Thu", want: ""},
		{name: "empty", in: "", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(StripMboxFrom([]byte(tt.in))); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestCRLF(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{name: "bare LF", in: "a\nb\n", want: "a\r\nb\r\n"},
		{name: "already CRLF", in: "a\r\nb\r\n", want: "a\r\nb\r\n"},
		{name: "mixed", in: "a\r\nb\nc", want: "a\r\nb\r\nc"},
		{name: "leading LF", in: "\nx", want: "\r\nx"},
		{name: "lone CR kept", in: "a\rb\n", want: "a\rb\r\n"},
		{name: "empty", in: "", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(CRLF([]byte(tt.in))); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// uniqueID returns a Message-ID (without brackets) no other test run uses.
func uniqueID(t testing.TB) string {
	t.Helper()
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b) + "@e2e.example.test"
}

func testMessage(from, to, subject, id string) []byte {
	return []byte(strings.Join([]string{
		"From: " + from,
		"To: " + to,
		"Subject: " + subject,
		"Date: " + time.Now().Format(time.RFC1123Z),
		"Message-ID: <" + id + ">",
		"MIME-Version: 1.0",
		"Content-Type: text/plain; charset=utf-8",
		"",
		"Hello from the e2e tests.",
		"",
	}, "\r\n"))
}

// TestDelivery checks Postfix's routing: known users get their own mail and
// every other address, at our domain or any other, ends in the sink.
func TestDelivery(t *testing.T) {
	s := Require(t)
	tests := []struct {
		name     string
		rcpt     string
		wantUser string
	}{
		{name: "known user", rcpt: Bob, wantUser: Bob},
		{name: "owner", rcpt: Owner, wantUser: Owner},
		{name: "unknown user at our domain", rcpt: "nobody@example.test", wantUser: Sink},
		{name: "other domain", rcpt: "nobody@elsewhere.test", wantUser: Sink},
		{name: "mixed case", rcpt: "Carol@Example.TEST", wantUser: Carol},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := uniqueID(t)
			s.Deliver(t, "someone@outside.test", []string{tt.rcpt}, testMessage("someone@outside.test", tt.rcpt, tt.name, id))
			uid := s.WaitForMessageID(t, tt.wantUser, "INBOX", id, deliveryTimeout)
			if uid == 0 {
				t.Fatalf("got UID 0 for the delivered message, want a real UID")
			}
		})
	}
}

// TestDeliveryFanOut checks that one SMTP transaction with a known and an
// external recipient reaches both the user and the sink.
func TestDeliveryFanOut(t *testing.T) {
	s := Require(t)
	id := uniqueID(t)
	s.Deliver(t, Carol, []string{Bob, "nobody@elsewhere.test"}, testMessage(Carol, Bob, "fan out", id))
	s.WaitForMessageID(t, Bob, "INBOX", id, deliveryTimeout)
	s.WaitForMessageID(t, Sink, "INBOX", id, deliveryTimeout)
}

// TestSMTPAuth checks what the agent relies on to send: AUTH PLAIN after
// STARTTLS with the stack's CA, and a clear refusal of a wrong password.
func TestSMTPAuth(t *testing.T) {
	s := Require(t)
	tests := []struct {
		name     string
		password string
		wantErr  bool
	}{
		{name: "right password", password: s.Password(t, Owner)},
		{name: "wrong password", password: "not-" + s.Password(t, Owner), wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := s.TLSConfig(t)
			c, err := smtp.DialStartTLS(s.SMTPAddr(), cfg)
			if err != nil {
				t.Fatalf("dial with STARTTLS: %v", err)
			}
			defer func() { _ = c.Close() }()
			if _, ok := c.TLSConnectionState(); !ok {
				t.Fatalf("got a plaintext connection after STARTTLS, want TLS")
			}
			err = c.Auth(sasl.NewPlainClient("", Owner, tt.password))
			if tt.wantErr {
				var smtpErr *smtp.SMTPError
				if !errors.As(err, &smtpErr) || smtpErr.Code != 535 {
					t.Fatalf("got error %v, want SMTP 535", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("auth: %v", err)
			}
			id := uniqueID(t)
			if err := c.SendMail(Owner, []string{Carol}, bytes.NewReader(testMessage(Owner, Carol, "authenticated", id))); err != nil {
				t.Fatalf("send: %v", err)
			}
			s.WaitForMessageID(t, Carol, "INBOX", id, deliveryTimeout)
		})
	}
}

// TestIMAPFeatures checks the server features mailagent depends on, over
// both STARTTLS and implicit TLS.
func TestIMAPFeatures(t *testing.T) {
	s := Require(t)
	implicit, err := imapclient.DialTLS(s.IMAPSAddr(), &imapclient.Options{
		TLSConfig: s.TLSConfig(t),
		Dialer:    &net.Dialer{Timeout: ioTimeout},
	})
	if err != nil {
		t.Fatalf("dial IMAPS: %v", err)
	}
	defer func() { _ = implicit.Close() }()
	if err := implicit.Login(Owner, s.Password(t, Owner)).Wait(); err != nil {
		t.Fatalf("login over IMAPS: %v", err)
	}

	c := s.IMAP(t, Owner)
	caps := c.Caps()
	for _, want := range []imap.Cap{imap.CapIdle, imap.CapUIDPlus, imap.CapMove, imap.CapCondStore, imap.CapSpecialUse, "THREAD=REFERENCES"} {
		if !caps.Has(want) {
			t.Errorf("got capabilities without %s, want it", want)
		}
	}

	list, err := c.List("", "*", &imap.ListOptions{ReturnSpecialUse: true}).Collect()
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	var got []string
	for _, mb := range list {
		for _, attr := range mb.Attrs {
			switch attr {
			case imap.MailboxAttrSent, imap.MailboxAttrDrafts, imap.MailboxAttrTrash, imap.MailboxAttrJunk, imap.MailboxAttrArchive:
				got = append(got, fmt.Sprintf("%s=%s", attr, mb.Mailbox))
			}
		}
	}
	slices.Sort(got)
	want := []string{`\Archive=Archive`, `\Drafts=Drafts`, `\Junk=Junk`, `\Sent=Sent`, `\Trash=Trash`}
	if !slices.Equal(got, want) {
		t.Errorf("special-use mailboxes: got %v, want %v", got, want)
	}
}

// TestResetMailbox checks that ResetMailbox creates a missing mailbox and
// empties a full one.
func TestResetMailbox(t *testing.T) {
	s := Require(t)
	mailbox := "e2e-reset-" + uniqueID(t)[:8]
	s.ResetMailbox(t, Bob, mailbox) // creates it
	for range 3 {
		s.Append(t, Bob, mailbox, testMessage(Carol, Bob, "to be reset", uniqueID(t)))
	}
	s.WaitForMessages(t, Bob, mailbox, 3, deliveryTimeout)
	s.ResetMailbox(t, Bob, mailbox)

	c := s.IMAP(t, Bob)
	data, err := c.Status(mailbox, &imap.StatusOptions{NumMessages: true}).Wait()
	if err != nil {
		t.Fatalf("status: %v", err)
	}
	if got := *data.NumMessages; got != 0 {
		t.Errorf("got %d messages after reset, want 0", got)
	}
	if err := c.Delete(mailbox).Wait(); err != nil {
		t.Errorf("delete %s: %v", mailbox, err)
	}
}

// TestRestartDovecot checks that a restart cuts existing connections and
// keeps the mail.
func TestRestartDovecot(t *testing.T) {
	s := Require(t)
	id := uniqueID(t)
	s.Deliver(t, Carol, []string{Bob}, testMessage(Carol, Bob, "survives a restart", id))
	s.WaitForMessageID(t, Bob, "INBOX", id, deliveryTimeout)

	old := s.IMAP(t, Bob)
	s.RestartDovecot(t)
	if err := old.Noop().Wait(); err == nil {
		t.Errorf("got a working connection across the restart, want it cut")
	}
	s.WaitForMessageID(t, Bob, "INBOX", id, deliveryTimeout)
}
