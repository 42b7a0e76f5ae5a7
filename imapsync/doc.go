// Package imapsync talks IMAP for mailagent: it connects and logs in, lists
// and fetches messages by UID, watches a mailbox with IDLE (or polling), and
// appends or changes messages when asked.
//
// Contract:
//   - Fetching never changes a message's flags: bodies are fetched with
//     BODY.PEEK[].
//   - TLS is verified. Plaintext (security = "insecure") is refused for any
//     host that is not a loopback address; the rule, the TLS configuration
//     and the XOAUTH2 client are internal/netpolicy's, shared with SMTP.
//   - Every blocking call takes a context; cancelling it closes the
//     connection (go-imap has no context of its own).
//   - Secrets are never logged or put in errors. Options.Debug is the one
//     exception: the raw protocol trace may include credentials.
//   - Authentication failures match ErrAuth and are permanent; a login the
//     server refuses as temporary ([UNAVAILABLE], [SERVERBUG]) matches
//     ErrLoginUnavailable and is retried; a plaintext request for a remote
//     host matches ErrPlaintextNotLoopback.
//   - A FETCH answered NO is an error, never "the messages are gone": only
//     a fresh UID SEARCH (Client.Missing) says a message was expunged.
//   - This package never imports internal/config: the caller resolves
//     secrets and passes plain Options.
//
// # Pieces
//
// Dial returns a logged-in *Client (LOGIN, AUTHENTICATE PLAIN when LOGIN is
// disabled, or OAUTHBEARER/XOAUTH2 with a token). A Client runs one
// operation at a time: Select, Search (UID SEARCH), Fetch (streamed in
// batches, oversized messages reduced to their first text part with
// RawMessage.Truncated set), Missing, Append, StoreFlags, Move, Delete,
// Namespace, FindSpecialUse (SPECIAL-USE, else common names under the
// personal namespace: INBOX.Sent on Courier-IMAP), CreateMailbox and
// Thread.
//
// Watcher keeps one mailbox under watch: it calls a sync function at
// once, then after every EXISTS seen in IDLE (or every poll), always on
// its own connection with IDLE stopped. It reconnects with exponential
// backoff and jitter after any connection failure, runs a failed sync
// again on a timer (SyncRetry) without waiting for new mail, and returns
// nil when its context is cancelled. A sync function normally searches for UIDs above
// the caller's checkpoint and fetches them:
//
//	w := &imapsync.Watcher{
//		Dial:    func(ctx context.Context) (*imapsync.Client, error) { return imapsync.Dial(ctx, opts) },
//		Mailbox: "INBOX",
//		Logger:  logger,
//	}
//	err := w.Run(ctx, func(ctx context.Context, c *imapsync.Client, st imapsync.MailboxStatus) error {
//		if st.UIDValidity != checkpoint.UIDValidity {
//			checkpoint = Checkpoint{UIDValidity: st.UIDValidity} // every stored UID is void: rescan
//		}
//		uids, err := c.Search(ctx, imapsync.Criteria{UIDMin: checkpoint.LastUID + 1})
//		if err != nil {
//			return err
//		}
//		return c.Fetch(ctx, uids, imapsync.FetchOptions{}, handle)
//	})
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
