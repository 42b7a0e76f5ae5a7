package agent

// TEMPORARY SHIM: the `guard` branch replaces this file with agent/guard.go
// (GuardOutput over every outbound field). Delete this file when merging it.

// OutboundFields are the parts of a reply that leave in the owner's name.
type OutboundFields struct{ Subject, Body string }

// Trusted is what an outgoing reply may repeat: text and addresses from
// the owner (profile, the owner's own mail in the thread) and the final
// recipients.
type Trusted struct {
	Text      string
	Addresses []string
}

// GuardOutput lists why a reply may not be sent automatically. The shim
// checks the body only.
func GuardOutput(out OutboundFields, trusted Trusted, maxChars int) []string {
	return guardBody(out.Body, trusted.Text, trusted.Addresses, maxChars)
}
