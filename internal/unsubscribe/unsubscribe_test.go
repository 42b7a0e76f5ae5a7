package unsubscribe

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
)

func TestParseHostile(t *testing.T) {
	const post = "List-Unsubscribe=One-Click"
	cases := []struct {
		name, header, post string
		oneClick, mailto   string
		subject            string
		refusedAtLeast     int
	}{
		{"one-click and mailto", "<mailto:leave@lists.example.org?subject=stop>, <https://lists.example.org/u/abc>", post,
			"https://lists.example.org/u/abc", "leave@lists.example.org", "stop", 0},
		{"https without the Post header", "<https://lists.example.org/u/abc>", "", "", "", "", 1},
		{"post header with other text", "<https://lists.example.org/u/abc>", "List-Unsubscribe=One-Click; evil", "", "", "", 1},
		{"javascript", "<javascript:alert(1)>", post, "", "", "", 1},
		{"plain http", "<http://lists.example.org/u>", post, "", "", "", 1},
		{"loopback IP", "<https://127.0.0.1/u>", post, "", "", "", 1},
		{"localhost", "<https://localhost/u>", post, "", "", "", 1},
		{"private IP", "<https://10.0.0.7/u>", post, "", "", "", 1},
		{"link-local metadata", "<https://169.254.169.254/latest/meta-data>", post, "", "", "", 1},
		{"IPv6 loopback", "<https://[::1]/u>", post, "", "", "", 1},
		{"IPv4-mapped private", "<https://[::ffff:192.168.1.1]/u>", post, "", "", "", 1},
		{"userinfo", "<https://user:pw@lists.example.org/u>", post, "", "", "", 1},
		{"odd port", "<https://lists.example.org:8443/u>", post, "", "", "", 1},
		{"single-label host", "<https://intranet/u>", post, "", "", "", 1},
		{"CRLF in entry", "<https://lists.example.org/u\r\nBcc: x@evil.test>", post, "", "", "", 1},
		{"mailto with two addresses", "<mailto:a@x.example,b@y.example>", "", "", "", "", 1},
		{"mailto adding bcc", "<mailto:a@x.example?bcc=boss@corp.example>", "", "", "", "", 1},
		{"mailto header injection in subject", "<mailto:a@x.example?subject=hi%0D%0ABcc:%20boss@corp.example>", "", "", "a@x.example", "hiBcc: boss@corp.example", 0},
		{"mailto with a display name", "<mailto:Evil%20%3Cevil@x.example%3E>", "", "", "", "", 1},
		{"nothing", "", "", "", "", "", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := Parse(c.header, c.post)
			if o.OneClick != c.oneClick || o.Mailto != c.mailto {
				t.Fatalf("got one-click %q mailto %q, want %q %q (refused %v)", o.OneClick, o.Mailto, c.oneClick, c.mailto, o.Refused)
			}
			if c.subject != "" && o.Subject != c.subject {
				t.Errorf("subject %q, want %q", o.Subject, c.subject)
			}
			if strings.ContainsAny(o.Subject+o.Body, "\r\x00") {
				t.Errorf("control characters survive: %q %q", o.Subject, o.Body)
			}
			if len(o.Refused) < c.refusedAtLeast {
				t.Errorf("refused %v, want at least %d reasons", o.Refused, c.refusedAtLeast)
			}
		})
	}
}

func TestPostOneClick(t *testing.T) {
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
	for a, want := range map[string]bool{"93.184.216.34": true, "2606:4700::1": true, "127.0.0.1": false, "10.1.2.3": false,
		"172.16.0.1": false, "192.168.0.1": false, "100.64.0.1": false, "169.254.1.1": false, "::1": false, "fc00::1": false,
		"fe80::1": false, "0.0.0.0": false, "::ffff:10.0.0.1": false, "198.51.100.7": false} {
		if got := Public(netip.MustParseAddr(a)); got != want {
			t.Errorf("Public(%s) = %v, want %v", a, got, want)
		}
	}
}
