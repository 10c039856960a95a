// Package webhook delivers chat events to the URLs registered as webhooks,
// and helps Go programs receive them.
//
// # Sending
//
// The chat Service writes every event into an outbox, in the same store
// transaction as the change that caused it, as one delivery per webhook: the
// exact envelope bytes {requestId, webhookId, event, data}. A Dispatcher,
// made with New and run with Start and Stop, reads that outbox. It claims
// due deliveries under a lease, POSTs each one with a pool of workers, and
// records every attempt (response status, latency and error) in the store,
// where the admin API lists them. Finished attempts are recorded in batches
// (chat.FinishDeliveries: one statement for the batch on Postgres), and
// under load the dispatcher waits up to 2 ms for several worker slots to
// free up before it claims, so each claim transaction takes several
// deliveries; docs/benchmarks.md has the throughput.
//
// Each POST carries the body unchanged and these headers:
//
//   - Content-Type: application/json.
//   - X-Service-Signature: sha1=<lowercase hex HMAC-SHA1 of the body, keyed
//     with the webhook's secret>. The header name is configurable
//     (Config.SignatureHeader). Verify checks it.
//   - webhook-id, webhook-timestamp and webhook-signature, as in Standard
//     Webhooks: the id is the requestId, the timestamp is in Unix seconds, and
//     the signature is "v1," followed by the base64 HMAC-SHA256 of
//     "<id>.<timestamp>.<body>". Its key follows Standard Webhooks: for a
//     secret "whsec_<base64>" (the form the Service generates) the decoded
//     bytes, so a Standard Webhooks library verifies deliveries with the
//     secret as given; for any other secret its bytes (see StandardKey). The
//     timestamp changes on every attempt; a receiver that checks it refuses
//     replayed requests. VerifyStandard checks these headers.
//   - User-Agent: chatengine-webhook/1 (configurable).
//
// A delivery succeeds when the receiver answers any 2xx status within the
// timeout (10 seconds by default). Any other answer, or none, is a failed
// attempt, and the delivery is tried again after the next delay of the
// schedule: at once, then after 5 seconds, 5 minutes, 30 minutes, 2 hours,
// 5 hours, 10 hours and 10 hours, each delay jittered by ±10 %. After the
// eighth attempt the delivery is marked failed. When a 429 or 503 answer
// carries Retry-After (seconds or an HTTP date), the next attempt waits at
// least that long, up to an hour. A 410 Gone answer disables the webhook: the
// delivery is marked failed and nothing more is sent to it until an admin
// enables it again. Deliveries of a deleted or disabled webhook fail without
// a request. Redirects are not followed, and at most 64 KiB of a response is
// read.
//
// # Guarantees
//
// Delivery is at least once. An event is stored in the same transaction as
// its change, so a crash after the commit cannot lose it; a crash or a
// network failure after the receiver processed a request but before the
// attempt was recorded means it is sent again. Every attempt of a delivery
// carries the same requestId (and webhook-id), so a receiver makes its
// processing idempotent by remembering the ids it handled. Deliveries are
// not ordered: retries and concurrent workers reorder them.
//
// Several dispatchers may share one store, in one process or in many
// processes on one Postgres database. A delivery is claimed under a lease
// (one minute by default, longer than the timeout), so one attempt is never
// sent by two dispatchers at once; a dispatcher that dies holding leases
// leaves those deliveries to be claimed again when the leases expire. Leases
// are set and checked with each dispatcher's clock, so the clocks of the
// machines sharing a store must agree to well within Lease minus Timeout.
// When
// the store signals the commits that enqueue deliveries
// (chat.DeliveryWatcher; every adapter of this module does) deliveries are
// claimed as soon as they are committed, and commits that enqueue none
// wake nothing; between claims the dispatcher sleeps until the earliest
// due time it knows of or its poll. With a store that cannot signal, the
// dispatcher polls, and Wake (wired to the Service's Config.OnCommit)
// nudges it; with one that can, leave OnCommit nil (it would cost a second
// claim per commit).
//
// With Config.Direct, the deliveries that the dispatcher's own Service
// enqueues skip the claim while the dispatcher keeps up (its last claim
// found nothing more due, it has a free slot and the webhook is below its
// limit): the transaction stores them leased to it (chat.DeliveryTaker) and
// the Service hands them over after the commit, so a post with a webhook
// costs one write transaction fewer. A delivery leased so and never sent
// (the process ended first) is claimed by any dispatcher once its lease
// has run out, as a claimed one's; one that did not commit frees its slot.
// Past the dispatcher's limits, while deliveries are due for a claim, or
// when its senders hold its lock at that instant (the transaction never
// waits for it), new ones are stored unleased and claimed in order.
//
// On SQLite (chat.DeliveryDeferrer) a delivery taken so is not even written
// to the outbox by its transaction: it is kept in its event's row and
// inserted once, in its final state with its attempt, when the attempt is
// recorded: a post with a webhook writes its delivery once instead of
// inserting it and updating it. The store inserts such a delivery, pending
// and leased as it was, when its lease runs out unrecorded (the dispatcher
// stopped or stalled), when the store closes, and, after a crash, from the
// next process that opens the file once the crashed one's row has lapsed
// (5 seconds) and the lease has run out: the same requestId and body, sent
// again. Until then the delivery log (GET /webhooks/{id}/deliveries) does
// not list it.
//
// # Address safety
//
// Webhook URLs must use http or https. Unless Config.AllowPrivate is set,
// deliveries never connect to loopback (127.0.0.0/8, ::1), private
// (10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16, fc00::/7), link-local
// (169.254.0.0/16, fe80::/10), shared (100.64.0.0/10), unspecified,
// multicast or reserved addresses, cloud metadata endpoints (169.254.169.254,
// fd00:ec2::254), IPv6 forms embedding any of these (IPv4-mapped,
// IPv4-compatible, IPv4-translated, NAT64, 6to4), local-use NAT64
// (64:ff9b:1::/48) or Teredo (2001::/32). The check runs at dial time on the
// resolved address that is actually connected (Guard), so a host name whose
// DNS answer changes after registration (DNS rebinding) cannot lead to a
// refused address. CheckURL performs the checks possible without the
// network, for registration time. Proxy environment variables are ignored.
//
// # Receiving
//
// NewReceiver returns an http.Handler that verifies the signature, decodes
// the envelope into an Event and calls a function; Event's Message,
// Channel, User and Reaction methods decode the data of each kind of event:
//
//	secret := []byte(os.Getenv("CHAT_WEBHOOK_SECRET"))
//	http.Handle("POST /chat-events", webhook.NewReceiver(secret,
//		func(ctx context.Context, ev *webhook.Event) error {
//			if ev.Event != chat.EventMessageDidCreate {
//				return nil
//			}
//			d, err := ev.Message()
//			if err != nil {
//				return err
//			}
//			log.Printf("%s wrote in %s", d.Users[0].UserID, d.Messages[0].ChannelID)
//			return nil // 204; an error answers 500 and the delivery is retried
//		},
//		webhook.WithStandardSignature(0))) // also refuse replays older than 5 minutes
//
// Deliveries are at least once: a handler that must act once per event
// remembers the RequestIDs it has handled. Outside Go, recompute
// Sign(secret, body) over the raw body and compare it with the signature
// header in constant time, as Verify does.
package webhook
