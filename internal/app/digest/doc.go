// Package digest is the owner's periodic account of what the agent did:
// auto-sent replies (recipients and subjects), queue items still waiting,
// messages archived or ignored by category, messages needing review, and
// tokens with their estimated cost.
//
// Contract:
//   - Build only reads the store (through Source); it never writes.
//   - Text renders a report as plain text with every untrusted string
//     (subjects, addresses, model output) made safe for a terminal;
//     Message wraps it in a mail to the owner that mailagent recognises as
//     its own: it carries the X-Mailagent-Digest header, the loop-guard
//     header agent.TraceHeader, Auto-Submitted: auto-generated, and a
//     Message-ID starting "digest.", so the pipeline routes it "self" and
//     never classifies, answers or queues it.
//   - Scheduler sends one digest per period of its Schedule ("daily
//     08:00"), also across restarts: the period is recorded in the store
//     before the mail is sent (and cleared again if sending fails), so a
//     restart in the same period sends nothing. A crash in the middle of
//     the SMTP transaction loses that period's digest rather than sending
//     it twice.
package digest
