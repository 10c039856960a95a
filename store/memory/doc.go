// Package memory is an in-memory chat.Store. It passes the same
// conformance suite (store/storetest) as the SQL adapters, with the same
// transaction semantics, so it serves tests, demos and single-process
// deployments that can afford to lose their data on exit.
//
// It is plain Go: one struct of maps and slices under one sync.RWMutex.
// Update holds the write lock for the whole transaction and View the read
// lock, so transactions are serializable. Every change goes through three
// helpers (put, del, set) that append its inverse to a list of undo
// closures; when fn fails or panics the list runs backwards and nothing fn
// wrote remains. Values are copied going in and coming out (a clone
// function per type), with times normalized to UTC milliseconds and custom
// data to what encoding/json decodes, as the SQL adapters store them.
//
// Lookups by id are maps; the one ordered index is each channel's messages
// in channelSegment order (appending is O(1), segment bounds are binary
// searches). Everything else is read by scanning and sorting, which costs
// what the data held costs: fine for tests and demos, not for millions of
// rows.
//
// WatchDeliveries signals after a commit that enqueued or rescheduled
// deliveries, WatchEvents after one that appended events, WatchOutbox after
// either; sends never block and signals coalesce.
package memory
