// Package replay scores the agent against what the owner actually did.
//
// It reads past mail (read-only: EXAMINE and BODY.PEEK, never a flag or a
// move), takes every message through the real triage path of
// agent.Pipeline in dry-run mode (and, when asked, the drafter through
// agent.Pipeline.DraftDryRun), and compares the outcome with the ground
// truth the mailbox holds: the owner's replies in the Sent folder (matched
// by In-Reply-To/References and recipient), their latency and text, and
// the flags of the original (\Answered, \Flagged, \Seen, \Deleted, found in
// the archive or trash folder). Without an archive folder, a server's All
// Mail folder (\All, Gmail's) stands for it: its messages that are in no
// other folder (by Message-ID) are the archived ones.
//
// Contract:
//   - Nothing is written to the mailbox or to the agent's state database:
//     the pipeline runs with DryRun, over a store the caller opened
//     read-only, wrapped so that the agent's memory is as of each
//     message's arrival: a contact is known if the owner wrote to them
//     before it (per Sent), and a contact's history, summary and the
//     thread context hold nothing dated later.
//   - The daily caps (max_per_contact_per_day, max_per_day) are simulated
//     by Score over the results in arrival order, with an in-memory ledger
//     and the pipeline's own caps gate; an auto-send they refuse counts as
//     the queue item it would have become (Report.Auto.CapLimited, and per
//     row of the threshold table).
//   - Results go to a separate bbolt file (Results), one record per
//     message key; a run skips the keys already there, so an interrupted
//     replay continues where it stopped. A file made with other settings
//     (policy, drafts, model) is refused unless it is reset.
//   - Score is a pure function of the results: precision and recall of
//     "needs a reply", the would-be auto-sends split by what the owner did,
//     draft similarity (token-set Jaccard, see Similarity), cost, and the
//     threshold table for min_confidence 0.50 … 0.95, all after the caps.
package replay
