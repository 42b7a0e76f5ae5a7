// Package api is the one owner of the state database, made reachable.
//
// bbolt takes an exclusive file lock, so while `mailagent watch` runs no
// other process can open the database. The watcher therefore serves a
// small HTTP+JSON API on a unix socket in the state directory
// (SocketPath, mode 0600, in a directory nobody else may write to), and
// every other command (review, queue, contacts, explain, triage) reaches
// the data through it. When no watcher runs, commands open the database
// themselves. Open makes that choice; both paths implement Service:
//
//   - Local implements Service over an open *store.Store, delegating the
//     side-effecting operations (approve, reject, …) to an Actions value,
//     which is the watcher's *agent.Pipeline.
//   - Client implements Service over the socket. Errors keep their
//     identity across the wire: store.ErrNotFound, store.ErrConflict,
//     store.ErrLocked, agent.ErrNotActionable, agent.ErrNotSent (an
//     approval that sent nothing) and ErrNoActions match errors.Is on the
//     client side.
//   - Serve exposes any Service on the socket, one route per operation,
//     and streams agent.Event values as Server-Sent Events on
//     GET /v1/events.
//   - Broker fans events out to any number of subscribers without ever
//     blocking the publisher. Events carry an epoch (one per watcher run)
//     and a sequence number, sent as the SSE id; a reconnecting client
//     sends Last-Event-ID and gets what it missed from a ring of recent
//     events, or an EventReset when that is impossible. A subscriber that
//     falls behind gets an EventReset instead of the events it missed:
//     nothing is dropped silently.
//   - Client.Events and FollowEvents reconnect with backoff when the
//     stream ends and report EventWatcherGone and EventWatcherBack.
//
// The same Client reaches a watcher on another host (remote.go):
// ParseRemote validates an ssh://[user@]host[:port] URL strictly (nothing
// in it can become an ssh option or a remote shell word), and DialRemote
// runs `ssh -T … -- host mailagent serve --stdio` per connection, speaking
// HTTP over its stdin and stdout (a commandConn; ssh's stderr names the
// failure). An approval whose connection breaks after the request was
// sent is never retried: Approve re-reads the item and returns a
// *LostError saying what state it is in (remote_lost.go).
//
// A process that holds the database for longer than a moment without
// being the watcher (triage, a CLI approval in its undo window) serves the
// same socket meanwhile (ServeHeld) and names itself in HolderFile
// (WriteHolder; ReadHolder ignores a dead pid): the lock is the truth, the
// file only names who most likely holds it. Open keeps trying for a short
// grace while the database is locked and no socket answers yet, then
// fails with an error wrapping store.ErrLocked that names the holder.
//
// Helpers over any Service, the same over Local and Client: QueuePage and
// MessagePage read one bounded page from the store's creation indexes
// (POST /v1/queue-page, /v1/message-page through the socket), LoadDetail
// is the one assembly of an item by any id (the TUI's detail), and
// DecidedWithoutAsking lists what was archived, ignored, notified or
// auto-sent.
//
// Service.Store returns a RemoteStore: the store methods the triage
// pipeline needs, so that `mailagent triage` also works while the watcher
// owns the database.
//
// The socket is the only access control: anyone who can connect can
// approve sends. Serve refuses a state directory that is group- or
// world-writable and makes the socket 0600.
package api
