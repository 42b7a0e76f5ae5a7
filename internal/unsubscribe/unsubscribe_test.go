package unsubscribe

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
)

// parseCase is one row of TestParseHostile: a List-Unsubscribe header
// and its Post header, what Parse must make of them, and the defence that
// must stop it (defence "" for the benign rows). A row whose attack a
// standard library parser refuses as well names it in alsoStoppedBy.
type parseCase struct {
	name, header, post string
	oneClick, mailto   string
	subject            string
	refusedAtLeast     int
	defence            string
	alsoStoppedBy      string
}

const onePost = "List-Unsubscribe=One-Click"

// hostileParseCases are TestParseHostile's rows. The defences: "post"
// (the one-click URL needs List-Unsubscribe-Post exactly), "scheme"
// (https or mailto only), "url" (checkURL: user, port, internal or
// unqualified hosts), "entry" (no line break or NUL in an entry),
// "mailto" (exactly one public address, no recipient parameters),
// "clean" (the mailto's subject loses its control characters).
var hostileParseCases = []parseCase{
	{"one-click and mailto", "<mailto:leave@lists.example.org?subject=stop>, <https://lists.example.org/u/abc>", onePost,
		"https://lists.example.org/u/abc", "leave@lists.example.org", "stop", 0, "", ""},
	{"https without the Post header", "<https://lists.example.org/u/abc>", "", "", "", "", 1, "post", ""},
	{"post header with other text", "<https://lists.example.org/u/abc>", "List-Unsubscribe=One-Click; evil", "", "", "", 1, "post", ""},
	{"javascript", "<javascript:alert(1)>", onePost, "", "", "", 1, "scheme", ""},
	{"plain http", "<http://lists.example.org/u>", onePost, "", "", "", 1, "scheme", ""},
	{"loopback IP", "<https://127.0.0.1/u>", onePost, "", "", "", 1, "url", ""},
	{"localhost", "<https://localhost/u>", onePost, "", "", "", 1, "url", ""},
	{"private IP", "<https://10.0.0.7/u>", onePost, "", "", "", 1, "url", ""},
	{"link-local metadata", "<https://169.254.169.254/latest/meta-data>", onePost, "", "", "", 1, "url", ""},
	{"IPv6 loopback", "<https://[::1]/u>", onePost, "", "", "", 1, "url", ""},
	{"IPv4-mapped private", "<https://[::ffff:192.168.1.1]/u>", onePost, "", "", "", 1, "url", ""},
	{"userinfo", "<https://user:pw@lists.example.org/u>", onePost, "", "", "", 1, "url", ""},
	{"odd port", "<https://lists.example.org:8443/u>", onePost, "", "", "", 1, "url", ""},
	{"single-label host", "<https://intranet/u>", onePost, "", "", "", 1, "url", ""},
	{"CRLF in entry", "<https://lists.example.org/u\r\nBcc: x@evil.test>", onePost, "", "", "", 1, "entry", "url.Parse (control character)"},
	{"mailto with two addresses", "<mailto:a@x.example,b@y.example>", "", "", "", "", 1, "mailto", ""},
	{"mailto adding bcc", "<mailto:a@x.example?bcc=boss@corp.example>", "", "", "", "", 1, "mailto", ""},
	{"mailto header injection in subject", "<mailto:a@x.example?subject=hi%0D%0ABcc:%20boss@corp.example>", "", "", "a@x.example", "hiBcc: boss@corp.example", 0, "clean", ""},
	{"mailto with a display name", "<mailto:Evil%20%3Cevil@x.example%3E>", "", "", "", "", 1, "mailto", ""},
	{"nothing", "", "", "", "", "", 0, "", ""},
}

// parseProblems is what is wrong with Parse's answer to c: another
// one-click URL or mailto than c's, another subject, a control character
// kept, or fewer refusals than c says.
func parseProblems(c parseCase) []string {
	o := Parse(c.header, c.post)
	var problems []string
	if o.OneClick != c.oneClick || o.Mailto != c.mailto {
		problems = append(problems, fmt.Sprintf("got one-click %q mailto %q, want %q %q (refused %v)", o.OneClick, o.Mailto, c.oneClick, c.mailto, o.Refused))
	}
	if c.subject != "" && o.Subject != c.subject {
		problems = append(problems, fmt.Sprintf("subject %q, want %q", o.Subject, c.subject))
	}
	if strings.ContainsAny(o.Subject+o.Body, "\r\x00") {
		problems = append(problems, fmt.Sprintf("control characters survive: %q %q", o.Subject, o.Body))
	}
	if len(o.Refused) < c.refusedAtLeast {
		problems = append(problems, fmt.Sprintf("refused %v, want at least %d reasons", o.Refused, c.refusedAtLeast))
	}
	return problems
}

// TestParseHostile: hostile List-Unsubscribe headers (internal and
// unqualified hosts, other schemes, line breaks, mailtos adding
// recipients or injecting headers) are refused or cleaned; the benign
// rows are read.
func TestParseHostile(t *testing.T) {
	t.Parallel()
	tried, through := 0, 0
	for _, c := range hostileParseCases {
		t.Run(c.name, func(t *testing.T) {
			if c.defence != "" {
				tried++
			}
			if problems := parseProblems(c); len(problems) > 0 {
				if c.defence != "" {
					through++
				}
				for _, p := range problems {
					t.Error(p)
				}
			}
		})
	}
	t.Logf("hostile List-Unsubscribe headers: %d tried, %d got through", tried, through)
	if tried == 0 || through != 0 {
		t.Errorf("got %d of %d through, want 0", through, tried)
	}
}

// TestParseHostileLandsWithoutChecks is the positive control of
// TestParseHostile: with Parse's own checks off (parseChecksOff) and the
// URL checks off (urlCheckOff), each attack row is caught by the test's
// own check (parseProblems): its one-click URL, mailto or uncleaned
// subject gets through. The row a standard parser refuses as well
// (alsoStoppedBy: url.Parse refuses a control character in a URL, so the
// entry check is a second layer there) must still be refused, and is
// counted apart. Not parallel: the switches are global.
func TestParseHostileLandsWithoutChecks(t *testing.T) {
	parseChecksOff.Store(true)
	defer parseChecksOff.Store(false)
	defer SwitchOffURLCheckForTest()()
	tried, landed, layered, stillRefused := 0, 0, 0, 0
	for _, c := range hostileParseCases {
		if c.defence == "" {
			continue
		}
		problems := parseProblems(c)
		if c.alsoStoppedBy != "" {
			layered++
			if len(problems) == 0 {
				stillRefused++
			} else {
				t.Errorf("%s: got through with the checks off (%v), want it refused by %s", c.name, problems, c.alsoStoppedBy)
			}
			continue
		}
		tried++
		if len(problems) > 0 {
			landed++
		} else {
			t.Errorf("%s: refused with the checks off: %s is not what stops it", c.name, c.defence)
		}
	}
	t.Logf("without the checks: %d of %d attacks landed; %d of %d stopped by a standard parser as well", landed, tried, stillRefused, layered)
	if tried == 0 || landed != tried {
		t.Errorf("positive control: got %d of %d landed, want all", landed, tried)
	}
	if stillRefused != layered {
		t.Errorf("second layer: got %d of %d refused, want all", stillRefused, layered)
	}
}

func TestPostOneClick(t *testing.T) {
	t.Parallel()
	var gotBody, gotType, gotMethod string
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		gotBody, gotType, gotMethod = string(b), r.Header.Get("Content-Type"), r.Method
		if r.URL.Path == "/redirect" {
			http.Redirect(w, r, "http://10.0.0.1/", http.StatusFound)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	p := &Poster{Transport: srv.Client().Transport}
	if err := p.Post(context.Background(), srv.URL+"/u/abc"); err != nil {
		t.Fatal(err)
	}
	if gotMethod != http.MethodPost || gotBody != OneClickBody || gotType != "application/x-www-form-urlencoded" {
		t.Fatalf("got %s %q %q, want an RFC 8058 POST", gotMethod, gotBody, gotType)
	}
	if err := p.Post(context.Background(), srv.URL+"/redirect"); err == nil {
		t.Fatal("a redirect counted as success")
	}
	if err := p.Post(context.Background(), "http://lists.example.org/u"); err == nil {
		t.Fatal("plain http accepted")
	}
	// The default dialer refuses internal addresses, whatever the URL says.
	def := &Poster{}
	if err := def.Post(context.Background(), srv.URL+"/u/abc"); !errors.Is(err, ErrRefusedAddress) {
		t.Fatalf("POST to %s with the default dialer: got %v, want ErrRefusedAddress", srv.URL, err)
	}
}

func TestPublic(t *testing.T) {
	t.Parallel()
	for a, want := range map[string]bool{"93.184.216.34": true, "2606:4700::1": true, "127.0.0.1": false, "10.1.2.3": false,
		"172.16.0.1": false, "192.168.0.1": false, "100.64.0.1": false, "169.254.1.1": false, "::1": false, "fc00::1": false,
		"fe80::1": false, "0.0.0.0": false, "::ffff:10.0.0.1": false, "198.51.100.7": false} {
		if got := Public(netip.MustParseAddr(a)); got != want {
			t.Errorf("Public(%s) = %v, want %v", a, got, want)
		}
	}
}
