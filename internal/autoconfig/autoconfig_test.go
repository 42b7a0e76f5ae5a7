package autoconfig

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeResolver answers SRV queries from a table keyed "_service._proto.name"
// and records every query.
type fakeResolver struct {
	mu      sync.Mutex
	records map[string][]*net.SRV
	queries []string
}

func (f *fakeResolver) LookupSRV(ctx context.Context, service, proto, name string) (string, []*net.SRV, error) {
	key := fmt.Sprintf("_%s._%s.%s", service, proto, name)
	f.mu.Lock()
	f.queries = append(f.queries, key)
	f.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return "", nil, err
	}
	recs, ok := f.records[key]
	if !ok {
		return "", nil, &net.DNSError{Err: "no such host", Name: key, IsNotFound: true}
	}
	return key, recs, nil
}

// noNetwork fails the test if any HTTP request is made.
type noNetwork struct{ t *testing.T }

func (n noNetwork) RoundTrip(r *http.Request) (*http.Response, error) {
	n.t.Errorf("unexpected HTTP request to %s", r.URL)
	return nil, errors.New("network disabled in test")
}

const exampleConfig = `<?xml version="1.0" encoding="UTF-8"?>
<clientConfig version="1.1">
  <emailProvider id="example.org">
    <domain>example.org</domain>
    <displayName>Example Org Mail</displayName>
    <displayShortName>Example</displayShortName>
    <incomingServer type="pop3">
      <hostname>pop.example.org</hostname>
      <port>995</port>
      <socketType>SSL</socketType>
      <username>%EMAILADDRESS%</username>
      <authentication>password-cleartext</authentication>
    </incomingServer>
    <incomingServer type="imap">
      <hostname>imap.%EMAILDOMAIN%</hostname>
      <port>993</port>
      <socketType>SSL</socketType>
      <username>%EMAILLOCALPART%</username>
      <authentication>OAuth2</authentication>
      <authentication>password-cleartext</authentication>
    </incomingServer>
    <outgoingServer type="smtp">
      <hostname>smtp.example.org</hostname>
      <port>587</port>
      <socketType>STARTTLS</socketType>
      <username>%EMAILADDRESS%</username>
      <authentication>password-cleartext</authentication>
    </outgoingServer>
  </emailProvider>
</clientConfig>`

// responder is an httptest server that answers each path with a fixed
// status and body, and records the request URIs it saw.
type responder struct {
	srv    *httptest.Server
	mu     sync.Mutex
	seen   []string
	routes map[string]func(w http.ResponseWriter, r *http.Request)
}

func newResponder(t *testing.T, routes map[string]func(w http.ResponseWriter, r *http.Request)) *responder {
	t.Helper()
	rs := &responder{routes: routes}
	rs.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rs.mu.Lock()
		rs.seen = append(rs.seen, r.URL.RequestURI())
		rs.mu.Unlock()
		if h, ok := rs.routes[r.URL.Path]; ok {
			h(w, r)
			return
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(rs.srv.Close)
	return rs
}

func (rs *responder) requests() []string {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return append([]string(nil), rs.seen...)
}

func serve(body string) func(w http.ResponseWriter, r *http.Request) {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/xml")
		_, _ = io.WriteString(w, body)
	}
}

// block holds the request until the client gives up on it.
func block(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }

// opts points every source at rs and res.
func (rs *responder) opts(res Resolver) Options {
	return Options{
		HTTPClient: rs.srv.Client(),
		Resolver:   res,
		ISPDBURL:   rs.srv.URL + "/ispdb/",
		AutoconfigURL: func(domain string) []string {
			return []string{
				rs.srv.URL + "/autoconfig/" + domain + "/mail/config-v1.1.xml",
				rs.srv.URL + "/" + domain + "/.well-known/autoconfig/mail/config-v1.1.xml",
			}
		},
	}
}

func TestDiscoverPresetNeedsNoNetwork(t *testing.T) {
	t.Parallel()
	opts := Options{
		HTTPClient: &http.Client{Transport: noNetwork{t}},
		Resolver:   &fakeResolver{},
	}
	got, err := Discover(context.Background(), "Ada <Ada@GMail.com>", opts)
	if err != nil {
		t.Fatalf("Discover: %v", err)
	}
	if got.Source != "preset:gmail" {
		t.Errorf("source: got %q, want %q", got.Source, "preset:gmail")
	}
	if got.IMAP.Addr() != "imap.gmail.com:993" || got.IMAP.Security != SecurityTLS {
		t.Errorf("imap: got %s %s, want imap.gmail.com:993 tls", got.IMAP.Addr(), got.IMAP.Security)
	}
	if got.SMTP.Addr() != "smtp.gmail.com:465" || got.SMTP.Security != SecurityTLS {
		t.Errorf("smtp: got %s %s, want smtp.gmail.com:465 tls", got.SMTP.Addr(), got.SMTP.Security)
	}
	if got.IMAP.Username != "Ada@gmail.com" {
		t.Errorf("username: got %q, want %q", got.IMAP.Username, "Ada@gmail.com")
	}
}

func TestDiscoverOrder(t *testing.T) {
	t.Parallel()
	const email = "ada@example.org"
	imapSRV := map[string][]*net.SRV{
		"_imaps._tcp.example.org": {{Target: ".", Port: 0}},
		"_imap._tcp.example.org": {
			{Target: "backup.example.org.", Port: 143, Priority: 20, Weight: 5},
			{Target: "mx1.example.org.", Port: 143, Priority: 10, Weight: 1},
			{Target: "mx2.example.org.", Port: 143, Priority: 10, Weight: 9},
		},
		"_submissions._tcp.example.org": {{Target: "smtp.example.org.", Port: 465, Priority: 0}},
	}
	tests := []struct {
		name       string
		routes     map[string]func(http.ResponseWriter, *http.Request)
		srv        map[string][]*net.SRV
		wantSource string // "<url>" is replaced by the test server's URL
		wantIMAP   string
		wantSec    string
		wantSMTP   string // "" means nil
	}{
		{
			name:       "domain autoconfig",
			routes:     map[string]func(http.ResponseWriter, *http.Request){"/autoconfig/example.org/mail/config-v1.1.xml": serve(exampleConfig)},
			wantSource: "autoconfig:<url>/autoconfig/example.org/mail/config-v1.1.xml?emailaddress=ada%40example.org",
			wantIMAP:   "imap.example.org:993", wantSec: SecurityTLS, wantSMTP: "smtp.example.org:587",
		},
		{
			name:       "well-known after autoconfig host fails",
			routes:     map[string]func(http.ResponseWriter, *http.Request){"/example.org/.well-known/autoconfig/mail/config-v1.1.xml": serve(exampleConfig)},
			wantSource: "autoconfig:<url>/example.org/.well-known/autoconfig/mail/config-v1.1.xml",
			wantIMAP:   "imap.example.org:993", wantSec: SecurityTLS, wantSMTP: "smtp.example.org:587",
		},
		{
			name:       "ispdb after autoconfig fails",
			routes:     map[string]func(http.ResponseWriter, *http.Request){"/ispdb/example.org": serve(exampleConfig)},
			wantSource: "ispdb",
			wantIMAP:   "imap.example.org:993", wantSec: SecurityTLS, wantSMTP: "smtp.example.org:587",
		},
		{
			name: "ispdb after autoconfig times out",
			routes: map[string]func(http.ResponseWriter, *http.Request){
				"/autoconfig/example.org/mail/config-v1.1.xml":             block,
				"/example.org/.well-known/autoconfig/mail/config-v1.1.xml": block,
				"/ispdb/example.org": serve(exampleConfig),
			},
			wantSource: "ispdb",
			wantIMAP:   "imap.example.org:993", wantSec: SecurityTLS, wantSMTP: "smtp.example.org:587",
		},
		{
			name: "srv after broken documents",
			routes: map[string]func(http.ResponseWriter, *http.Request){
				"/autoconfig/example.org/mail/config-v1.1.xml": serve("<clientConfig><emailProvider>"),
				"/ispdb/example.org":                           serve(`<clientConfig version="1.1"><emailProvider id="x"></emailProvider></clientConfig>`),
			},
			srv:        imapSRV,
			wantSource: "srv",
			wantIMAP:   "mx2.example.org:143", wantSec: SecuritySTARTTLS, wantSMTP: "smtp.example.org:465",
		},
		{
			name: "srv without submission record",
			srv: map[string][]*net.SRV{
				"_imaps._tcp.example.org": {{Target: "imap.example.org", Port: 993}},
			},
			wantSource: "srv",
			wantIMAP:   "imap.example.org:993", wantSec: SecurityTLS,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs := newResponder(t, tt.routes)
			opts := rs.opts(&fakeResolver{records: tt.srv})
			opts.Timeout = 100 * time.Millisecond // only the blocking case ever waits for it
			got, err := Discover(context.Background(), email, opts)
			if err != nil {
				t.Fatalf("Discover: %v", err)
			}
			wantSource := strings.ReplaceAll(tt.wantSource, "<url>", rs.srv.URL)
			if got.Source != wantSource {
				t.Errorf("source: got %q, want %q", got.Source, wantSource)
			}
			if got.IMAP.Addr() != tt.wantIMAP || got.IMAP.Security != tt.wantSec {
				t.Errorf("imap: got %s %s, want %s %s", got.IMAP.Addr(), got.IMAP.Security, tt.wantIMAP, tt.wantSec)
			}
			gotSMTP := ""
			if got.SMTP != nil {
				gotSMTP = got.SMTP.Addr()
			}
			if gotSMTP != tt.wantSMTP {
				t.Errorf("smtp: got %q, want %q", gotSMTP, tt.wantSMTP)
			}
		})
	}
}

func TestDiscoverResolvesTemplatesAndPrefersPassword(t *testing.T) {
	t.Parallel()
	rs := newResponder(t, map[string]func(http.ResponseWriter, *http.Request){
		"/ispdb/example.org": serve(exampleConfig),
	})
	got, err := Discover(context.Background(), "ada.l@Example.ORG", rs.opts(&fakeResolver{}))
	if err != nil {
		t.Fatalf("Discover: %v", err)
	}
	if got.Provider != "Example Org Mail" {
		t.Errorf("provider: got %q, want %q", got.Provider, "Example Org Mail")
	}
	if got.IMAP.Username != "ada.l" {
		t.Errorf("imap username: got %q, want %q", got.IMAP.Username, "ada.l")
	}
	if got.SMTP.Username != "ada.l@example.org" {
		t.Errorf("smtp username: got %q, want %q", got.SMTP.Username, "ada.l@example.org")
	}
	if got.IMAP.Auth != AuthPassword {
		t.Errorf("auth: got %q, want %q", got.IMAP.Auth, AuthPassword)
	}
	// The first autoconfig URL carries the address; the well-known one does not.
	reqs := rs.requests()
	if len(reqs) != 3 {
		t.Fatalf("requests: got %q, want 3", reqs)
	}
	if !strings.HasSuffix(reqs[0], "?emailaddress=ada.l%40example.org") {
		t.Errorf("autoconfig request: got %q, want the emailaddress query", reqs[0])
	}
	if strings.Contains(reqs[1], "?") {
		t.Errorf("well-known request: got %q, want no query", reqs[1])
	}
}

func TestDiscoverAllFail(t *testing.T) {
	t.Parallel()
	rs := newResponder(t, map[string]func(http.ResponseWriter, *http.Request){
		"/autoconfig/example.org/mail/config-v1.1.xml": func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "boom", http.StatusInternalServerError)
		},
	})
	res := &fakeResolver{records: map[string][]*net.SRV{
		"_imaps._tcp.example.org": {{Target: ".", Port: 0}},
		"_imap._tcp.example.org":  {{Target: ".", Port: 0}},
	}}
	_, err := Discover(context.Background(), "ada@example.org", rs.opts(res))
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("got error %v, want ErrNotFound", err)
	}
	if !errors.Is(err, errNotOffered) {
		t.Errorf("got error %v, want it to wrap errNotOffered", err)
	}
	for _, want := range []string{"status 500", "status 404", "ispdb:", "srv:", "_imaps._tcp.example.org"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q: want it to mention %q", err, want)
		}
	}
}

func TestDiscoverCancelled(t *testing.T) {
	t.Parallel()
	rs := newResponder(t, map[string]func(http.ResponseWriter, *http.Request){
		"/autoconfig/example.org/mail/config-v1.1.xml": block,
	})
	ctx, cancel := context.WithCancel(context.Background())
	opts := rs.opts(&fakeResolver{})
	opts.HTTPClient.Transport = cancelOnRequest{next: opts.HTTPClient.Transport, cancel: cancel}
	_, err := Discover(ctx, "ada@example.org", opts)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got error %v, want context.Canceled", err)
	}
	if n := len(rs.requests()); n > 1 {
		t.Errorf("requests after cancel: got %d, want at most 1", n)
	}
}

// cancelOnRequest cancels the caller's context as soon as a request starts.
type cancelOnRequest struct {
	next   http.RoundTripper
	cancel context.CancelFunc
}

func (c cancelOnRequest) RoundTrip(r *http.Request) (*http.Response, error) {
	c.cancel()
	return c.next.RoundTrip(r)
}

func TestInternationalDomain(t *testing.T) {
	t.Parallel()
	rs := newResponder(t, map[string]func(http.ResponseWriter, *http.Request){
		"/ispdb/xn--bcher-kva.example": serve(exampleConfig),
	})
	got, err := Discover(context.Background(), "ada@Bücher.example", rs.opts(&fakeResolver{}))
	if err != nil {
		t.Fatalf("Discover: %v", err)
	}
	if got.Source != "ispdb" || got.SMTP.Username != "ada@xn--bcher-kva.example" {
		t.Errorf("got source %q username %q, want ispdb and the punycode address", got.Source, got.SMTP.Username)
	}
}

func TestDiscoverInvalidEmail(t *testing.T) {
	t.Parallel()
	for _, email := range []string{"", "ada", "ada@", "@example.org", "ada@exa mple.org", "ada@bad_host!.org"} {
		t.Run(email, func(t *testing.T) {
			_, err := Discover(context.Background(), email, Options{HTTPClient: &http.Client{Transport: noNetwork{t}}})
			if !errors.Is(err, ErrInvalidEmail) {
				t.Errorf("got error %v, want ErrInvalidEmail", err)
			}
		})
	}
}

func TestParseClientConfig(t *testing.T) {
	t.Parallel()
	wrap := func(servers string) string {
		return `<clientConfig version="1.1"><emailProvider id="example.org">` + servers + `</emailProvider></clientConfig>`
	}
	server := func(kind, typ, host, port, socket string) string {
		return fmt.Sprintf(`<%s type="%s"><hostname>%s</hostname><port>%s</port><socketType>%s</socketType><username>%%EMAILADDRESS%%</username></%s>`,
			kind, typ, host, port, socket, kind)
	}
	tests := []struct {
		name         string
		doc          string
		wantErr      bool
		wantIMAP     string
		wantSec      string
		wantSMTP     string
		wantWarnings int
	}{
		{
			name:     "prefers SSL over STARTTLS listed first",
			doc:      wrap(server("incomingServer", "imap", "a.example.org", "143", "STARTTLS") + server("incomingServer", "imap", "b.example.org", "993", "SSL")),
			wantIMAP: "b.example.org:993", wantSec: SecurityTLS,
		},
		{
			name:     "plain is insecure and flagged",
			doc:      wrap(server("incomingServer", "imap", "a.example.org", "143", "plain") + server("outgoingServer", "smtp", "s.example.org", "25", "plain")),
			wantIMAP: "a.example.org:143", wantSec: SecurityInsecure, wantSMTP: "s.example.org:25", wantWarnings: 2,
		},
		{
			name:     "skips bad host and port",
			doc:      wrap(server("incomingServer", "imap", "evil host;rm", "993", "SSL") + server("incomingServer", "imap", "ok.example.org", "99999", "SSL") + server("incomingServer", "imap", "ok.example.org", "143", "STARTTLS")),
			wantIMAP: "ok.example.org:143", wantSec: SecuritySTARTTLS,
		},
		{
			name:    "pop3 only",
			doc:     wrap(server("incomingServer", "pop3", "pop.example.org", "995", "SSL")),
			wantErr: true,
		},
		{
			name:    "unknown socket type",
			doc:     wrap(server("incomingServer", "imap", "imap.example.org", "993", "QUANTUM")),
			wantErr: true,
		},
		{name: "malformed", doc: "<clientConfig><emailProvider>", wantErr: true},
		{name: "not a clientConfig", doc: "<html><body>hello</body></html>", wantErr: true},
		{name: "empty", doc: "", wantErr: true},
		{name: "latin1 refused", doc: `<?xml version="1.0" encoding="ISO-8859-1"?>` + wrap(server("incomingServer", "imap", "a.example.org", "993", "SSL")), wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseClientConfig(strings.NewReader(tt.doc), "ada@example.org")
			if tt.wantErr {
				if err == nil {
					t.Fatalf("got result %+v, want an error", got)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseClientConfig: %v", err)
			}
			if got.IMAP.Addr() != tt.wantIMAP || got.IMAP.Security != tt.wantSec {
				t.Errorf("imap: got %s %s, want %s %s", got.IMAP.Addr(), got.IMAP.Security, tt.wantIMAP, tt.wantSec)
			}
			gotSMTP := ""
			if got.SMTP != nil {
				gotSMTP = got.SMTP.Addr()
			}
			if gotSMTP != tt.wantSMTP {
				t.Errorf("smtp: got %q, want %q", gotSMTP, tt.wantSMTP)
			}
			if len(got.Warnings) != tt.wantWarnings {
				t.Errorf("warnings: got %q, want %d", got.Warnings, tt.wantWarnings)
			}
		})
	}
}

func TestPresetFor(t *testing.T) {
	t.Parallel()
	tests := []struct {
		email    string
		wantID   string
		wantIMAP string
		wantSMTP string
		wantSec  string // SMTP security
		wantUser string // IMAP username
	}{
		{"a@gmail.com", "gmail", "imap.gmail.com:993", "smtp.gmail.com:465", SecurityTLS, "a@gmail.com"},
		{"a@googlemail.com", "gmail", "imap.gmail.com:993", "smtp.gmail.com:465", SecurityTLS, "a@googlemail.com"},
		{"a@fastmail.com", "fastmail", "imap.fastmail.com:993", "smtp.fastmail.com:465", SecurityTLS, "a@fastmail.com"},
		{"a@icloud.com", "icloud", "imap.mail.me.com:993", "smtp.mail.me.com:587", SecuritySTARTTLS, "a"},
		{"a@me.com", "icloud", "imap.mail.me.com:993", "smtp.mail.me.com:587", SecuritySTARTTLS, "a"},
		{"a@outlook.com", "outlook", "outlook.office365.com:993", "smtp.office365.com:587", SecuritySTARTTLS, "a@outlook.com"},
		{"a@hotmail.com", "outlook", "outlook.office365.com:993", "smtp.office365.com:587", SecuritySTARTTLS, "a@hotmail.com"},
		{"a@live.com", "outlook", "outlook.office365.com:993", "smtp.office365.com:587", SecuritySTARTTLS, "a@live.com"},
		{"a@proton.me", "proton", "127.0.0.1:1143", "127.0.0.1:1025", SecuritySTARTTLS, "a@proton.me"},
		{"a@protonmail.com", "proton", "127.0.0.1:1143", "127.0.0.1:1025", SecuritySTARTTLS, "a@protonmail.com"},
		{"a@example.org", "", "", "", "", ""},
		{"not an address", "", "", "", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.email, func(t *testing.T) {
			p, ok := PresetFor(tt.email)
			if ok != (tt.wantID != "") || p.ID != tt.wantID {
				t.Fatalf("got %q %v, want %q", p.ID, ok, tt.wantID)
			}
			if !ok {
				return
			}
			r, err := p.Result(tt.email)
			if err != nil {
				t.Fatalf("Result: %v", err)
			}
			if r.IMAP.Addr() != tt.wantIMAP || r.SMTP.Addr() != tt.wantSMTP || r.SMTP.Security != tt.wantSec {
				t.Errorf("got %s / %s %s, want %s / %s %s", r.IMAP.Addr(), r.SMTP.Addr(), r.SMTP.Security, tt.wantIMAP, tt.wantSMTP, tt.wantSec)
			}
			if r.IMAP.Username != tt.wantUser {
				t.Errorf("imap username: got %q, want %q", r.IMAP.Username, tt.wantUser)
			}
			if r.Source != "preset:"+tt.wantID {
				t.Errorf("source: got %q, want %q", r.Source, "preset:"+tt.wantID)
			}
		})
	}
}

func TestPresetsWellFormed(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	var ids []string
	for _, p := range Presets() {
		ids = append(ids, p.ID)
		for _, d := range p.Domains {
			if seen[d] {
				t.Errorf("domain %q claimed twice", d)
			}
			seen[d] = true
		}
		r, err := p.Result("someone@example.net")
		if err != nil {
			t.Fatalf("%s: Result: %v", p.ID, err)
		}
		for _, s := range []*Server{r.IMAP, r.SMTP} {
			if !validHost(s.Host) || s.Port <= 0 || s.Security == SecurityInsecure || strings.Contains(s.Username, "%") {
				t.Errorf("%s: bad server %+v", p.ID, *s)
			}
		}
	}
	if last := ids[len(ids)-1]; last != "generic" {
		t.Errorf("last preset: got %q, want generic", last)
	}
	if g := Presets()[len(ids)-1]; len(g.Domains) != 0 {
		t.Errorf("generic domains: got %q, want none", g.Domains)
	}
}

func TestHTTPSOnlyRedirect(t *testing.T) {
	t.Parallel()
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, exampleConfig)
	}))
	defer plain.Close()
	secure := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, plain.URL+"/config.xml", http.StatusFound)
	}))
	defer secure.Close()
	c := secure.Client()
	c.CheckRedirect = httpsOnlyRedirect
	vars := templateVars{address: "ada@example.org", local: "ada", domain: "example.org"}
	_, err := fetchClientConfig(context.Background(), c, secure.URL, vars)
	if err == nil || !strings.Contains(err.Error(), "refusing redirect") {
		t.Errorf("got error %v, want a refused redirect", err)
	}
}

func TestDefaultAutoconfigURLs(t *testing.T) {
	t.Parallel()
	got := DefaultAutoconfigURLs("example.org")
	want := []string{
		"https://autoconfig.example.org/mail/config-v1.1.xml",
		"https://example.org/.well-known/autoconfig/mail/config-v1.1.xml",
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := withEmailQuery(want[0], "a+b@example.org"); got != want[0]+"?emailaddress=a%2Bb%40example.org" {
		t.Errorf("withEmailQuery: got %q", got)
	}
}
