// Package mcpserver is `mailagent mcp`: a Model Context Protocol server
// (github.com/modelcontextprotocol/go-sdk) over api.Service, so that the
// owner's own AI client can ask what needs attention.
//
// Its contract:
//   - Every tool but one only reads. The one write tool, propose_reply,
//     queues a pending draft through the agent (api.Proposer, which is
//     agent.Pipeline.Propose): its recipient is the message's
//     authenticated sender, chosen by code, and the owner reviews it like
//     any draft. No tool approves, sends, edits, rejects or snoozes a
//     queue item, writes contact memory or changes policy.
//   - Every string that came from mail (addresses, subjects, excerpts,
//     drafts and reasons the model wrote after reading mail) is cleaned by
//     internal/termsafe and returned only inside an
//     `untrusted_external_content` object, apart from mailagent's own
//     fields (ids, states, decisions, gates, dates).
//   - Results are paginated (a limit of at most MaxLimit) and bounded in
//     bytes (one page's items at most 256 KiB, or one item), and every
//     string is bounded. A cursor is opaque and a key, never an offset: the
//     last item's time and id in the listing's order, tagged with the tool
//     and a hash of its arguments, so items added or removed between pages
//     never repeat or skip one, and a cursor from another tool, other
//     arguments or nowhere is refused with ErrInvalid ("the cursor …").
//   - queue_list reads one page from the store (store.QueuePage through
//     api.QueuePage: the page plus one index entry), through the watcher's
//     socket or over the store alike. search_mail and decisions read one
//     page from the message index the same way (store.MessagePage through
//     api.MessagePage), newest stored first, examining at most
//     Options.MaxScan index entries per call: when that budget runs out
//     before the page is full the result is partial (partial: true, a
//     next_cursor to go on, the page short or empty). Their cursors are
//     the stored time and key of a message (or only a time, when the
//     budget ran out on mail of an account the client may not see: such a
//     key is never handed out), and one naming an account the client may
//     not see, or not the one asked for, is refused. followups and
//     needs_reply sort the service's list of tracked threads (one per
//     thread).
//   - Accounts outside Options.Accounts do not exist for the client: an id
//     that belongs to one is "not found".
//   - Each call opens the service (Options.Open) and closes it when done, so
//     the server never holds the database between calls: a watcher started
//     later still gets its lock.
package mcpserver
