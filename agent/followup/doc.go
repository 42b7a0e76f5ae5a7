// Package followup is reply tracking: for each thread, whether the owner
// owes an answer (needs_reply), waits for one (awaiting_reply), got it
// (done) or stopped waiting (gave_up), and the timers that turn a stale
// thread into a reminder, then a follow-up draft, then gave_up.
//
// Contract:
//   - What it decides: the followup's state, from mailbox facts only (the
//     pipeline's finished record, the owner's Sent mail) and code's reading
//     of them (AsksQuestion, ValidDeadline); the model adds at most a date,
//     which code accepts only when it is a real day within MaxDeadline.
//   - What it trusts: who a message is from is its authenticated
//     correspondent (store's identity layer: Correspondent, AddressedTo,
//     External), never the From text; a thread reached by References or a
//     subject is no evidence of who may change its followup: only one of
//     its own correspondents, writing to the owner's message by name,
//     closes or replaces it.
//   - What it never does: send mail or approve anything. A follow-up
//     draft is a pending queue item with the owner's own text (no model,
//     nothing of the other side's); it goes out only by the owner's
//     approval or through the Tracker.AutoSend hook (agent.Pipeline.AutoNudge:
//     automatic mail through the outbox, never an approval, so it teaches
//     nothing), and only to a known single correspondent.
//   - It depends on no pipeline internals: it reaches the database through
//     Store, the accounts through Accounts, and the rest of the agent
//     through the Known, AutoSend and Notify hooks, all declared here.
//     Timers fire once across restarts (a followup moves only if it is
//     still what was read; a nudge's queue id derives from the followup
//     id and its number).
package followup
