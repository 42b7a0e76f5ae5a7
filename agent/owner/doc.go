// Package owner is the owner's channel: mail the owner sends to the
// agent's address (Owner.Assistant, or the +agent plus-address of an
// owner address) or to themselves alone, turned into memory records or a
// queued draft by a bounded tool loop.
//
// Contract:
//   - What it decides: the mode of an owner message (Mode: instruction,
//     context, delegate, observe, or "" when it is not for the agent),
//     the contacts a record may name, the forwarded originals a
//     delegation answers (one per thread, at most MaxDelegations), and,
//     turn by turn, whether the model's tool call is allowed (checkTurn:
//     the mode's tools only, contacts from the offered list, valid kinds
//     and dates). The loop stops at MaxSteps whatever the model does.
//   - What it trusts: only mail the caller routed owner (agent.Route:
//     the owner's address authenticated by the owner's own server, or
//     read from Sent); a forged owner address never reaches it. The
//     forwarded text is a stranger's: nothing is learned from a
//     delegation, and its reply goes to the original's From, chosen by
//     code (never the owner, the agent, Reply-To or anything the text
//     asks for).
//   - What it never does: send mail. No tool takes a recipient; a
//     delegated draft is queued through Host.Queue and waits for the
//     owner's approval whatever its gates say.
//   - It reaches the pipeline only through Host (drafting and queueing),
//     the store through Store and Memory, the accounts through Accounts;
//     it imports no agent code (internal/rig/archtest checks it).
package owner
