package agent

import (
	"strings"
	"testing"

	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/store"
)

// fuzzAuthservID is the owner's server in FuzzAuthenticateSender.
const fuzzAuthservID = "mx.example.com"

// FuzzAuthenticateSender feeds hostile Authentication-Results headers
// (one per line of ar, topmost first), From values and DKIM-Signature
// headers, optionally with a hostile header block put above the owner's
// results. Invariants: it never panics; an authenticated verdict names
// exactly the From address's key (mail.AddrKey), by DMARC or DKIM, and
// only when the topmost Authentication-Results header carries the
// configured authserv-id and a pass.
// Seeds: testdata/fuzz/FuzzAuthenticateSender and the f.Add calls.
func FuzzAuthenticateSender(f *testing.F) {
	f.Add("mx.example.com; dmarc=pass header.from=example.org", "Bob <bob@example.org>", "v=1; a=rsa-sha256; d=example.org; s=s1; b=abc")
	f.Add("mx.example.com; dkim=pass header.d=mail.example.org header.i=@example.org", "bob@example.org", "")
	f.Add("evil.example; dmarc=pass header.from=example.org\nmx.example.com; dmarc=pass header.from=example.org", "bob@example.org", "")
	f.Add("mx.example.com (mx.example.com; dmarc=pass); dmarc=fail header.from=example.org", "bob@example.org", "")
	f.Add("mx.example.com; dmarc=pass header.from=evil.example", "\"bob@example.org\" <mallory@evil.example>", "d=example.org")
	f.Add("mx.example.com; dkim=pass header.d=co.uk", "a@b.co.uk", "d=co.uk")
	f.Add("mx.example.com; dmarc=pass header.from=example.org; dmarc=none header.from=example.org", "bob@example.org, eve@example.org", "")
	f.Add("MX.EXAMPLE.COM.; DMARC=PASS header.from=EXAMPLE.ORG", "<BOB@Example.ORG>", "")
	f.Add("mx.example.com; spf=pass smtp.mailfrom=example.org", "bob@example.org", "")
	f.Add("mx.example.com; dmarc=pass header.from=\"example.org;\" (x", "bob@example.org", "\x00\xff")
	f.Fuzz(func(t *testing.T, ar, from, dkim string) {
		var b strings.Builder
		for _, line := range strings.Split(ar, "\n") {
			b.WriteString("Authentication-Results: " + strings.TrimRight(line, "\r") + "\r\n")
		}
		if dkim != "" {
			b.WriteString("DKIM-Signature: " + strings.ReplaceAll(dkim, "\n", " ") + "\r\n")
		}
		b.WriteString("From: " + strings.ReplaceAll(from, "\n", " ") + "\r\nTo: ada@example.com\r\nSubject: s\r\n\r\nbody\r\n")
		m := mail.Parse([]byte(b.String()))
		a := AuthenticateSender(m, fuzzAuthservID)
		if !a.Authenticated {
			if a.Method != "" {
				t.Fatalf("not authenticated but method %q", a.Method)
			}
			return
		}
		if a.Address == "" || a.Address != mail.AddrKey(m.From.Email) {
			t.Fatalf("authenticated %q, but the From address's key is %q", a.Address, mail.AddrKey(m.From.Email))
		}
		if a.Method != store.AuthDMARC && a.Method != store.AuthDKIM {
			t.Fatalf("authenticated by %q", a.Method)
		}
		values := m.Header["Authentication-Results"]
		if len(values) == 0 {
			t.Fatalf("authenticated with no Authentication-Results header")
		}
		top := strings.ToLower(strings.TrimSpace(stripCFWS(values[0])))
		if id, _, _ := strings.Cut(top, ";"); strings.TrimSuffix(strings.TrimSpace(id), ".") != fuzzAuthservID {
			t.Fatalf("authenticated, but the topmost header's authserv-id is %q, not %q (%q)", id, fuzzAuthservID, values[0])
		}
		passed := false
		for _, v := range values {
			v = strings.ToLower(stripCFWS(v))
			passed = passed || strings.Contains(v, "dmarc=pass") || strings.Contains(v, "dkim=pass")
		}
		if !passed {
			t.Fatalf("authenticated with no dmarc=pass or dkim=pass in %q", values)
		}
	})
}
