package compose

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	gomail "github.com/emersion/go-message/mail"

	"github.com/mailagent/mailagent/internal/mail"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata")

var fixedDate = time.Date(2025, 3, 14, 9, 26, 53, 0, time.FixedZone("", 3600))

func baseReply() Reply {
	return Reply{
		From:             mail.Address{Name: "Ada Owner", Email: "ada@example.org"},
		To:               []mail.Address{{Name: "Bob Sender", Email: "bob@example.com"}},
		Subject:          "Lunch on Friday?",
		ParentMessageID:  "<parent-1@example.com>",
		ParentReferences: []string{"root-0@example.com"},
		Body:             "Friday works for me.\nSee you at noon.",
		Date:             fixedDate,
		MessageID:        "reply-1.1741940813@example.org",
	}
}

func TestBuildGolden(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		modify func(*Reply)
	}{
		{name: "plain", modify: func(*Reply) {}},
		{name: "non_ascii", modify: func(r *Reply) {
			r.From.Name = "Ada Lovelace-Müller"
			r.To = []mail.Address{{Name: "Zoë Ünal", Email: "zoe@example.com"}}
			r.Cc = []mail.Address{{Email: "carol@example.net"}, {Name: "Dan, Jr.", Email: "dan@example.net"}}
			r.Subject = "Re: Grüße aus Köln — Termin 日本"
			r.Body = "Gerne! Der Termin passt.\r\nViele Grüße\r\n"
			r.Footer = "-- \nSent by mailagent"
		}},
		{name: "auto_submitted", modify: func(r *Reply) {
			r.AutoSubmitted = true
			r.ExtraHeaders = map[string]string{
				"X-Mailagent-Trace":   "msg-42",
				"x-mailagent-version": "1.2.3",
			}
			r.ParentReferences = nil
			for i := range 25 {
				r.ParentReferences = append(r.ParentReferences, fmt.Sprintf("<id-%02d@example.com>", i))
			}
			r.Body = strings.Repeat("A long line that will be wrapped by quoted-printable encoding. ", 3) + "= sign."
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := baseReply()
			tt.modify(&r)
			raw, id, err := Build(r)
			if err != nil {
				t.Fatalf("Build: %v", err)
			}
			if id != r.MessageID {
				t.Errorf("got message id %q, want %q", id, r.MessageID)
			}
			// Goldens are stored with LF so git's line-ending handling cannot
			// break them; CRLF is checked separately below.
			lf := bytes.ReplaceAll(raw, []byte("\r\n"), []byte("\n"))
			golden := filepath.Join("testdata", tt.name+".golden")
			if *update {
				if err := os.WriteFile(golden, lf, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("read golden (run with -update to create): %v", err)
			}
			if !bytes.Equal(lf, want) {
				t.Errorf("Build output differs from %s (run with -update after checking):\ngot:\n%s\nwant:\n%s", golden, lf, want)
			}
			if !bytes.Contains(raw, []byte("\r\n\r\n")) || bytes.Contains(bytes.ReplaceAll(raw, []byte("\r\n"), nil), []byte("\n")) {
				t.Errorf("got output with bare LF line endings, want CRLF only")
			}
		})
	}
}

// parse reads a built message back with go-message.
func parse(t *testing.T, raw []byte) (gomail.Header, string) {
	t.Helper()
	r, err := gomail.CreateReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("parse built message: %v", err)
	}
	p, err := r.NextPart()
	if err != nil {
		t.Fatalf("read body part: %v", err)
	}
	b, err := io.ReadAll(p.Body)
	if err != nil {
		t.Fatalf("read body: %v", err)
	}
	return r.Header, string(b)
}

func addrs(t *testing.T, h gomail.Header, key string) []string {
	t.Helper()
	l, err := h.AddressList(key)
	if err != nil {
		t.Fatalf("parse %s: %v", key, err)
	}
	var out []string
	for _, a := range l {
		out = append(out, a.Name+" <"+a.Address+">")
	}
	return out
}

func TestBuildRoundTrip(t *testing.T) {
	t.Parallel()
	r := baseReply()
	r.From.Name = "Ada Lovelace-Müller"
	r.To = []mail.Address{{Name: "Zoë", Email: "zoe@example.com"}, {Email: "bob@example.com"}}
	r.Cc = []mail.Address{{Name: "Carol", Email: "carol@example.net"}}
	r.Subject = "AW: Grüße"
	r.Body = "Hallo Zoë,\n\nja.\n"
	r.Footer = "mailagent"
	r.AutoSubmitted = true
	r.ExtraHeaders = map[string]string{"X-Mailagent-Trace": "t-1 ünïcode"}

	raw, id, err := Build(r)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	h, body := parse(t, raw)

	if got, want := addrs(t, h, "From"), []string{"Ada Lovelace-Müller <ada@example.org>"}; !slices.Equal(got, want) {
		t.Errorf("From: got %q, want %q", got, want)
	}
	if got, want := addrs(t, h, "To"), []string{"Zoë <zoe@example.com>", " <bob@example.com>"}; !slices.Equal(got, want) {
		t.Errorf("To: got %q, want %q", got, want)
	}
	if got, want := addrs(t, h, "Cc"), []string{"Carol <carol@example.net>"}; !slices.Equal(got, want) {
		t.Errorf("Cc: got %q, want %q", got, want)
	}
	if got, _ := h.Subject(); got != "Re: Grüße" {
		t.Errorf("Subject: got %q, want %q", got, "Re: Grüße")
	}
	if got, _ := h.MessageID(); got != id || id != r.MessageID {
		t.Errorf("Message-ID: got %q (returned %q), want %q", got, id, r.MessageID)
	}
	if got, _ := h.MsgIDList("In-Reply-To"); !slices.Equal(got, []string{"parent-1@example.com"}) {
		t.Errorf("In-Reply-To: got %q, want [parent-1@example.com]", got)
	}
	if got, _ := h.MsgIDList("References"); !slices.Equal(got, []string{"root-0@example.com", "parent-1@example.com"}) {
		t.Errorf("References: got %q, want [root-0@example.com parent-1@example.com]", got)
	}
	if got, _ := h.Date(); !got.Equal(fixedDate) {
		t.Errorf("Date: got %v, want %v", got, fixedDate)
	}
	if got := h.Get("Auto-Submitted"); got != "auto-replied" {
		t.Errorf("Auto-Submitted: got %q, want auto-replied", got)
	}
	if got, _ := h.Text("X-Mailagent-Trace"); got != "t-1 ünïcode" {
		t.Errorf("X-Mailagent-Trace: got %q, want %q", got, "t-1 ünïcode")
	}
	if mt, params, _ := h.ContentType(); mt != "text/plain" || params["charset"] != "utf-8" {
		t.Errorf("Content-Type: got %q %v, want text/plain charset=utf-8", mt, params)
	}
	if got := h.Get("Content-Transfer-Encoding"); got != "quoted-printable" {
		t.Errorf("Content-Transfer-Encoding: got %q, want quoted-printable", got)
	}
	if got := h.Get("Mime-Version"); got != "1.0" {
		t.Errorf("MIME-Version: got %q, want 1.0", got)
	}
	if want := "Hallo Zoë,\r\n\r\nja.\r\n\r\nmailagent\r\n"; body != want {
		t.Errorf("body: got %q, want %q", body, want)
	}
}

// headerAttacks are TestBuildHeaderInjection's attacks: each puts a line
// break and a header field of the attacker's (marked by marker) in one
// value of the Reply (set), and line is the header line it would make if
// Build wrote the value as it is.
var headerAttacks = []struct {
	name, field, marker string
	set                 func(r *Reply)
	line                string
}{
	{"subject", "Subject", "evil@x.com", func(r *Reply) { r.Subject = "hello\r\nBcc: evil@x.com" },
		"Subject: Re: hello\r\nBcc: evil@x.com"},
	{"from name", "From", "evil2@x.com", func(r *Reply) { r.From.Name = "Ada\r\nBcc: evil2@x.com" },
		"From: Ada\r\nBcc: evil2@x.com <ada@example.org>"},
	{"to name", "To", "X-Evil", func(r *Reply) { r.To = []mail.Address{{Name: "Bob\nX-Evil: 1", Email: "bob@example.com"}} },
		"To: Bob\nX-Evil: 1 <bob@example.com>"},
	{"parent id", "In-Reply-To", "evil3@x.com", func(r *Reply) { r.ParentMessageID = "<p@x>\r\nBcc: evil3@x.com" },
		"In-Reply-To: <p@x>\r\nBcc: evil3@x.com"},
	{"references", "References", "evil4@x.com", func(r *Reply) { r.ParentReferences = []string{"ok@x", "bad@x\r\nBcc: evil4@x.com"} },
		"References: <ok@x> <bad@x\r\nBcc: evil4@x.com>"},
	{"extra header", "X-Mailagent-Trace", "evil5@x.com", func(r *Reply) {
		r.ExtraHeaders = map[string]string{"X-Mailagent-Trace": "t\r\nBcc: evil5@x.com"}
	}, "X-Mailagent-Trace: t\r\nBcc: evil5@x.com"},
}

// allowedHeaderFields are the fields a plain reply has.
var allowedHeaderFields = []string{"From", "To", "Subject", "Date", "Message-Id", "References", "X-Mailagent-Trace",
	"Mime-Version", "Content-Type", "Content-Transfer-Encoding"}

// injectionProblems is what is wrong with raw, built with every attack
// of headerAttacks at once: a header field the reply does not write, an
// In-Reply-To from the malformed parent id, References other than the one
// well-formed id, the subject's line break kept. hit names the attacks
// that got through (an unexpected field carrying an attack's marker, or
// the check of that attack's own field failing).
func injectionProblems(t *testing.T, raw []byte) (problems []string, hit map[string]bool) {
	t.Helper()
	hit = map[string]bool{}
	h, _ := parse(t, raw)
	fields := h.Fields()
	for fields.Next() {
		k := fields.Key()
		if slices.Contains(allowedHeaderFields, k) {
			continue
		}
		v, _ := fields.Text()
		problems = append(problems, fmt.Sprintf("got unexpected header field %q (%q)", k, v))
		for _, a := range headerAttacks {
			if strings.Contains(k+": "+v, a.marker) {
				hit[a.name] = true
			}
		}
	}
	if h.Has("In-Reply-To") {
		problems = append(problems, fmt.Sprintf("got In-Reply-To %q from a malformed parent id, want none", h.Get("In-Reply-To")))
		hit["parent id"] = true
	}
	if got, _ := h.MsgIDList("References"); !slices.Equal(got, []string{"ok@x"}) {
		problems = append(problems, fmt.Sprintf("References: got %q, want [ok@x]", got))
		hit["references"] = true
	}
	if got, _ := h.Subject(); got != "Re: hello Bcc: evil@x.com" {
		problems = append(problems, fmt.Sprintf("Subject: got %q, want %q", got, "Re: hello Bcc: evil@x.com"))
		hit["subject"] = true
	}
	return problems, hit
}

// hostileReply is baseReply with every attack of headerAttacks in it.
func hostileReply() Reply {
	r := baseReply()
	for _, a := range headerAttacks {
		a.set(&r)
	}
	return r
}

// TestBuildHeaderInjection puts a line break and a header field of the
// attacker's in every value Build writes into the header: none may start
// a field of its own, a malformed id is dropped, and the subject's line
// break becomes a space.
func TestBuildHeaderInjection(t *testing.T) {
	t.Parallel()
	raw, _, err := Build(hostileReply())
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	problems, hit := injectionProblems(t, raw)
	for _, p := range problems {
		t.Errorf("%s in\n%s", p, raw)
	}
	tried, through := 0, 0
	for _, a := range headerAttacks {
		tried++
		if hit[a.name] {
			through++
			t.Errorf("attack %q got through", a.name)
		}
	}
	t.Logf("header injection: %d tried, %d got through", tried, through)
	if tried != len(headerAttacks) || through != 0 {
		t.Errorf("got %d of %d through, want 0 of %d", through, tried, len(headerAttacks))
	}
}

// TestBuildHeaderInjectionCaughtAsItWouldLand is the positive control of
// TestBuildHeaderInjection, a detector: what stops the attacks is
// structural (Build's cleaning, and below it go-message, which encodes
// names and subjects as encoded words and refuses a raw line break in a
// field value), so there is nothing to switch off without another layer
// still stopping them. Instead each attack's header line, as it would be
// written raw, is spliced into the real hostile build in place of its
// field, and the test's own check (injectionProblems) must name that
// attack, every time.
func TestBuildHeaderInjectionCaughtAsItWouldLand(t *testing.T) {
	t.Parallel()
	raw, _, err := Build(hostileReply())
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	tried, landed := 0, 0
	for _, a := range headerAttacks {
		tried++
		if _, hit := injectionProblems(t, spliceHeaderLine(raw, a.field, a.line)); hit[a.name] {
			landed++
		} else {
			t.Errorf("%s: spliced in as %q, not caught", a.name, a.line)
		}
	}
	t.Logf("header lines spliced in raw: %d of %d caught", landed, tried)
	if tried != len(headerAttacks) || landed != tried {
		t.Errorf("positive control: got %d of %d caught, want all %d", landed, tried, len(headerAttacks))
	}
}

// spliceHeaderLine returns raw with its field lines (and their folded
// continuations) removed and line added at the end of the header block.
func spliceHeaderLine(raw []byte, field, line string) []byte {
	hdr, body, _ := strings.Cut(string(raw), "\r\n\r\n")
	var out []string
	skipping := false
	for _, l := range strings.Split(hdr, "\r\n") {
		if skipping && (strings.HasPrefix(l, " ") || strings.HasPrefix(l, "\t")) {
			continue
		}
		k, _, _ := strings.Cut(l, ":")
		skipping = strings.EqualFold(k, field)
		if !skipping {
			out = append(out, l)
		}
	}
	return []byte(strings.Join(append(out, line), "\r\n") + "\r\n\r\n" + body)
}

func TestBuildErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		modify func(*Reply)
		want   error
	}{
		{name: "no recipients", modify: func(r *Reply) { r.To = nil }, want: ErrNoRecipient},
		{name: "bad from", modify: func(r *Reply) { r.From.Email = "not an address" }, want: ErrInvalidAddress},
		{name: "from without domain", modify: func(r *Reply) { r.From.Email = "ada" }, want: ErrInvalidAddress},
		{name: "injected to", modify: func(r *Reply) { r.To[0].Email = "bob@example.com\r\nBcc: e@x" }, want: ErrInvalidAddress},
		{name: "bad cc", modify: func(r *Reply) { r.Cc = []mail.Address{{Email: ""}} }, want: ErrInvalidAddress},
		{name: "reserved extra header", modify: func(r *Reply) { r.ExtraHeaders = map[string]string{"bcc": "e@x"} }, want: ErrReservedHeader},
		{name: "malformed extra header", modify: func(r *Reply) { r.ExtraHeaders = map[string]string{"X-A: b\r\nBcc": "e@x"} }, want: ErrReservedHeader},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := baseReply()
			tt.modify(&r)
			raw, _, err := Build(r)
			if !errors.Is(err, tt.want) {
				t.Fatalf("got error %v, want %v", err, tt.want)
			}
			if raw != nil {
				t.Errorf("got %d bytes with an error, want none", len(raw))
			}
		})
	}
	t.Run("malformed message id", func(t *testing.T) {
		r := baseReply()
		r.MessageID = "a b@c"
		if _, _, err := Build(r); err == nil {
			t.Fatal("got nil error for a message id with a space, want an error")
		}
	})
}

func TestBuildGeneratesMessageID(t *testing.T) {
	t.Parallel()
	r := baseReply()
	r.MessageID = ""
	r.Date = time.Time{}
	raw, id, err := Build(r)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	if !strings.HasSuffix(id, "@example.org") || strings.ContainsAny(id, "<> ") {
		t.Errorf("got generated id %q, want a bracket-free id on example.org", id)
	}
	h, _ := parse(t, raw)
	if got, _ := h.MessageID(); got != id {
		t.Errorf("Message-ID header: got %q, want %q", got, id)
	}
	if got, _ := h.Date(); got.IsZero() {
		t.Error("got no Date for a zero Reply.Date, want the current time")
	}
}

func TestReferences(t *testing.T) {
	t.Parallel()
	many := make([]string, 30)
	for i := range many {
		many[i] = fmt.Sprintf("r%d@x", i)
	}
	tests := []struct {
		name      string
		refs      []string
		inReplyTo []string
		parent    string
		want      []string
	}{
		{name: "refs plus parent", refs: []string{"<a@x>", "b@x"}, parent: "c@x", want: []string{"a@x", "b@x", "c@x"}},
		{name: "single in-reply-to used", inReplyTo: []string{"<a@x>"}, parent: "c@x", want: []string{"a@x", "c@x"}},
		{name: "multiple in-reply-to ignored", inReplyTo: []string{"a@x", "b@x"}, parent: "c@x", want: []string{"c@x"}},
		{name: "refs win over in-reply-to", refs: []string{"a@x"}, inReplyTo: []string{"z@x"}, parent: "c@x", want: []string{"a@x", "c@x"}},
		{name: "no parent id", refs: []string{"a@x"}, want: []string{"a@x"}},
		{name: "duplicates dropped", refs: []string{"a@x", "a@x", "c@x"}, parent: "c@x", want: []string{"a@x", "c@x"}},
		{name: "trimmed keeping first", refs: many, parent: "p@x", want: append([]string{"r0@x"}, append(slices.Clone(many[30-18:]), "p@x")...)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := references(tt.refs, tt.inReplyTo, cleanID(tt.parent))
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
			if len(got) > MaxReferences {
				t.Errorf("got %d ids, want at most %d", len(got), MaxReferences)
			}
		})
	}
}

// TestBuildReplySubject: Build writes mail.ReplySubject's subject (the one
// implementation), encoded and decoded intact; list-tagged and encoded
// parents never get a second "Re:".
func TestBuildReplySubject(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"[list] Re: topic", "Re: [list] topic"},
		{"Re: [list] Re: topic", "Re: [list] topic"},
		{"SV: Re[2]: Möte", "Re: Möte"},
		{"=?utf-8?q?Re=3A_caf=C3=A9?=", "Re: café"},
		{"Fwd: report", "Re: Fwd: report"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			r := baseReply()
			r.Subject = tt.in
			raw, _, err := Build(r)
			if err != nil {
				t.Fatalf("Build: %v", err)
			}
			h, _ := parse(t, raw)
			if got, _ := h.Subject(); got != tt.want {
				t.Errorf("Subject: got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestNewMessageID(t *testing.T) {
	t.Parallel()
	a, b := NewMessageID("Example.ORG"), NewMessageID("example.org")
	if a == b {
		t.Errorf("got the same id twice (%q), want unique ids", a)
	}
	for _, id := range []string{a, b} {
		if !strings.HasSuffix(id, "@example.org") || cleanID(id) != id {
			t.Errorf("got %q, want a bracket-free id ending in @example.org", id)
		}
	}
	if got := NewMessageID("bad domain\r\n"); !strings.HasSuffix(got, "@mailagent.invalid") {
		t.Errorf("got %q for a malformed domain, want @mailagent.invalid", got)
	}
}

// TestAutoSubmittedValues: a reply sent without a human is
// "auto-replied", automatic mail that answers nothing (a follow-up on a
// timer) "auto-generated", and there is only ever one such field.
func TestAutoSubmittedValues(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name            string
		replied, genned bool
		want            []string
	}{
		{"human", false, false, nil},
		{"auto-reply", true, false, []string{"auto-replied"}},
		{"auto-generated", false, true, []string{"auto-generated"}},
		{"both: the reply wins", true, true, []string{"auto-replied"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := baseReply()
			r.AutoSubmitted, r.AutoGenerated = c.replied, c.genned
			raw, _, err := Build(r)
			if err != nil {
				t.Fatal(err)
			}
			h, _ := parse(t, raw)
			if got := h.Values("Auto-Submitted"); !slices.Equal(got, c.want) {
				t.Errorf("Auto-Submitted: got %q, want %q", got, c.want)
			}
		})
	}
}
