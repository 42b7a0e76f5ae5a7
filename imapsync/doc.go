// Package imapsync talks IMAP for mailagent: it connects and logs in, lists
// and fetches messages by UID, watches a mailbox with IDLE (or polling), and
// appends or changes messages when asked.
//
// Contract:
//   - Fetching never changes a message's flags: bodies are fetched with
//     BODY.PEEK[].
//   - TLS is verified. Plaintext (security = "insecure") is refused for any
//     host that is not a loopback address.
//   - Every blocking call takes a context; cancelling it closes the
//     connection (go-imap has no context of its own).
//   - Secrets are never logged or put in errors.
package imapsync

import "time"

// RawMessage is one message as fetched from the server, before parsing.
type RawMessage struct {
	Account      string
	Mailbox      string
	UIDValidity  uint32
	UID          uint32
	Raw          []byte // the full message, or headers plus the first text part when Truncated
	Truncated    bool
	Size         int64 // RFC822.SIZE reported by the server
	Flags        []string
	InternalDate time.Time
}
