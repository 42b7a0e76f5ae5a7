package e2e

import (
	"bytes"
	"strings"
	"testing"

	"github.com/emersion/go-msgauth/authres"
)

// authMessage is testMessage with a body of its own, so a test can alter
// the body after signing.
func authMessage(from, subject, id string) []byte {
	return testMessage(from, Owner, subject, id)
}

// TestSenderAuthResults checks the stack's sender authentication against
// real software: OpenDKIM verifies the signature with the key it fetches
// from the private DNS server, OpenDMARC applies partner.test's p=reject
// policy to OpenDKIM's result, and both write Authentication-Results fields
// with the stack's authserv-id at the top of the delivered message. A
// sender's own Authentication-Results field naming that authserv-id never
// ends up in that top block: OpenDKIM deletes it when it carries a DKIM
// result, and otherwise it stays below Postfix's Received field.
func TestSenderAuthResults(t *testing.T) {
	s, a := RequireSenderAuth(t)
	if !a.DMARC {
		t.Fatal("MAILAGENT_E2E_DMARC is not 1: the stack runs no OpenDMARC")
	}
	const partnerFrom = "Bob <bob@partner.test>"
	forgedDKIM := "Authentication-Results: " + a.AuthservID + "; dkim=pass header.d=partner.test header.i=@partner.test"
	forgedDMARC := "Authentication-Results: " + a.AuthservID + "; dmarc=pass header.from=partner.test"
	forgedSPF := "Authentication-Results: " + a.AuthservID + "; spf=pass smtp.mailfrom=bob@partner.test"
	forgedFolded := "authentication-results:MX.Example.TEST (trust me);\r\n\tdkim=pass header.d=partner.test"
	prepend := func(field string, raw []byte) []byte { return append([]byte(field+"\r\n"), raw...) }
	wrongKey := &SenderAuth{AuthservID: a.AuthservID, Selector: a.Selector, Keys: map[string]string{PartnerDomain: a.Keys[OtherDomain]}}

	tests := []struct {
		name string
		from string
		// make builds the message as the sender submits it.
		make func(t *testing.T, raw []byte) []byte
		// The server's verdict in the topmost block.
		wantDKIM, wantDKIMDomain string // wantDKIMDomain "" = no header.d
		wantDMARC                string // "" = no DMARC result at all
		// forged is the sender-written field; kept says whether it must
		// still be in the message (below the server's block) or be gone.
		forged string
		kept   bool
	}{
		{
			name: "signed by the From domain", from: partnerFrom,
			make:     func(t *testing.T, raw []byte) []byte { return a.MustSign(t, raw, PartnerDomain) },
			wantDKIM: "pass", wantDKIMDomain: PartnerDomain, wantDMARC: "pass",
		},
		{
			name: "local user signed by the local domain", from: "Bob <" + Bob + ">",
			make:     func(t *testing.T, raw []byte) []byte { return a.MustSign(t, raw, LocalDomain) },
			wantDKIM: "pass", wantDKIMDomain: LocalDomain, wantDMARC: "pass",
		},
		{
			name: "unsigned", from: partnerFrom,
			make:     func(_ *testing.T, raw []byte) []byte { return raw },
			wantDKIM: "none", wantDMARC: "fail",
		},
		{
			name: "body altered after signing", from: partnerFrom,
			make: func(t *testing.T, raw []byte) []byte {
				return bytes.Replace(a.MustSign(t, raw, PartnerDomain), []byte("Hello from"), []byte("Pay the invoice from"), 1)
			},
			wantDKIM: "fail", wantDKIMDomain: PartnerDomain, wantDMARC: "fail",
		},
		{
			name: "subject altered after signing", from: partnerFrom,
			make: func(t *testing.T, raw []byte) []byte {
				return bytes.Replace(a.MustSign(t, raw, PartnerDomain), []byte("Subject: subject altered"), []byte("Subject: urgent wire transfer"), 1)
			},
			wantDKIM: "fail", wantDKIMDomain: PartnerDomain, wantDMARC: "fail",
		},
		{
			name: "signed with another domain's key", from: partnerFrom,
			make:     func(t *testing.T, raw []byte) []byte { return wrongKey.MustSign(t, raw, PartnerDomain) },
			wantDKIM: "fail", wantDKIMDomain: PartnerDomain, wantDMARC: "fail",
		},
		{
			// A valid signature of a domain that is not the From domain:
			// DKIM passes, DMARC (alignment) does not.
			name: "signed by an unaligned domain", from: partnerFrom,
			make:     func(t *testing.T, raw []byte) []byte { return a.MustSign(t, raw, OtherDomain) },
			wantDKIM: "pass", wantDKIMDomain: OtherDomain, wantDMARC: "fail",
		},
		{
			name: "forged dkim=pass, unsigned", from: partnerFrom,
			make:     func(_ *testing.T, raw []byte) []byte { return prepend(forgedDKIM, raw) },
			wantDKIM: "none", wantDMARC: "fail", forged: forgedDKIM, kept: false,
		},
		{
			name: "forged dkim=pass, folded and in another case", from: partnerFrom,
			make:     func(_ *testing.T, raw []byte) []byte { return prepend(forgedFolded, raw) },
			wantDKIM: "none", wantDMARC: "fail", forged: "trust me", kept: false,
		},
		{
			name: "forged dmarc=pass, unsigned", from: partnerFrom,
			make:     func(_ *testing.T, raw []byte) []byte { return prepend(forgedDMARC, raw) },
			wantDKIM: "none", wantDMARC: "fail", forged: forgedDMARC, kept: true,
		},
		{
			// A forged spf=pass must not turn into dmarc=pass. (OpenDMARC
			// does read the results of fields with its trusted
			// authserv-id: with OpenDKIM's KeepAuthResults on, the forged
			// dkim=pass cases above get dmarc=pass. The stack also sets
			// SPFIgnoreResults.)
			name: "forged spf=pass, unsigned", from: partnerFrom,
			make:     func(_ *testing.T, raw []byte) []byte { return prepend(forgedSPF, raw) },
			wantDKIM: "none", wantDMARC: "fail", forged: forgedSPF, kept: true,
		},
		{
			// The sender signs its own forged field: the signature still
			// verifies after OpenDKIM deletes the field, and only the
			// server's results remain.
			name: "forged dkim=pass inside a valid signature", from: partnerFrom,
			make: func(t *testing.T, raw []byte) []byte {
				return a.MustSign(t, prepend(forgedDKIM, raw), PartnerDomain)
			},
			wantDKIM: "pass", wantDKIMDomain: PartnerDomain, wantDMARC: "pass", forged: forgedDKIM, kept: false,
		},
		{
			// A server without a DMARC check: only OpenDKIM's field.
			name: "forged dmarc=pass, no DMARC check", from: "Dave <dave@" + DKIMOnlyDomain + ">",
			make: func(_ *testing.T, raw []byte) []byte {
				return prepend("Authentication-Results: "+a.AuthservID+"; dmarc=pass header.from="+DKIMOnlyDomain, raw)
			},
			wantDKIM: "none", wantDMARC: "", forged: "dmarc=pass header.from=" + DKIMOnlyDomain, kept: true,
		},
		{
			// A domain with no DMARC record in the private DNS.
			name: "unsigned from a domain without DMARC", from: "Someone <someone@nodmarc.test>",
			make:     func(_ *testing.T, raw []byte) []byte { return raw },
			wantDKIM: "none", wantDMARC: "none",
		},
	}
	var forgeries, gotThrough int
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := uniqueID(t)
			sent := tt.make(t, CRLF(authMessage(tt.from, strings.ToLower(tt.name), id)))
			s.Deliver(t, bareAddress(tt.from), []string{Owner}, sent)
			uid := s.WaitForMessageID(t, Owner, "INBOX", id, deliveryTimeout)
			got := s.FetchRaw(t, Owner, "INBOX", uid)

			fields, err := AuthResults(got)
			if err != nil {
				t.Fatalf("parse: %v\n%s", err, headerOf(got))
			}
			if len(fields) == 0 || !strings.EqualFold(fields[0].AuthservID, a.AuthservID) {
				t.Fatalf("topmost Authentication-Results: got %+v, want one by %s\n%s", fields, a.AuthservID, headerOf(got))
			}
			top := TopmostResults(fields, a.AuthservID)
			dkims, dmarcs := DKIMResults(top), DMARCResults(top)
			if len(dkims) != 1 {
				t.Fatalf("DKIM results in the server's block: got %d, want 1\n%s", len(dkims), headerOf(got))
			}
			if d := dkims[0]; string(d.Value) != tt.wantDKIM || !strings.EqualFold(d.Domain, tt.wantDKIMDomain) {
				t.Errorf("dkim: got %s header.d=%q, want %s header.d=%q\n%s", d.Value, d.Domain, tt.wantDKIM, tt.wantDKIMDomain, headerOf(got))
			}
			wantDMARCs := 1
			if tt.wantDMARC == "" {
				wantDMARCs = 0
			}
			if len(dmarcs) != wantDMARCs {
				t.Fatalf("DMARC results in the server's block: got %d, want %d\n%s", len(dmarcs), wantDMARCs, headerOf(got))
			}
			addr := bareAddress(tt.from)
			fromDomain := addr[strings.LastIndex(addr, "@")+1:]
			if d := dmarcs; len(d) == 1 && (string(d[0].Value) != tt.wantDMARC || !strings.EqualFold(d[0].From, fromDomain)) {
				d := d[0]
				t.Errorf("dmarc: got %s header.from=%q, want %s header.from=%q\n%s", d.Value, d.From, tt.wantDMARC, fromDomain, headerOf(got))
			}

			if tt.forged == "" {
				// Only the server's own block: nothing else claims its id.
				if n := countByID(fields, a.AuthservID); n != len(TopmostFields(fields, a.AuthservID)) {
					t.Errorf("got %d Authentication-Results fields by %s, want only the server's block\n%s", n, a.AuthservID, headerOf(got))
				}
				return
			}
			forgeries++
			f, found := fieldContaining(fields, tt.forged)
			switch {
			case !found && tt.kept:
				t.Errorf("the sender's field %q: got deleted, want it kept below the server's block (real behaviour changed?)\n%s", tt.forged, headerOf(got))
			case found && !tt.kept:
				t.Errorf("the sender's field %q: got kept at position %d, want it deleted by OpenDKIM\n%s", tt.forged, f.Pos, headerOf(got))
			}
			if found && inTopBlock(fields, a.AuthservID, f) {
				gotThrough++
				t.Errorf("the sender's field %q is in the server's topmost block\n%s", tt.forged, headerOf(got))
			}
		})
	}
	t.Logf("forged Authentication-Results fields: %d tried, %d reached the server's topmost block", forgeries, gotThrough)
}

// TestTopmostResults checks the block rule on hand-written headers, without
// the stack.
func TestTopmostResults(t *testing.T) {
	const id = "mx.example.test"
	tests := []struct {
		name   string
		header string
		want   []string // "dkim=pass" style, in order
	}{
		{
			name: "server block above a forged field",
			header: "Authentication-Results: mx.example.test; dmarc=fail header.from=partner.test\r\n" +
				"Authentication-Results: mx.example.test; dkim=none\r\n" +
				"Received: from x by mail.example.test\r\n" +
				"Authentication-Results: mx.example.test; dmarc=pass header.from=partner.test\r\n",
			want: []string{"dmarc=fail", "dkim=none"},
		},
		{
			name: "topmost field by another server",
			header: "Authentication-Results: evil.test; dkim=pass header.d=partner.test\r\n" +
				"Authentication-Results: mx.example.test; dkim=none\r\n",
			want: nil,
		},
		{
			name:   "no field",
			header: "Received: from x by y\r\n",
			want:   nil,
		},
		{
			name: "case of the authserv-id",
			header: "Received: from x by y\r\n" +
				"Authentication-Results: MX.Example.Test; dkim=pass header.d=partner.test\r\n",
			want: []string{"dkim=pass"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fields, err := AuthResults([]byte(tt.header + "From: a@b.test\r\n\r\nbody\r\n"))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range TopmostResults(fields, id) {
				switch r := r.(type) {
				case *authres.DKIMResult:
					got = append(got, "dkim="+string(r.Value))
				case *authres.DMARCResult:
					got = append(got, "dmarc="+string(r.Value))
				default:
					got = append(got, "other")
				}
			}
			if strings.Join(got, " ") != strings.Join(tt.want, " ") {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestSenderAuthFromEnv(t *testing.T) {
	full := map[string]string{
		"MAILAGENT_E2E_AUTHSERV_ID":   "mx.example.test",
		"MAILAGENT_E2E_DKIM_SELECTOR": "e2e",
		"MAILAGENT_E2E_DKIM_KEYS":     "partner.test:/k/p.private,Other.Test:/k/o.private",
		"MAILAGENT_E2E_DMARC":         "1",
	}
	a, err := senderAuthFromEnv(func(k string) string { return full[k] })
	if err != nil {
		t.Fatalf("got error %v, want nil", err)
	}
	if a.AuthservID != "mx.example.test" || a.Selector != "e2e" || !a.DMARC ||
		a.Keys["partner.test"] != "/k/p.private" || a.Keys["other.test"] != "/k/o.private" {
		t.Errorf("got %+v", a)
	}
	for k, want := range map[string]string{
		"MAILAGENT_E2E_AUTHSERV_ID":   "no DKIM/DMARC milters",
		"MAILAGENT_E2E_DKIM_SELECTOR": "SELECTOR is empty",
		"MAILAGENT_E2E_DKIM_KEYS":     "KEYS is empty",
	} {
		_, err := senderAuthFromEnv(func(key string) string {
			if key == k {
				return ""
			}
			return full[key]
		})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("without %s: got error %v, want one mentioning %q", k, err, want)
		}
	}
	if _, err := (&SenderAuth{Keys: map[string]string{}}).Sign([]byte("From: a@x.test\r\n\r\nhi\r\n"), "x.test"); err == nil {
		t.Error("Sign for a domain without a key: got nil error, want one")
	}
}

func bareAddress(a string) string {
	if i := strings.LastIndex(a, "<"); i >= 0 {
		return strings.TrimSuffix(a[i+1:], ">")
	}
	return a
}

// headerOf returns the header section of raw, for failure messages.
func headerOf(raw []byte) string {
	if i := bytes.Index(raw, []byte("\r\n\r\n")); i >= 0 {
		return string(raw[:i])
	}
	return string(raw)
}

func countByID(fields []AuthResultsField, id string) int {
	n := 0
	for _, f := range fields {
		if strings.EqualFold(f.AuthservID, id) {
			n++
		}
	}
	return n
}

func inTopBlock(fields []AuthResultsField, id string, f AuthResultsField) bool {
	for _, g := range TopmostFields(fields, id) {
		if g.Pos == f.Pos {
			return true
		}
	}
	return false
}

// fieldContaining finds the field whose value contains the distinctive
// part of a forged field (after "Authentication-Results:").
func fieldContaining(fields []AuthResultsField, forged string) (AuthResultsField, bool) {
	needle := forged
	if _, v, ok := strings.Cut(forged, ":"); ok && strings.HasPrefix(strings.ToLower(forged), "authentication-results") {
		needle = strings.TrimSpace(v)
	}
	for _, f := range fields {
		if strings.Contains(f.Value, needle) {
			return f, true
		}
	}
	return AuthResultsField{}, false
}

func TestStripComments(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{name: "opendkim", in: "mx.example.test; dkim=pass (2048-bit key; unprotected) header.d=partner.test",
			want: "mx.example.test; dkim=pass   header.d=partner.test"},
		{name: "nested", in: "a (b (c; d) e) f", want: "a   f"},
		{name: "quoted string kept", in: `dkim=fail reason="x (not a comment)"`, want: `dkim=fail reason="x (not a comment)"`},
		{name: "quoted pair in comment", in: `a (b \) c) d`, want: "a   d"},
		{name: "quoted pair in string", in: `r="a \" (b)" c`, want: `r="a \" (b)" c`},
		{name: "unclosed comment swallows the rest", in: "a (b; dkim=pass", want: "a "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := StripComments(tt.in); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}
