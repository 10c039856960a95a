// Package chat is an embeddable chat engine: the domain vocabulary
// (channels, messages, users, roles, rules, reactions, admins, webhooks),
// the Service that enforces the chat rules, and the Store interface that
// persistence adapters implement.
//
// A host application picks a Store (store/memory, store/sqlite or
// store/postgres), creates a Service with New, mounts the admin HTTP API
// from package httpapi and, to deliver webhook events, starts a
// webhook.Dispatcher. The root package imports no driver, router or image
// library.
//
// # Vocabulary
//
// The Service's methods return the records the API returns: a ChannelList
// (channels, their channelUsers and the users they reference), a
// MessageList (messages and their authors), a UserList, and so on, with
// Paging tokens on listings. Each thing is done one way:
//
//   - The acting user is the actorID argument, right after ctx, and never
//     travels in the context: an admin account's user, which holds the
//     role global-admin and may do everything, or an end user, whose
//     rights are the permission table of docs/api.md section 1
//     (Permissions of end users), decided in one place (authz.go) from the
//     user's roles. Every method refuses an empty actorID with
//     CodePermissionDenied, except the operator's calls (CreateAdmin,
//     CreateAdminWithPassword, RotateAdmin, RevokeAdmin, EnsureWebhook,
//     DisableWebhook, IssueUserToken): there "" is the server's operator
//     (the command line, the host program, the webhook dispatcher), which
//     the audit log records as actorId null; an admin panel passes its
//     signed-in admin's user, and IssueUserToken refuses a named actor
//     that is not an admin.
//   - The input of a method M is the struct MInput (CreateMessage takes a
//     CreateMessageInput, UpdateChannel an UpdateChannelInput); a listing
//     takes a ...Query (MessageQuery, ChannelQuery).
//   - User tokens (HS256 JWTs) are minted by IssueUserToken (actorID ""
//     for the host program, or an admin's user) and verified by
//     AuthenticateUser; a host holding Config.UserTokenSecret may also sign
//     UserClaims with any JWT library.
//
// Admin accounts sign in to the admin panel (package console) with a
// bcrypt-hashed password (SetAdminPassword, SignInAdmin), in sessions kept
// in the store (AdminSessionFor, EndAdminSession).
//
// Kinds of things are named string types with constants: ChannelType
// (ChannelTypeStandard), MessageType (MessageTypeText, MessageTypeCustom,
// MessageTypeImage, MessageTypeFile), Membership (MembershipMember,
// MembershipBanned), ReferenceType (ReferenceTypeMessage), and the query
// filters ChannelMembershipFilter (ChannelsAll, ChannelsMember,
// ChannelsNotMember) and UserFlagFilter (UsersAll, UsersFlagged). A value
// that is none of the constants, as it may come from a request, is
// refused with CodeBadRequest naming the field.
//
// Lengths of time are time.Durations: MuteChannel and MuteUsers take the
// mute period (MuteForever mutes until unmuted, Unmute lifts a mute), and
// SetChannelRateLimit the slow-mode window (RateLimitOff turns it off).
// The API keeps them in milliseconds; package httpapi converts.
//
// A message's Data is the JSON object the API sends. Text, Image (an
// ImageData with its ImageSize renditions), File (a FileData) and
// DecodeData read it into Go values; TextData and CustomData make the
// Data of a post.
//
// Errors are *Error values: Code is the API's error code (errors.Is works
// with the sentinels such as ErrNotFound) and Detail holds typed values,
// which errors.As reaches: FieldError (the refused input), UserRef (a
// banned user), RuleRef (a blacklist entry that matched, or a pattern
// that does not compile), RefusedLink (a link the whitelist refused) and
// RetryAfter (slow mode's wait).
//
// # Transactions and events
//
// Every operation that changes state runs in one Store transaction. Events
// (the spec's message.didCreate, channel.didCreate, channel.didJoin and
// channel.didAddUsers, and the extension events listed in EventNames) are
// written to the outbox as one Delivery per matching webhook in that same
// transaction, so a crash after the change commits never loses the event
// and a failed change emits none.
//
// Moderation and administration actions also write their AuditEntry (one
// of AuditActions) in that transaction; QueryAudit reads the log.
// CheckMessage is a dry run of CreateMessage through the same rules.
// PurgeUserMessages spans several transactions: it deletes a user's
// messages in batches of Config.PurgeBatch, each batch a transaction with
// its events, so it never holds a long one. EraseUser (a user's data
// erased, its id kept) works the same way, and ExportUser streams a user's
// data to an io.Writer, reading a page per transaction.
//
// Users report messages and users (CreateReport); admins work through the
// review queue (QueryReports) and resolve each report (ResolveReport) by
// dismissing it or through the operation that deletes or bans, with a
// report.resolve audit entry. Report events go to webhooks and admins'
// streams only.
//
// # Optional store capabilities
//
// A Tx may implement more than the Store interface requires, for speed:
// MessageAppender (allocate a channel segment and store the message in one
// step; Postgres does it in one statement) and DeliveryFinisher (record a
// batch of webhook attempts at once). The functions AppendMessage and
// FinishDeliveries use them when present and fall back to the required
// methods otherwise, with the same results; the conformance suite in
// store/storetest checks both paths. A Store may implement OutboxWatcher to
// wake webhook dispatchers on commit instead of letting them poll. Every Tx
// has the methods of LockStore, which read a row the transaction is about
// to write and, in stores whose write transactions run concurrently
// (Postgres), hold it until the transaction ends; the Get methods never
// hold rows (see Tx).
//
// # Choices where the API contract is silent
//
//   - messageCount is the number of messages ever posted in a channel, which
//     is also its last channelSegment; deleting a message does not lower it.
//     childrenNumber likewise counts the comments ever posted.
//   - A channel's displayName defaults to its channelId; a user's to its
//     userId.
//   - isMuted is derived from muteTimeout when read, so mutes expire by time
//     alone; an expired mute reads as muteTimeout null. An Expirer (or
//     Service.ExpireMutes) announces each mute that ended by time with
//     channel.didUnmute or channel.didUnmuteUsers, once, whichever process
//     sharing the store gets to it first. MuteForever
//     (mutePeriod -1 on the wire) mutes until 9999-12-31T23:59:59.999Z
//     (Forever), and so does a period that ends after it.
//   - User search is a case-insensitive prefix match on displayName or
//     userId (indexable in every store).
//   - Blacklist entries without regular-expression syntax are matched
//     together by one Aho-Corasick automaton over the case-folded text, so
//     their cost does not grow with their number; whole-word entries match
//     only between Unicode non-letter, non-digit runes. Entries with regex
//     syntax are RE2 patterns, case-insensitive. Case folding is RE2's
//     simple folding for both kinds ("ΣΟΦΊΑΣ" matches "σοφίας", the Kelvin
//     sign matches "k"); "ß" and "ss" stay different, as in RE2.
//   - Links, for the whitelist, are runs of the form scheme://host/path,
//     whatever the host (an IP address, a name without a dot, localhost),
//     or host.tld/path where the top-level label has at least two letters;
//     an e-mail address is not a link. In scheme://user@host the host after
//     the @ is the one checked. A regex entry allows a link when it
//     matches the whole host (lowercased, without port) or the whole host
//     followed by the path (query included): `.*\.gov` allows every link
//     to a .gov host, `example\.com/pub/.*` only links under /pub.
//   - Paging tokens are HMAC-signed, bound to the query that made them, and
//     carry a keyset position: inserting rows never makes a page skip or
//     repeat one. The key lives in the store, so every process sharing the
//     store accepts the tokens of the others.
//   - Admins post as their own user, which holds the built-in role
//     global-admin: they may post to any open channel, member or not, muted
//     or not, but they are not exempt from the blacklist or whitelist. A
//     channel ban applies to an admin's user like any other; a global ban
//     of a user holding global-admin is refused with 400301 (revoke the
//     admin account instead).
//   - Adding or removing a reaction is a write to the message's channel:
//     on a closed channel it is 400300. Global ban without an existing
//     user is 400400 (a ban does not create users).
//   - Beyond the spec: channels can be updated (UpdateChannel: displayName,
//     metadata, tags) and put in slow mode (SetChannelRateLimit: the spec's
//     isRateLimited and rateLimitWindow, one message per member per window,
//     kept in milliseconds, admins exempt); messages can be edited
//     (UpdateMessage, which sets the spec's editedAt). They emit
//     channel.didUpdate and message.didUpdate.
//   - Images: the Service stores the renditions it is given (package media
//     makes them); files are stored unchanged. Both live in the Store, so
//     several processes on one Postgres share them.
//   - Every image or file message the Service returns, in responses and
//     in webhook events, carries signed links (data.urls of an image, one
//     per kept size; data.url of a file) that open without a token:
//     HMAC-SHA256 over the message id, the size and the expiry, keyed with
//     Config.LinkKey (by default a random key kept in the store, like the
//     paging key), expiring Config.LinkTTL (24 h) after the response,
//     rounded up to the hour. They are computed when returned, never
//     stored; OpenLink verifies one in constant time.
//   - LeaveChannel (a member leaving) emits channel.didRemoveUsers with
//     the user as its own actorId. Typing publishes the ephemeral event
//     channel.didStartTyping to the in-process subscribers of
//     SubscribeEphemeral, at most once per user and channel every 2 s; it
//     is never stored and never reaches webhooks. MarkRead publishes the
//     ephemeral channel.didMarkRead {channelId, userId, readToSegment}
//     when a read marker moves, so that the user's other connections
//     clear their unread counts (event streams send it to that user and
//     to admins only); the marker itself is stored (readToSegment of the
//     channelUser), where other members read it.
//   - Presence (NewPresence, Start, Stop; the stream hub calls Open and
//     Close) keeps User.Online and LastActiveAt: online while the user has
//     an event stream on any process sharing the store, and for a grace
//     period (30 s) after its last one closed. Each process holds a lease
//     in the store and a row per user with a stream there; a process whose
//     lease expired (a crash) has its rows deleted by any other. Each
//     transition is decided in one transaction holding the user's row and
//     announced once with the ephemeral user.didChangePresence. Online
//     tells whether users have an open stream right now.
package chat
