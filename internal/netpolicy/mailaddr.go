package netpolicy

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ErrMailAddressNotPublic means an outgoing mail was addressed somewhere
// mailagent does not send to: an address literal, a local or reserved
// name, or text that is not an address. Nothing was sent or queued to be
// sent. Errors from CheckMailAddress wrap it, so errors.Is matches.
var ErrMailAddressNotPublic = errors.New("not a public mail address")

// localSuffixes are names that never reach a public mail server: RFC 6761
// and RFC 6762 names (localhost, local, invalid), the names of home and
// internal networks in common use, and the reverse-lookup tree. ".test"
// is not among them: it is where the test stacks live, and a name under it
// fails to resolve on the public internet anyway.
var localSuffixes = []string{"localhost", "local", "localdomain", "invalid", "internal", "intranet", "lan", "home", "corp", "home.arpa", "arpa", "onion"}

// CheckMailAddress returns nil when mailagent may send a mail to addr: a
// single address local@domain whose domain is a fully qualified name
// (two labels at least, letters, digits and hyphens, the last label not
// all digits) outside the local and reserved names (localhost and names
// under it, .local, .localdomain, .invalid, .internal, .intranet, .lan,
// .home, .corp, .home.arpa, .arpa, .onion). Address literals
// ("u@[127.0.0.1]", "u@[IPv6:::1]", "u@10.20.30.40") and dotless hosts
// ("root@localhost", "u@mailhost") are refused.
//
// allowed lists the domains the owner configured (the account's own
// addresses' domains, policy.allow_domains): a domain equal to one of
// them, or under one of them, is accepted whatever its form, so an owner
// on "mail.lan" can still write to colleagues there. An allowed entry may
// itself be a literal ("[10.0.0.5]"), matched exactly. Comparison ignores
// case and a final dot. It never asks DNS: the rule is about the name as
// written, like IsLoopback.
//
// The error wraps ErrMailAddressNotPublic and names the address and why.
func CheckMailAddress(addr string, allowed []string) error {
	domain, why := mailDomain(addr)
	if why == "" {
		if domainAllowed(domain, allowed) {
			return nil
		}
		why = publicDomain(domain)
	}
	if why == "" {
		return nil
	}
	return fmt.Errorf("%w: %q: %s", ErrMailAddressNotPublic, clipAddr(addr), why)
}

// MailDomain returns the domain of addr ("" when addr has none), lower
// case and without a final dot: the form CheckMailAddress compares and
// the form callers use to build its allowed list.
func MailDomain(addr string) string {
	d, why := mailDomain(addr)
	if why != "" {
		return ""
	}
	return d
}

// mailDomain splits addr and says why it is not one address.
func mailDomain(addr string) (domain, why string) {
	if addr == "" {
		return "", "the address is empty"
	}
	if !utf8.ValidString(addr) || strings.IndexFunc(addr, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
		return "", "the address contains spaces or control characters"
	}
	if strings.ContainsAny(addr, "<>,;\"()\\") {
		return "", "the address is not exactly one plain address"
	}
	at := strings.LastIndexByte(addr, '@')
	if at <= 0 || at == len(addr)-1 {
		return "", "the address has no local part or no domain"
	}
	if strings.IndexByte(addr[:at], '@') >= 0 {
		return "", "the address has more than one @"
	}
	return strings.ToLower(strings.TrimSuffix(addr[at+1:], ".")), ""
}

// domainAllowed reports whether domain is an allowed entry or under one.
func domainAllowed(domain string, allowed []string) bool {
	for _, a := range allowed {
		a = strings.ToLower(strings.TrimSuffix(strings.TrimSpace(a), "."))
		if a == "" {
			continue
		}
		if domain == a || (!strings.HasPrefix(a, "[") && strings.HasSuffix(domain, "."+a)) {
			return true
		}
	}
	return false
}

// publicDomain says why domain is not a public mail domain ("" if it is).
func publicDomain(domain string) string {
	if strings.HasPrefix(domain, "[") || strings.HasSuffix(domain, "]") {
		return "an address literal, not a domain name"
	}
	if _, err := netip.ParseAddr(domain); err == nil {
		return "an IP address, not a domain name"
	}
	if len(domain) > 253 {
		return "the domain is longer than 253 characters"
	}
	labels := strings.Split(domain, ".")
	if len(labels) < 2 {
		return "the domain is not fully qualified (no dot): a local host name"
	}
	for _, l := range labels {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return "the domain has an empty, overlong or hyphen-edged label"
		}
		for _, r := range l {
			if r != '-' && !unicode.IsLetter(r) && !unicode.IsDigit(r) {
				return fmt.Sprintf("the domain contains %q", r)
			}
		}
	}
	if strings.Trim(labels[len(labels)-1], "0123456789") == "" {
		return "the domain's last label is a number (an IP address written as a name)"
	}
	for _, s := range localSuffixes {
		if domain == s || strings.HasSuffix(domain, "."+s) {
			return "a local or reserved name (." + s + ") that no public mail server serves"
		}
	}
	return ""
}

func clipAddr(s string) string {
	if len(s) > 120 {
		return s[:120] + "…"
	}
	return s
}
