package chat

import (
	"context"
	"log/slog"
	"time"
)

// SearchIndexer is implemented by a store whose message search index is
// written after the commit, in batches, rather than in the transaction of
// every message (the SQLite store). A message is found by SearchMessages
// once a call of IndexSearch has read it; edits and deletions of indexed
// messages take effect in their own transactions.
type SearchIndexer interface {
	// IndexSearch indexes the messages stored after the last one indexed,
	// at most max of them (a store default when max <= 0), in one
	// transaction, and returns how many it read: fewer than max means it
	// caught up. Its position is kept in the store, so messages written
	// while no indexer ran are indexed by the next call.
	IndexSearch(ctx context.Context, max int) (int, error)
}

// IndexerConfig configures an Indexer. The zero value works.
type IndexerConfig struct {
	// Interval is the wait between two looks at the store once the index
	// has caught up; a message is searchable at most about Interval (plus
	// the time of one batch) after its commit. A longer wait makes larger
	// batches, which write fewer pages per message. Default 500 ms.
	Interval time.Duration
	// Batch is the most messages indexed per transaction. Default 100:
	// a batch holds the store's single writer (on SQLite about 20 µs of
	// CPU per message), so posts arriving meanwhile wait for it; 2,000
	// made them wait up to tens of milliseconds, 250 several.
	Batch int
	// Logger receives errors of the store. Default: slog.Default().
	Logger *slog.Logger
}

// Indexer keeps the message search index of a store that implements
// SearchIndexer up to date: it calls IndexSearch every Config.Interval,
// and again at once while batches come back full (catching up after a
// stop). With any other store (the memory and Postgres stores index in
// the transaction of the write) it does nothing. Several processes on one
// store may each run one; every process that writes messages to a SQLite
// store should. New starts nothing; Start and Stop do.
type Indexer struct {
	ix  SearchIndexer
	cfg IndexerConfig
	bg  background
}

// NewIndexer returns an Indexer for the store s (the store itself, not a
// wrapper that hides its SearchIndexer method). It starts no goroutine.
func NewIndexer(s Store, cfg IndexerConfig) *Indexer {
	if cfg.Interval <= 0 {
		cfg.Interval = 500 * time.Millisecond
	}
	if cfg.Batch <= 0 {
		cfg.Batch = 100
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	ix, _ := s.(SearchIndexer)
	x := &Indexer{ix: ix, cfg: cfg}
	x.bg = background{what: "indexer", fail: "chat: indexing messages for search", log: log}
	if ix != nil {
		x.bg.step = x.step
	}
	return x
}

// Start starts indexing; it runs until Stop (ctx only bounds the start).
// Starting twice, or after Stop, is an error.
func (x *Indexer) Start(ctx context.Context) error { return x.bg.start(ctx) }

// Stop stops indexing and waits until the batch in progress ends, or ctx
// is done. It may be called more than once, and before Start.
func (x *Indexer) Stop(ctx context.Context) error { return x.bg.stop(ctx) }

// step indexes one batch and returns the wait before the next: none while
// batches come back full (more may be waiting).
func (x *Indexer) step(ctx context.Context) (time.Duration, error) {
	n, err := x.ix.IndexSearch(ctx, x.cfg.Batch)
	if err == nil && n >= x.cfg.Batch {
		return 0, nil
	}
	return x.cfg.Interval, err
}
