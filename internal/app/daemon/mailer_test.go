package daemon

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"

	"github.com/mailagent/mailagent/imapsync"
	"github.com/mailagent/mailagent/internal/memimap"
)

const (
	testUser = "ada@example.com"
	testPass = "pw-5521"
)

func startIMAP(t *testing.T, opts memimap.Options) (*memimap.Server, *AccountMailer) {
	t.Helper()
	opts.Users = []memimap.User{{Name: testUser, Password: testPass}}
	srv, err := memimap.Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	a := &AccountMailer{Name: "personal", Dial: func(ctx context.Context) (*imapsync.Client, error) {
		return imapsync.Dial(ctx, imapsync.Options{Host: srv.Host, Port: srv.Port, Security: imapsync.SecurityInsecure,
			Username: testUser, Password: testPass, Account: "personal"})
	}}
	return srv, a
}

// appendMany puts msgs into the test user's mailbox in order, through one
// real IMAP session (LOGIN, then an APPEND each, as memimap.Server.Append
// does with a session of its own per message: a connection per message
// was most of a thousand-message fixture under -race).
func appendMany(t *testing.T, srv *memimap.Server, mailbox string, msgs []appendMsg) {
	t.Helper()
	c, err := imapclient.DialInsecure(srv.Addr(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	if err := c.Login(testUser, testPass).Wait(); err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		cmd := c.Append(mailbox, int64(len(m.raw)), &imap.AppendOptions{Time: m.date})
		if _, err := cmd.Write(m.raw); err != nil {
			t.Fatal(err)
		}
		if err := cmd.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := cmd.Wait(); err != nil {
			t.Fatal(err)
		}
	}
}

// appendMsg is one message for appendMany: its bytes and internal date.
type appendMsg struct {
	raw  []byte
	date time.Time
}

func sentMail(i int) []byte {
	return []byte(strings.ReplaceAll(fmt.Sprintf("From: Ada <ada@example.com>\nTo: c%d@example.org\nSubject: s%d\nMessage-ID: <s%d@example.com>\nDate: Mon, 02 Nov 2026 10:00:00 +0000\n\nhello\n", i, i, i), "\n", "\r\n"))
}

// Defect 6: the action connection's lock was held across the whole Sent
// scan, so sends and approvals waited behind a year of mail. A draft
// saved while the scan is in the middle must not wait for it.
func TestSentScanDoesNotHoldTheActionConnection(t *testing.T) {
	t.Parallel()
	srv, a := startIMAP(t, memimap.Options{Mailboxes: []string{"Sent", "Drafts"}})
	for i := range 3 {
		if _, err := srv.Append(context.Background(), testUser, "Sent", sentMail(i), nil, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	m := &Mailer{Accounts: map[string]*AccountMailer{"personal": a}}
	defer m.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var draftErr error
	draftDone := false
	_, err := m.FetchSent(ctx, "personal", 0, time.Time{}, 1<<20, func(r imapsync.RawMessage) error {
		if draftDone {
			return nil
		}
		draftDone = true
		// The scan is under way (this callback runs between its FETCH
		// commands). An approval's draft and Sent copy go through now.
		dctx, dcancel := context.WithTimeout(ctx, 5*time.Second)
		defer dcancel()
		done := make(chan error, 1)
		go func() {
			_, err := m.AppendDraft(dctx, "personal", sentMail(99))
			if err == nil {
				err = m.AppendSent(dctx, "personal", sentMail(98))
			}
			done <- err
		}()
		select {
		case draftErr = <-done:
		case <-time.After(5 * time.Second):
			draftErr = errors.New("still waiting after 5s")
		}
		return nil
	})
	if err != nil {
		t.Fatalf("FetchSent: %v", err)
	}
	if !draftDone {
		t.Fatal("the scan delivered no message")
	}
	if draftErr != nil {
		t.Fatalf("saving a draft during the Sent scan: %v (the scan holds the action connection)", draftErr)
	}
	drafts, err := srv.Messages(context.Background(), testUser, "Drafts")
	if err != nil || len(drafts) != 1 {
		t.Errorf("Drafts: got %d messages, %v; want 1", len(drafts), err)
	}
}

// TestSentDeletedAfterFound: a Sent folder deleted after the mailer found
// it is a setup problem with its fix, as when it never existed (found on
// the real Courier-IMAP: an approval through a running watcher exited 1
// with the server's "NO Mailbox does not exist", where one without a
// watcher exits 2 naming `mailagent doctor --fix`), on both ways the
// mailer reads Sent: the action connection (SentHas) and the scan
// (ReadSent). Once the folder is back, both work again.
func TestSentDeletedAfterFound(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		read func(ctx context.Context, m *Mailer) error
	}{
		{"SentHas", func(ctx context.Context, m *Mailer) error {
			// Another folder selected on the action connection, so
			// that SentHas selects Sent again.
			uid, err := m.AppendDraft(ctx, "personal", sentMail(7))
			if err == nil {
				err = m.DeleteDraft(ctx, "personal", uid)
			}
			if err != nil {
				return fmt.Errorf("draft: %w", err)
			}
			_, err = m.SentHas(ctx, "personal", "<s1@example.com>")
			return err
		}},
		{"ReadSent", func(ctx context.Context, m *Mailer) error {
			return m.ReadSent(ctx, "personal", time.Time{}, func([]byte) error { return nil })
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv, a := startIMAP(t, memimap.Options{Mailboxes: []string{"Sent", "Drafts"}})
			m := &Mailer{Accounts: map[string]*AccountMailer{"personal": a}}
			defer m.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			if err := tt.read(ctx, m); err != nil {
				t.Fatalf("with Sent: %v", err)
			}

			c, err := imapclient.DialInsecure(srv.Addr(), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = c.Close() }()
			if err := c.Login(testUser, testPass).Wait(); err != nil {
				t.Fatal(err)
			}
			if err := c.Delete("Sent").Wait(); err != nil {
				t.Fatal(err)
			}
			err = tt.read(ctx, m)
			var fx interface{ SetupFix() string }
			if !errors.Is(err, imapsync.ErrSetupNeeded) || !errors.As(err, &fx) || !strings.Contains(fx.SetupFix(), "mailagent doctor --fix") {
				t.Fatalf("with Sent deleted: got %v, want imapsync.ErrSetupNeeded naming `mailagent doctor --fix`", err)
			}

			if err := c.Create("Sent", nil).Wait(); err != nil {
				t.Fatal(err)
			}
			if err := tt.read(ctx, m); err != nil {
				t.Fatalf("with Sent created again: %v", err)
			}
		})
	}
}
