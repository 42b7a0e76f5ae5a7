package initcmd

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"unicode"

	appdoctor "github.com/mailagent/mailagent/internal/app/doctor"
	"github.com/mailagent/mailagent/internal/config"
)

// Common wrong answers to the server questions, accepted or answered with
// the fix: one table of words for the security mode, and the shapes a
// host answer takes when copied from another mail client ("host:993",
// "imaps://host", an email address). TestInitWrongInputTable covers every
// row.

// securityWords maps what users type for a security mode to the config's
// value. Mail clients say "SSL/TLS" for implicit TLS and "STARTTLS" for
// the upgrade; "none" is plain text, allowed to loopback hosts only.
var securityAnswers = map[string]string{
	"tls": config.SecurityTLS, "ssl": config.SecurityTLS, "ssl/tls": config.SecurityTLS, "tls/ssl": config.SecurityTLS,
	"implicit": config.SecurityTLS, "implicit tls": config.SecurityTLS, "imaps": config.SecurityTLS, "smtps": config.SecurityTLS,
	"starttls": config.SecurityStartTLS, "start-tls": config.SecurityStartTLS, "start_tls": config.SecurityStartTLS,
	"start tls": config.SecurityStartTLS, "explicit": config.SecurityStartTLS, "explicit tls": config.SecurityStartTLS,
	"insecure": config.SecurityInsecure, "none": config.SecurityInsecure, "plain": config.SecurityInsecure,
	"plaintext": config.SecurityInsecure, "off": config.SecurityInsecure,
}

// parseSecurity reads a security answer.
func parseSecurity(v string) (string, error) {
	if s, ok := securityAnswers[strings.ToLower(strings.Join(strings.Fields(v), " "))]; ok {
		return s, nil
	}
	return "", fmt.Errorf("%q: type tls (also called SSL or implicit TLS), starttls, or insecure (localhost only)", v)
}

// portSecurity is the security mode a well-known port is for, or "".
func portSecurity(kind string, port int) string {
	switch kind + "/" + strconv.Itoa(port) {
	case "imap/993", "smtp/465":
		return config.SecurityTLS
	case "imap/143", "smtp/587", "smtp/25":
		return config.SecurityStartTLS
	}
	return ""
}

// fitPortSecurity answers a port typed for the other security mode
// (starttls on 993, tls on 143 or 587): it returns the mode the port is
// for and a note saying so, or security unchanged and "".
func fitPortSecurity(kind string, port int, security string) (string, string) {
	want := portSecurity(kind, port)
	if want == "" || want == security || security == config.SecurityInsecure {
		return security, ""
	}
	other := config.DefaultPort(kind, security)
	return want, fmt.Sprintf("Port %d is %s over %s, so security is now %s (for %s, the port is %d).",
		port, strings.ToUpper(kind), appdoctor.SecurityMode(want), want, security, other)
}

// hostAnswer is what a host answer says: the host, and the port and
// security when it carried them ("imap.example.com:993", "imaps://…").
type hostAnswer struct {
	Host     string
	Port     int    // 0: not given
	Security string // "": not given
}

// schemeSecurity maps URL schemes of mail clients to a security mode.
var schemeSecurity = map[string]string{
	"imaps": config.SecurityTLS, "smtps": config.SecurityTLS,
	"imap": config.SecurityStartTLS, "smtp": config.SecurityStartTLS, "submission": config.SecurityStartTLS,
}

// parseHostAnswer reads a host answer for a kind ("imap" or "smtp")
// server: a bare name or address, name:port, [v6]:port, or a URL with a
// mail scheme. An email address or a web URL is refused with the fix.
func parseHostAnswer(kind, v string) (hostAnswer, error) {
	v = strings.TrimSpace(v)
	var a hostAnswer
	if v == "" {
		return a, errors.New("type the server's host name, such as " + kind + ".example.com")
	}
	if strings.Contains(v, "@") && !strings.Contains(v, "://") {
		return a, fmt.Errorf("%q is an email address: type the %s server's name, such as %s.%s", v, strings.ToUpper(kind), kind, v[strings.LastIndexByte(v, '@')+1:])
	}
	if scheme, rest, ok := strings.Cut(v, "://"); ok {
		sec, known := schemeSecurity[strings.ToLower(scheme)]
		if !known {
			return a, fmt.Errorf("%q is a %s address, not a mail server: type the %s server's name, such as %s.example.com", v, scheme, strings.ToUpper(kind), kind)
		}
		u, err := url.Parse(strings.ToLower(scheme) + "://" + rest)
		if err != nil || u.Hostname() == "" {
			return a, fmt.Errorf("%q is not a server address: type a name such as %s.example.com", v, kind)
		}
		a.Security = sec
		v = u.Host
	}
	if h, p, err := net.SplitHostPort(v); err == nil {
		n, perr := strconv.Atoi(p)
		if perr != nil || n < 1 || n > 65535 {
			return a, fmt.Errorf("%q: %q is not a port number (1-65535)", v, p)
		}
		a.Port, v = n, h
		if a.Security == "" {
			a.Security = portSecurity(kind, n)
		}
	}
	v = strings.TrimSuffix(strings.Trim(v, "[]"), ".")
	if v == "" || strings.ContainsFunc(v, func(r rune) bool { return unicode.IsSpace(r) || r == '/' || unicode.IsControl(r) }) {
		return a, fmt.Errorf("%q is not a host name: type a name such as %s.example.com", v, kind)
	}
	a.Host = v
	return a, nil
}
