// Package compose builds outgoing replies as RFC 5322 messages.
//
// The contract, which the safety model depends on:
//
//   - Recipients are chosen by code, never by the model: [Recipients] derives
//     them deterministically from the parent message (Reply-To, else From; with
//     reply-all also the parent's To and Cc), never includes the owner, and
//     refuses to return an empty list.
//   - Every header value given to [Build] has CR and LF removed before it is
//     written, so no input (a subject, a display name, an extra header) can add
//     a header field or end the header block.
//   - [Build] writes a single text/plain; charset=utf-8 part in
//     quoted-printable, threaded to the parent with In-Reply-To and References
//     (RFC 5322 §3.6.4), and marks automatic replies with
//     "Auto-Submitted: auto-replied" (RFC 3834).
//
// The package does no I/O and keeps no state; all functions are safe for
// concurrent use.
package compose
