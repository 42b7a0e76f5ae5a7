// Package autoconfig finds IMAP and SMTP server settings for an email
// address, so that first-run setup can ask for an address and a password
// and nothing else.
//
// Contract:
//   - Discover tries, in order: a built-in preset for the address's domain
//     (Presets), Mozilla autoconfig served by the domain itself, the
//     Thunderbird ISPDB, and RFC 6186 SRV records. The first source that
//     yields an IMAP server wins; its Result names the source.
//   - Every network source runs under its own short timeout
//     (Options.Timeout, 4s by default), so one dead host cannot stall setup.
//     When every source fails, the error wraps ErrNotFound and joins the
//     error of each source.
//   - Results are suggestions read from the network. Host names and ports
//     are validated, username templates (%EMAILADDRESS%, %EMAILLOCALPART%,
//     %EMAILDOMAIN%) are resolved, and a server without TLS is reported
//     with Security "insecure" and a warning, never silently accepted.
//   - Nothing here sends a password anywhere. The only data that leaves the
//     machine is the domain, and the address itself in the autoconfig query
//     string sent to the domain's own server (as Thunderbird does).
//
// The package imports nothing from the rest of the project.
package autoconfig

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/mail"
	"net/url"
	"strings"
	"time"

	"golang.org/x/net/idna"
)

// Security values for Server.Security.
const (
	SecurityTLS      = "tls"      // implicit TLS from the first byte (IMAPS 993, SMTPS 465)
	SecuritySTARTTLS = "starttls" // plain connection upgraded with STARTTLS
	SecurityInsecure = "insecure" // no TLS at all; passwords travel in clear
)

// Auth values for Server.Auth, spelled as in Mozilla's clientConfig format.
const (
	AuthPassword = "password-cleartext" // LOGIN / AUTH PLAIN over TLS
	AuthOAuth2   = "OAuth2"
)

// ErrNotFound is wrapped by Discover's error when no source found settings.
var ErrNotFound = errors.New("no mail server settings found")

// ErrInvalidEmail is wrapped by Discover's error when the address cannot be
// parsed.
var ErrInvalidEmail = errors.New("invalid email address")

// Server is one IMAP or SMTP endpoint.
type Server struct {
	Host     string `json:"host"`
	Port     int    `json:"port"`
	Security string `json:"security"` // tls | starttls | insecure
	// Username is the login name with templates resolved (usually the
	// address itself).
	Username string `json:"username"`
	Auth     string `json:"auth"` // password-cleartext, OAuth2, …
}

// Addr returns "host:port".
func (s *Server) Addr() string {
	if s == nil {
		return ""
	}
	return net.JoinHostPort(s.Host, fmt.Sprint(s.Port))
}

// Result is the outcome of Discover.
type Result struct {
	IMAP *Server `json:"imap"`
	// SMTP is nil when the source offered no submission server; the caller
	// has to ask for one.
	SMTP *Server `json:"smtp,omitempty"`
	// Source names where the settings came from: "preset:gmail",
	// "autoconfig:<url>", "ispdb" or "srv".
	Source   string `json:"source"`
	Provider string `json:"provider,omitempty"` // display name, when known
	// Notes carries provider advice for the user (app passwords, Bridge
	// certificates), from presets only.
	Notes string `json:"notes,omitempty"`
	// Warnings lists what the user must know before trusting the result,
	// such as a server without TLS.
	Warnings []string `json:"warnings,omitempty"`
}

// Resolver looks up SRV records; *net.Resolver satisfies it.
type Resolver interface {
	LookupSRV(ctx context.Context, service, proto, name string) (string, []*net.SRV, error)
}

// Options configures Discover. The zero value uses the real network.
type Options struct {
	// HTTPClient fetches autoconfig and ISPDB documents. Nil means a client
	// that refuses redirects away from https.
	HTTPClient *http.Client
	// Resolver answers SRV queries. Nil means net.DefaultResolver.
	Resolver Resolver
	// Timeout bounds each source (each autoconfig URL, the ISPDB fetch,
	// the SRV lookups together). Zero means 4s.
	Timeout time.Duration
	// ISPDBURL is the ISPDB base; the domain is appended. Empty means
	// https://autoconfig.thunderbird.net/v1.1/.
	ISPDBURL string
	// AutoconfigURL lists the URLs to try for a domain's own autoconfig
	// document. Nil means DefaultAutoconfigURLs.
	AutoconfigURL func(domain string) []string
	// SkipPresets makes Discover ignore the built-in presets (for tests and
	// for users whose provider changed its settings).
	SkipPresets bool
}

// DefaultTimeout is the per-source timeout when Options.Timeout is zero.
const DefaultTimeout = 4 * time.Second

// DefaultISPDBURL is the Thunderbird ISPDB base URL.
const DefaultISPDBURL = "https://autoconfig.thunderbird.net/v1.1/"

// maxDocument caps the size of a fetched clientConfig document.
const maxDocument = 1 << 20

// DefaultAutoconfigURLs returns the two places Thunderbird looks for a
// domain's own configuration. Discover adds ?emailaddress=<address> to every
// URL outside /.well-known/, as Thunderbird does.
func DefaultAutoconfigURLs(domain string) []string {
	return []string{
		"https://autoconfig." + domain + "/mail/config-v1.1.xml",
		"https://" + domain + "/.well-known/autoconfig/mail/config-v1.1.xml",
	}
}

// Discover finds server settings for email. See the package documentation
// for the order of sources. It returns an error wrapping ErrInvalidEmail for
// an unusable address, ctx.Err() when ctx ends, and an error wrapping
// ErrNotFound (joined with each source's error) when nothing was found.
func Discover(ctx context.Context, email string, opts Options) (*Result, error) {
	addr, local, domain, err := splitEmail(email)
	if err != nil {
		return nil, err
	}
	if !opts.SkipPresets {
		if p, ok := PresetFor(addr); ok {
			return p.Result(addr)
		}
	}
	o := opts.withDefaults()
	vars := templateVars{address: addr, local: local, domain: domain}

	var errs []error
	try := func(source string, f func(context.Context) (*Result, error)) (*Result, error) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		sctx, cancel := context.WithTimeout(ctx, o.Timeout)
		defer cancel()
		r, err := f(sctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			errs = append(errs, fmt.Errorf("%s: %w", source, err))
			return nil, nil
		}
		r.Source = source
		return r, nil
	}

	for _, u := range o.AutoconfigURL(domain) {
		u = withEmailQuery(u, addr)
		r, err := try("autoconfig:"+u, func(ctx context.Context) (*Result, error) {
			return fetchClientConfig(ctx, o.HTTPClient, u, vars)
		})
		if err != nil || r != nil {
			return r, err
		}
	}

	ispdb := strings.TrimSuffix(o.ISPDBURL, "/") + "/" + url.PathEscape(domain)
	r, err := try("ispdb", func(ctx context.Context) (*Result, error) {
		return fetchClientConfig(ctx, o.HTTPClient, ispdb, vars)
	})
	if err != nil || r != nil {
		return r, err
	}

	r, err = try("srv", func(ctx context.Context) (*Result, error) {
		return lookupSRV(ctx, o.Resolver, domain, addr)
	})
	if err != nil || r != nil {
		return r, err
	}
	return nil, fmt.Errorf("%w for %s: %w", ErrNotFound, domain, errors.Join(errs...))
}

func (o Options) withDefaults() Options {
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{CheckRedirect: httpsOnlyRedirect}
	}
	if o.Resolver == nil {
		o.Resolver = net.DefaultResolver
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.ISPDBURL == "" {
		o.ISPDBURL = DefaultISPDBURL
	}
	if o.AutoconfigURL == nil {
		o.AutoconfigURL = DefaultAutoconfigURLs
	}
	return o
}

// httpsOnlyRedirect stops a redirect from an https autoconfig URL to plain
// http, where anyone on the path could substitute their own servers.
func httpsOnlyRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= 5 {
		return errors.New("too many redirects")
	}
	if req.URL.Scheme != "https" {
		return fmt.Errorf("refusing redirect to %s URL", req.URL.Scheme)
	}
	return nil
}

// withEmailQuery adds emailaddress=<addr> to an autoconfig URL, the way
// Thunderbird does, so that providers hosting many domains can answer.
// .well-known URLs are left unchanged, as Thunderbird leaves them.
func withEmailQuery(raw, addr string) string {
	u, err := url.Parse(raw)
	if err != nil || strings.Contains(u.Path, "/.well-known/") {
		return raw
	}
	q := u.Query()
	if q.Get("emailaddress") == "" {
		q.Set("emailaddress", addr)
		u.RawQuery = q.Encode()
	}
	return u.String()
}

// splitEmail parses a bare address (a display name is tolerated) and
// returns it with its local part and its domain, lowercased and in its
// ASCII (punycode) form, which is what DNS and the URLs need.
func splitEmail(email string) (addr, local, domain string, err error) {
	a, perr := mail.ParseAddress(strings.TrimSpace(email))
	if perr != nil {
		return "", "", "", fmt.Errorf("%w %q: %w", ErrInvalidEmail, email, perr)
	}
	at := strings.LastIndexByte(a.Address, '@')
	if at <= 0 || at == len(a.Address)-1 {
		return "", "", "", fmt.Errorf("%w %q: no domain", ErrInvalidEmail, email)
	}
	local = a.Address[:at]
	domain, ierr := idna.Lookup.ToASCII(strings.TrimSuffix(a.Address[at+1:], "."))
	if ierr != nil || !validHost(domain) {
		return "", "", "", fmt.Errorf("%w %q: bad domain", ErrInvalidEmail, email)
	}
	return local + "@" + domain, local, domain, nil
}

// validHost reports whether h looks like a DNS name or an IP address. It is
// deliberately strict: a host read from the network ends up in a dial string.
func validHost(h string) bool {
	if h == "" || len(h) > 253 {
		return false
	}
	if net.ParseIP(h) != nil {
		return true
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, c := range label {
			switch {
			case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_':
			default:
				return false
			}
		}
	}
	return true
}

type templateVars struct{ address, local, domain string }

// expand resolves the clientConfig placeholders.
func (v templateVars) expand(s string) string {
	return strings.NewReplacer(
		"%EMAILADDRESS%", v.address,
		"%EMAILLOCALPART%", v.local,
		"%EMAILDOMAIN%", v.domain,
	).Replace(strings.TrimSpace(s))
}

func insecureWarning(kind string, s *Server) string {
	return fmt.Sprintf("%s server %s offers no TLS: your password would travel unencrypted", kind, s.Addr())
}
