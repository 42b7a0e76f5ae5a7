// Package unsubscribe reads a mailing list's List-Unsubscribe header
// (RFC 2369) and carries out the RFC 8058 one-click POST. Its contract:
// every value in the header is written by the sender and treated as
// hostile. A one-click URL is used only when List-Unsubscribe-Post says
// exactly "List-Unsubscribe=One-Click", the URL is https, has no user
// information and its host is a DNS name or a public address; the POST
// then dials only public addresses (checked after DNS resolution, so a
// name that resolves to 127.0.0.1 or 10.0.0.1 is refused too), follows no
// redirect, and is bounded by a timeout. A mailto target must be exactly
// one public mail address (netpolicy.CheckMailAddress: no address
// literal, no local or dotless name, unless the owner allowed its
// domain), the mailto counterpart of the one-click rule; its subject and
// body parameters are cleaned of control characters. Nothing is sent without the caller's decision: this package
// only parses, and posts when asked.
package unsubscribe

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/mail"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
	"unicode"

	"github.com/mailagent/mailagent/internal/netpolicy"
)

// OneClickBody is the body of an RFC 8058 POST.
const OneClickBody = "List-Unsubscribe=One-Click"

// Options is what a message offers for unsubscribing.
type Options struct {
	// OneClick is the https URL to POST to (RFC 8058); "" when the list
	// offers none, or none that passed the checks.
	OneClick string
	// Mailto is the address to write to; "" when none.
	Mailto string
	// Subject and Body are the mailto's parameters (cleaned; Subject
	// defaults to "unsubscribe").
	Subject, Body string
	// Refused lists the header's entries that were not used, with why.
	Refused []string
}

// Methods of a result.
const (
	MethodOneClick = "one_click"
	MethodMailto   = "mailto"
)

// ErrNone: the message offers no usable way to unsubscribe.
var ErrNone = errors.New("the message offers no usable unsubscribe method")

// maxEntries bounds how many <…> entries of the header are read.
const maxEntries = 8

// Parse reads the List-Unsubscribe and List-Unsubscribe-Post values.
// allowDomains are the domains the owner allows mail to although they are
// not public (the accounts' own, policy.allow_domains); see
// netpolicy.CheckMailAddress. Parse never fails: what it cannot use is in
// Refused, with why.
func Parse(listUnsubscribe, listUnsubscribePost string, allowDomains ...string) Options {
	var o Options
	off := parseChecksOff.Load()
	oneClick := off || strings.EqualFold(strings.TrimSpace(listUnsubscribePost), OneClickBody)
	entries := splitEntries(listUnsubscribe)
	for _, raw := range entries {
		if !off && strings.ContainsAny(raw, "\r\n\x00") {
			o.Refused = append(o.Refused, "an entry contains a line break or NUL")
			continue
		}
		u, err := url.Parse(raw)
		if err != nil {
			o.Refused = append(o.Refused, fmt.Sprintf("%q is not a URL", clip(raw)))
			continue
		}
		scheme := strings.ToLower(u.Scheme)
		if off && scheme != "mailto" {
			scheme = "https" // the scheme rule off: any other URL is the one-click one
		}
		switch scheme {
		case "https":
			if !oneClick {
				o.Refused = append(o.Refused, fmt.Sprintf("%s: no List-Unsubscribe-Post: %s (opening it in a browser is left to you)", clip(raw), OneClickBody))
				continue
			}
			if why := checkURL(u); why != "" {
				o.Refused = append(o.Refused, clip(raw)+": "+why)
				continue
			}
			if o.OneClick == "" {
				o.OneClick = u.String()
			}
		case "mailto":
			addr, subject, body, why := parseMailto(u, allowDomains)
			if why != "" {
				o.Refused = append(o.Refused, clip(raw)+": "+why)
				continue
			}
			if o.Mailto == "" {
				o.Mailto, o.Subject, o.Body = addr, subject, body
			}
		default:
			o.Refused = append(o.Refused, fmt.Sprintf("%s: scheme %q is neither https nor mailto", clip(raw), u.Scheme))
		}
	}
	return o
}

// splitEntries returns the <…> entries of a List-Unsubscribe value.
func splitEntries(v string) []string {
	var out []string
	for len(out) < maxEntries {
		i := strings.IndexByte(v, '<')
		if i < 0 {
			break
		}
		j := strings.IndexByte(v[i:], '>')
		if j < 0 {
			break
		}
		out = append(out, strings.TrimSpace(v[i+1:i+j]))
		v = v[i+j+1:]
	}
	return out
}

func clip(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return -1
		}
		return r
	}, s)
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// parseChecksOff makes Parse keep what its own checks refuse: the
// one-click URL is used without List-Unsubscribe-Post, an entry with a
// line break or NUL is read, any URL that is not a mailto is taken as the
// one-click URL (the https-only rule), and a mailto's target is used as
// written (recipient parameters, several or named addresses, non-public
// addresses) with its subject and body uncleaned. The URL checks are
// urlCheckOff's. It exists only for the positive control of
// TestParseHostile (package unsubscribe); nothing in the product sets it.
// Never from a parallel test.
var parseChecksOff atomic.Bool

// urlCheckOff makes checkURL accept every URL. It exists only for the
// positive control of the hostile one-click tests
// (SwitchOffURLCheckForTest); nothing in the product sets it.
var urlCheckOff atomic.Bool

// SwitchOffURLCheckForTest turns the one-click URL checks (user info,
// port, loopback, internal and unqualified hosts) off until the returned
// function is called. The scheme rules stay. Only adversarial tests'
// positive controls call it, never from a parallel test.
func SwitchOffURLCheckForTest() (restore func()) {
	urlCheckOff.Store(true)
	return func() { urlCheckOff.Store(false) }
}

// checkURL says why a one-click URL is refused ("" when it is fine).
func checkURL(u *url.URL) string {
	if urlCheckOff.Load() {
		return ""
	}
	switch {
	case u.User != nil:
		return "the URL carries a user name or password"
	case u.Host == "" || u.Opaque != "":
		return "the URL has no host"
	case u.Port() != "" && u.Port() != "443":
		return "the URL names a port other than 443"
	}
	host := u.Hostname()
	if netpolicy.IsLoopback(host) || strings.EqualFold(strings.TrimSuffix(host, "."), "localhost") {
		return "the host is this machine"
	}
	if a, err := netip.ParseAddr(host); err == nil {
		if !Public(a) {
			return "the host is an internal address"
		}
	} else if !strings.Contains(host, ".") {
		return "the host is not a fully qualified name"
	}
	return ""
}

// Public reports whether a is an address on the public internet (not
// loopback, private, link-local, CGNAT, unspecified, multicast or
// documentation space).
func Public(a netip.Addr) bool {
	a = a.Unmap()
	if !a.IsValid() || a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() ||
		a.IsMulticast() || a.IsUnspecified() || a.IsInterfaceLocalMulticast() {
		return false
	}
	for _, p := range nonPublic {
		if p.Contains(a) {
			return false
		}
	}
	return true
}

var nonPublic = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("192.0.2.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("198.51.100.0/24"),
	netip.MustParsePrefix("203.0.113.0/24"),
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("64:ff9b::/96"),
	netip.MustParsePrefix("2001:db8::/32"),
}

// parseMailto checks a mailto URL: exactly one address, and its subject
// and body parameters cleaned.
func parseMailto(u *url.URL, allowDomains []string) (addr, subject, body, why string) {
	to := u.Opaque
	if to == "" {
		to = u.Path
	}
	to, err := url.PathUnescape(to)
	if err != nil {
		return "", "", "", "the address is not escaped correctly"
	}
	q := u.Query()
	if parseChecksOff.Load() {
		subject = q.Get("subject")
		if subject == "" {
			subject = "unsubscribe"
		}
		return strings.TrimSpace(to), subject, q.Get("body"), ""
	}
	if len(q["to"]) > 0 || len(q["cc"]) > 0 || len(q["bcc"]) > 0 {
		return "", "", "", "the mailto adds recipients (to/cc/bcc)"
	}
	if strings.ContainsAny(to, ",;\r\n") {
		return "", "", "", "the mailto names more than one address"
	}
	a, err := mail.ParseAddress(to)
	if err != nil || a.Name != "" || a.Address != strings.TrimSpace(to) {
		return "", "", "", "the mailto is not exactly one address"
	}
	if err := netpolicy.CheckMailAddress(a.Address, allowDomains); err != nil {
		return "", "", "", err.Error()
	}
	subject = cleanLine(q.Get("subject"), 200)
	if subject == "" {
		subject = "unsubscribe"
	}
	return a.Address, subject, cleanText(q.Get("body"), 900), ""
}

func cleanLine(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return -1
		}
		return r
	}, s)
	if len(s) > n {
		s = s[:n]
	}
	return strings.TrimSpace(s)
}

func cleanText(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if r == '\n' {
			return r
		}
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return -1
		}
		return r
	}, s)
	if len(s) > n {
		s = s[:n]
	}
	return s
}

// Poster performs the one-click POST.
type Poster struct {
	// Timeout bounds the whole request (default 15s).
	Timeout time.Duration
	// Allow decides which resolved addresses may be dialled; nil is
	// Public. Tests allow loopback here, nothing else should.
	Allow func(netip.Addr) bool
	// Transport, when set, replaces the default transport (its dialer
	// must apply Allow itself; tests only).
	Transport http.RoundTripper
}

// ErrRefusedAddress: the URL's host resolved to an address Allow refuses.
var ErrRefusedAddress = errors.New("the unsubscribe host resolves to an internal address")

// Post sends the RFC 8058 one-click POST to target, which must have come
// from Parse. A 2xx answer is success; anything else, a redirect
// included, is an error.
func (p *Poster) Post(ctx context.Context, target string) error {
	u, err := url.Parse(target)
	if err != nil || !strings.EqualFold(u.Scheme, "https") {
		return fmt.Errorf("one-click unsubscribe: %q is not an https URL", clip(target))
	}
	timeout := p.Timeout
	if timeout <= 0 {
		timeout = 15 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	allow := p.Allow
	if allow == nil {
		allow = Public
	}
	rt := p.Transport
	if rt == nil {
		d := &net.Dialer{Timeout: timeout, Control: func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil || !allow(ap.Addr()) {
				return fmt.Errorf("%w (%s)", ErrRefusedAddress, address)
			}
			return nil
		}}
		tlsCfg, err := netpolicy.TLSConfig(u.Hostname(), "", nil)
		if err != nil {
			return err
		}
		rt = &http.Transport{DialContext: d.DialContext, TLSClientConfig: tlsCfg, ForceAttemptHTTP2: true,
			TLSHandshakeTimeout: timeout, ResponseHeaderTimeout: timeout, Proxy: nil}
	}
	client := &http.Client{Transport: rt, Timeout: timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), strings.NewReader(OneClickBody))
	if err != nil {
		return fmt.Errorf("one-click unsubscribe: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("one-click unsubscribe to %s: %w", u.Host, err)
	}
	defer func() { _ = resp.Body.Close() }()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("one-click unsubscribe to %s: the server answered %s", u.Host, resp.Status)
	}
	return nil
}
