package unsubscribe

import (
	"net/url"
	"strings"
	"testing"
	"unicode"

	"github.com/mailagent/mailagent/internal/netpolicy"
)

// hostileMailtos are List-Unsubscribe mailto targets the red team used to
// make mailagent write to this machine or the local network.
var hostileMailtos = []string{
	"u@[127.0.0.1]", "u@[10.20.30.40]", "root@localhost", "root@mail.localhost", "u@printer.local",
	"u@x.invalid", "u@corp.internal", "u@mailhost", "u@10.20.30.40", "u@nas.home.arpa",
}

// TestParseMailtoAdversarial (class "unsubscribe", the parser): a mailto
// to an address literal or a local name is refused, with the reason.
// Positive control: with those domains allowed (the rule bypassed), the
// same headers give the address.
func TestParseMailtoAdversarial(t *testing.T) {
	t.Parallel()
	tried, through := 0, 0
	for _, addr := range hostileMailtos {
		tried++
		o := Parse("<mailto:"+addr+"?subject=unsubscribe>", "")
		if o.Mailto != "" {
			through++
			t.Errorf("mailto:%s accepted as %q", addr, o.Mailto)
		}
		if len(o.Refused) != 1 || !strings.Contains(o.Refused[0], "not a public mail address") {
			t.Errorf("mailto:%s: refused %q, want the address rule's reason", addr, o.Refused)
		}
	}
	t.Logf("unsubscribe (parser): %d attacks tried, %d through", tried, through)
	if through != 0 {
		t.Fatalf("unsubscribe: %d of %d hostile mailtos accepted", through, tried)
	}
	landed := 0
	for _, addr := range hostileMailtos {
		if o := Parse("<mailto:"+addr+">", "", netpolicy.MailDomain(addr)); o.Mailto != "" {
			landed++
		}
	}
	if landed != len(hostileMailtos) {
		t.Fatalf("positive control: %d of %d landed with their domains allowed", landed, len(hostileMailtos))
	}
	// The owner's allowed domain is accepted; a public one always is.
	if o := Parse("<mailto:leave@lists.partner.test>", ""); o.Mailto != "leave@lists.partner.test" {
		t.Errorf("a public .test list address refused: %v", o.Refused)
	}
}

// FuzzParse: whatever the header says, Parse never panics, and what it
// returns obeys the contract: a one-click URL is https on port 443 with a
// qualified host and no user; a mailto is one public address; subject and
// body carry no control character (the body keeps line feeds); at most
// maxEntries entries are read.
func FuzzParse(f *testing.F) {
	for _, s := range []struct{ h, p string }{
		{"<mailto:leave@lists.example.org?subject=stop>, <https://lists.example.org/u/abc>", OneClickBody},
		{"<mailto:u@[127.0.0.1]>", ""},
		{"<https://10.0.0.7/u>", OneClickBody},
		{"<mailto:a@x.example?subject=hi%0D%0ABcc:%20boss@corp.example&body=a%0Ab>", ""},
	} {
		f.Add(s.h, s.p)
	}
	f.Fuzz(func(t *testing.T, header, post string) {
		o := Parse(header, post)
		if len(o.Refused) > maxEntries {
			t.Fatalf("%d refusals from at most %d entries", len(o.Refused), maxEntries)
		}
		if o.OneClick != "" {
			u, err := url.Parse(o.OneClick)
			if err != nil || !strings.EqualFold(u.Scheme, "https") || u.User != nil || u.Hostname() == "" || (u.Port() != "" && u.Port() != "443") {
				t.Fatalf("one-click %q breaks the contract", o.OneClick)
			}
			if !strings.EqualFold(strings.TrimSpace(post), OneClickBody) {
				t.Fatalf("one-click %q without the Post header (%q)", o.OneClick, post)
			}
		}
		if o.Mailto != "" {
			if err := netpolicy.CheckMailAddress(o.Mailto, nil); err != nil {
				t.Fatalf("mailto %q: %v", o.Mailto, err)
			}
			if o.Subject == "" {
				t.Fatal("a mailto without a subject")
			}
		}
		for _, r := range o.Subject {
			if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
				t.Fatalf("subject %q carries %U", o.Subject, r)
			}
		}
		for _, r := range o.Body {
			if r != '\n' && (unicode.IsControl(r) || unicode.Is(unicode.Cf, r)) {
				t.Fatalf("body %q carries %U", o.Body, r)
			}
		}
		if len(o.Subject) > 200 || len(o.Body) > 900 {
			t.Fatalf("subject %d or body %d bytes over the cap", len(o.Subject), len(o.Body))
		}
	})
}
