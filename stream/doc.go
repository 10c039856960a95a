// Package stream fans the event log out to event streams: Go subscribers
// (Hub.Subscribe) and the HTTP endpoint GET /events, over WebSocket or
// Server-Sent Events (Hub.Handler, mounted by httpapi).
//
// One goroutine per Hub follows a broker (Config.Broker, package broker)
// and offers each event, in id order, to every live subscriber whose
// filter admits it. With the in-process and Postgres brokers it reads the
// log when the store signals a commit (in process for the memory and
// SQLite stores, LISTEN/NOTIFY across processes for Postgres, so every
// process sees every event) and every PollInterval as a safety net. With
// the NATS broker (package broker/natsbroker) the events come with their
// ids from the subjects of what the hub's subscriptions follow (their
// channels, users, admin accounts, or everything): the hub tells the
// broker its interest (Hub.want, Hub.follows) and a subscription joins
// only once its interest is in place, after a read of the log from the
// hub's position; an event at or below that position is a repeat and is
// dropped. The hub's position only moves past an id when every event of
// its interest up to it was offered, so a subscription that joins there
// misses nothing and gets nothing twice.
// It finds them through an index of the live set: by channel (an end
// user's subscriptions under the channels where the user is a member, an
// admin's under the channels it names), by user (the events about the
// user), and the admins' without a filter; so an event costs what its
// recipients cost, not the number of subscribers. The events that add or
// remove an end user move its subscriptions in the index, in log order:
// the event that adds the user is delivered to it, and so is the one that
// removes it. Ephemeral events go through the same index.
// A subscriber that resumes from an id first replays the log from there,
// then joins the live set under the hub's lock at exactly the position the
// hub has reached, so it gets every event once: no gap, no repeat.
//
// Each subscriber has a bounded queue (Config.QueueSize, default 1,000).
// The hub never waits for a subscriber: one whose queue is full is closed
// with ErrTooSlow (WebSocket close code 4008, "too slow"), and may resume
// from the last id it received.
//
// Each event's frame is encoded once and the same bytes go to every
// subscriber. A subscriber's queue is a slice that grows with its backlog
// and is released when drained. A WebSocket stream holds one goroutine
// while idle, the one that reads the connection: the HTTP handler returns
// after the upgrade, and a writer goroutine runs only while frames or a
// ping are due.
//
// Ephemeral events (channel.didStartTyping, channel.didMarkRead) are never
// stored: the hub takes them from chat.Service.SubscribeEphemeral (which,
// over Postgres, relays those of every process), or, with the NATS broker,
// from its feed (the subjects of its interest only), and offers them to
// live subscribers only, without an id. An end user receives the typing of the
// other members of its channels and its own read markers only (for its
// other connections); an admin receives both kinds for every channel, or
// for the channels it names.
//
// Presence: with Config.Presence set (a chat.Presence, started before the
// hub and stopped after it), each end user's subscription counts while it
// lives, so the user shows online (User.Online) while it has one on any
// process. The ephemeral user.didChangePresence, which carries no
// channel, goes to the admins' subscriptions and to those of the other
// members of the user's channels (read from the store, off the ephemeral
// callback, by a goroutine of the hub), except the users who block it.
//
// Tickets (IssueTicket, RedeemTicket) are kept in the store, by hash, so a
// ticket issued by one process opens a stream on any process sharing the
// store, once; the retention job deletes expired ones. A ticket carries
// the access it was issued under (chat.Access).
//
// A subscription made with an Access (Filter.Access; ServeEvents passes
// the caller's) lives only as long as that access. Revocations reach
// every process through the log: RevokeUserTokens, RevokeAdmin and
// RotateAdmin write an internal event (chat.IsInternalEvent) in their
// transaction, which the hub consumes and offers to no subscriber. The
// live set is indexed by user and by admin account, so such an event, or
// a global ban, costs a map lookup, and any other event one comparison of
// its name. A token's expiry is a timer per subscription. ServeEvents
// also bounds the streams of each caller (Config.MaxStreamsPerCaller).
//
// A resumed end-user subscription replays each event by the user's
// membership when the event happened (see Subscription.rewindMembership).
//
// New starts nothing; Start starts the follower and the retention job,
// which deletes events older than Config.EventRetention in bounded batches;
// Stop ends both and closes every subscription.
package stream
