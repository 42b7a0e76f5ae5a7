// Package store keeps mailagent's state in one bbolt file: messages,
// threads, sync checkpoints, traces, the token ledger, the review queue,
// the outbox, contact memory and the daily auto-send caps.
//
// Contract:
//   - The file is created with mode 0600 (a looser existing file is
//     tightened on a read-write Open).
//   - Open never waits forever: when another process holds the file lock it
//     returns a *LockedError (errors.Is(err, ErrLocked)) after the timeout
//     (default 1s), with a hint that `mailagent watch` may be running.
//   - Every method is safe for concurrent use; each is one bbolt
//     transaction, so a crash leaves either the old or the new state. The
//     List*/scan methods are the exception: they read in batches and call
//     their callback outside any transaction, so callbacks may use the
//     store, and a long listing is not one snapshot.
//   - Callbacks that run inside a transaction (the mutate of
//     TransitionQueueItem/TransitionOutbox, the fn of UpdateContact) must
//     not call the Store: bbolt would deadlock.
//   - A damaged file is never taken for a first start and never panics:
//     Open refuses an empty (0-byte) file and checks the meta pages and the
//     page tree (headers only) before bbolt maps it; every transaction
//     runs with panics and memory faults recovered, so damage met later is
//     an error matching ErrCorrupt (a *CorruptError naming the file and
//     `mailagent doctor --repair`). Repair salvages what is readable into a
//     new file and keeps the damaged one as <name>.damaged-<time>.
//   - The group commit runs callers' functions on its goroutine; a panic
//     there is returned to that caller alone (a *PanicError) and the others
//     of its batch are committed without it.
//   - Keys built from mail (Message-IDs, addresses, thread ids) go through
//     keyPart: text that is too long, not UTF-8, or holds NUL or control
//     bytes is keyed by its SHA-256, so no header can stop a message from
//     being stored (the record notes why in Problems).
//   - Records are stored as JSON so that their format can grow.
//   - Who a message is from, and which messages a reference a sender
//     wrote may mean, is decided only by the identity layer
//     (identity.go: MessageRecord.Correspondent, MayResolve, AnswersTo,
//     SameCorrespondent, ThreadCorrespondent); every package asks it.
//   - Missing records are errors wrapping ErrNotFound; a transition from
//     the wrong status wraps ErrConflict.
//
// Layout (keys are \0-separated, so names may not contain NUL):
//
//	messages              account \0 mailbox \0 be32(uidvalidity) \0 be32(uid) → MessageRecord
//	idx_message_id        IDKey(message-id) \0 account \0 <message key>       → message key
//	idx_thread            thread-id \0 <message key>                          → message key
//	idx_state             state \0 <message key>                              → message key
//	traces                trace-id → Trace
//	idx_trace_message_id  IDKey(message-id) \0 account \0 trace-id            → trace-id
//	checkpoints           account \0 mailbox → Checkpoint
//	usage                 YYYY-MM-DD → UsageDay
//	queue                 id → QueueItem (ids from NewID sort by creation)
//	outbox                id → OutboxRecord
//	contacts/<account>    AddrKey(email) → Contact
//	autosend              day \0 account \0 AddrKey(email) → be64, day → be64
//	idx_queue             status \0 be64(due) \0 id → id   (due: SnoozeUntil when snoozed, else UpdatedAt)
//	idx_outbox            status \0 be64(due) \0 id → id   (due: SendAt when scheduled, SendRetryAt when pending, else UpdatedAt)
//	outbox_raw            id → the outbox record's raw message (listing never decodes it)
//	meta                  schema → be64 (SchemaVersion), created_at, pruned_at
//	trace_snapshots       trace-id → the step snapshots, S2-compressed framing (snapcodec.go; older records: deflate of JSON)
//	idx_trace_snapshots   be64(trace started) \0 trace-id → nil   (pruned after Options.SnapshotRetention)
//	thread_inputs         be64(created) <message key> → compact threading headers (the threader's start-up load)
//	state_counts          state → be64 count of messages in it
//	idx_msg_created       be64(CreatedAt) \0 <message key> → what a search filters on (message_page.go)
//	idx_queue_created     be64(CreatedAt) \0 id → status \0 kind \0 account   (queue_page.go)
//	memory                id → MemoryRecord
//	examples              id → Example
//	followups             id → Followup (one per account and thread)
//	idx_followup          be64(due) \0 id → id   (open followups with a due time)
//	unsubscribes          be64(at) \0 id → Unsubscribe
//	jobs                  id → Job (the watcher's durable scheduler, jobs.go)
//	idx_job               be64(due) \0 id → id
//
// The status/due indexes are written in the same transaction as the
// record, so the watcher's due work (DueOutbox, DueQueue, NextDue)
// reads only what is due, and Prune (run daily by PruneIfDue with
// Options.Retention) deletes finished sends and closed queue items and
// drops old raw messages, so the file grows with retention, not history.
package store
