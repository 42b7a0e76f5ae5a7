// Package invite handles calendar invitations (iMIP): it reads them onto
// the message record, computes their conflicts with the owner's calendar,
// answers them on the owner's command (RSVP), and applies a CANCEL, an
// update or a changed occurrence to what mailagent did before.
//
// Contract:
//   - What it decides: the invitation on the record (organizer verified
//     or not, conflicts, UID conflict), the iTIP REPLY of an RSVP, and
//     whether a CANCEL or an update changes an earlier copy: only when the
//     sender the owner's server authenticated is that copy's organizer,
//     for the same UID and correspondent (store.MayResolve), with a
//     SEQUENCE no older than the newest known.
//   - What it trusts: the authenticated sender (SenderAuth), never the
//     From text; a calendar UID, an ORGANIZER and a SEQUENCE are the
//     sender's text. An invitation from another correspondent with the
//     same UID is another event: it is a UID conflict, its event busy
//     time, and mailagent never reads, replaces or removes it.
//   - What it never does: answer an invitation on its own (only RSVP,
//     only on the owner's command, only to a verified organizer); send
//     mail except through Host.Schedule (the outbox's one door) and its
//     undo window; write the calendar except the event version it wrote
//     itself (If-None-Match to create, If-Match with the ETag it kept to
//     replace or delete; a 412 is a notice for the owner, never retried
//     blindly; exactly one item holds an event's ETag).
//   - It reaches the pipeline only through Host, the stores through
//     QueueStore and MessageStore, the accounts through Accounts and the
//     calendar through the optional sides it declares (BusyCalendar,
//     EventWriter, EventDeleter, EventReader); it imports no agent code
//     (internal/rig/archtest checks it).
package invite
