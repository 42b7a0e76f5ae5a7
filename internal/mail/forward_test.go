package mail

import (
	"encoding/base64"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// original is a message a correspondent sent, as a client attaches it.
const original = "From: Sam Lee <sam@example.net>\r\n" +
	"Reply-To: Sam at work <sam.lee@work.example>\r\n" +
	"To: Ada <ada@example.com>\r\n" +
	"Cc: Bo <bo@example.org>\r\n" +
	"Subject: Coffee on Tuesday?\r\n" +
	"Date: Mon, 02 Mar 2026 09:00:00 +0000\r\n" +
	"Message-ID: <orig1@example.net>\r\n" +
	"In-Reply-To: <root@example.com>\r\n" +
	"References: <root@example.com>\r\n" +
	"Content-Type: text/plain; charset=utf-8\r\n" +
	"\r\n" +
	"Hi Ada, coffee on Tuesday?\r\n\r\n> earlier text\r\n\r\n-- \r\nSam\r\n"

// attaching wraps parts (each a full MIME part: header, blank line, body)
// in a multipart/mixed message from the owner with a note first.
func attaching(note string, parts ...string) []byte {
	var b strings.Builder
	b.WriteString("From: Ada <ada@example.com>\r\nTo: ada+agent@example.com\r\nSubject: Fwd: Coffee on Tuesday?\r\n" +
		"Date: Tue, 03 Mar 2026 10:00:00 +0000\r\nMessage-ID: <fwd1@example.com>\r\nMIME-Version: 1.0\r\n" +
		"Content-Type: multipart/mixed; boundary=\"OUTER\"\r\n\r\n--OUTER\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n")
	b.WriteString(note + "\r\n")
	for _, p := range parts {
		b.WriteString("--OUTER\r\n" + p + "\r\n")
	}
	b.WriteString("--OUTER--\r\n")
	return []byte(b.String())
}

// rfc822 is a Thunderbird-style attached message part.
func rfc822(raw string) string {
	return "Content-Type: message/rfc822; name=\"Coffee.eml\"\r\nContent-Disposition: attachment; filename=\"Coffee.eml\"\r\n\r\n" + raw
}

// rfc822Base64 is an Outlook-style attached message part (base64, which
// RFC 2046 does not allow but clients write).
func rfc822Base64(raw string) string {
	enc := base64.StdEncoding.EncodeToString([]byte(raw))
	var lines []string
	for len(enc) > 76 {
		lines, enc = append(lines, enc[:76]), enc[76:]
	}
	lines = append(lines, enc)
	return "Content-Type: message/rfc822\r\nContent-Transfer-Encoding: base64\r\nContent-Disposition: attachment\r\n\r\n" + strings.Join(lines, "\r\n")
}

func TestParseForwardAsAttachment(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, part string }{
		{"thunderbird 8bit", rfc822(original)},
		{"outlook base64", rfc822Base64(original)},
		{"message/global", strings.Replace(rfc822(original), "message/rfc822", "message/global", 1)},
		{"inline disposition", strings.Replace(rfc822(original), "attachment;", "inline;", 1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := Parse(attaching("Please say yes.", tc.part))
			checkValid(t, m)
			if !m.Forwarded || len(m.Forwards) != 1 {
				t.Fatalf("got forwarded=%v %d forwards, want one; problems %v", m.Forwarded, len(m.Forwards), m.Problems)
			}
			fw := m.Forwards[0]
			o := fw.Message
			if fw.Broken || fw.Part != "part 2" {
				t.Errorf("got broken=%v part=%q problems=%v, want a whole forward in part 2", fw.Broken, fw.Part, fw.Problems)
			}
			checks := []struct{ field, got, want string }{
				{"From", o.From.Email, "sam@example.net"},
				{"From.Name", o.From.Name, "Sam Lee"},
				{"Subject", o.Subject, "Coffee on Tuesday?"},
				{"Message-ID", o.MessageID, "orig1@example.net"},
				{"Date", o.Date.UTC().Format("2006-01-02 15:04"), "2026-03-02 09:00"},
				{"CleanText", o.CleanText, "Hi Ada, coffee on Tuesday?"},
				{"outer Text", m.Text, "Please say yes."},
			}
			for _, c := range checks {
				if c.got != c.want {
					t.Errorf("%s: got %q, want %q", c.field, c.got, c.want)
				}
			}
			if len(o.ReplyTo) != 1 || o.ReplyTo[0].Email != "sam.lee@work.example" || len(o.To) != 1 || len(o.Cc) != 1 || o.Cc[0].Email != "bo@example.org" {
				t.Errorf("addresses: got reply-to %v to %v cc %v", o.ReplyTo, o.To, o.Cc)
			}
			if len(o.References) != 1 || o.References[0] != "root@example.com" || len(o.InReplyTo) != 1 {
				t.Errorf("thread ids: got in-reply-to %v references %v", o.InReplyTo, o.References)
			}
			if len(m.Attachments) != 1 || m.Attachments[0].ContentType == "" || m.Attachments[0].Size <= 0 {
				t.Errorf("attachment metadata: got %+v", m.Attachments)
			}
		})
	}
}

// A forward of many: every attached message is read, in order.
func TestParseSeveralForwards(t *testing.T) {
	t.Parallel()
	second := strings.NewReplacer("sam@example.net", "kim@example.org", "orig1@", "orig2@", "Coffee on Tuesday?", "Invoice 42").Replace(original)
	m := Parse(attaching("Both of these.", rfc822(original), rfc822Base64(second)))
	checkValid(t, m)
	if len(m.Forwards) != 2 {
		t.Fatalf("got %d forwards, want 2", len(m.Forwards))
	}
	if a, b := m.Forwards[0].Message, m.Forwards[1].Message; a.From.Email != "sam@example.net" || b.From.Email != "kim@example.org" || b.Subject != "Invoice 42" || b.MessageID != "orig2@example.net" {
		t.Errorf("got %s %q, %s %q", a.From.Email, a.Subject, b.From.Email, b.Subject)
	}
}

// A forward of a forward: the attached message carries its own attached
// message, read down to MaxForwardDepth and no deeper.
func TestParseNestedForwards(t *testing.T) {
	t.Parallel()
	inner := original
	for i := range MaxForwardDepth + 1 {
		inner = fmt.Sprintf("From: Level %d <l%d@example.org>\r\nSubject: Fwd: level %d\r\nMessage-ID: <l%d@example.org>\r\n"+
			"Date: Mon, 02 Mar 2026 10:00:00 +0000\r\nContent-Type: multipart/mixed; boundary=\"B%d\"\r\n\r\n"+
			"--B%d\r\nContent-Type: text/plain\r\n\r\nnote %d\r\n--B%d\r\n%s\r\n--B%d--\r\n", i, i, i, i, i, i, i, i, rfc822(inner), i)
	}
	m := Parse([]byte(inner))
	checkValid(t, m)
	depth, cur := 0, m
	for len(cur.Forwards) == 1 {
		fw := cur.Forwards[0]
		if fw.Broken {
			t.Errorf("level %d: broken %v", depth, fw.Problems)
		}
		cur = fw.Message
		depth++
	}
	if depth != MaxForwardDepth {
		t.Errorf("read %d levels of attached messages, want %d", depth, MaxForwardDepth)
	}
	if !hasProblem(cur, "not read") {
		t.Errorf("the level past the limit: got problems %v, want one saying it was not read", cur.Problems)
	}
	if m.Forwards[0].Message.From.Email != "l2@example.org" { // the message itself is level 3
		t.Errorf("outermost forward: got %s", m.Forwards[0].Message.From.Email)
	}
}

// A cut or unreadable attachment: the forward is Broken with a problem
// saying so, what could be read is kept, and the outer message says it.
func TestParseBrokenForward(t *testing.T) {
	t.Parallel()
	whole := string(attaching("See below.", rfc822(original)))
	cutAt := strings.Index(whole, "Hi Ada") + 3
	tests := []struct {
		name     string
		raw      []byte
		wantFrom string // what could still be read
	}{
		{"cut in the body (truncated fetch)", []byte(whole[:cutAt]), "sam@example.net"},
		{"cut in the header", []byte(whole[:strings.Index(whole, "Subject: Coffee")]), "sam@example.net"},
		{"bad base64", attaching("x", "Content-Type: message/rfc822\r\nContent-Transfer-Encoding: base64\r\n\r\nRnJvbTogc2FtQGV4YW1wbGUubmV0DQo*!!!@@@"), "sam@example.net"},
		{"empty attachment", attaching("x", "Content-Type: message/rfc822\r\n\r\n"), ""},
		{"no From", attaching("x", rfc822(strings.Replace(original, "From: Sam Lee <sam@example.net>\r\n", "", 1))), ""},
		{"garbage", attaching("x", rfc822("\x00\x01\x02 not a message at all \xff\xfe")), ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := Parse(tc.raw)
			checkValid(t, m)
			if len(m.Forwards) != 1 {
				t.Fatalf("got %d forwards, want 1 (problems %v)", len(m.Forwards), m.Problems)
			}
			fw := m.Forwards[0]
			if !fw.Broken || len(fw.Problems) == 0 {
				t.Errorf("got broken=%v problems=%v, want broken with a reason", fw.Broken, fw.Problems)
			}
			if !hasProblem(m, "forwarded message in part 2") {
				t.Errorf("outer problems %v do not name the broken forward", m.Problems)
			}
			if fw.Message == nil || fw.Message.From.Email != tc.wantFrom {
				t.Errorf("kept From: got %+v, want %q", fw.Message, tc.wantFrom)
			}
			checkValid(t, fw.Message)
		})
	}
}

// hostileForwardHeaders are the header lines of the attached message of
// TestParseForwardHostileHeaders: encoded line breaks, NUL and escapes in
// names and the subject, a subject far over the cap, NUL in ids. checks
// names the checks of forwardHeaderProblems each attacks; alsoStoppedBy
// names a layer below the forward cleaning that stops it as well.
var hostileForwardHeaders = []struct {
	line          string
	checks        []string
	alsoStoppedBy string
}{
	{"From: =?utf-8?q?Sam=0D=0ABcc:_evil@evil.example=00?= <sam@example.net>", []string{"From.Name"}, ""},
	{"Reply-To: =?utf-8?q?x=0D=0ATo:_evil@evil.example?= <evil@evil.example>", []string{"ReplyTo 0 name"},
		"the address parser (a malformed Reply-To is read best-effort, and the name it finds holds no control character)"},
	{"To: =?utf-8?b?" + base64.StdEncoding.EncodeToString([]byte("a\r\nb\x00")) + "?= <ada@example.com>", []string{"To 0 name"}, ""},
	{"Subject: =?utf-8?q?Hi=0D=0ABcc:_evil@evil.example=0D=0A=0D=0Abody=00=1B[31m?= " + strings.Repeat("Ä", 10000), []string{"Subject", "subject cap"}, ""},
	{"Message-ID: <ok\x00id@example.net>", []string{"MessageID"}, ""},
	{"References: <a\x00b@x> <c@x>", []string{"References 0"}, ""},
	{"Date: Mon, 02 Mar 2026 09:00:00 +0000", nil, ""},
}

// hostileForward is the attached message of hostileForwardHeaders.
func hostileForward() string {
	var b strings.Builder
	for _, h := range hostileForwardHeaders {
		b.WriteString(h.line + "\r\n")
	}
	return b.String() + "\r\nhello\x00 there\r\n"
}

// forwardHeaderProblems checks the fields of the attached message o a
// reply is built from: one check per field (no control character, valid
// UTF-8) and one for the subject's cap. It returns the checks tried and
// those that failed, by name, with why.
func forwardHeaderProblems(o *Message) (tried int, through map[string]string) {
	fields := map[string]string{"Subject": o.Subject, "MessageID": o.MessageID, "From.Name": o.From.Name, "From.Email": o.From.Email}
	for _, l := range []struct {
		kind  string
		addrs []Address
	}{{"ReplyTo", o.ReplyTo}, {"To", o.To}, {"Cc", o.Cc}} {
		for i, a := range l.addrs {
			fields[fmt.Sprintf("%s %d name", l.kind, i)], fields[fmt.Sprintf("%s %d email", l.kind, i)] = a.Name, a.Email
		}
	}
	for i, id := range o.References {
		fields[fmt.Sprintf("References %d", i)] = id
	}
	for i, id := range o.InReplyTo {
		fields[fmt.Sprintf("InReplyTo %d", i)] = id
	}
	through = map[string]string{}
	for name, v := range fields {
		tried++
		if strings.IndexFunc(v, unicode.IsControl) >= 0 || !utf8.ValidString(v) {
			through[name] = fmt.Sprintf("control character or invalid UTF-8 kept: %q", v)
		}
	}
	tried++
	if n := utf8.RuneCountInString(o.Subject); n > MaxForwardSubject {
		through["subject cap"] = fmt.Sprintf("got %d runes, want at most %d", n, MaxForwardSubject)
	}
	return tried, through
}

// Hostile text in every header of the attached message: no control
// character survives in a field a reply is built from, the subject is
// capped, and nothing panics.
func TestParseForwardHostileHeaders(t *testing.T) {
	t.Parallel()
	m := Parse(attaching("fyi", rfc822(hostileForward())))
	checkValid(t, m)
	if len(m.Forwards) != 1 {
		t.Fatalf("got %d forwards", len(m.Forwards))
	}
	o := m.Forwards[0].Message
	tried, through := forwardHeaderProblems(o)
	for name, why := range through {
		t.Errorf("%s: %s", name, why)
	}
	attacks := 0
	for _, h := range hostileForwardHeaders {
		attacks += len(h.checks)
	}
	t.Logf("hostile attached headers: %d checks (%d aimed at by an attack), %d got through", tried, attacks, len(through))
	if tried < attacks || len(through) != 0 {
		t.Errorf("got %d of %d checks through, want 0 of at least %d", len(through), tried, attacks)
	}
	if o.From.Email != "sam@example.net" {
		t.Errorf("From: got %q", o.From.Email)
	}
}

// TestParseForwardHostileHeadersLandWithoutClean is the positive control
// of TestParseForwardHostileHeaders: with the attached message's header
// cleaning off (forwardCleanOff), the same message parsed the same way is
// caught by the test's own check (forwardHeaderProblems) on every check
// an attack aims at, but the one a lower layer stops as well
// (alsoStoppedBy: the Reply-To name), which must still pass. Not
// parallel: the switch is global.
func TestParseForwardHostileHeadersLandWithoutClean(t *testing.T) {
	forwardCleanOff.Store(true)
	defer forwardCleanOff.Store(false)
	m := Parse(attaching("fyi", rfc822(hostileForward())))
	if len(m.Forwards) != 1 {
		t.Fatalf("got %d forwards", len(m.Forwards))
	}
	_, through := forwardHeaderProblems(m.Forwards[0].Message)
	tried, landed, layered, stopped := 0, 0, 0, 0
	for _, h := range hostileForwardHeaders {
		for _, c := range h.checks {
			_, got := through[c]
			if h.alsoStoppedBy != "" {
				layered++
				if got {
					t.Errorf("%s: got through with the cleaning off (%s), want it stopped by %s", c, through[c], h.alsoStoppedBy)
				} else {
					stopped++
				}
				continue
			}
			tried++
			if got {
				landed++
			} else {
				t.Errorf("%s: clean with the cleaning off: the attack does not test the cleaning", c)
			}
		}
	}
	t.Logf("without the cleaning: %d of %d attacks landed; %d of %d stopped by a lower layer as well", landed, tried, stopped, layered)
	if tried == 0 || landed != tried {
		t.Errorf("positive control: got %d of %d landed, want all", landed, tried)
	}
	if stopped != layered {
		t.Errorf("lower layer: got %d of %d stopped, want all", stopped, layered)
	}
}

// Limits: more than MaxForwards attached messages are metadata only, with
// a problem; a bounce's returned message is not a forward.
func TestParseForwardLimits(t *testing.T) {
	t.Parallel()
	parts := make([]string, MaxForwards+3)
	for i := range parts {
		parts[i] = rfc822(original)
	}
	m := Parse(attaching("many", parts...))
	checkValid(t, m)
	if len(m.Forwards) != MaxForwards || len(m.Attachments) != MaxForwards+3 || !hasProblem(m, "not read") {
		t.Errorf("got %d forwards, %d attachments, problems %v; want %d, %d and a problem", len(m.Forwards), len(m.Attachments), m.Problems, MaxForwards, MaxForwards+3)
	}
	bounce := "From: MAILER-DAEMON@example.com\r\nTo: ada@example.com\r\nSubject: Undelivered\r\nMessage-ID: <b@x>\r\n" +
		"Content-Type: multipart/report; report-type=delivery-status; boundary=R\r\n\r\n--R\r\nContent-Type: text/plain\r\n\r\nfailed\r\n" +
		"--R\r\n" + rfc822(original) + "\r\n--R--\r\n"
	if m := Parse([]byte(bounce)); m.Forwarded || len(m.Forwards) != 0 {
		t.Errorf("bounce: got forwarded=%v %d forwards, want none", m.Forwarded, len(m.Forwards))
	}
}

// The corpora's attached messages (under -race, those of the sampled
// files) parse into forwards that keep the package contract (skipped when
// the corpora are absent). The messages
// come parsed from the package's shared corpus (parsedFiles): parsing
// them again here was the same work twice.
func TestParseForwardCorpus(t *testing.T) {
	t.Parallel()
	files := sampled(corpusFiles(t, append(append([]string{}, edgeDirs...), hamDirs...)...))
	data := parsedFiles(t, files)
	seen, withFrom := 0, 0
	for i, cm := range data {
		if !strings.Contains(strings.ToLower(string(cm.raw)), "message/rfc822") {
			continue
		}
		m := cm.m
		for _, fw := range m.Forwards {
			seen++
			t.Run(filepath.Base(files[i])+"/"+fw.Part, func(t *testing.T) { checkValid(t, fw.Message) })
			if fw.Message.From.Email != "" {
				withFrom++
			}
			if fw.Broken != (len(fw.Problems) > 0) {
				t.Errorf("%s %s: broken=%v with problems %v", files[i], fw.Part, fw.Broken, fw.Problems)
			}
		}
	}
	if seen == 0 {
		t.Fatal("no attached message read in the corpora")
	}
	t.Logf("corpus: %d attached messages read, %d with a From address", seen, withFrom)
}
