// Package postgres is the PostgreSQL adapter of chat.Store, the scale-out
// path of the engine: any number of server processes can share one
// database, and everything (messages, files, the webhook outbox) lives in
// it. It passes the shared conformance suite (store/storetest) and is
// tested against PostgreSQL 15.
//
// # Connecting
//
// Open connects with the lib/pq driver and owns the pool it creates:
//
//	s, err := postgres.Open(ctx, "postgres://chat:secret@db.internal:5432/chat?sslmode=verify-full", nil)
//
// The DSN is a URL (postgres://user:password@host:port/dbname?param=value)
// or a list of key=value pairs (host=db.internal dbname=chat user=chat
// sslmode=verify-full). Mind sslmode: lib/pq defaults to sslmode=require,
// which fails against a server without TLS, such as a local development
// server; use sslmode=disable there (as the examples and tests do:
// postgres://postgres@127.0.0.1:5432/test?sslmode=disable) and
// sslmode=verify-full in production, where require would encrypt without
// checking the server's certificate.
//
// New takes an existing *sql.DB instead, so that a program can bring its
// own pool, for example one opened with pgx's stdlib driver
// (sql.Open("pgx", dsn)); the caller keeps ownership of it. The adapter
// passes arrays and JSON as text and translates errors through the
// SQLState method that the errors of lib/pq and pgx both have, but it is
// tested with lib/pq only. The LISTEN connection of WatchOutbox always uses
// lib/pq; with New, give it a DSN in Options.NotifyDSN.
//
// # Schema
//
// Options.Schema names the Postgres schema that holds the tables (default
// "public"). It is created when missing. Every statement names its tables
// with the schema (the quoted name is computed once), so the connection's
// search_path does not matter and several stores, for example one per
// test or one per tenant, can share one database.
//
// Ids are text COLLATE "C", so they sort bytewise like Go strings whatever
// the database's locale. JSON values (custom data, metadata) are stored as
// json, which keeps any document encoding/json produces (jsonb would refuse
// \u0000); times are timestamptz and come back in UTC with the
// millisecond precision they were written with.
//
// # Migrations
//
// The schema is created by forward-only migrations embedded in the binary
// (migrations/NNNN_name.sql). Open and New apply the pending ones unless
// Options.SkipMigrations is set; Migrate applies them on its own (the
// example server's "migrate" subcommand). Each migration runs in its own
// transaction and is recorded in the schema's chat_migrations table. While
// migrating, Migrate holds pg_advisory_lock with a key derived from the
// schema name, so several processes may start at once against a new
// database: one migrates, the others wait for the lock and find nothing
// left to do. A database migrated by a newer release is accepted, since
// migrations only add.
//
// # Transactions and concurrency
//
// View runs a REPEATABLE READ READ ONLY transaction: all its reads see one
// snapshot, so the pages of one request are consistent. Update runs a READ
// COMMITTED read-write transaction. Postgres retries nothing by itself, so
// Update does, by running its function again in a new transaction (up to
// Options.Retries times) in three cases: a serialization failure (40001),
// a deadlock (40P01), and a lost-update conflict.
//
// Lost updates are what READ COMMITTED would otherwise allow when the
// Service reads a row, changes it and writes it back (flagging a user,
// muting a member, disabling a webhook) while another transaction does the
// same. Instead of locking every row it reads, which would serialize all
// writes of the admin API on the acting admin's user row, the adapter
// checks row versions optimistically: the rows of channels, relations,
// messages, users and webhooks carry a version that every write of their
// mutable fields increments, each Update transaction remembers the version
// of the rows it read, and UpdateChannel, UpdateMessage, UpdateUser,
// UpdateWebhook, PutChannelUser and DeleteChannelUser write only if the row
// still has that version (a relation read as missing must still be
// missing). On a mismatch the transaction is rolled back and run again,
// and this time the reads by id lock their rows (SELECT ... FOR NO KEY
// UPDATE), so the second run cannot conflict on them. Counter updates
// (memberCount, childrenNumber, reactions) do not change versions, since
// the replacing writes never write counters.
//
// NextSegment is one UPDATE ... SET message_count = message_count + 1 ...
// RETURNING: the row lock it takes queues concurrent posters to the same
// channel until the holder commits or rolls back, so segments are unique
// and gapless across processes without retries. Writers of a channel's
// relations lock the channel row first, which keeps memberCount exact.
// Inserts that may collide (CreateChannel, CreateMessage, CreateUser,
// AddReaction, ...) use ON CONFLICT DO NOTHING and report CodeConflict
// without aborting the transaction, as the other adapters do.
//
// Update calls of one Store go through a write lane. A lone Update runs at
// once; Updates that arrive while a transaction runs its functions are
// committed together in the next one (group commit), each function in its
// own savepoint, so a failing function is rolled back alone, and every
// caller is answered only after the single COMMIT. The lane pipelines its
// batches: as soon as a batch sends its COMMIT, the next batch starts on
// another of the lane's connections (at most 3, or half of a pool of 6 or
// fewer), so functions run while the previous WAL flush is in progress.
// Only one batch at a time runs functions, and a committing one waits for
// no lock, so one Store's batches never deadlock each other. The lane keeps
// its connections for a short idle time (2 s) after the last write, then
// deallocates its statements and returns them to the pool.
//
// On the lane, statements are prepared with PREPARE and run as EXECUTE
// with their arguments as literals, which lets BEGIN and SAVEPOINT travel
// with the next statement. Posting a message is one statement
// (chat.MessageAppender: the channel row's increment and the message row
// in one CTE). An Update function must not call Update on the same Store,
// and a pool (New) needs connections for the lane besides those of View.
//
// Predicted appends. When the Store has seen the channel row before (its
// last post there), AppendMessage answers at once from what it expects the
// row to be, and its statement waits to travel with the next statement or
// with COMMIT: a lone post is one round trip (BEGIN, the append and COMMIT
// in one message), and a batch of posts is one round trip for the whole
// batch. The statement checks the prediction on the server (the row's
// version, messageCount and memberCount, and that it is open) and writes
// the predicted segment; if the row differs (another process posted or
// changed the channel), the batch is rolled back and its functions run
// again on the plain path, which returns the real outcome. Predictions
// need Options.Retries > 0 and prepared statements (not NoPrepare); a
// channel whose prediction failed is not predicted for a second, so
// processes that post to the same channel at the same time mostly take the
// plain path. A batch with predicted appends commits before the next batch
// starts, so that the next one's statements cannot reach the server first.
//
// # Webhook outbox and LISTEN/NOTIFY
//
// ClaimDeliveries selects due deliveries with FOR UPDATE SKIP LOCKED and
// leases them in the same statement, so dispatchers in different
// processes pass over each other's rows instead of waiting, and never hold
// the same delivery while its lease lasts; FinishDelivery succeeds only for
// the lease owner (CodeConflict otherwise).
//
// EnqueueDeliveries and RescheduleDelivery (and FinishDelivery when it
// re-queues) call pg_notify on the channel "chat_outbox.<schema>" inside
// the writing transaction; Postgres delivers the notification to every
// listening session when the transaction commits and drops it when it
// rolls back. The first WatchOutbox call starts a pq.Listener on a
// dedicated connection (Options.NotifyDSN, by default the DSN given to
// Open) and waits until LISTEN is acknowledged; the listener fans every
// notification out to the channels WatchOutbox returned, reconnects by
// itself, and signals once after a reconnect because notifications may
// have been lost meanwhile. Commits made through the Store also signal its
// own watchers directly. Close stops the listener and closes the watcher
// channels.
//
// # Statements and indexes
//
// Statements are prepared once per connection and reused, which saves a
// network round trip per statement with lib/pq. The first use of a
// statement runs it unprepared and prepares it in the background (never
// inside a transaction that holds a connection of a small pool). Behind
// PgBouncer in transaction mode before 1.21, set Options.NoPrepare.
//
// Every query path has an index: message pages walk the unique index
// (channel_id, channel_segment) forwards or backwards from the cursor and
// stop at the limit, comments use (parent_id, channel_segment), soft
// deletes by author (user_id, channel_id); channel lists use (created_at
// DESC, channel_id DESC) and a GIN index on tags; relations have (channel_id,
// user_id) and (user_id, channel_id), and a user's channels walk the partial
// index (user_id, channel_created_at DESC, channel_id DESC) of the member
// relations, whose channel_created_at is a trigger-kept copy of the
// channel's created_at (TestExplainMemberChannels checks the plans); the
// user search compares lowercased
// copies of displayName and userId (lowercased in Go, Unicode-aware) with
// prefix bounds (>= p AND < next(p)) on btree indexes, not ILIKE; reactions
// are unique on (user_id, message_id, name) and listed by (message_id,
// name, created_at DESC); a reaction_counts table indexed by (name, count
// DESC, created_at DESC) serves the most-reacted query; pending deliveries
// have a partial index on next_attempt_at; blobs are bytea keyed by
// (message_id, name) with an index on channel_id. TestExplainMessagePage
// checks, on an ANALYZE'd fixture of 300,000 messages and with the
// planner's default settings, that the custom and the generic plan of the
// message page queries are a Limit over an Index Scan of
// messages_segment_key (messages_parent_idx for comments), with no Seq Scan
// and no Sort.
//
// # Errors
//
// Driver errors are translated in one function: no row is CodeNotFound, a
// unique violation (23505) CodeConflict, lost or refused connections,
// server shutdown (57P01), too many connections (53300), cancelled
// contexts and retries that ran out CodeUnavailable (the driver's error and
// context.Canceled stay in the chain for errors.Is), anything else
// CodeInternal.
//
// # Lost connections
//
// A restart, a failover or pg_terminate_backend ends sessions that sit idle
// in the pool, and the store only finds out when it next uses them. An
// Update whose connection fails before COMMIT was sent was rolled back by
// the server, so it runs again (within Options.Retries) on another
// connection; the write lane then gives back all its connections and
// checks each one it takes from the pool with a ping. A View whose BEGIN
// fails that way begins again on another pooled connection before its
// function runs. A connection lost during COMMIT leaves the outcome
// unknown; when the transaction posted a message, the store looks for that
// message (its id, channel and segment) on another connection: found, the
// Update succeeded; missing, it runs again. Otherwise, or when the store
// cannot be reached, that Update returns CodeUnavailable and is not run
// again, since its writes may have been committed.
//
// # Scale-out
//
// Every process keeps its state in the database: run as many as the
// database can serve behind a load balancer. Each process uses at most
// Options.MaxOpenConns pooled connections (default 20) plus one LISTEN
// connection, so size Postgres's max_connections (or a pooler) for the sum.
// LISTEN needs a session: when the pool goes through PgBouncer in
// transaction mode, point NotifyDSN at Postgres or at a session-mode pool.
// Message posting in one channel is serialized by that channel's row
// (about one commit at a time), while different channels proceed in
// parallel and share WAL flushes (group commit); see docs/benchmarks.md.
//
// # Tests
//
// The tests need a server and skip without one: set CHAT_TEST_POSTGRES_URL,
// for example
//
//	CHAT_TEST_POSTGRES_URL='postgres://postgres@127.0.0.1:5432/test?sslmode=disable' go test -race ./store/postgres/
//
// Every test store gets a schema with a random name that is dropped when
// the test ends, so runs never collide.
package postgres
