// Package guard is the output guard: the last, deterministic check of
// the text of a reply before it may leave in the owner's name without the
// owner reading it.
//
// Contract:
//   - What it decides: Check lists why a reply (subject and body) may not
//     be sent automatically: an address, a link, a number of six digits
//     or more, an account or wallet code, or payment instructions that
//     the trusted text and addresses do not contain; an empty body; a
//     body over the length cap. An empty list means the text passes; the
//     caller (agent's gates) turns a non-empty list into a queued draft.
//   - What it trusts: only the Trusted it is given (the owner's profile,
//     the owner's own mail, the final recipients), chosen by the caller.
//     The reply's text is hostile: it is read the way a person would read
//     it (NFKC, invisible characters dropped, digits of every script and
//     look-alike letters folded, "evil dot test", "evil[.]test", hxxp
//     undone) before any check, and every problem quotes it escaped.
//   - What it never does: it holds no state (but a bounded cache of the
//     trusted text's index, a function of the Trusted alone), does no
//     I/O and imports no
//     mailagent package but the leaf internal/mail (mail.AddrKey, the one
//     address key): never store, the model, IMAP or agent
//     (internal/rig/archtest checks it);
//     every pattern runs in time linear in the text (TestGuardLinearTime),
//     so a hostile draft cannot stall a worker.
package guard
