package termsafe

import (
	"strconv"
	"strings"
)

// Address formats a mail address for display, from its display name and
// its address proper, both untrusted. It is the one place that decides how
// an address is shown, so that a display name can never pass for the
// address:
//
//   - no name, or a name equal to the address: the bare address;
//   - a name that contains an at sign ('@', or the look-alikes U+FF20 and
//     U+FE6B), such as "bob@bank.test" on a message from evil@x.test: the
//     address first, then the name quoted and marked,
//     `evil@x.test (name "bob@bank.test" looks like an address)`, so a
//     narrow column cut at its end still shows the real address;
//   - otherwise `Name <address>` (just the name when there is no
//     address).
//
// Both parts are sanitised with Line first (a bidi override can otherwise
// make "tset.knab@bob" read as an address).
func Address(name, email string) string {
	email = strings.TrimSpace(Line(email))
	name = strings.TrimSpace(Line(name))
	switch {
	case name == "" || strings.EqualFold(name, email):
		return email
	case LooksLikeAddress(name):
		if email == "" {
			email = "(no address)"
		}
		return email + " (name " + strconv.Quote(name) + " looks like an address)"
	case email == "":
		return name
	}
	return name + " <" + email + ">"
}

// LooksLikeAddress reports whether a display name contains an at sign or
// one of its look-alikes, which would let it pass for an address.
func LooksLikeAddress(name string) bool {
	return strings.ContainsAny(name, "@\uFF20\uFE6B")
}
