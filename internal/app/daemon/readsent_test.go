package daemon

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mailagent/mailagent/imapsync"
	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/internal/memimap"
	"github.com/mailagent/mailagent/internal/rig/bench"
)

// ReadSent reads headers only: over a Sent folder of big messages the
// server sends the headers (not up to 64 KiB of each message, as before),
// and every message still arrives with what agent's ownerAnsweredInSent
// reads (From, To, In-Reply-To, Message-ID). The control reads the same
// folder through FetchSent with bodies, over the same counting proxy.
func TestReadSentReadsHeadersOnly(t *testing.T) {
	srv, err := memimap.Start(memimap.Options{Users: []memimap.User{{Name: testUser, Password: testPass}}, Mailboxes: []string{"Sent", "Drafts"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const n, body = 30, 100 << 10
	for i := range n {
		var b strings.Builder
		fmt.Fprintf(&b, "From: Ada <ada@example.com>\r\nTo: c%d@example.org\r\nSubject: s%d\r\nMessage-ID: <s%d@example.com>\r\nIn-Reply-To: <q%d@example.org>\r\nDate: Mon, 02 Nov 2026 10:00:00 +0000\r\n\r\n", i, i, i, i)
		for b.Len() < body {
			b.WriteString(strings.Repeat("y", 70) + "\r\n")
		}
		if _, err := srv.Append(ctx, testUser, "Sent", []byte(b.String()), nil, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	proxy := bench.StartCountingProxy(t, srv.Addr())
	a := &AccountMailer{Name: "personal", Sent: "Sent", Dial: func(ctx context.Context) (*imapsync.Client, error) {
		return imapsync.Dial(ctx, imapsync.Options{Host: "127.0.0.1", Port: proxy.Port, Security: imapsync.SecurityInsecure,
			Username: testUser, Password: testPass, Account: "personal"})
	}}
	m := &Mailer{Accounts: map[string]*AccountMailer{"personal": a}}
	defer m.Close()

	before := proxy.Down()
	var ids, replyTo []string
	err = m.ReadSent(ctx, "personal", time.Time{}, func(raw []byte) error {
		msg := mail.Parse(raw)
		ids = append(ids, msg.MessageID)
		if len(msg.InReplyTo) == 1 && len(msg.To) == 1 && msg.From.Email == "ada@example.com" {
			replyTo = append(replyTo, msg.InReplyTo[0])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	got := proxy.Down() - before
	var want, wantReply []string
	for i := range n {
		want = append(want, fmt.Sprintf("s%d@example.com", i))
		wantReply = append(wantReply, fmt.Sprintf("q%d@example.org", i))
	}
	if !slices.Equal(ids, want) || !slices.Equal(replyTo, wantReply) {
		t.Errorf("ReadSent gave Message-IDs %q and In-Reply-To %q, want %q and %q", ids, replyTo, want, wantReply)
	}
	if limit := int64(n*2<<10 + 8<<10); got > limit { // headers, plus the login and the folder look-up
		t.Errorf("ReadSent read %d bytes for %d Sent messages, want at most %d (headers only)", got, n, limit)
	}

	// Control: the bodies, through FetchSent, over the same proxy.
	before = proxy.Down()
	if _, err := m.FetchSent(ctx, "personal", 0, time.Time{}, sentCheckBytes, func(imapsync.RawMessage) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if whole := proxy.Down() - before; whole < int64(n*sentCheckBytes) {
		t.Errorf("control: FetchSent read %d bytes, want at least %d: the counter does not count", whole, n*sentCheckBytes)
	}
	t.Logf("ReadSent read %d bytes for %d Sent messages of %d KiB", got, n, body>>10)
}
