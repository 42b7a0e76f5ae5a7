package sentlearn

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/imapsync"
	"github.com/mailagent/mailagent/internal/memimap"
	"github.com/mailagent/mailagent/internal/rig/bench"
)

// sentMessage is a message the owner sent to to, with a body of bodyBytes
// (an attachment, say).
func sentMessage(from, to string, i, bodyBytes int) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "From: %s\r\nTo: %s\r\nSubject: report %d\r\nDate: Mon, 02 Nov 2026 10:00:00 +0000\r\nMessage-ID: <sent-%d@example.com>\r\n\r\n", from, to, i, i)
	line := strings.Repeat("x", 76) + "\r\n"
	for b.Len() < bodyBytes {
		b.WriteString(line)
	}
	return []byte(b.String())
}

// Learn reads headers only: over a Sent folder of big messages, the bytes
// the server sends are bounded by the headers (not the 256 KiB a message
// used to cost), and what is learnt is unchanged. The control fetches the
// same messages whole over the same counting proxy, so a counter that saw
// nothing cannot pass.
func TestLearnReadsHeadersOnly(t *testing.T) {
	t.Parallel()
	srv, err := memimap.Start(memimap.Options{Users: []memimap.User{{Name: "ada", Password: "pw"}}, Mailboxes: []string{"Sent"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const n, body = 40, 200 << 10
	for i := range n {
		from, to := "Ada <ada@example.com>", fmt.Sprintf("Person %d <person%d@example.org>", i, i)
		if i%4 == 3 {
			from = "Mallory <mallory@evil.example>" // not the owner's: teaches nothing
		}
		if _, err := srv.Append(ctx, "ada", "Sent", sentMessage(from, to, i, body), nil, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	proxy := bench.StartCountingProxy(t, srv.Addr())
	dial := func() *imapsync.Client {
		c, err := imapsync.Dial(ctx, imapsync.Options{Host: "127.0.0.1", Port: proxy.Port, Security: imapsync.SecurityInsecure, Username: "ada", Password: "pw"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c
	}

	c := dial()
	before := proxy.Down()
	st := &markOnly{}
	got, err := Learn(ctx, c, Account{Name: "a", SentMailbox: "Sent", Owner: agent.Owner{Addresses: []string{"ada@example.com"}}}, st, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	learnBytes := proxy.Down() - before
	var want []string
	for i := range n {
		if i%4 != 3 {
			want = append(want, fmt.Sprintf("person%d@example.org", i))
		}
	}
	if !slices.Equal(got, want) || !slices.Equal(st.got, want) {
		t.Errorf("learnt %q (stored %q), want %q", got, st.got, want)
	}
	// Each header is about 160 bytes; 2 KiB a message leaves room for the
	// protocol and still is a hundredth of one body.
	if limit := int64(n * 2 << 10); learnBytes > limit {
		t.Errorf("Learn read %d bytes from the server for %d messages, want at most %d (headers only)", learnBytes, n, limit)
	}

	// Control: the whole messages over the same proxy.
	c2 := dial()
	if _, err := c2.Select(ctx, "Sent", true); err != nil {
		t.Fatal(err)
	}
	uids, err := c2.Search(ctx, imapsync.Criteria{})
	if err != nil {
		t.Fatal(err)
	}
	before = proxy.Down()
	if err := c2.Fetch(ctx, uids, imapsync.FetchOptions{MaxMessageBytes: agent.SentFetchBytes}, func(imapsync.RawMessage) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if whole := proxy.Down() - before; whole < int64(n*body) {
		t.Errorf("control: whole messages read %d bytes, want at least %d: the counter does not count", whole, n*body)
	}
	t.Logf("Learn read %d bytes for %d Sent messages of %d KiB each", learnBytes, n, body>>10)
}
