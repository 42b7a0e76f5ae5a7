// Package mail turns raw RFC 5322 bytes into a Message record that the rest
// of mailagent can trust to be well formed, and groups messages into threads.
//
// Contract:
//   - Parse never panics and never returns nil. Broken MIME, unknown
//     charsets, missing headers and invalid UTF-8 produce a usable Message
//     whose Problems field says what was wrong. All strings in a Message are
//     valid UTF-8.
//   - A message without a Message-ID gets a stable synthesized one
//     (Synthesized is true): the same bytes always give the same ID.
//   - Message ids are kept as written minus angle brackets and space
//     (NormalizeID), so replies can quote them exactly; IDKey gives the
//     case-folded form used for every comparison and index.
//   - Text is the readable body (text/plain preferred, HTML converted,
//     capped at MaxTextBytes); SplitText divides it into CleanText, Quoted
//     and Signature, and CleanText is never empty when Text is not.
//     Attachments are metadata only; their content is never kept, except
//     an attached message (message/rfc822 or message/global outside a
//     delivery report): it is parsed by the same rules into
//     Message.Forwards, nested down to MaxForwardDepth, with control
//     characters out of its header fields; a cut or unreadable one is
//     Forward.Broken with its problems, never dropped.
//   - Threader groups messages with RFC 5256 REFERENCES semantics and gives
//     thread ids that do not depend on the order messages arrive in; threads
//     only ever merge (see Threader for where that departs from the RFC).
//   - BaseSubject, SubjectKey and ReplySubject handle reply/forward prefixes
//     in English and the common localised forms.
//
// From the rest of the project the package imports only internal/html2text.
package mail
