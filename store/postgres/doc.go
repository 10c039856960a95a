// Package postgres is the PostgreSQL adapter of chat.Store, the scale-out
// path of the engine: any number of server processes can share one
// database, and everything (messages, files, the webhook outbox) lives in
// it. It passes the shared conformance suite (store/storetest) and is
// tested against PostgreSQL 15 with lib/pq.
//
// # Connecting
//
// Open connects with lib/pq and owns the pool it creates (Close closes it):
//
//	s, err := postgres.Open(ctx, "postgres://chat:secret@db.internal:5432/chat?sslmode=verify-full", nil)
//
// lib/pq defaults to sslmode=require, which fails against a server without
// TLS such as a local development server: use sslmode=disable there and
// sslmode=verify-full in production. New takes a *sql.DB the caller opened
// and keeps owning; WatchOutbox then needs Options.NotifyDSN for its
// LISTEN connection. Each process uses at most Options.MaxOpenConns pooled
// connections (default 20) plus that one, so size max_connections (or a
// pooler) for the sum. Behind PgBouncer in transaction mode before 1.21,
// set Options.NoPrepare, and point NotifyDSN at Postgres itself or at a
// session-mode pool.
//
// # Schema and migrations
//
// Options.Schema names the Postgres schema that holds the tables (default
// "public"); it is created when missing, and every statement names it, so
// several stores (one per tenant, one per test) can share a database.
// Open and New apply the pending forward-only migrations embedded in the
// binary (migrations/NNNN_name.sql, numbered in step with the SQLite
// store's), each in its own transaction, under an advisory lock so that
// processes starting together migrate once; with Options.SkipMigrations,
// run Migrate separately. A database migrated by a
// newer release is accepted, since migrations only add. The version
// columns that migration 0002 added are no longer read or written; they
// stay so that processes of the previous release keep working against a
// migrated database during a rolling upgrade.
//
// A user's channels are read by walking the partial index (user_id,
// channel_created_at DESC, channel_id DESC) of the member relations, whose
// channel_created_at is a trigger-kept copy of the channel's created_at, so
// a page costs the same whatever the number of memberships.
//
// # Transactions and concurrency
//
// Every value travels as a bound parameter; statements are prepared once
// per connection. View runs a REPEATABLE READ READ ONLY transaction, so all
// its reads see one snapshot. Update runs a READ COMMITTED transaction.
// In it, the methods of chat.LockStore (LockChannel, LockChannelUser,
// LockChannelUsers, LockMessage, LockUser, LockWebhook, LockReport) lock
// the rows they read (SELECT ... FOR NO KEY UPDATE) until it ends: a row
// the function reads and then writes cannot change in between, and another
// process that wants the row waits. The Get, Query and List methods take
// no locks, apart from GetDeviceByToken and ListDevices (device
// registration) and the claims (SKIP LOCKED) that their documentation
// names. Relations are locked and written under their channel's row lock,
// taken first, which keeps a relation locked as missing missing; the
// Service computes memberCount from the channel's row it holds
// (LockChannel), so concurrent joins count exactly.
//
// Nearly every request reads its acting user with GetUser, which does not
// lock, so that writes by one user (an admin, a bot) do not queue behind
// each other; a user to write is read with LockUser. When a function
// writes a user it read with GetUser, GetUsers or EnsureUsers, Update
// rolls the transaction back and runs the function again, reading that
// user with the lock.
//
// Posting a message is one statement: UPDATE ... SET message_count =
// message_count + 1 ... RETURNING on the channel row together with the
// insert of the message. The row lock queues posters to one channel in
// every process until the holder ends, so segments are unique and gapless;
// posts to different channels run in parallel, and Postgres commits
// concurrent transactions with shared WAL flushes. Posts (Updates under
// chat.WithCommitGroup with the channel's id) share transactions within a
// process: channels are spread over Options.CommitGroups queues, each runs
// one transaction at a time, and the posts that arrive while it runs share
// the next one and its commit, taking their channels' locks in ascending
// order of the ids (group.go); each is answered after that commit. The
// posts of a group read what their rules read in one statement and write
// their messages, deliveries and events in one statement (groupwrite.go).
//
// Update runs its function again, up to Options.Retries times, only when
// Postgres aborted the transaction with a serialization failure (40001) or
// a deadlock (40P01); the function must not leak state from a failed run.
// An Update whose connection is lost returns CodeUnavailable without
// running again, since a lost COMMIT may have committed. A BEGIN on a
// session the server ended while idle is retried on another connection.
//
// # Event log
//
// AppendEvents inserts a transaction's events into events_pending, keyed by
// a sequence; writers share no row and send no notification. After the
// commit, a relay pass moves every committed pending row into events, in
// key order, with ids from the counter row event_log_head, and sends one
// NOTIFY for the batch. A pass is one statement that updates the counter
// row only if it still holds the value the statement's snapshot read, so
// passes of different processes follow each other and ids follow the
// order in which readers see the rows. Update waits for the pass that
// carries its events and sets their ids, unless the context carries
// chat.WithoutEventIDs (the Service's CreateMessage): then a goroutine of
// the Store runs the pass right after the commit, until Close. A
// process's writers share its passes. Rows left by a process that ended
// between its commit and its pass are moved by any later pass, and by the
// poll that the first Watch call starts (once a second, until Close).
//
// # Webhook outbox
//
// ClaimDeliveries takes due deliveries with FOR UPDATE SKIP LOCKED, so
// dispatchers in different processes pass over each other's rows.
// EnqueueDeliveries sends no notification from its transaction (a NOTIFY
// takes a lock at commit that every notifying transaction queues for): the
// process's own watchers are signalled after the commit, and a transaction
// that enqueued deliveries without appending events notifies the other
// processes after it committed. Rescheduling calls pg_notify in its
// transaction. WatchOutbox, WatchEvents and WatchDeliveries LISTEN on a
// dedicated connection and signal their channels in every process.
//
// # Ephemeral events and stream tickets
//
// The Store is a chat.EphemeralBroker: PublishEphemeral sends a typing
// event as one NOTIFY (small JSON, under the 8000-byte limit) on a second
// channel of the schema, which the same LISTEN connection hears, and
// WatchEphemeral hands those events to its channels in every process.
// Stream tickets (chat.TicketStore) are rows of stream_tickets keyed by
// the ticket's SHA-256; TakeTicket is DELETE ... RETURNING, so one of
// several processes redeeming a ticket at once gets it. With these it is
// the Postgres broker (package broker, broker.Postgres).
//
// # The publisher's lease
//
// The Store is a broker.Leaser: AcquireLease takes a session advisory
// lock on a connection of its own, so that one process of a deployment
// at a time publishes the log to an outside broker (the NATS broker), and
// keeps how far it published in broker_positions, written on that
// connection only. When the holder dies its connection, and so the lock,
// goes, and another process takes the lease from the stored position.
//
// # Errors
//
// Driver errors are translated in one function: no row is CodeNotFound, a
// unique violation CodeConflict, a value the database refuses as input
// (SQLSTATE class 22, such as a NUL byte or invalid UTF-8 in text)
// CodeBadRequest, lost connections, server shutdown, serialization
// failures and deadlocks that outlived their retries and cancelled
// contexts CodeUnavailable, anything else CodeInternal. The driver's error
// stays in the chain for errors.Is and errors.As.
//
// # Tests
//
// The tests need a server and skip without one:
//
//	CHAT_TEST_POSTGRES_URL='postgres://postgres@127.0.0.1:5432/test?sslmode=disable' go test -race ./store/postgres/
//
// Every test store gets a schema with a random name, dropped when the test
// ends.
package postgres
