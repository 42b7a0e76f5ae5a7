package agent

import (
	"strings"
	"testing"

	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/store"
)

// Header samples below follow what each provider wrote on real delivered
// mail (the shapes collected in Delta Chat's dkimchecks test data and
// public header dumps), with the addresses changed.
const (
	gmailPass = `mx.google.com;
       dkim=pass header.i=@yahoo.com header.s=s2048 header.b=KF9PvN1o;
       spf=pass (google.com: domain of alice@yahoo.com designates 87.248.110.84 as permitted sender) smtp.mailfrom=alice@yahoo.com;
       dmarc=pass (p=REJECT sp=REJECT dis=NONE) header.from=yahoo.com`
	gmailDKIMOnly = `mx.google.com;
       dkim=pass header.i=@small.example header.s=mail header.b=Qx1;
       spf=neutral (google.com: 203.0.113.9 is neither permitted nor denied by best guess record for domain of bob@small.example) smtp.mailfrom=bob@small.example`
	gmailSPFOnly = `mx.google.com;
       spf=pass (google.com: domain of bob@small.example designates 203.0.113.9 as permitted sender) smtp.mailfrom=bob@small.example`
	gmailDMARCFail = `mx.google.com;
       spf=pass (google.com: domain of eve@attacker.example designates 198.51.100.7 as permitted sender) smtp.mailfrom=eve@attacker.example;
       dmarc=fail (p=REJECT sp=REJECT dis=QUARANTINE) header.from=yahoo.com`
	// The comment Gmail writes quotes the envelope sender, which the
	// sender chooses: here it tries to smuggle a DMARC pass through a ';'.
	gmailCommentInjection = `mx.google.com;
       spf=pass (google.com: domain of "x;dmarc=pass header.from=yahoo.com;y"@attacker.example designates 198.51.100.7 as permitted sender) smtp.mailfrom="x;dmarc=pass header.from=yahoo.com;y"@attacker.example`

	fastmail1 = `mx6.messagingengine.com;
    x-csa=none;
    x-me-sender=none;
    x-ptr=pass smtp.helo=mail-wm1-f67.google.com
      policy.ptr=mail-wm1-f67.google.com`
	fastmail2 = `mx6.messagingengine.com;
    bimi=skipped (DMARC Policy is not at enforcement)`
	fastmail3 = `mx6.messagingengine.com;
    arc=none (no signatures found)`
	fastmail4 = `mx6.messagingengine.com;
    dkim=pass (2048-bit rsa key sha256) header.d=gmail.com
      header.i=@gmail.com header.b=hr44hXYS header.a=rsa-sha256
      header.s=20210112 x-bits=2048;
    dmarc=pass policy.published-domain-policy=none
      policy.published-subdomain-policy=quarantine
      policy.applied-disposition=none policy.evaluated-disposition=none
      (p=none,sp=quarantine,d=none,d.eval=none) policy.policy-from=p
      header.from=gmail.com;
    iprev=pass smtp.remote-ip=209.85.128.67 (mail-wm1-f67.google.com);
    spf=pass smtp.mailfrom=alice@gmail.com
      smtp.helo=mail-wm1-f67.google.com`

	icloudBIMI  = `bimi.icloud.com; bimi=none`
	icloudDMARC = `dmarc.icloud.com; dmarc=pass header.from=aol.com`
	icloudDKIM  = `dkim-verifier.icloud.com;
	dkim=pass (2048-bit key) header.d=aol.com header.i=@aol.com header.b=XubAwo48`
	icloudSPF = `spf.icloud.com; spf=pass (spf.icloud.com: domain of alice@aol.com designates 87.248.110.84 as permitted sender) smtp.mailfrom=alice@aol.com`

	outlookPass = `spf=pass (sender IP is 209.85.128.67)
 smtp.mailfrom=gmail.com; dkim=pass (signature was verified)
 header.d=gmail.com;dmarc=pass action=none header.from=gmail.com;compauth=pass
 reason=100`
	outlookOld = `spf=pass (sender IP is 192.30.252.194)
 smtp.mailfrom=github.com; hotmail.com; dkim=pass (signature was verified)
 header.d=github.com;hotmail.com; dmarc=pass action=none
 header.from=github.com;`
	outlookFail = `spf=none (sender IP is 185.132.181.12)
 smtp.helo=dispatchb-eu1.ppe-hosted.com; dkim=none (message not signed)
 header.d=none;dmarc=fail action=none
 header.from=gmail.com;compauth=softpass reason=202`

	// Postfix with OpenDMARC (top, added last) and OpenDKIM. OpenDKIM's
	// comment holds a ';'.
	postfixDMARC = `mail.owner.example; dmarc=pass (p=none dis=none) header.from=sender.example`
	postfixDKIM  = `mail.owner.example;
	dkim=pass (2048-bit key; unprotected) header.d=sender.example header.i=@sender.example header.a=rsa-sha256 header.s=mail header.b=AbCdEf12`
	postfixNoDMARCRecord = `mail.owner.example; dmarc=none (p=none dis=none) header.from=sender.example`
)

func arMessage(from string, ar ...string) *mail.Message {
	m := &mail.Message{MessageID: "m@x", Header: map[string][]string{"From": {from}}}
	if i := strings.LastIndexByte(from, '<'); i >= 0 {
		m.From = mail.Address{Email: strings.TrimSuffix(from[i+1:], ">")}
	} else {
		m.From = mail.Address{Email: from}
	}
	if len(ar) > 0 {
		// As the owner's server writes them: adjacent, at the top.
		m.Header["Authentication-Results"] = ar
		for i := range ar {
			m.AuthResultsPos = append(m.AuthResultsPos, i)
		}
	}
	return m
}

// TestAuthResultsMustBeAdjacent parses whole messages: a field with the
// owner's id that sits below another field (the server's Received, say) is
// not part of the server's block, whatever it claims.
func TestAuthResultsMustBeAdjacent(t *testing.T) {
	t.Parallel()
	const top = "Authentication-Results: mx.example.test; dkim=none (no signature)\r\n"
	forged := "Authentication-Results: mx.example.test; dmarc=pass header.from=dkimonly.test\r\n"
	tail := "From: a@dkimonly.test\r\nTo: ada@example.test\r\nSubject: hi\r\nMessage-ID: <x@dkimonly.test>\r\n\r\nbody\r\n"
	tests := []struct {
		name string
		raw  string
		want bool
	}{
		{"forged below the server's Received", top + "Received: from x by mx.example.test\r\n" + forged + tail, false},
		{"forged right below, adjacent", top + forged + tail, true},
		{"real pass alone on top", forged + "Received: from x by y\r\n" + tail, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := AuthenticateSender(mail.Parse([]byte(tt.raw)), "mx.example.test")
			if got.Authenticated != tt.want {
				t.Fatalf("authenticated: got %v (%s), want %v", got.Authenticated, got.Reason, tt.want)
			}
		})
	}
}

func TestAuthenticateSender(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		authserv string
		from     string
		ar       []string
		want     bool
		method   string
		reason   string // a substring of the reason
	}{
		// Providers, as they write it.
		{name: "gmail dmarc pass", authserv: "mx.google.com", from: "Alice <alice@yahoo.com>", ar: []string{gmailPass}, want: true, method: store.AuthDMARC},
		{name: "gmail dkim pass via header.i, no dmarc record", authserv: "mx.google.com", from: "bob@small.example", ar: []string{gmailDKIMOnly}, want: true, method: store.AuthDKIM},
		{name: "gmail spf only", authserv: "mx.google.com", from: "bob@small.example", ar: []string{gmailSPFOnly}, reason: "only SPF passed"},
		{name: "gmail dmarc fail", authserv: "mx.google.com", from: "alice@yahoo.com", ar: []string{gmailDMARCFail}, reason: "DMARC fail for yahoo.com"},
		{name: "gmail comment and quoted string injection", authserv: "mx.google.com", from: "alice@yahoo.com", ar: []string{gmailCommentInjection}, reason: "only SPF passed"},
		{name: "fastmail, four headers, id per mx", authserv: "*.messagingengine.com", from: "alice@gmail.com", ar: []string{fastmail1, fastmail2, fastmail3, fastmail4}, want: true, method: store.AuthDMARC},
		{name: "fastmail exact id", authserv: "mx6.messagingengine.com", from: "alice@gmail.com", ar: []string{fastmail1, fastmail2, fastmail3, fastmail4}, want: true},
		{name: "fastmail other mx not configured", authserv: "mx1.messagingengine.com", from: "alice@gmail.com", ar: []string{fastmail1, fastmail4}, reason: `topmost Authentication-Results header is from "mx6.messagingengine.com"`},
		{name: "icloud, one header per method", authserv: "*.icloud.com", from: "alice@aol.com", ar: []string{icloudBIMI, icloudDMARC, icloudDKIM, icloudSPF}, want: true, method: store.AuthDMARC},
		{name: "icloud listed ids", authserv: "bimi.icloud.com, dmarc.icloud.com dkim-verifier.icloud.com,spf.icloud.com", from: "alice@aol.com", ar: []string{icloudBIMI, icloudDMARC, icloudDKIM, icloudSPF}, want: true},
		{name: "outlook without authserv-id", authserv: MicrosoftAuthservID, from: "alice@gmail.com", ar: []string{outlookPass}, want: true, method: store.AuthDMARC},
		{name: "outlook stray domain segments", authserv: MicrosoftAuthservID, from: "noreply@github.com", ar: []string{outlookOld}, want: true},
		{name: "outlook dmarc fail", authserv: MicrosoftAuthservID, from: "alice@gmail.com", ar: []string{outlookFail}, reason: "DMARC fail"},
		{name: "postfix opendmarc + opendkim", authserv: "mail.owner.example", from: "Carl <carl@sender.example>", ar: []string{postfixDMARC, postfixDKIM}, want: true, method: store.AuthDMARC},
		{name: "postfix no dmarc record, aligned dkim", authserv: "mail.owner.example", from: "carl@sender.example", ar: []string{postfixNoDMARCRecord, postfixDKIM}, want: true, method: store.AuthDKIM},
		{name: "dkim relaxed alignment from a subdomain", authserv: "mail.owner.example", from: "carl@news.sender.example", ar: []string{"mail.owner.example; dkim=pass header.d=sender.example"}, want: true, method: store.AuthDKIM},
		{name: "dkim relaxed alignment to a subdomain", authserv: "mail.owner.example", from: "carl@sender.example", ar: []string{"mail.owner.example; dkim=pass header.d=mail.sender.example"}, want: true, method: store.AuthDKIM},

		// Attacks and failures.
		{name: "no authserv_id configured", authserv: "", from: "alice@yahoo.com", ar: []string{gmailPass}, reason: "accounts.authserv_id is not set"},
		{name: "no Authentication-Results", authserv: "mx.google.com", from: "alice@yahoo.com", reason: "no Authentication-Results"},
		{name: "forged below a failing real one", authserv: "mx.google.com", from: "alice@yahoo.com",
			ar: []string{gmailDMARCFail, "mx.google.com; dmarc=pass header.from=yahoo.com; dkim=pass header.d=yahoo.com"}, reason: "DMARC fail"},
		{name: "forged after another id", authserv: "mail.owner.example", from: "carl@sender.example",
			ar: []string{"mail.owner.example; dmarc=none header.from=sender.example", "relay.elsewhere.example; spf=pass smtp.mailfrom=sender.example", "mail.owner.example; dkim=pass header.d=sender.example"}, reason: "no DMARC pass"},
		{name: "only another id", authserv: "mx.google.com", from: "alice@yahoo.com", ar: []string{"mx.attacker.example; dmarc=pass header.from=yahoo.com"}, reason: `"mx.attacker.example"`},
		{name: "ours below another id on top", authserv: "mx.google.com", from: "alice@yahoo.com",
			ar: []string{"mx.attacker.example; none", "mx.google.com; dmarc=pass header.from=yahoo.com"}, reason: "topmost"},
		{name: "dkim unaligned", authserv: "mx.google.com", from: "alice@yahoo.com", ar: []string{"mx.google.com; dkim=pass header.d=attacker.example; spf=pass smtp.mailfrom=attacker.example"}, reason: "only SPF"},
		{name: "dkim pass of a third party (ESP)", authserv: "mx.google.com", from: "ceo@victim.example", ar: []string{"mx.google.com; dkim=pass header.i=@mailgun.org header.s=mg; dmarc=none header.from=victim.example"}, reason: "no DMARC pass or aligned DKIM"},
		{name: "dkim pass for a public suffix", authserv: "mx.google.com", from: "ceo@victim.co.uk", ar: []string{"mx.google.com; dkim=pass header.d=co.uk"}, reason: "no DMARC pass"},
		{name: "dmarc pass for another domain", authserv: "mx.google.com", from: "alice@yahoo.com", ar: []string{"mx.google.com; dmarc=pass header.from=attacker.example"}, reason: "no DMARC pass"},
		{name: "conflicting dmarc in the block", authserv: "mail.owner.example", from: "carl@sender.example", ar: []string{postfixNoDMARCRecord, "mail.owner.example; dmarc=pass header.from=sender.example"}, reason: "conflicting DMARC"},
		{name: "conflicting dkim in the block", authserv: "mail.owner.example", from: "carl@sender.example", ar: []string{"mail.owner.example; dkim=fail header.d=sender.example", "mail.owner.example; dkim=pass header.d=sender.example"}, reason: "conflicting DKIM"},
		{name: "wildcard does not match the bare domain", authserv: "*.icloud.com", from: "alice@aol.com", ar: []string{"icloud.com; dmarc=pass header.from=aol.com"}, reason: "topmost"},
		{name: "wildcard does not match a lookalike", authserv: "*.icloud.com", from: "alice@aol.com", ar: []string{"x.evilicloud.com; dmarc=pass header.from=aol.com"}, reason: "topmost"},
		{name: "id-less header with a configured id", authserv: "mx.google.com", from: "alice@gmail.com", ar: []string{outlookPass}, reason: "topmost"},
		{name: "unclosed comment swallows the rest", authserv: "mx.google.com", from: "alice@yahoo.com", ar: []string{"mx.google.com; spf=pass (oops smtp.mailfrom=a; dmarc=pass header.from=yahoo.com"}, reason: "only SPF passed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := AuthenticateSender(arMessage(tt.from, tt.ar...), tt.authserv)
			if got.Authenticated != tt.want {
				t.Fatalf("authenticated: got %v (%s), want %v", got.Authenticated, got.Reason, tt.want)
			}
			if tt.method != "" && got.Method != tt.method {
				t.Errorf("method: got %q, want %q", got.Method, tt.method)
			}
			if !strings.Contains(got.Reason, tt.reason) || got.Reason == "" {
				t.Errorf("reason: got %q, want it to contain %q", got.Reason, tt.reason)
			}
			if got.Authenticated && got.Identity() != strings.ToLower(arMessage(tt.from).From.Email) {
				t.Errorf("identity: got %q", got.Identity())
			}
		})
	}
}

func TestAuthenticateSenderFromHeader(t *testing.T) {
	t.Parallel()
	ar := "mx.google.com; dmarc=pass header.from=yahoo.com"
	two := arMessage("alice@yahoo.com", ar)
	two.Header["From"] = []string{"alice@yahoo.com", "eve@attacker.example"}
	if got := AuthenticateSender(two, "mx.google.com"); got.Authenticated {
		t.Error("two From headers: authenticated")
	}
	list := arMessage("alice@yahoo.com", ar)
	list.Header["From"] = []string{"alice@yahoo.com, eve@attacker.example"}
	if got := AuthenticateSender(list, "mx.google.com"); got.Authenticated {
		t.Error("two From addresses: authenticated")
	}
	if got := AuthenticateSender(arMessage("", ar), "mx.google.com"); got.Authenticated || got.Reason == "" {
		t.Errorf("no From address: got %+v", got)
	}
}

func TestStripCFWS(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{`a (b) c`, `a   c`},
		{`a (b (nested; x) c) d`, `a   d`},
		{`a (b \) still) c`, `a   c`},
		{`x="q;r" y`, `x="" y`},
		{`x="a\"b;c" y`, `x="" y`},
		{`a (open; never closed`, `a `},
	}
	for _, tt := range tests {
		if got := stripCFWS(tt.in); got != tt.want {
			t.Errorf("stripCFWS(%q): got %q, want %q", tt.in, got, tt.want)
		}
	}
}

// Sent-folder mail is the owner's by where it was found; anything else
// follows the headers.
func TestSenderAuthOfSentFolder(t *testing.T) {
	t.Parallel()
	o := Owner{Addresses: []string{"ada@example.com"}, AuthservID: "mx.example.com"}
	if got := senderAuthOf(arMessage("Ada@Example.com"), o, true); !got.Authenticated || got.Method != store.AuthSentFolder || got.Address != "ada@example.com" {
		t.Errorf("owner in Sent: got %+v", got)
	}
	if got := senderAuthOf(arMessage("bob@example.org"), o, true); got.Authenticated {
		t.Errorf("someone else's mail in Sent: got %+v, want not authenticated", got)
	}
}
