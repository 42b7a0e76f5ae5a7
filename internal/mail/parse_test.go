package mail

import (
	"encoding/base64"
	netmail "net/mail"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/mailagent/mailagent/internal/rig/testsize"
)

// msg builds a raw message from header lines and a body, CRLF-terminated.
func msg(headers []string, body string) []byte {
	return []byte(strings.Join(headers, "\r\n") + "\r\n\r\n" + body)
}

func hasProblem(m *Message, sub string) bool {
	for _, p := range m.Problems {
		if strings.Contains(p, sub) {
			return true
		}
	}
	return false
}

// checkValid asserts the package contract on any parse result.
func checkValid(t *testing.T, m *Message) {
	t.Helper()
	if m == nil {
		t.Fatal("Parse returned nil")
	}
	if m.MessageID == "" {
		t.Error("got empty MessageID, want non-empty")
	}
	for name, s := range map[string]string{
		"MessageID": m.MessageID, "Subject": m.Subject, "Text": m.Text, "CleanText": m.CleanText,
		"Quoted": m.Quoted, "Signature": m.Signature, "From.Name": m.From.Name, "From.Email": m.From.Email,
		"ContentType": m.ContentType,
	} {
		if !utf8.ValidString(s) {
			t.Errorf("%s is not valid UTF-8: %q", name, s)
		}
	}
	for k, vs := range m.Header {
		for _, v := range vs {
			if !utf8.ValidString(k) || !utf8.ValidString(v) {
				t.Errorf("header %q: %q is not valid UTF-8", k, v)
			}
		}
	}
	for _, a := range slices.Concat(m.To, m.Cc, m.ReplyTo) {
		if !utf8.ValidString(a.Name) || !utf8.ValidString(a.Email) {
			t.Errorf("address %+v is not valid UTF-8", a)
		}
	}
	for _, a := range m.Attachments {
		if !utf8.ValidString(a.Filename) {
			t.Errorf("attachment filename %q is not valid UTF-8", a.Filename)
		}
	}
	for _, p := range m.Problems {
		if !utf8.ValidString(p) {
			t.Errorf("problem %q is not valid UTF-8", p)
		}
	}
	if strings.TrimSpace(m.Text) != "" && strings.TrimSpace(m.CleanText) == "" {
		t.Errorf("CleanText empty while Text is %q", short(m.Text))
	}
}

func TestParseFields(t *testing.T) {
	t.Parallel()
	raw := []byte("From MAILER-DAEMON Mon Aug 19 12:00:00 2002\n" + string(msg([]string{
		"From: =?ISO-8859-1?Q?Andr=E9_M=FCller?= <andre@example.com>",
		"To: Bob <bob@example.org>, carol@example.net",
		"Cc: \"Dave, D.\" <dave@example.com>",
		"Reply-To: list@example.com",
		"Subject: =?UTF-8?B?Q2Fmw6kgbWVldGluZw==?=",
		"Date: Mon, 19 Aug 2002 12:00:00 -0700 (PDT)",
		"Message-ID: <Abc.123@Example.COM>",
		"In-Reply-To: <parent@example.com>",
		"References: <root@example.com>\r\n <parent@example.com>",
		"X-Custom: =?utf-8?q?hello_w=C3=B6rld?=",
		"Content-Type: text/plain; charset=utf-8",
	}, "Hello Bob,\r\nsee you.\r\n")))
	m := Parse(raw)
	checkValid(t, m)
	tests := []struct {
		name      string
		got, want any
	}{
		{"From.Name", m.From.Name, "André Müller"},
		{"From.Email", m.From.Email, "andre@example.com"},
		{"To", m.To, []Address{{Name: "Bob", Email: "bob@example.org"}, {Email: "carol@example.net"}}},
		{"Cc", m.Cc, []Address{{Name: "Dave, D.", Email: "dave@example.com"}}},
		{"ReplyTo", m.ReplyTo, []Address{{Email: "list@example.com"}}},
		{"Subject", m.Subject, "Café meeting"},
		{"Date", m.Date.UTC(), time.Date(2002, 8, 19, 19, 0, 0, 0, time.UTC)},
		{"MessageID", m.MessageID, "Abc.123@Example.COM"},
		{"Synthesized", m.Synthesized, false},
		{"InReplyTo", m.InReplyTo, []string{"parent@example.com"}},
		{"References", m.References, []string{"root@example.com", "parent@example.com"}},
		{"Header X-Custom", m.HeaderValue("x-custom"), "hello wörld"},
		{"ContentType", m.ContentType, "text/plain"},
		{"Text", m.Text, "Hello Bob,\nsee you."},
		{"Size", m.Size, len(raw)},
		{"Problems", len(m.Problems), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !equalAny(tt.got, tt.want) {
				t.Errorf("got %#v, want %#v", tt.got, tt.want)
			}
		})
	}
}

func equalAny(a, b any) bool {
	switch x := a.(type) {
	case []Address:
		return slices.Equal(x, b.([]Address))
	case []string:
		return slices.Equal(x, b.([]string))
	case time.Time:
		return x.Equal(b.(time.Time))
	}
	return a == b
}

func TestParseBodies(t *testing.T) {
	t.Parallel()
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	base := []string{"From: a@example.com", "Date: Tue, 20 Aug 2002 10:00:00 +0000", "Message-ID: <x@y>", "MIME-Version: 1.0"}
	tests := []struct {
		name        string
		raw         []byte
		wantText    string // substring of Text
		notInText   []string
		wantType    string
		wantProblem string
		wantHTML    bool
		wantAttach  []Attachment
		wantFwd     bool
	}{
		{
			name:     "alternative prefers plain",
			raw:      msg(append(base, `Content-Type: multipart/alternative; boundary="b"`), "--b\r\nContent-Type: text/plain\r\n\r\nplain body\r\n--b\r\nContent-Type: text/html\r\n\r\n<p>html body</p>\r\n--b--\r\n"),
			wantText: "plain body", notInText: []string{"html body"}, wantType: "multipart/alternative",
		},
		{
			name:     "html only converted",
			raw:      msg(append(base, "Content-Type: text/html; charset=utf-8"), "<html><head><style>p{color:red}</style></head><body><div><p>Hello <b>there</b></p><p>Second</p></div></body></html>"),
			wantText: "Hello", notInText: []string{"<html", "<div", "<p>", "color:red"}, wantType: "text/html", wantHTML: true,
		},
		{
			name:     "html mislabelled as plain",
			raw:      msg(append(base, "Content-Type: text/plain"), "<html><body><div>Buy now</div></body></html>"),
			wantText: "Buy now", notInText: []string{"<html", "<div"}, wantHTML: true,
		},
		{
			name:     "related inside alternative inside mixed",
			raw:      msg(append(base, `Content-Type: multipart/mixed; boundary="m"`), "--m\r\nContent-Type: multipart/alternative; boundary=\"a\"\r\n\r\n--a\r\nContent-Type: text/plain\r\n\r\nthe text\r\n--a\r\nContent-Type: multipart/related; boundary=\"r\"\r\n\r\n--r\r\nContent-Type: text/html\r\n\r\n<p>the html</p>\r\n--r\r\nContent-Type: image/png\r\nContent-ID: <img1>\r\nContent-Transfer-Encoding: base64\r\n\r\n"+b64("12345")+"\r\n--r--\r\n--a--\r\n--m\r\nContent-Type: application/pdf; name=\"=?UTF-8?Q?r=C3=A9sum=C3=A9.pdf?=\"\r\nContent-Disposition: attachment\r\nContent-Transfer-Encoding: base64\r\n\r\n"+b64("%PDF-1.4 data")+"\r\n--m--\r\n"),
			wantText: "the text", notInText: []string{"the html"}, wantType: "multipart/mixed",
			wantAttach: []Attachment{{ContentType: "image/png", Size: 5, Inline: true}, {Filename: "résumé.pdf", ContentType: "application/pdf", Size: 13}},
		},
		{
			name:       "rfc2231 filename",
			raw:        msg(append(base, `Content-Type: multipart/mixed; boundary="m"`), "--m\r\nContent-Type: text/plain\r\n\r\nsee attached\r\n--m\r\nContent-Type: application/octet-stream\r\nContent-Disposition: attachment; filename*=UTF-8''na%C3%AFve.bin\r\n\r\nabc\r\n--m--\r\n"),
			wantText:   "see attached",
			wantAttach: []Attachment{{Filename: "naïve.bin", ContentType: "application/octet-stream", Size: 3}},
		},
		{
			name:        "multipart without boundary, guessed",
			raw:         msg(append(base, "Content-Type: multipart/mixed"), "--xyz\r\nContent-Type: text/plain\r\n\r\nguessed part\r\n--xyz--\r\n"),
			wantText:    "guessed part",
			wantProblem: "without boundary",
		},
		{
			name:        "multipart whose boundary never appears",
			raw:         msg(append(base, `Content-Type: multipart/mixed; boundary="nope"`), "just some text\r\n"),
			wantText:    "just some text",
			wantProblem: "read as text",
		},
		{
			name:        "unknown charset keeps raw bytes",
			raw:         msg(append(base, "Content-Type: text/plain; charset=x-unknown-42"), "bonjour \xe9t\xe9"),
			wantText:    "bonjour",
			wantProblem: `unknown charset "x-unknown-42"`,
		},
		{
			name:        "unknown transfer encoding",
			raw:         msg(append(base, "Content-Type: text/plain", "Content-Transfer-Encoding: x-uuencode"), "raw payload"),
			wantText:    "raw payload",
			wantProblem: "unknown content-transfer-encoding",
		},
		{
			name:        "bad base64 keeps what decoded",
			raw:         msg(append(base, "Content-Type: text/plain", "Content-Transfer-Encoding: base64"), b64("good start")+"!!!***"),
			wantText:    "good start",
			wantProblem: "bad base64",
		},
		{
			name:        "invalid utf-8 declared utf-8",
			raw:         msg(append(base, "Content-Type: text/plain; charset=utf-8"), "ok \xff\xfe bytes"),
			wantText:    "ok \uFFFD",
			wantProblem: "invalid UTF-8",
		},
		{
			name:     "8-bit latin1 without charset",
			raw:      msg(append(base, "Content-Type: text/plain"), "caf\xe9"),
			wantText: "café",
		},
		{
			name:     "koi8-r body decoded",
			raw:      msg(append(base, "Content-Type: text/plain; charset=koi8-r"), "\xf0\xd2\xc9\xd7\xc5\xd4"),
			wantText: "Привет",
		},
		{
			name:       "attached message is metadata and marks forward",
			raw:        msg(append(base, `Content-Type: multipart/mixed; boundary="m"`), "--m\r\nContent-Type: text/plain\r\n\r\nFYI\r\n--m\r\nContent-Type: message/rfc822\r\n\r\nFrom: x@y\r\nSubject: inner\r\n\r\ninner body secret\r\n--m--\r\n"),
			wantText:   "FYI",
			notInText:  []string{"inner body secret"},
			wantAttach: []Attachment{{Filename: "message.eml", ContentType: "message/rfc822", Size: 46}},
			wantFwd:    true,
		},
		{
			name:       "delivery report",
			raw:        msg(append(base, `Content-Type: Multipart/Report; report-type=delivery-status; boundary="r"`), "--r\r\nContent-Type: text/plain\r\n\r\nDelivery failed\r\n--r\r\nContent-Type: message/delivery-status\r\n\r\nStatus: 5.1.1\r\n--r--\r\n"),
			wantText:   "Delivery failed",
			wantType:   "multipart/report",
			wantAttach: []Attachment{{ContentType: "message/delivery-status", Size: 13}},
		},
		{
			name:        "garbage header line dropped",
			raw:         []byte("From: a@example.com\r\nthis is not a header\r\nSubject: still here\r\nMessage-ID: <g@h>\r\n\r\nbody"),
			wantText:    "body",
			wantProblem: "malformed header line",
		},
		{
			name:        "no blank line after header",
			raw:         []byte("From: a@example.com\r\nMessage-ID: <g@h>\r\nHello there\r\nsecond line\r\n"),
			wantText:    "Hello there",
			wantProblem: "not followed by a blank line",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := Parse(tt.raw)
			checkValid(t, m)
			if !strings.Contains(m.Text, tt.wantText) {
				t.Errorf("got Text %q, want it to contain %q", m.Text, tt.wantText)
			}
			for _, s := range tt.notInText {
				if strings.Contains(m.Text, s) {
					t.Errorf("got Text %q, want it without %q", m.Text, s)
				}
			}
			if tt.wantType != "" && m.ContentType != tt.wantType {
				t.Errorf("got ContentType %q, want %q", m.ContentType, tt.wantType)
			}
			if tt.wantProblem != "" && !hasProblem(m, tt.wantProblem) {
				t.Errorf("got Problems %q, want one containing %q", m.Problems, tt.wantProblem)
			}
			if tt.wantProblem == "" && len(m.Problems) > 0 {
				t.Errorf("got Problems %q, want none", m.Problems)
			}
			if m.FromHTML != tt.wantHTML {
				t.Errorf("got FromHTML %v, want %v", m.FromHTML, tt.wantHTML)
			}
			if !slices.Equal(m.Attachments, tt.wantAttach) {
				t.Errorf("got Attachments %+v, want %+v", m.Attachments, tt.wantAttach)
			}
			if m.Forwarded != tt.wantFwd {
				t.Errorf("got Forwarded %v, want %v", m.Forwarded, tt.wantFwd)
			}
		})
	}
}

func TestParseMalformedAddress(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		from      string
		wantEmail string
		wantName  string
		problem   bool
	}{
		{"plain", "joe@example.com", "joe@example.com", "", false},
		{"comment name", "joe@example.com (Joe Bloggs)", "joe@example.com", "Joe Bloggs", false},
		{"unquoted specials", "Bloggs, Joe [ACME] <joe@example.com>", "joe@example.com", "Bloggs, Joe [ACME]", true},
		{"raw 8-bit name", "J\xf6rg <joerg@example.de>", "joerg@example.de", "Jörg", false},
		{"unterminated bracket", "Joe <joe@example.com", "joe@example.com", "Joe", true},
		{"no address at all", "Just A Name", "", "Just A Name", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := Parse(msg([]string{"From: " + tt.from, "Message-ID: <a@b>", "Date: Tue, 20 Aug 2002 10:00:00 +0000"}, "x"))
			checkValid(t, m)
			if m.From.Email != tt.wantEmail || m.From.Name != tt.wantName {
				t.Errorf("got From %+v, want {Name:%q Email:%q}", m.From, tt.wantName, tt.wantEmail)
			}
			if got := hasProblem(m, "From"); got != tt.problem {
				t.Errorf("got From problem %v, want %v (%q)", got, tt.problem, m.Problems)
			}
		})
	}
}

func TestParseDate(t *testing.T) {
	t.Parallel()
	want := time.Date(2002, 8, 22, 18, 26, 25, 0, time.UTC)
	tests := []struct {
		name string
		in   string
		want time.Time
	}{
		{"rfc5322", "Thu, 22 Aug 2002 18:26:25 +0000", want},
		{"comment", "Thu, 22 Aug 2002 11:26:25 -0700 (PDT)", want},
		{"no day name", "22 Aug 2002 18:26:25 +0000", want},
		{"two-digit year", "Thu, 22 Aug 02 18:26:25 +0000", want},
		{"asctime", "Thu Aug 22 18:26:25 2002", want},
		{"gmt offset", "Thu, 22 Aug 2002 20:26:25 GMT+0200", want},
		{"iso", "2002-08-22 18:26:25 +0000", want},
		{"comma after day number", "Thursday, 22 Aug 2002 18:26:25 +0000", want},
		{"hopeless", "sometime last week", time.Time{}},
		{"empty", "", time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := parseDate(tt.in); !got.Equal(tt.want) {
				t.Errorf("parseDate(%q): got %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}

func TestParseMissingHeadersAndSynthesizedID(t *testing.T) {
	t.Parallel()
	raw := []byte("Subject: hi\r\n\r\nbody text\r\n")
	m1, m2 := Parse(raw), Parse(append([]byte(nil), raw...))
	checkValid(t, m1)
	if !m1.Synthesized {
		t.Fatalf("got Synthesized false, want true")
	}
	if !strings.HasPrefix(m1.MessageID, "synth-") || !strings.HasSuffix(m1.MessageID, "@mailagent.invalid") {
		t.Errorf("got MessageID %q, want synth-<hex>@mailagent.invalid", m1.MessageID)
	}
	if m1.MessageID != m2.MessageID {
		t.Errorf("same bytes: got %q and %q, want equal ids", m1.MessageID, m2.MessageID)
	}
	// Transport differences (an mbox line, a Received header) keep the id.
	m3 := Parse([]byte("From x@y Mon Aug 19 12:00:00 2002\nReceived: by relay\r\n" + string(raw)))
	if m3.MessageID != m1.MessageID {
		t.Errorf("with envelope: got %q, want %q", m3.MessageID, m1.MessageID)
	}
	m4 := Parse([]byte("Subject: hi\r\n\r\nother body\r\n"))
	if m4.MessageID == m1.MessageID {
		t.Errorf("different body: got the same id %q, want different", m4.MessageID)
	}
	for _, p := range []string{"no From", "no Date", "no Message-ID"} {
		if !hasProblem(m1, p) {
			t.Errorf("got Problems %q, want one containing %q", m1.Problems, p)
		}
	}
	if !m1.Date.IsZero() || m1.From != (Address{}) {
		t.Errorf("got Date %v From %+v, want zero values", m1.Date, m1.From)
	}
}

func TestParseDegenerate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		raw  []byte
	}{
		{"empty", nil},
		{"only mbox line", []byte("From x Mon Aug 19 12:00:00 2002")},
		{"only newlines", []byte("\r\n\r\n\r\n")},
		{"no header", []byte("hello world, no header here\nsecond line")},
		{"leading continuation", []byte(" folded\r\nSubject: x\r\n\r\nbody")},
		{"binary junk", []byte{0xff, 0xfe, 0, 1, 2, ':', '\n', '\n', 0x80}},
		{"deep nesting", []byte("Content-Type: multipart/mixed; boundary=a\r\n\r\n" + strings.Repeat("--a\r\nContent-Type: multipart/mixed; boundary=a\r\n\r\n", 200))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkValid(t, Parse(tt.raw))
		})
	}
}

func TestParseHugeMessage(t *testing.T) {
	t.Parallel()
	line := strings.Repeat("all work and no play makes jack a dull boy ", 2) + "\r\n"
	body := strings.Repeat(line, (4<<20)/len(line)) // ~4 MiB
	m := Parse(msg([]string{"From: a@b.c", "Message-ID: <big@b.c>", "Date: Tue, 20 Aug 2002 10:00:00 +0000"}, body))
	checkValid(t, m)
	if len(m.Text) > MaxTextBytes {
		t.Errorf("got Text of %d bytes, want at most %d", len(m.Text), MaxTextBytes)
	}
	if len(m.Text) < MaxTextBytes/2 {
		t.Errorf("got Text of %d bytes, want close to the cap %d", len(m.Text), MaxTextBytes)
	}
	if !hasProblem(m, "truncated") {
		t.Errorf("got Problems %q, want a truncation note", m.Problems)
	}
	if m.Size != len(body)+len("From: a@b.c\r\nMessage-ID: <big@b.c>\r\nDate: Tue, 20 Aug 2002 10:00:00 +0000\r\n\r\n") {
		t.Errorf("got Size %d, want the raw length", m.Size)
	}
}

func TestHasTag(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want bool
	}{
		{"<div>x</div>", true},
		{"text </p> more", true},
		{"<BR/>", true},
		{"mail <bob@example.com> now", false},
		{"a < b and c > d", false},
		{"<http://example.com/>", false},
		{"trailing <", false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := hasTag(tt.in); got != tt.want {
				t.Errorf("hasTag(%q): got %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}

// TestCommonDateMatchesNetMail: whenever the fast path answers, the answer
// is net/mail.ParseDate's, over every Date header of the corpus (under
// -race, of the sampled files: a tenth of the SpamAssassin messages, so
// the corpus must give a tenth of the 5,000 dates the full walk must) and
// variants of each (comments, spacing, day names, zones, two-digit years,
// garbage after the zone).
func TestCommonDateMatchesNetMail(t *testing.T) {
	t.Parallel()
	var dates []string
	for _, cm := range parsedFiles(t, sampled(corpusFiles(t, "spamassassin", "mime-edge"))) {
		if v := cm.m.Header["Date"]; len(v) > 0 {
			dates = append(dates, v[0])
		}
	}
	base := len(dates)
	for _, d := range dates[:base] {
		dates = append(dates, d+" (PDT)", d+" (P-DT)", d+" (x) y", strings.Replace(d, " ", "  ", 1),
			strings.TrimPrefix(d, d[:min(5, len(d))]), d+" ", d+"(UTC)", strings.Replace(d, "-", "+", 1), d[:max(0, len(d)-3)])
	}
	dates = append(dates, "Mon, 2 Sep 02 12:00:00 -0700", "Mon, 32 Sep 2002 12:00:00 -0700", "Mon, 2 Sep 2002 25:00:00 -0700",
		"Mon, 2 Sep 2002 12:00 -0700", "2 Sep 2002 12:00:00 +0000 (GMT)", "Tue, 2 Sep 2002 12:00:00 -0700", "Mon, 02 Sep 2002 12:00:00 -0700")
	answered := 0
	for _, d := range dates {
		got, ok := commonDate(d)
		if !ok {
			continue
		}
		answered++
		want, err := netmail.ParseDate(d)
		if err != nil || !want.Equal(got) || want.Format(time.RFC3339) != got.Format(time.RFC3339) {
			t.Errorf("commonDate(%q) = %v; net/mail says %v, %v", d, got, want, err)
		}
	}
	least := 5000
	if testsize.Race {
		least /= testsize.Divisor
	}
	if base < least || answered < base/2 {
		t.Fatalf("%d corpus dates, %d answered by the fast path: the test shows little", base, answered)
	}
	t.Logf("%d dates (%d from the corpus), %d answered by the fast path, all as net/mail", len(dates), base, answered)
}
