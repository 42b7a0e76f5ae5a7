package mail

import "strings"

// AddrKey returns the comparison key of an email address: surrounding
// space and one pair of angle brackets removed, lower case. Every equality
// test, set and index on addresses uses AddrKey (the address counterpart of
// IDKey), so that two places never disagree about whether two spellings
// name one correspondent.
func AddrKey(addr string) string {
	addr = strings.TrimSpace(addr)
	if len(addr) >= 2 && addr[0] == '<' && addr[len(addr)-1] == '>' {
		addr = strings.TrimSpace(addr[1 : len(addr)-1])
	}
	return strings.ToLower(addr)
}

// SameAddr reports whether a and b name the same non-empty address.
func SameAddr(a, b string) bool {
	ka := AddrKey(a)
	return ka != "" && ka == AddrKey(b)
}

// ParseAddresses parses an address header value the way Parse reads To
// and Cc (RFC 5322, else the best effort a broken mailer's list allows);
// for headers Parse keeps only as text, such as Bcc in a Sent copy.
func ParseAddresses(v string) []Address {
	as, _ := parseAddressList(v)
	return as
}
