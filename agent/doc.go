// Package agent decides what happens to each message: route → classify →
// decide (→ draft → act, for watch). It is the only place where the policy
// lives.
//
// Contract:
//   - Routing and every policy gate are deterministic Go code. The model's
//     classification is an input to the gates, never a decision: an
//     auto-send needs every gate to pass, and the recipients of a reply are
//     chosen by code from the message being answered.
//   - The model only sees the message's own clean text (capped), a trimmed
//     view of its thread, the owner's identity and the memory of the
//     message's own contact — fenced as data between random boundaries.
//   - Identity is decided once, by the store's identity layer
//     (store/identity.go): who a message is from is the address the
//     owner's server authenticated, and a reference a sender wrote
//     (Message-ID, References, In-Reply-To, a thread id, a calendar UID)
//     means only messages of that same correspondent or the owner's mail
//     to them. Answered, resolved, known, remembered, followed up,
//     proposed to, written to the calendar: every decision about a
//     correspondent asks it, in watch and triage alike.
//   - Every outgoing mail goes through the outbox (agent/outbox): one
//     record, Auto-Submitted when automatic, public addresses only.
//   - Every message ends in a recorded state: done (with a decision) or
//     needs_review (with the reason). Nothing is dropped silently.
//   - Invitations are answered only on the owner's command. A CANCEL or
//     an update changes an earlier invitation only when the sender the
//     owner's server authenticated is its organizer, and mailagent
//     removes or replaces only the calendar event version it wrote itself
//     (If-Match with the ETag it kept; agent/invite), for that same
//     authenticated organizer: a calendar UID is the sender's text, and
//     another correspondent's invitation with it is a UID conflict.
//   - Reply tracking follows the authenticated correspondent, and only
//     what the owner wrote or approved by hand teaches: an unattended
//     follow-up is automatic mail (AutoNudge), never an approval.
//   - agent reaches the store, the model and the mail servers only through
//     interfaces it declares, so every part can be tested with a fake.
//
// Packages by concern. agent is the pipeline and its policy; each concern
// below is a package of its own that never imports agent (the pipeline
// gives it what it needs through an interface the package declares, and
// internal/rig/archtest checks the imports):
//   - agent/outbox: the send protocol, the one door of every outgoing mail.
//   - agent/guard: the output guard, a pure leaf (text in, problems out).
//   - agent/followup: reply tracking and its timers (followup.Tracker);
//     agent's nudge.go sends an unattended follow-up (Pipeline.AutoNudge).
//   - agent/invite: calendar invitations, RSVP, CANCEL, updates and
//     occurrences (invite.Handler over invite.Host); agent's invite.go is
//     the pipeline's side.
//   - agent/owner: the owner's channel, its mode and bounded tool loop
//     (owner.Channel over owner.Host); agent's owner.go is the pipeline's
//     side (the delegated draft, its gates, the confirmation note).
package agent
