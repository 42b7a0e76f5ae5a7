package imapsync

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"
	"github.com/emersion/go-message"
	"github.com/emersion/go-message/textproto"

	"github.com/mailagent/mailagent/internal/netpolicy"
)

func TestDialSecurity(t *testing.T) {
	t.Parallel()
	plain := startServer(t, serverConfig{})
	implicit := startServer(t, serverConfig{tls: "implicit"})
	starttls := startServer(t, serverConfig{tls: "starttls"})
	other := startServer(t, serverConfig{tls: "implicit"}) // a different CA

	tests := []struct {
		name    string
		opts    func() Options
		wantErr func(error) bool
	}{
		{name: "plaintext on loopback", opts: plain.options},
		{name: "plaintext via localhost", opts: func() Options {
			o := plain.options()
			o.Host = "localhost"
			return o
		}},
		{name: "implicit TLS with CA file", opts: implicit.options},
		{name: "STARTTLS with CA file", opts: starttls.options},
		{name: "implicit TLS with the wrong CA", opts: func() Options {
			o := implicit.options()
			o.TLSCAFile = other.caPEM
			return o
		}, wantErr: isCertError},
		{name: "STARTTLS with the wrong CA", opts: func() Options {
			o := starttls.options()
			o.TLSCAFile = other.caPEM
			return o
		}, wantErr: isCertError},
		{name: "TLS without any CA (system roots only)", opts: func() Options {
			o := implicit.options()
			o.TLSCAFile = ""
			return o
		}, wantErr: isCertError},
		{name: "TLS with verification disabled", opts: func() Options {
			o := implicit.options()
			o.TLSConfig = &tls.Config{InsecureSkipVerify: true}
			return o
		}, wantErr: func(err error) bool { return errors.Is(err, ErrInsecureTLS) }},
		{name: "plaintext to a non-loopback address", opts: func() Options {
			o := plain.options()
			o.Host = "192.0.2.1"
			return o
		}, wantErr: func(err error) bool { return errors.Is(err, ErrPlaintextNotLoopback) }},
		{name: "TLS to a plaintext server", opts: func() Options {
			o := plain.options()
			o.Security, o.TLSCAFile, o.DialTimeout = SecurityTLS, implicit.caPEM, 5*time.Second
			return o
		}, wantErr: func(err error) bool { return err != nil }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Dial(context.Background(), tt.opts())
			if tt.wantErr == nil {
				if err != nil {
					t.Fatalf("Dial: got error %v, want success", err)
				}
				defer func() { _ = c.Close() }()
				if _, err := c.Select(context.Background(), "INBOX", true); err != nil {
					t.Fatalf("Select after Dial: %v", err)
				}
				return
			}
			if err == nil {
				_ = c.Close()
				t.Fatalf("Dial: got success, want an error")
			}
			if !tt.wantErr(err) {
				t.Fatalf("Dial: got error %v, not the expected kind", err)
			}
		})
	}
}

func isCertError(err error) bool {
	var cv *tls.CertificateVerificationError
	return errors.As(err, &cv)
}

// TestInsecureNeverDials listens on a non-loopback address of this machine
// and checks that a plaintext Dial to it is refused without connecting.
func TestInsecureNeverDials(t *testing.T) {
	t.Parallel()
	ip := nonLoopbackIP(t)
	ln, err := net.Listen("tcp", net.JoinHostPort(ip.String(), "0"))
	if err != nil {
		t.Skipf("cannot listen on %s: %v", ip, err)
	}
	defer func() { _ = ln.Close() }()
	accepted := make(chan struct{}, 1)
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			_ = conn.Close()
			accepted <- struct{}{}
		}
	}()

	_, err = Dial(context.Background(), Options{
		Host: ip.String(), Port: ln.Addr().(*net.TCPAddr).Port, Security: SecurityInsecure,
		Username: testUser, Password: testPassword,
	})
	if !errors.Is(err, ErrPlaintextNotLoopback) {
		t.Fatalf("Dial: got %v, want ErrPlaintextNotLoopback", err)
	}
	// Prove the listener works, and that the only connection it ever saw
	// is this one.
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatalf("probe dial: %v", err)
	}
	_ = conn.Close()
	<-accepted
	select {
	case <-accepted:
		t.Fatalf("got 2 connections, want only the probe")
	default:
	}
}

func nonLoopbackIP(t *testing.T) net.IP {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Skipf("no interface addresses: %v", err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
			return n.IP
		}
	}
	t.Skip("this machine has no non-loopback IPv4 address")
	return nil
}

func TestAuthentication(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		cfg       serverConfig
		opts      func(Options) Options
		wantErr   error
		wantTrace string // a command the client must have sent
		noTrace   string // a command it must not have sent
		secret    string // must not appear in the error
	}{
		{name: "LOGIN", cfg: serverConfig{}, wantTrace: " LOGIN "},
		{
			name: "wrong password", cfg: serverConfig{},
			opts:    func(o Options) Options { o.Password = "not-" + testPassword; return o },
			wantErr: ErrAuth, secret: "not-" + testPassword,
		},
		{
			name: "unknown user", cfg: serverConfig{},
			opts:    func(o Options) Options { o.Username = "mallory"; return o },
			wantErr: ErrAuth, secret: testPassword,
		},
		{
			// A plaintext server that refuses authentication advertises
			// LOGINDISABLED: the client must not send LOGIN.
			name: "LOGINDISABLED uses AUTHENTICATE PLAIN", cfg: serverConfig{noInsecure: true},
			wantErr: ErrAuth, wantTrace: "AUTHENTICATE PLAIN", noTrace: " LOGIN ", secret: testPassword,
		},
		{
			name: "OAUTHBEARER", cfg: serverConfig{tls: "implicit", mechs: []string{"PLAIN", "OAUTHBEARER", "XOAUTH2"}},
			opts:      func(o Options) Options { o.OAuth2Token = testToken; return o },
			wantTrace: "AUTHENTICATE OAUTHBEARER",
		},
		{
			name: "XOAUTH2", cfg: serverConfig{tls: "implicit", mechs: []string{"PLAIN", "XOAUTH2"}},
			opts:      func(o Options) Options { o.OAuth2Token = testToken; return o },
			wantTrace: "AUTHENTICATE XOAUTH2",
		},
		{
			name: "XOAUTH2 bad token", cfg: serverConfig{tls: "implicit", mechs: []string{"XOAUTH2"}},
			opts:    func(o Options) Options { o.OAuth2Token = "bad-" + testToken; return o },
			wantErr: ErrAuth, secret: "bad-" + testToken,
		},
		{
			name: "OAUTHBEARER bad token", cfg: serverConfig{tls: "implicit", mechs: []string{"OAUTHBEARER"}},
			opts:    func(o Options) Options { o.OAuth2Token = "bad-" + testToken; return o },
			wantErr: ErrAuth, secret: "bad-" + testToken,
		},
		{
			// The same choice as SMTP (netpolicy.OAuth2Mechanism): no
			// mechanism for a token is a permanent error, nothing is sent.
			name: "token but no OAuth mechanism", cfg: serverConfig{tls: "implicit", mechs: []string{"PLAIN"}},
			opts:    func(o Options) Options { o.OAuth2Token = testToken; return o },
			wantErr: netpolicy.ErrNoOAuthMechanism, noTrace: "AUTHENTICATE", secret: testToken,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := startServer(t, tt.cfg)
			opts := ts.options()
			if tt.opts != nil {
				opts = tt.opts(opts)
			}
			var trace traceBuffer
			opts.Debug = &trace
			c, err := Dial(context.Background(), opts)
			if c != nil {
				defer func() { _ = c.Close() }()
			}
			if tt.wantErr == nil && err != nil {
				t.Fatalf("Dial: got %v, want success", err)
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Fatalf("Dial: got %v, want %v", err, tt.wantErr)
			}
			if tt.secret != "" && strings.Contains(err.Error(), tt.secret) {
				t.Errorf("error %q contains the secret", err)
			}
			if tt.wantTrace != "" && !strings.Contains(trace.String(), tt.wantTrace) {
				t.Errorf("trace lacks %q:\n%s", tt.wantTrace, trace.String())
			}
			if tt.noTrace != "" && strings.Contains(trace.String(), tt.noTrace) {
				t.Errorf("trace contains %q:\n%s", tt.noTrace, trace.String())
			}
		})
	}
}

func TestCaps(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverConfig{caps: imap.CapSet{imap.CapIMAP4rev2: {}, imap.CapIMAP4rev1: {}}})
	c := ts.dial(t)
	for _, name := range []string{"IDLE", "MOVE", "UIDPLUS", "idle", "IMAP4rev2"} {
		if !c.Has(name) {
			t.Errorf("Has(%q) = false, want true (implied by IMAP4rev2); caps %v", name, c.Caps())
		}
	}
	if c.Has("THREAD=REFERENCES") {
		t.Errorf("Has(THREAD=REFERENCES) = true, want false")
	}
	if _, err := c.Thread(context.Background()); !errors.Is(err, ErrUnsupported) {
		t.Errorf("Thread: got %v, want ErrUnsupported", err)
	}
}

func TestSearch(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverConfig{})
	day := func(d int) time.Time { return time.Date(2024, 3, d, 12, 0, 0, 0, time.UTC) }
	u1 := ts.add(t, "INBOX", textMessage("one", "<one@x>", "1"), day(1), imap.FlagSeen)
	u2 := ts.add(t, "INBOX", textMessage("two", "<two@x>", "2"), day(5))
	u3 := ts.add(t, "INBOX", textMessage("three", "<three@x>", "3"), day(10), imap.FlagSeen)
	u4 := ts.add(t, "INBOX", textMessage("four", "<four@x>", "4"), day(15))
	c := ts.dial(t)
	if _, err := c.Select(context.Background(), "INBOX", true); err != nil {
		t.Fatalf("Select: %v", err)
	}

	tests := []struct {
		name string
		crit Criteria
		want []uint32
	}{
		{name: "all", crit: Criteria{}, want: []uint32{u1, u2, u3, u4}},
		{name: "since", crit: Criteria{Since: day(5)}, want: []uint32{u2, u3, u4}},
		{name: "unseen", crit: Criteria{Unseen: true}, want: []uint32{u2, u4}},
		{name: "uid min", crit: Criteria{UIDMin: u3}, want: []uint32{u3, u4}},
		{name: "uid min above every uid", crit: Criteria{UIDMin: u4 + 1}, want: nil},
		{name: "since and unseen", crit: Criteria{Since: day(10), Unseen: true}, want: []uint32{u4}},
		{name: "message-id", crit: Criteria{HeaderMessageID: "<three@x>"}, want: []uint32{u3}},
		{name: "message-id absent", crit: Criteria{HeaderMessageID: "<nope@x>"}, want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := c.Search(context.Background(), tt.crit)
			if err != nil {
				t.Fatalf("Search: %v", err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("Search(%+v): got %v, want %v", tt.crit, got, tt.want)
			}
		})
	}
}

func TestSearchNeedsSelect(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverConfig{})
	c := ts.dial(t)
	if _, err := c.Search(context.Background(), Criteria{}); !errors.Is(err, ErrNotSelected) {
		t.Fatalf("Search before Select: got %v, want ErrNotSelected", err)
	}
	err := c.Fetch(context.Background(), []uint32{1}, FetchOptions{}, func(RawMessage) error { return nil })
	if !errors.Is(err, ErrNotSelected) {
		t.Fatalf("Fetch before Select: got %v, want ErrNotSelected", err)
	}
}

func TestFetchStreamsInBatchesWithoutSettingSeen(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverConfig{})
	var raws [][]byte
	var uids []uint32
	for i := range 5 {
		raw := textMessage(fmt.Sprintf("msg %d", i), fmt.Sprintf("<m%d@x>", i), strings.Repeat(fmt.Sprintf("line %d\r\n", i), i+1))
		raws = append(raws, raw)
		uids = append(uids, ts.add(t, "INBOX", raw, time.Date(2024, 1, i+1, 0, 0, 0, 0, time.UTC), imap.Flag("$Work")))
	}
	opts := ts.options()
	var trace traceBuffer
	opts.Debug = &trace
	c, err := Dial(context.Background(), opts)
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	defer func() { _ = c.Close() }()
	st, err := c.Select(context.Background(), "INBOX", false)
	if err != nil {
		t.Fatalf("Select: %v", err)
	}

	var got []RawMessage
	// Ask in reverse order with a duplicate: results come once, ascending.
	ask := append(slices.Clone(uids), uids[0])
	slices.Reverse(ask)
	err = c.Fetch(context.Background(), ask, FetchOptions{BatchSize: 2}, func(m RawMessage) error {
		got = append(got, m)
		return nil
	})
	if err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	if len(got) != len(raws) {
		t.Fatalf("got %d messages, want %d", len(got), len(raws))
	}
	for i, m := range got {
		if m.UID != uids[i] {
			t.Errorf("message %d: got UID %d, want %d", i, m.UID, uids[i])
		}
		if !bytes.Equal(m.Raw, raws[i]) {
			t.Errorf("message %d: got raw %q, want %q", i, m.Raw, raws[i])
		}
		if m.Truncated || m.Size != int64(len(raws[i])) {
			t.Errorf("message %d: got truncated=%v size=%d, want false %d", i, m.Truncated, m.Size, len(raws[i]))
		}
		if m.Account != "work" || m.Mailbox != "INBOX" || m.UIDValidity != st.UIDValidity {
			t.Errorf("message %d: got account=%q mailbox=%q validity=%d, want work INBOX %d", i, m.Account, m.Mailbox, m.UIDValidity, st.UIDValidity)
		}
		if !containsFold(m.Flags, "$Work") || containsFold(m.Flags, `\Seen`) {
			t.Errorf("message %d: got flags %v, want $Work and no \\Seen", i, m.Flags)
		}
		if want := time.Date(2024, 1, i+1, 0, 0, 0, 0, time.UTC); !m.InternalDate.Equal(want) {
			t.Errorf("message %d: got internal date %v, want %v", i, m.InternalDate, want)
		}
	}
	// 5 messages in batches of 2: three body fetches, all with PEEK.
	if n := strings.Count(trace.String(), "BODY.PEEK[]"); n != 3 {
		t.Errorf("got %d body FETCH commands, want 3; trace:\n%s", n, trace.String())
	}
	for _, line := range strings.Split(trace.String(), "\r\n") {
		if strings.Contains(line, "UID FETCH") && strings.Contains(line, "BODY[") {
			t.Errorf("a non-PEEK body fetch was sent: %q", line)
		}
	}
	unseen, err := c.Search(context.Background(), Criteria{Unseen: true})
	if err != nil {
		t.Fatalf("Search: %v", err)
	}
	if !slices.Equal(unseen, uids) {
		t.Errorf("after Fetch, unseen: got %v, want %v (\\Seen must not be set)", unseen, uids)
	}
}

func TestFetchStopsOnCallbackErrorAndSkipsMissing(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverConfig{})
	var uids []uint32
	for i := range 3 {
		uids = append(uids, ts.add(t, "INBOX", textMessage("m", fmt.Sprintf("<s%d@x>", i), "x"), time.Time{}))
	}
	c := ts.dial(t)
	if _, err := c.Select(context.Background(), "INBOX", false); err != nil {
		t.Fatalf("Select: %v", err)
	}

	// Missing UIDs (never existed, or deleted) are skipped.
	if err := c.Delete(context.Background(), uids[1:2]); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	var seen []uint32
	err := c.Fetch(context.Background(), []uint32{uids[0], uids[1], uids[2], 999}, FetchOptions{}, func(m RawMessage) error {
		seen = append(seen, m.UID)
		return nil
	})
	if err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	if want := []uint32{uids[0], uids[2]}; !slices.Equal(seen, want) {
		t.Errorf("got UIDs %v, want %v", seen, want)
	}

	stop := errors.New("stop here")
	calls := 0
	err = c.Fetch(context.Background(), uids, FetchOptions{BatchSize: 1}, func(RawMessage) error {
		calls++
		return stop
	})
	if !errors.Is(err, stop) {
		t.Fatalf("Fetch: got %v, want the callback's error", err)
	}
	if calls != 1 {
		t.Errorf("callback called %d times, want 1", calls)
	}
	// The connection is still usable: fn ran with no command in flight.
	if err := c.Noop(context.Background()); err != nil {
		t.Errorf("Noop after stopped Fetch: %v", err)
	}
}

// bigMultipart is a multipart/mixed message whose first text part is
// text/plain inside multipart/alternative, followed by a large attachment.
func bigMultipart(text string, attachment int) []byte {
	var b strings.Builder
	b.WriteString("From: Bob <bob@example.com>\r\nTo: alice@example.org\r\nSubject: Big one\r\n" +
		"Message-ID: <big@x>\r\nMIME-Version: 1.0\r\n" +
		"Content-Type: multipart/mixed; boundary=\"outer\"\r\n\r\n" +
		"--outer\r\nContent-Type: multipart/alternative; boundary=\"inner\"\r\n\r\n" +
		"--inner\r\nContent-Type: text/html; charset=utf-8\r\n\r\n<p>html version</p>\r\n" +
		"--inner\r\nContent-Type: text/plain; charset=iso-8859-1\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n" +
		text + "\r\n--inner--\r\n" +
		"--outer\r\nContent-Type: application/octet-stream\r\nContent-Disposition: attachment; filename=\"blob.bin\"\r\n" +
		"Content-Transfer-Encoding: base64\r\n\r\n")
	line := strings.Repeat("QUJD", 19) + "\r\n"
	for b.Len() < attachment {
		b.WriteString(line)
	}
	b.WriteString("--outer--\r\n")
	return []byte(b.String())
}

func TestFetchOversizedIsPartial(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverConfig{})
	const limit = 4096
	text := "Caf=E9 tomorrow?\r\nSee the attachment."
	multi := bigMultipart(text, 50_000)
	longLine := "the quick brown fox jumps over the lazy dog\r\n"
	single := textMessage("Long text", "<long@x>", strings.Repeat(longLine, 500))
	onlyAttachment := []byte("From: bob@example.com\r\nSubject: Just a file\r\nMIME-Version: 1.0\r\n" +
		"Content-Type: application/pdf\r\nContent-Transfer-Encoding: base64\r\n\r\n" +
		strings.Repeat("JVBERi0xLjQK\r\n", 1000))
	small := textMessage("small", "<small@x>", "tiny")

	uMulti := ts.add(t, "INBOX", multi, time.Time{})
	uSmall := ts.add(t, "INBOX", small, time.Time{})
	uSingle := ts.add(t, "INBOX", single, time.Time{})
	uAtt := ts.add(t, "INBOX", onlyAttachment, time.Time{})

	c := ts.dial(t)
	if _, err := c.Select(context.Background(), "INBOX", false); err != nil {
		t.Fatalf("Select: %v", err)
	}
	got := map[uint32]RawMessage{}
	var order []uint32
	err := c.Fetch(context.Background(), []uint32{uMulti, uSmall, uSingle, uAtt}, FetchOptions{MaxMessageBytes: limit}, func(m RawMessage) error {
		got[m.UID] = m
		order = append(order, m.UID)
		return nil
	})
	if err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	if want := []uint32{uMulti, uSmall, uSingle, uAtt}; !slices.Equal(order, want) {
		t.Fatalf("got order %v, want %v", order, want)
	}

	tests := []struct {
		name          string
		uid           uint32
		wantTruncated bool
		wantSize      int
		wantCT        string
		wantCTE       string
		wantBody      func(string) bool
	}{
		{
			name: "multipart: first text/plain part", uid: uMulti, wantTruncated: true, wantSize: len(multi),
			wantCT: "text/plain; charset=iso-8859-1", wantCTE: "quoted-printable",
			wantBody: func(b string) bool { return strings.TrimRight(b, "\r\n") == text },
		},
		{
			name: "small message is whole", uid: uSmall, wantSize: len(small),
			wantCT: "text/plain; charset=utf-8", wantBody: func(b string) bool { return b == "tiny\r\n" },
		},
		{
			name: "single part cut at a line end", uid: uSingle, wantTruncated: true, wantSize: len(single),
			wantCT: "text/plain; charset=utf-8",
			wantBody: func(b string) bool {
				return len(b) > 0 && len(b) <= limit && strings.HasSuffix(b, "\r\n") &&
					strings.Count(b, longLine)*len(longLine) == len(b)
			},
		},
		{
			name: "no text part keeps the header only", uid: uAtt, wantTruncated: true, wantSize: len(onlyAttachment),
			wantCT: "text/plain; charset=us-ascii", wantBody: func(b string) bool { return b == "" },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, ok := got[tt.uid]
			if !ok {
				t.Fatalf("uid %d not fetched", tt.uid)
			}
			if m.Truncated != tt.wantTruncated || m.Size != int64(tt.wantSize) {
				t.Errorf("got truncated=%v size=%d, want %v %d", m.Truncated, m.Size, tt.wantTruncated, tt.wantSize)
			}
			hdr, body := splitMessage(t, m.Raw)
			if ct := hdr.Get("Content-Type"); ct != tt.wantCT {
				t.Errorf("got Content-Type %q, want %q", ct, tt.wantCT)
			}
			if cte := hdr.Get("Content-Transfer-Encoding"); cte != tt.wantCTE {
				t.Errorf("got Content-Transfer-Encoding %q, want %q", cte, tt.wantCTE)
			}
			if hdr.Get("Subject") == "" || hdr.Get("From") == "" {
				t.Errorf("top-level header lost: %v", hdr)
			}
			if !tt.wantBody(body) {
				t.Errorf("unexpected body (%d bytes): %.200q", len(body), body)
			}
			// The result parses as a message with go-message.
			if _, err := message.Read(bytes.NewReader(m.Raw)); err != nil && !message.IsUnknownCharset(err) {
				t.Errorf("message.Read: %v", err)
			}
		})
	}
}

func splitMessage(t *testing.T, raw []byte) (textproto.Header, string) {
	t.Helper()
	br := bufio.NewReader(bytes.NewReader(raw))
	h, err := textproto.ReadHeader(br)
	if err != nil {
		t.Fatalf("read header: %v", err)
	}
	body, _ := io.ReadAll(br)
	return h, string(body)
}

func TestAssembleTruncated(t *testing.T) {
	t.Parallel()
	top := []byte("Subject: hi\r\nContent-Type: multipart/mixed; boundary=x\r\nContent-Transfer-Encoding: 7bit\r\n\r\n")
	tests := []struct {
		name     string
		part     []byte
		body     []byte
		cut      bool
		wantCT   string
		wantCTE  string
		wantBody string
	}{
		{name: "part header replaces", part: []byte("Content-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: base64\r\n\r\n"),
			body: []byte("aGVsbG8=\r\n"), wantCT: "text/plain; charset=utf-8", wantCTE: "base64", wantBody: "aGVsbG8=\r\n"},
		{name: "part without content-type defaults to text/plain", part: []byte("\r\n"),
			body: []byte("x"), wantCT: "text/plain; charset=us-ascii", wantBody: "x"},
		{name: "cut body trimmed to last line", part: []byte("Content-Type: text/plain\r\nContent-Transfer-Encoding: base64\r\n\r\n"),
			body: []byte("aGVsbG8g\r\nd29yb"), cut: true, wantCT: "text/plain", wantCTE: "base64", wantBody: "aGVsbG8g\r\n"},
		{name: "no text part", wantCT: "text/plain; charset=us-ascii", wantBody: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw, err := assembleTruncated(top, tt.part, tt.body, tt.cut)
			if err != nil {
				t.Fatalf("assembleTruncated: %v", err)
			}
			h, body := splitMessage(t, raw)
			if got := h.Get("Content-Type"); got != tt.wantCT {
				t.Errorf("got Content-Type %q, want %q", got, tt.wantCT)
			}
			if got := h.Get("Content-Transfer-Encoding"); got != tt.wantCTE {
				t.Errorf("got Content-Transfer-Encoding %q, want %q", got, tt.wantCTE)
			}
			if h.Get("Subject") != "hi" {
				t.Errorf("got Subject %q, want hi", h.Get("Subject"))
			}
			if body != tt.wantBody {
				t.Errorf("got body %q, want %q", body, tt.wantBody)
			}
		})
	}
}

func TestCancelMidOperation(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverConfig{})
	uid := ts.add(t, "INBOX", textMessage("m", "<c@x>", "x"), time.Time{})
	c := ts.dial(t)
	if _, err := c.Select(context.Background(), "INBOX", false); err != nil {
		t.Fatalf("Select: %v", err)
	}
	entered := ts.gateFetch()
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-entered // the server is now holding our FETCH
		cancel()
	}()
	err := c.Fetch(ctx, []uint32{uid}, FetchOptions{}, func(RawMessage) error {
		t.Error("callback called, want none")
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Fetch: got %v, want context.Canceled", err)
	}
	<-c.Done() // the connection was closed
	if err := c.Noop(context.Background()); err == nil {
		t.Errorf("Noop on a cancelled client: got success, want an error")
	}
}

func TestCancelledBeforeDial(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverConfig{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Dial(ctx, ts.options()); !errors.Is(err, context.Canceled) {
		t.Fatalf("Dial: got %v, want context.Canceled", err)
	}
}

func TestAppendStoreMoveDelete(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		caps imap.CapSet
	}{
		{name: "MOVE and UIDPLUS", caps: defaultCaps()},
		{name: "UIDPLUS, no MOVE", caps: imap.CapSet{imap.CapIMAP4rev1: {}, imap.CapUIDPlus: {}}},
		{name: "neither", caps: imap.CapSet{imap.CapIMAP4rev1: {}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			ts := startServer(t, serverConfig{caps: tt.caps})
			ts.createMailbox(t, "Archive")
			c := ts.dial(t)
			uidPlus := tt.caps.Has(imap.CapUIDPlus)

			date := time.Date(2024, 2, 3, 4, 5, 6, 0, time.UTC)
			var uids []uint32
			for i := range 3 {
				uid, err := c.Append(ctx, "INBOX", []string{`\Flagged`}, date, textMessage("a", fmt.Sprintf("<a%d@x>", i), "body"))
				if err != nil {
					t.Fatalf("Append: %v", err)
				}
				if uidPlus && uid != uint32(i+1) {
					t.Fatalf("Append: got uid %d, want %d", uid, i+1)
				}
				uids = append(uids, uint32(i+1))
			}
			if _, err := c.Select(ctx, "INBOX", false); err != nil {
				t.Fatalf("Select: %v", err)
			}
			m := fetchOne(t, c, uids[0])
			if !slices.Contains(m.Flags, `\Flagged`) || !m.InternalDate.Equal(date) {
				t.Errorf("appended: got flags %v date %v, want \\Flagged %v", m.Flags, m.InternalDate, date)
			}

			if err := c.StoreFlags(ctx, uids[:1], true, []string{`\Seen`, "$Done"}); err != nil {
				t.Fatalf("StoreFlags add: %v", err)
			}
			if err := c.StoreFlags(ctx, uids[:1], false, []string{`\Flagged`}); err != nil {
				t.Fatalf("StoreFlags remove: %v", err)
			}
			m = fetchOne(t, c, uids[0])
			if len(m.Flags) != 2 || !containsFold(m.Flags, "$Done") || !containsFold(m.Flags, `\Seen`) {
				t.Errorf("after StoreFlags: got flags %v, want $Done and \\Seen", m.Flags)
			}

			if err := c.Move(ctx, uids[1:2], "Archive"); err != nil {
				t.Fatalf("Move: %v", err)
			}
			if err := c.Delete(ctx, uids[2:3]); err != nil {
				t.Fatalf("Delete: %v", err)
			}
			remaining, err := c.Search(ctx, Criteria{})
			if err != nil {
				t.Fatalf("Search: %v", err)
			}
			deleted, err := c.ic.UIDSearch(&imap.SearchCriteria{Flag: []imap.Flag{imap.FlagDeleted}}, nil).Wait()
			if err != nil {
				t.Fatalf("search deleted: %v", err)
			}
			var wantRemaining, wantDeleted []uint32
			if uidPlus {
				wantRemaining = uids[:1]
			} else {
				// Without UIDPLUS nothing is expunged, only marked.
				wantRemaining, wantDeleted = uids, uids[1:]
			}
			if !slices.Equal(remaining, wantRemaining) {
				t.Errorf("INBOX after Move+Delete: got %v, want %v", remaining, wantRemaining)
			}
			var gotDeleted []uint32
			for _, u := range deleted.AllUIDs() {
				gotDeleted = append(gotDeleted, uint32(u))
			}
			if !slices.Equal(gotDeleted, wantDeleted) {
				t.Errorf("marked \\Deleted: got %v, want %v", gotDeleted, wantDeleted)
			}

			if _, err := c.Select(ctx, "Archive", true); err != nil {
				t.Fatalf("Select Archive: %v", err)
			}
			archived, err := c.Search(ctx, Criteria{HeaderMessageID: "<a1@x>"})
			if err != nil {
				t.Fatalf("Search Archive: %v", err)
			}
			if len(archived) != 1 {
				t.Errorf("Archive holds %v for the moved message, want one UID", archived)
			}
		})
	}
}

func fetchOne(t *testing.T, c *Client, uid uint32) RawMessage {
	t.Helper()
	var got []RawMessage
	if err := c.Fetch(context.Background(), []uint32{uid}, FetchOptions{}, func(m RawMessage) error {
		got = append(got, m)
		return nil
	}); err != nil {
		t.Fatalf("Fetch %d: %v", uid, err)
	}
	if len(got) != 1 {
		t.Fatalf("Fetch %d: got %d messages, want 1", uid, len(got))
	}
	return got[0]
}

func TestFindSpecialUse(t *testing.T) {
	t.Parallel()
	listing := []imap.ListData{
		{Mailbox: "INBOX"},
		{Mailbox: "Sent Items", Attrs: []imap.MailboxAttr{imap.MailboxAttrSent}},
		{Mailbox: "Drafts", Attrs: []imap.MailboxAttr{imap.MailboxAttrDrafts}},
		{Mailbox: "Sent"},
	}
	specialCaps := defaultCaps()
	specialCaps[imap.CapSpecialUse] = struct{}{}
	tests := []struct {
		name      string
		cfg       serverConfig
		attr      string
		fallbacks []string
		want      string
		wantErr   error
	}{
		{name: "by attribute", cfg: serverConfig{caps: specialCaps, listing: listing}, attr: `\Sent`, fallbacks: []string{"Sent"}, want: "Sent Items"},
		{name: "attribute case-insensitive", cfg: serverConfig{caps: specialCaps, listing: listing}, attr: `\drafts`, want: "Drafts"},
		{name: "no SPECIAL-USE: fallback name", cfg: serverConfig{listing: listing}, attr: `\Sent`, fallbacks: []string{"Sent Messages", "sent"}, want: "Sent"},
		{name: "fallback order wins", cfg: serverConfig{listing: listing}, attr: `\Sent`, fallbacks: []string{"sent items", "sent"}, want: "Sent Items"},
		{name: "nothing matches", cfg: serverConfig{caps: specialCaps, listing: listing}, attr: `\Junk`, fallbacks: []string{"Spam"}, wantErr: ErrNoMailbox},
		{name: "real mailboxes, fallback", cfg: serverConfig{}, attr: `\Drafts`, fallbacks: []string{"DRAFTS"}, want: "Drafts"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := startServer(t, tt.cfg)
			ts.createMailbox(t, "Drafts")
			c := ts.dial(t)
			got, err := c.FindSpecialUse(context.Background(), tt.attr, tt.fallbacks...)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("FindSpecialUse: got error %v, want %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("FindSpecialUse(%q, %v): got %q, want %q", tt.attr, tt.fallbacks, got, tt.want)
			}
		})
	}
}

func TestCreateMailbox(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverConfig{})
	c := ts.dial(t)
	ctx := context.Background()
	for i := range 2 { // the second call finds it existing
		if err := c.CreateMailbox(ctx, "Queue"); err != nil {
			t.Fatalf("CreateMailbox #%d: %v", i+1, err)
		}
	}
	if _, err := c.Select(ctx, "Queue", true); err != nil {
		t.Fatalf("Select created mailbox: %v", err)
	}
	if _, err := c.Select(ctx, "Nope", true); err == nil {
		t.Fatalf("Select missing mailbox: got success, want an error")
	}
}

func TestFlattenThread(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   imapThread
		want []uint32
	}{
		{name: "chain", in: imapThread{Chain: []uint32{1, 2, 3}}, want: []uint32{1, 2, 3}},
		{name: "branches", in: imapThread{Chain: []uint32{1}, SubThreads: []imapThread{
			{Chain: []uint32{2, 4}}, {Chain: []uint32{3}, SubThreads: []imapThread{{Chain: []uint32{5}}, {Chain: []uint32{6}}}},
		}}, want: []uint32{1, 2, 4, 3, 5, 6}},
		{name: "dummy root", in: imapThread{SubThreads: []imapThread{{Chain: []uint32{7}}, {Chain: []uint32{9}}}}, want: []uint32{7, 9}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := flattenThread(nil, tt.in); !slices.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

type imapThread = imapclient.ThreadData

// containsFold reports whether flags holds want; IMAP flags are
// case-insensitive and servers may change their case.
func containsFold(flags []string, want string) bool {
	return slices.ContainsFunc(flags, func(f string) bool { return strings.EqualFold(f, want) })
}

func TestLogout(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverConfig{})
	c := ts.dial(t)
	if got := c.Caps(); !got["IMAP4REV1"] {
		t.Errorf("Caps: got %v, want IMAP4REV1 among them", got)
	}
	if err := c.Logout(context.Background()); err != nil {
		t.Fatalf("Logout: %v", err)
	}
	<-c.Done()
	if err := c.Close(); err != nil {
		t.Errorf("Close after Logout: got %v, want nil", err)
	}
}

func TestAssembleOrRawKeepsBrokenMessages(t *testing.T) {
	t.Parallel()
	// A header line without a colon makes the header unparseable; the bytes
	// must still come through, so that the message is recorded rather than
	// blocking the mailbox.
	hdr := []byte("From: a@example.org\r\nthis line has no colon\r\nSubject: big\r\n\r\n")
	body := []byte("the first text part")
	got := assembleOrRaw(hdr, nil, body, true)
	if !bytes.Contains(got, []byte("Subject: big")) || !bytes.Contains(got, body) {
		t.Errorf("got %q, want the header and the body", got)
	}
	if _, err := assembleTruncated(hdr, nil, body, true); err == nil {
		t.Fatal("the test header should not parse; the fallback is not exercised")
	}
}

// TestFetchPrefetch: with Prefetch, Fetch hands over the same messages in
// the same ascending order as without, missing ones skipped; a callback
// error stops it after at most one more FETCH, is returned, and leaves
// the connection usable; a cancelled context ends it with the context's
// error.
func TestFetchPrefetch(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverConfig{})
	var uids []uint32
	for i := range 9 {
		uids = append(uids, ts.add(t, "INBOX", textMessage("m", fmt.Sprintf("<p%d@x>", i), strings.Repeat("y", i)), time.Time{}))
	}
	opts := ts.options()
	var trace traceBuffer
	opts.Debug = &trace
	c, err := Dial(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	if _, err := c.Select(context.Background(), "INBOX", false); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(context.Background(), uids[4:5]); err != nil {
		t.Fatal(err)
	}
	ask := append([]uint32{999}, uids...)
	slices.Reverse(ask)
	collect := func(prefetch bool) []RawMessage {
		var got []RawMessage
		err := c.Fetch(context.Background(), ask, FetchOptions{BatchSize: 2, Prefetch: prefetch}, func(m RawMessage) error {
			got = append(got, m)
			return nil
		})
		if err != nil {
			t.Fatalf("Fetch(prefetch=%v): %v", prefetch, err)
		}
		return got
	}
	plain, ahead := collect(false), collect(true)
	if len(ahead) != 8 || len(ahead) != len(plain) {
		t.Fatalf("prefetch gave %d messages, without %d; want 8", len(ahead), len(plain))
	}
	for i := range ahead {
		if ahead[i].UID != plain[i].UID || !bytes.Equal(ahead[i].Raw, plain[i].Raw) || ahead[i].Mailbox != "INBOX" || ahead[i].UIDValidity == 0 {
			t.Errorf("message %d: prefetch %d %q, without %d %q", i, ahead[i].UID, ahead[i].Raw, plain[i].UID, plain[i].Raw)
		}
	}

	trace.Reset()
	stop := errors.New("stop here")
	calls := 0
	err = c.Fetch(context.Background(), uids, FetchOptions{BatchSize: 1, Prefetch: true}, func(RawMessage) error {
		calls++
		time.Sleep(20 * time.Millisecond) // the next FETCH is under way meanwhile
		return stop
	})
	if !errors.Is(err, stop) || calls != 1 {
		t.Fatalf("Fetch: %v after %d calls; want the callback's error after 1", err, calls)
	}
	// The group handled, the one waiting in the channel, and the one the
	// fetcher holds when it is told to stop: no FETCH after that.
	if n := strings.Count(trace.String(), "BODY.PEEK[]"); n < 1 || n > 3 {
		t.Errorf("%d body FETCH commands after the callback failed at the first message; want at most 3", n)
	}
	if err := c.Noop(context.Background()); err != nil {
		t.Errorf("Noop after a stopped prefetching Fetch: %v", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	err = c.Fetch(ctx, uids, FetchOptions{BatchSize: 1, Prefetch: true}, func(RawMessage) error {
		cancel()
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Fetch with its context cancelled: %v, want context.Canceled", err)
	}
}

// TestDialContext: Options.DialContext makes the connection in place of
// the TCP dial (the options' port is one nothing listens on), and every
// security mode, certificate checks included, works over it.
func TestDialContext(t *testing.T) {
	t.Parallel()
	other := startServer(t, serverConfig{tls: "implicit"}) // a different CA
	for _, mode := range []string{"", "starttls", "implicit"} {
		t.Run("tls="+mode, func(t *testing.T) {
			t.Parallel()
			ts := startServer(t, serverConfig{tls: mode})
			dials := 0
			o := ts.options()
			o.Port = 9
			o.DialContext = func(ctx context.Context, network, _ string) (net.Conn, error) {
				dials++
				var d net.Dialer
				return d.DialContext(ctx, network, ts.addr)
			}
			c, err := Dial(context.Background(), o)
			if err != nil {
				t.Fatalf("Dial over DialContext: %v", err)
			}
			if err := c.Noop(context.Background()); err != nil {
				t.Errorf("Noop: %v", err)
			}
			_ = c.Close()
			if dials != 1 {
				t.Errorf("DialContext called %d times, want 1", dials)
			}
			if mode == "" {
				return
			}
			o.TLSCAFile = other.caPEM
			if c, err := Dial(context.Background(), o); err == nil {
				_ = c.Close()
				t.Error("Dial with the wrong CA over DialContext: got a client, want an error")
			}
		})
	}
}
