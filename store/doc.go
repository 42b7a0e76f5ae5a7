// Package store keeps mailagent's state in one bbolt file: messages,
// threads, sync checkpoints and traces (and, as the agent grows, the queue,
// the outbox and contact memory).
//
// Contract:
//   - The file is created with mode 0600.
//   - Open never waits forever: when another process holds the file lock it
//     returns ErrLocked after the timeout, with a hint that `mailagent
//     watch` may be running.
//   - Every method is safe for concurrent use; each is one bbolt
//     transaction, so a crash leaves either the old or the new state.
//   - Records are stored as JSON so that their format can grow.
package store
