package agent

import (
	"fmt"
	netmail "net/mail"
	"strings"

	"github.com/emersion/go-msgauth/authres"
	"golang.org/x/net/publicsuffix"

	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/store"
)

// MicrosoftAuthservID is the authserv-id given to an Authentication-Results
// header that has none. Microsoft 365 and Outlook.com write their verdict
// that way ("Authentication-Results: spf=pass (sender IP is …)
// smtp.mailfrom=…; dkim=pass …; dmarc=pass action=none header.from=…"), and
// remove such headers from incoming mail; protection.outlook.com is the
// receiver name they use in Received-SPF. Configure it as the authserv_id
// of a Microsoft-hosted mailbox.
const MicrosoftAuthservID = "protection.outlook.com"

// AuthservIDs splits accounts.authserv_id into its patterns: one id, or
// several separated by commas or spaces (iCloud writes one header per
// method: dmarc.icloud.com, dkim-verifier.icloud.com, …). A pattern
// "*.example.net" matches any host name under example.net, for providers
// whose id names the receiving host (Fastmail: mx1…mx6.messagingengine.com).
func AuthservIDs(configured string) []string {
	var out []string
	for _, f := range strings.FieldsFunc(configured, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' }) {
		out = append(out, strings.ToLower(strings.TrimSuffix(f, ".")))
	}
	return out
}

// authservMatch reports whether id matches one of the patterns.
func authservMatch(patterns []string, id string) bool {
	id = strings.ToLower(strings.TrimSuffix(id, "."))
	if id == "" {
		return false
	}
	for _, p := range patterns {
		if rest, ok := strings.CutPrefix(p, "*."); ok {
			if strings.HasSuffix(id, "."+rest) && len(id) > len(rest)+1 {
				return true
			}
			continue
		}
		if p == id {
			return true
		}
	}
	return false
}

// arHeader is one parsed Authentication-Results header.
type arHeader struct {
	id      string
	results []authres.Result
}

// parseAR parses one Authentication-Results value leniently. Comments are
// removed first (a comment can hold sender-chosen text, such as the
// envelope sender Gmail quotes, and authres does not skip them), quoted
// strings are emptied (their content is never used and may hold ';'), and
// segments that are not method=result (Microsoft's stray domain names)
// are skipped. A header without an authserv-id gets MicrosoftAuthservID.
func parseAR(v string) arHeader {
	segs := strings.Split(stripCFWS(v), ";")
	var h arHeader
	first := strings.TrimSpace(segs[0])
	if strings.Contains(first, "=") {
		h.id = MicrosoftAuthservID
	} else {
		if f := strings.Fields(first); len(f) > 0 {
			h.id = strings.ToLower(f[0])
		}
		segs = segs[1:]
	}
	for _, s := range segs {
		s = strings.TrimSpace(s)
		if !strings.Contains(s, "=") {
			continue
		}
		_, rs, err := authres.Parse("x; " + s)
		if err != nil {
			continue
		}
		h.results = append(h.results, rs...)
	}
	return h
}

// stripCFWS removes RFC 5322 comments (nested, with quoted pairs) and
// empties quoted strings. An unclosed comment or quote swallows the rest,
// which can only lose results, never invent one.
func stripCFWS(s string) string {
	var b strings.Builder
	depth, quoted, escaped := 0, false, false
	for _, r := range s {
		switch {
		case escaped:
			escaped = false
		case r == '\\' && (depth > 0 || quoted):
			escaped = true
		case quoted:
			if r == '"' {
				quoted = false
				b.WriteRune('"')
			}
		case r == '(':
			depth++
		case r == ')' && depth > 0:
			depth--
			if depth == 0 {
				b.WriteByte(' ')
			}
		case depth > 0:
		case r == '"':
			quoted = true
			b.WriteRune('"')
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// trustedAR returns the Authentication-Results headers the owner's server
// added: the contiguous run of headers at the top whose id matches
// (OpenDKIM and OpenDMARC each add one; iCloud adds one per method). The
// run must start with the topmost header: the owner's server is the last
// to add one, so when the topmost is someone else's, the id is wrong (or
// the server added none) and every header may be the sender's. Anything
// after a header with another id may have been written by the sender.
// The run must also be contiguous in the whole header: a field below the
// server's own Received field (or any other field between two results) may
// have been written by the sender, whatever id it names. pos holds each
// value's position among all header fields (mail.Message.AuthResultsPos);
// nil means unknown, and then only the topmost header is trusted.
// top is the id of the topmost header.
func trustedAR(values []string, pos []int, patterns []string) (block []arHeader, top string) {
	for i, v := range values {
		h := parseAR(v)
		if i == 0 {
			top = h.id
		}
		if !authservMatch(patterns, h.id) {
			break
		}
		if i > 0 && (len(pos) != len(values) || pos[i] != pos[i-1]+1) {
			break
		}
		block = append(block, h)
	}
	return block, top
}

// AuthenticateSender decides whether the owner's own server vouches for
// the message's From address. It does when, in the Authentication-Results
// headers carrying authservID (see trustedAR), DMARC passes for the From
// domain, or DKIM passes with a signing domain aligned to it (RFC 7489
// relaxed alignment: the same organisational domain). SPF alone never
// authenticates a From address: it vouches for the envelope sender. A
// failing result beats a passing one for the same check, so a header the
// sender forged below the server's cannot turn a failure into a pass.
func AuthenticateSender(m *mail.Message, authservID string) store.SenderAuth {
	addr := mail.AddrKey(m.From.Email)
	out := store.SenderAuth{Address: addr}
	fail := func(format string, args ...any) store.SenderAuth {
		out.Reason = fmt.Sprintf(format, args...)
		return out
	}
	patterns := AuthservIDs(authservID)
	if len(patterns) == 0 {
		return fail("accounts.authserv_id is not set, so no Authentication-Results header can be trusted")
	}
	at := strings.LastIndexByte(addr, '@')
	if at <= 0 || at == len(addr)-1 {
		return fail("no From address")
	}
	if n := len(m.Header["From"]); n != 1 {
		return fail("the message has %d From headers", n)
	}
	if list, err := netmail.ParseAddressList(m.Header["From"][0]); err == nil && len(list) != 1 {
		return fail("From names %d addresses", len(list))
	}
	domain := addr[at+1:]
	values := m.Header["Authentication-Results"]
	if len(values) == 0 {
		return fail("no Authentication-Results header")
	}
	block, top := trustedAR(values, m.AuthResultsPos, patterns)
	if len(block) == 0 {
		return fail("the topmost Authentication-Results header is from %q, not from the owner's server (authserv_id %s)", top, authservID)
	}
	var dmarcPass, dmarcFail, dmarcOther, dkimPass, dkimFail, spfPass bool
	var dkimDomain, other string
	for _, h := range block {
		for _, r := range h.results {
			switch r := r.(type) {
			case *authres.DMARCResult:
				if !sameDomain(r.From, domain) {
					continue
				}
				switch r.Value {
				case authres.ResultPass:
					dmarcPass = true
				case authres.ResultFail:
					dmarcFail = true
				default:
					dmarcOther, other = true, string(r.Value)
				}
			case *authres.DKIMResult:
				d := r.Domain
				if d == "" {
					d = domainPart(r.Identifier)
				}
				if !aligned(d, domain) {
					continue
				}
				switch r.Value {
				case authres.ResultPass:
					dkimPass, dkimDomain = true, strings.ToLower(d)
				case authres.ResultFail:
					dkimFail = true
				}
			case *authres.SPFResult:
				spfPass = spfPass || r.Value == authres.ResultPass
			}
		}
	}
	ok := func(method, format string, args ...any) store.SenderAuth {
		out.Authenticated, out.Method = true, method
		return fail(format, args...)
	}
	id := block[0].id
	switch {
	case dmarcFail:
		return fail("DMARC fail for %s (%s)", domain, id)
	case dmarcPass && dmarcOther:
		return fail("conflicting DMARC results for %s (pass and %s): a forged header?", domain, other)
	case dmarcPass:
		return ok(store.AuthDMARC, "DMARC pass for %s (%s)", domain, id)
	case dkimPass && dkimFail:
		return fail("conflicting DKIM results for %s: a forged header?", domain)
	case dkimPass:
		return ok(store.AuthDKIM, "DKIM pass for %s, aligned with %s (%s)", dkimDomain, domain, id)
	case spfPass:
		return fail("only SPF passed (%s), which vouches for the envelope sender, not the From address %s", id, addr)
	}
	return fail("no DMARC pass or aligned DKIM pass for %s (%s)", domain, id)
}

// senderAuthOf is AuthenticateSender, except that mail read from the
// owner's own Sent folder is authenticated by where it was found.
func senderAuthOf(m *mail.Message, o Owner, fromSent bool) store.SenderAuth {
	if fromSent && o.IsOwner(m.From.Email) {
		return store.SenderAuth{Authenticated: true, Address: mail.AddrKey(m.From.Email),
			Method: store.AuthSentFolder, Reason: "read from the owner's Sent folder"}
	}
	return AuthenticateSender(m, o.AuthservID)
}

func domainPart(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '@'); i >= 0 {
		s = s[i+1:]
	}
	return strings.ToLower(strings.TrimSuffix(s, "."))
}

func sameDomain(a, b string) bool { return a != "" && domainPart(a) == domainPart(b) }

// aligned reports RFC 7489 relaxed alignment of a DKIM signing domain with
// the From domain: the same domain, or the same organisational domain
// (public suffix + 1). A public suffix itself never aligns.
func aligned(d, from string) bool {
	d, from = domainPart(d), domainPart(from)
	if d == "" || from == "" {
		return false
	}
	if d == from {
		return true
	}
	od, err1 := publicsuffix.EffectiveTLDPlusOne(d)
	of, err2 := publicsuffix.EffectiveTLDPlusOne(from)
	return err1 == nil && err2 == nil && od == of
}

// AuthResultsIDs returns the authserv-id of each Authentication-Results
// header of m, topmost first (MicrosoftAuthservID for one without an id).
// doctor uses it to find the id the owner's server writes.
func AuthResultsIDs(m *mail.Message) []string {
	var ids []string
	for _, v := range m.Header["Authentication-Results"] {
		ids = append(ids, parseAR(v).id)
	}
	return ids
}

// AuthservMatches reports whether id matches the configured
// accounts.authserv_id (see AuthservIDs).
func AuthservMatches(configured, id string) bool {
	return authservMatch(AuthservIDs(configured), id)
}
