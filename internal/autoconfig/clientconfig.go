package autoconfig

import (
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// Mozilla's clientConfig v1.1 format, as served by autoconfig.<domain> and
// the ISPDB: https://wiki.mozilla.org/Thunderbird:Autoconfiguration:ConfigFileFormat
type clientConfig struct {
	XMLName   xml.Name        `xml:"clientConfig"`
	Providers []emailProvider `xml:"emailProvider"`
}

type emailProvider struct {
	ID          string      `xml:"id,attr"`
	Domains     []string    `xml:"domain"`
	DisplayName string      `xml:"displayName"`
	ShortName   string      `xml:"displayShortName"`
	Incoming    []xmlServer `xml:"incomingServer"`
	Outgoing    []xmlServer `xml:"outgoingServer"`
}

type xmlServer struct {
	Type       string   `xml:"type,attr"`
	Hostname   string   `xml:"hostname"`
	Port       string   `xml:"port"`
	SocketType string   `xml:"socketType"`
	Username   string   `xml:"username"`
	Auth       []string `xml:"authentication"`
}

// ParseClientConfig reads a Mozilla clientConfig document and returns the
// best IMAP and SMTP servers in it for email, with templates resolved.
// Among servers of one kind it prefers implicit TLS, then STARTTLS, then
// plain (reported in Warnings), keeping document order between equals;
// entries with a bad host name, port or socket type are skipped. It fails
// when the document has no usable IMAP server. Source is left empty.
func ParseClientConfig(r io.Reader, email string) (*Result, error) {
	addr, local, domain, err := splitEmail(email)
	if err != nil {
		return nil, err
	}
	return parseClientConfig(r, templateVars{address: addr, local: local, domain: domain})
}

func parseClientConfig(r io.Reader, vars templateVars) (*Result, error) {
	dec := xml.NewDecoder(io.LimitReader(r, maxDocument))
	dec.CharsetReader = func(label string, in io.Reader) (io.Reader, error) {
		// The format is UTF-8; accept its usual spellings and ASCII, which
		// is a subset. Anything else is refused rather than misread.
		switch strings.ToLower(label) {
		case "utf-8", "utf8", "us-ascii", "ascii":
			return in, nil
		}
		return nil, fmt.Errorf("unsupported charset %q", label)
	}
	var cc clientConfig
	if err := dec.Decode(&cc); err != nil {
		return nil, fmt.Errorf("parse clientConfig: %w", err)
	}
	if len(cc.Providers) == 0 {
		return nil, errors.New("clientConfig has no emailProvider")
	}
	p := cc.Providers[0]
	res := &Result{Provider: strings.TrimSpace(p.DisplayName)}
	if res.Provider == "" {
		res.Provider = strings.TrimSpace(p.ShortName)
	}
	res.IMAP = pickServer(p.Incoming, "imap", vars)
	if res.IMAP == nil {
		return nil, errors.New("clientConfig has no usable IMAP server")
	}
	res.SMTP = pickServer(p.Outgoing, "smtp", vars)
	res.addInsecureWarnings()
	return res, nil
}

func (r *Result) addInsecureWarnings() {
	if r.IMAP != nil && r.IMAP.Security == SecurityInsecure {
		r.Warnings = append(r.Warnings, insecureWarning("IMAP", r.IMAP))
	}
	if r.SMTP != nil && r.SMTP.Security == SecurityInsecure {
		r.Warnings = append(r.Warnings, insecureWarning("SMTP", r.SMTP))
	}
}

func securityRank(s string) int {
	switch s {
	case SecurityTLS:
		return 0
	case SecuritySTARTTLS:
		return 1
	default:
		return 2
	}
}

// pickServer returns the most secure valid server of the given type, or nil.
func pickServer(list []xmlServer, typ string, vars templateVars) *Server {
	var best *Server
	for _, x := range list {
		if !strings.EqualFold(strings.TrimSpace(x.Type), typ) {
			continue
		}
		s, ok := convertServer(x, vars)
		if !ok {
			continue
		}
		if best == nil || securityRank(s.Security) < securityRank(best.Security) {
			best = s
		}
	}
	return best
}

func convertServer(x xmlServer, vars templateVars) (*Server, bool) {
	host := strings.TrimSuffix(vars.expand(x.Hostname), ".")
	if !validHost(host) {
		return nil, false
	}
	port, err := strconv.Atoi(strings.TrimSpace(x.Port))
	if err != nil || port < 1 || port > 65535 {
		return nil, false
	}
	var sec string
	switch strings.ToUpper(strings.TrimSpace(x.SocketType)) {
	case "SSL", "TLS":
		sec = SecurityTLS
	case "STARTTLS":
		sec = SecuritySTARTTLS
	case "PLAIN":
		sec = SecurityInsecure
	default:
		return nil, false
	}
	user := vars.expand(x.Username)
	if user == "" {
		user = vars.address
	}
	return &Server{Host: host, Port: port, Security: sec, Username: user, Auth: pickAuth(x.Auth)}, true
}

// pickAuth prefers password-cleartext when offered, because that is what
// a user can type at setup; otherwise it keeps the document's first choice.
func pickAuth(list []string) string {
	first := ""
	for _, a := range list {
		a = strings.TrimSpace(a)
		if a == "" {
			continue
		}
		if a == AuthPassword {
			return a
		}
		if first == "" {
			first = a
		}
	}
	if first == "" {
		return AuthPassword
	}
	return first
}

// fetchClientConfig GETs url and parses it as a clientConfig document.
func fetchClientConfig(ctx context.Context, c *http.Client, url string, vars templateVars) (*Result, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Accept", "application/xml, text/xml")
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("http status %d", resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxDocument+1))
	if err != nil {
		return nil, fmt.Errorf("read body: %w", err)
	}
	if len(body) > maxDocument {
		return nil, fmt.Errorf("document larger than %d bytes", maxDocument)
	}
	return parseClientConfig(strings.NewReader(string(body)), vars)
}
