// Package sqlite is the SQLite adapter of the chat store: a chat.Store (and
// chat.OutboxWatcher) over one database file, built on
// github.com/mattn/go-sqlite3 (cgo). A program built without cgo
// (CGO_ENABLED=0) still compiles with this package, so that it can offer
// other stores; there Open and Migrate return ErrNeedsCgo.
//
//	s, err := sqlite.Open(ctx, "chat.db", nil) // nil: the safe defaults
//	if err != nil { ... }
//	defer s.Close()
//	svc, err := chat.New(ctx, s, cfg)
//
// # Options
//
// Options is a struct whose zero value works. Synchronous is the SQLite
// synchronous mode of the write connection: "FULL" (the default) or
// "NORMAL" (fewer fsyncs; see Durability). BusyTimeout (default 5 s) is how
// long a statement waits for a lock held by another process that shares the
// file before it fails with chat.CodeUnavailable. MaxReadConns (default the
// larger of 4 and the number of CPUs) bounds the read pool. MaxBatch
// (default 128) bounds a group commit.
//
// # Connections and transactions
//
// The database runs in WAL mode with foreign keys on. Open makes two
// connection pools over the same file: a pool of exactly one read-write
// connection that all writes go through, and a pool of query_only
// connections for reads. View runs its function in a deferred transaction
// on a read connection, so every read in it sees one consistent snapshot
// and never waits for writers; when all MaxReadConns read connections are
// busy, Views wait for one in arrival order. Writes are serialized on the
// one write connection (see Group commit), which keeps its temporary
// storage (temp_store) in memory, where the undo of each group-commit
// savepoint lives; every write transaction starts with BEGIN IMMEDIATE, so
// the write lock is taken up front and a transaction never fails half-way
// on a lock upgrade. Several processes may share one file: SQLite's file
// locks serialize their writers (each waits up to BusyTimeout).
//
// # Durability
//
// Update returns only after its transaction has committed. With
// Synchronous "FULL" the commit includes an fsync of the write-ahead log, so
// every write that Update acknowledged survives a process crash, an
// operating system crash and a power loss. With "NORMAL" the log is synced
// only at checkpoints: a crash of the process still loses nothing, but a
// power loss or OS crash may lose the last transactions acknowledged before
// it (the database stays consistent; it is as if those transactions had
// never happened). The crash test in this package kills a writer with
// SIGKILL at a random moment and checks that every acknowledged message is
// present and no half-written one is.
//
// # Group commit
//
// An fsync costs far more than the statements of a typical transaction, so
// committing one transaction at a time caps write throughput at the disk's
// fsync rate. When the write connection is busy, Update calls queue for a
// writer goroutine (started by Open). When the connection becomes free, the
// writer takes every call waiting by then (up to MaxBatch), opens one BEGIN
// IMMEDIATE transaction, runs each call's function inside its own SAVEPOINT,
// and commits once. A function that returns an error (or panics) is rolled
// back to its savepoint, so it leaves no trace and does not affect the
// others; its caller gets its error at once. The callers whose functions
// succeeded are answered only after the one COMMIT, so no write is
// acknowledged before it is durable. The functions of a batch run one after
// another, so a later one sees the writes of earlier ones, exactly as if
// they had been committed separately in that order. A lone writer never
// waits for a batch to fill: when the connection is free and no call is
// queued, Update runs its function at once on the calling goroutine in a
// transaction of its own (saving two goroutine switches), and calls that
// arrive during that commit form the next batch. If the
// database itself aborts the transaction (disk full, I/O error), every call
// in the batch fails with chat.CodeUnavailable and nothing of it is
// committed. A function passed to Update must not call Update (the writer
// would wait for itself); it may call View.
//
// Once a function has started, cancelling the caller's context does not
// interrupt a statement (interrupting a write can roll back the whole
// shared transaction); instead every later statement of that Tx fails with
// the context's error, and when the function returns it, its savepoint is
// rolled back. A call still waiting in the queue when its context ends is
// dropped without running. Stats reports how many commits carried how many
// Update calls.
//
// # Statements and the event log
//
// A transaction's statements run on the driver connection directly
// (database/sql's Conn.Raw), each prepared once per connection and kept
// (conn.prepared; the driver's own statement cache took a scan, a reset
// and a finalizer change per run): writes, lookups by key and message
// pages; each row is scanned from the
// driver's values into the same destinations database/sql would fill, by
// database/sql's own conversion wherever the value and the destination
// are not of the same type. database/sql's Rows and argument checks cost
// about as much CPU again as a lookup by key itself, and a post's
// transaction makes about ten of them on the one writer. Statements whose
// work is not bounded by their keys run through database/sql with the
// caller's context, so that they stop when it ends.
//
// A write transaction remembers the rows of its lookups of a user, a
// channel, a membership and a role (memo.go): no other connection or
// process can write while it holds the write lock, so they stay what the
// database holds until one of its own statements writes their table (the
// rows of that table are then forgotten; a DELETE, a REPLACE or a schema
// change forgets them all, as does a savepoint rolled back). The posts of
// a commit group, often to one channel by a few authors, then read each
// row once; each caller still gets values of its own. A post's update of
// its channel's counters keeps the channel remembered, changed as the
// update changed it (NextSegment).
//
// The writer keeps the events of the last transactions it committed in
// memory (1,024 of them, by id, each with at most 8 KiB of data: at most
// 8 MiB) before it signals the commit, and
// RecentEvents (chat.RecentEventReader) serves them: the event stream
// hubs, which read the log after every commit signal, then need no read
// transaction. A read stops before the first id the store does not hold
// (an event of another process sharing the file, a larger one, or one too
// old); the rest comes from the log.
//
// # Schema and migrations
//
// The schema lives in embedded, numbered SQL files (migrations/NNNN_*.sql,
// numbered in step with the Postgres store's). Open applies the ones not
// yet recorded in the schema_migrations table (version, name, applied_at),
// each in its own IMMEDIATE transaction together with its record; Migrate
// does the same for a *sql.DB, for tools such as the example server's
// migrate command. Migrations are forward-only: a new schema version is a
// new file, and a database whose version is newer than the program's is
// refused. Times are stored as INTEGER unix milliseconds
// (UTC) and JSON values (metadata, data, tags, roles, hashflag, reaction
// counts) as JSON text; every query path has an index, and the package's
// tests check the plans of the hot queries with EXPLAIN QUERY PLAN.
//
// # Errors
//
// Driver errors are translated in one function: unique and primary key
// violations become chat.CodeConflict, missing rows chat.CodeNotFound,
// busy, locked, I/O and disk-full errors chat.CodeUnavailable, anything
// else chat.CodeInternal. Errors returned by the functions passed to Update
// and View are returned unchanged.
package sqlite
