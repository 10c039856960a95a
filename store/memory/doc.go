// Package memory is an in-memory chat.Store. It is faithful rather than a
// mock: it passes the same conformance suite (store/storetest) as the SQL
// adapters, with the same transaction semantics, so it serves tests, demos
// and single-process deployments that can afford to lose their data on exit.
//
// Concurrency: one sync.RWMutex. Update holds the write lock for the whole
// transaction and View the read lock, so transactions are serializable.
// Atomicity: every mutation made through a Tx appends its inverse to an undo
// log; when fn returns an error or panics the log is replayed in reverse and
// nothing fn wrote remains.
//
// Isolation from callers: the store copies everything it is given and
// everything it returns (see copy.go), and normalizes times to UTC
// milliseconds and JSON-like values to what encoding/json would decode, as
// the SQL adapters do.
//
// Indexes are laid out for the engine's hot paths: messages are kept per
// channel in channelSegment order (appending is O(1) because segments only
// grow; After/Before bounds are binary searches), comments per parent,
// messages per author, relations by channel and by user, reactions per
// message in reactor order and per reaction name, channels in creation
// order and users in id order (both binary-searched for keyset paging), and
// the outbox's pending deliveries in nextAttemptAt order.
//
// WatchDeliveries signals its watchers after a commit whose transaction
// enqueued or rescheduled deliveries, WatchEvents after one that appended
// events, WatchOutbox after either; sends never block and signals
// coalesce.
package memory
