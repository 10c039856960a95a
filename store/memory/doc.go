// Package memory is an in-memory chat.Store that passes the same
// conformance suite (store/storetest) as the SQL adapters, for tests, demos
// and single-process deployments that can lose their data on exit.
//
// It is plain Go: one struct of maps and slices under one sync.RWMutex
// (Update holds the write lock, View the read lock, so transactions are
// serializable). Every change goes through put, del or set, which append
// its inverse to a list of undo closures; when fn fails or panics the list
// runs backwards. Values are copied going in and out (a clone function per
// type), times normalized to UTC milliseconds and custom data to what
// encoding/json decodes, as the SQL adapters store them. Lookups by id are
// maps; the one ordered index is each channel's messages in channelSegment
// order (appends are O(1), segment bounds binary searches). Everything else
// is read by scanning and sorting: fine for tests and demos, not for
// millions of rows.
//
// WatchDeliveries signals after a commit that enqueued or rescheduled
// deliveries, WatchEvents after one that appended events, WatchOutbox after
// either; sends never block and signals coalesce.
package memory
