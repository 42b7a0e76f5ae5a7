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
	t.Parallel()
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

// The watcher's Sent scan (FetchSentPicked) reads every header and only
// the bodies it picks: a folder of big messages, one in five picked, costs
// about a fifth of the folder, and fn gets exactly the picked ones, whole.
// The control picks all, over the same counting proxy.
func TestFetchSentPickedReadsOnlyPickedBodies(t *testing.T) {
	t.Parallel()
	srv, err := memimap.Start(memimap.Options{Users: []memimap.User{{Name: testUser, Password: testPass}}, Mailboxes: []string{"Sent", "Drafts"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const n, body = 30, 100 << 10
	for i := range n {
		from := "Mallory <mallory@evil.example>"
		if i%5 == 0 {
			from = "Ada <ada@example.com>"
		}
		var b strings.Builder
		fmt.Fprintf(&b, "From: %s\r\nTo: c%d@example.org\r\nSubject: s%d\r\nMessage-ID: <s%d@example.com>\r\nDate: Mon, 02 Nov 2026 10:00:00 +0000\r\n\r\n", from, i, i, i)
		for b.Len() < body {
			b.WriteString(strings.Repeat("z", 70) + "\r\n")
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
	scan := func(owner func(*mail.Message) bool) (headers int, got []string, bytes int64) {
		before := proxy.Down()
		_, err := m.FetchSentPicked(ctx, "personal", 0, time.Time{}, 256<<10, func(_, _ uint32, h []byte) bool {
			headers++
			return owner(mail.Parse(h))
		}, func(r imapsync.RawMessage) error {
			msg := mail.Parse(r.Raw)
			if len(r.Raw) < body || r.Truncated {
				t.Errorf("message %s: %d bytes (truncated %v), want it whole", msg.MessageID, len(r.Raw), r.Truncated)
			}
			got = append(got, msg.MessageID)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return headers, got, proxy.Down() - before
	}
	headers, got, picked := scan(func(m *mail.Message) bool { return m.From.Email == "ada@example.com" })
	var want []string
	for i := 0; i < n; i += 5 {
		want = append(want, fmt.Sprintf("s%d@example.com", i))
	}
	if headers != n || !slices.Equal(got, want) {
		t.Errorf("picked scan: %d headers, bodies %q; want %d headers, bodies %q", headers, got, n, want)
	}
	_, _, all := scan(func(*mail.Message) bool { return true })
	if limit := int64(len(want)*(body+4<<10) + n*2<<10 + 8<<10); picked > limit || all < int64(n*body) {
		t.Errorf("picked scan read %d bytes (want at most %d); picking all read %d (want at least %d)", picked, limit, all, n*body)
	}
	t.Logf("one in five picked: %d bytes; all picked: %d bytes", picked, all)
}
