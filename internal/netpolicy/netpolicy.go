// Package netpolicy is the one place where mailagent decides how it may
// talk to a mail server. IMAP (imapsync), SMTP (smtpsend), configuration
// validation (config), `init` and `doctor` all ask it; none keeps its own
// copy of these rules.
//
// Contract:
//
//   - IsLoopback(host) is true only for a literal loopback address
//     (127.0.0.0/8, ::1, with or without [brackets], and the IPv4-mapped
//     form ::ffff:127.x.y.z) or for the name "localhost" and names under
//     it (RFC 6761), in any case, with or without a final dot. It never
//     resolves a name: see IsLoopback for why.
//   - Plaintext (no TLS) is allowed only to a loopback host. CheckPlaintext
//     says whether it is, and PlaintextAddrs gives the literal addresses to
//     dial, so no resolver is asked where "localhost" is either.
//   - TLSConfig builds a verifying *tls.Config (minimum TLS 1.2) with an
//     optional extra CA file. It never modifies the caller's configuration
//     or certificate pool, and it refuses InsecureSkipVerify.
//   - OAuth2Client chooses the SASL mechanism for an OAuth 2 bearer token
//     (OAUTHBEARER when offered, else XOAUTH2), the same way for IMAP and
//     SMTP.
//
// The package imports nothing from the project: it is a leaf every layer
// may use. Its functions are pure except TLSConfig, which reads the CA file
// and the system certificate pool; all are safe for concurrent use.
package netpolicy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
)

// ErrPlaintextNotLoopback means a plaintext connection was asked for a host
// that is not loopback. Nothing was dialled. IMAP and SMTP return this very
// value (wrapped with the host), so errors.Is matches either.
var ErrPlaintextNotLoopback = errors.New("plaintext (security \"insecure\") is only allowed to a loopback host (127.0.0.0/8, ::1, localhost)")

// IsLoopback reports whether host, as written, names this machine's
// loopback interface: an IP literal in 127.0.0.0/8 or ::1 (brackets
// allowed, "[::1]"), an IPv4-mapped ::ffff:127.x.y.z (the same address in
// IPv6 notation: the kernel routes it to 127.x.y.z, so refusing it would
// protect nothing), or "localhost" or a name under it ("imap.localhost",
// RFC 6761 §6.3), in any case, with or without a trailing dot.
//
// A name is never resolved. The answer decides whether a password may
// cross the wire in clear text, and a DNS answer is attacker-influenced: a
// name such as "localtest.me" resolves to 127.0.0.1 today and to anything
// tomorrow (a hostile resolver, a poisoned cache, a search-domain suffix,
// a rebinding attack between the check and the dial). So such a name is
// not loopback here, whatever it resolves to; write 127.0.0.1 instead.
//
// Not loopback: 0.0.0.0 and :: (they mean "any address"), other private
// or link-local addresses, zone-qualified addresses ("::1%lo"), shorthand
// IPv4 ("127.1") and anything with surrounding spaces.
func IsLoopback(host string) bool {
	if isLocalhostName(host) {
		return true
	}
	ip := parseIP(host)
	return ip != nil && ip.IsLoopback()
}

// isLocalhostName reports whether host is "localhost" or a name under it.
func isLocalhostName(host string) bool {
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	return h == "localhost" || strings.HasSuffix(h, ".localhost") && !strings.HasPrefix(h, ".")
}

// parseIP parses an IP literal, with or without [brackets]; nil otherwise.
func parseIP(host string) net.IP {
	if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		host = host[1 : len(host)-1]
	}
	return net.ParseIP(host)
}

// CheckPlaintext returns nil when a plaintext connection to host is
// allowed (IsLoopback), else an error wrapping ErrPlaintextNotLoopback that
// names the host.
func CheckPlaintext(host string) error {
	if IsLoopback(host) {
		return nil
	}
	return fmt.Errorf("%w: %q is not one", ErrPlaintextNotLoopback, host)
}

// PlaintextAddrs returns the "ip:port" addresses a plaintext connection to
// host should dial, in order, without asking a resolver: the address
// itself for an IP literal (an IPv4-mapped one in its IPv4 form), and
// 127.0.0.1 then [::1] for localhost names. For any other host it returns
// CheckPlaintext's error.
func PlaintextAddrs(host string, port int) ([]string, error) {
	if err := CheckPlaintext(host); err != nil {
		return nil, err
	}
	p := strconv.Itoa(port)
	if isLocalhostName(host) {
		return []string{net.JoinHostPort("127.0.0.1", p), net.JoinHostPort("::1", p)}, nil
	}
	return []string{net.JoinHostPort(parseIP(host).String(), p)}, nil
}

// DialFirst dials addrs in order with d and returns the first connection
// made, or the first error when none answers (for PlaintextAddrs' list).
func DialFirst(ctx context.Context, d *net.Dialer, addrs []string) (net.Conn, error) {
	firstErr := errors.New("no address to dial")
	for i, a := range addrs {
		conn, err := d.DialContext(ctx, "tcp", a)
		if err == nil {
			return conn, nil
		}
		if i == 0 {
			firstErr = err
		}
	}
	return nil, firstErr
}
