// Package push delivers notifications to phones and browsers through the
// three push providers: Apple Push Notification service (APNs), Firebase
// Cloud Messaging (FCM) and Web Push.
//
// The package sends; it does not decide. Which members of a channel get a
// push for a new message is decided by the chat Service, which writes the
// decision to the push outbox in the message's transaction (chat.PushBatch,
// one per message). A Worker sends that outbox: it expands each batch into
// one chat.PushDelivery per device, claims due pushes under a lease, sends
// them, and records each attempt, retrying with backoff (DefaultSchedule)
// and deleting the devices a provider reports as gone.
//
// A Sender delivers one Notification to one Device; Mux routes a device to
// the sender of its provider (New makes one from a Config naming the
// configured providers); the error of a failed delivery says what the
// caller must do (KindOf):
//
//   - Gone (errors.Is(err, ErrGone)): the provider says the token will
//     never work again (APNs 410, or 400 BadDeviceToken and
//     DeviceTokenNotForTopic; FCM UNREGISTERED, 404, SENDER_ID_MISMATCH
//     or an invalid registration token; Web Push 404 and 410). Remove the
//     device.
//   - Retry (ErrRetry): the network or the provider failed for now (5xx,
//     429, timeouts, an expired credential that has been renewed). Deliver
//     again with backoff, no sooner than RetryAfter(err) when it is set.
//   - Permanent (ErrPermanent): this delivery cannot succeed (a payload
//     the provider refuses, credentials it rejects, a provider without a
//     sender, an address the SSRF rules refuse). Give it up; keep the
//     device.
//
// ForMessage builds a new message's notification: the channel's display
// name as the title, "<sender>: <text>" as the body with the text cut to
// 100 characters (Truncate counts Unicode code points, never splitting a
// character), and {channelId, messageId} as data. CheckDevice validates a
// device at registration and returns its token in canonical form.
//
// Constructors check their configuration and start no goroutines; senders
// are safe for concurrent use and keep their HTTP connections open between
// sends.
//
// # APNs
//
// NewAPNs needs the token signing key (the .p8 file from the Apple
// developer account, a PKCS#8 PEM P-256 key), its key ID, the team ID and
// the app's bundle ID as topic. Requests go over HTTP/2 (nothing else is
// spoken) to POST /3/device/<token> with apns-topic, apns-push-type
// alert, apns-priority (10) and apns-expiration (now + 24 h), authorized
// by a provider token: an ES256 JWT with kid = key ID, iss = team ID and
// iat, reused for 50 minutes and then signed anew (Apple refuses one older
// than an hour). The payload is {"aps": {"alert": {"title", "body"}}}
// with the notification's data as top-level keys. Endpoint is
// APNsProduction by default; development builds of an app get tokens for
// APNsSandbox, and a token only works at the endpoint it was issued for.
//
// # FCM
//
// NewFCM needs a service account's JSON key file (Firebase console:
// Project settings, Service accounts). The sender signs an RS256 JWT
// assertion with the key (golang.org/x/oauth2/jwt), exchanges it at the
// key file's token_uri for an OAuth 2.0 access token with the
// firebase.messaging scope, reuses the token until shortly before it
// expires, and POSTs {"message": {"token", "notification": {"title",
// "body"}, "data"}} to /v1/projects/<project>/messages:send. The project
// defaults to the key file's project_id. FCM has no sandbox: a separate
// Firebase project serves for testing. Endpoint and TokenURL can point
// elsewhere (tests).
//
// # Web Push
//
// A Web Push device's token is the browser's PushSubscription JSON
// ({endpoint, keys{p256dh, auth}}). NewWebPush needs the server's VAPID
// key pair and a contact Subject (mailto: or https:). The server makes the
// key pair once (GenerateVAPIDKey), keeps it (MarshalVAPIDKey,
// ParseVAPIDKey) and gives browsers its public key (VAPIDPublicKey: the
// uncompressed point in base64url) to subscribe with; a new key pair
// orphans every subscription. Each notification's JSON {"title", "body",
// "data"} is encrypted with the aes128gcm content coding of RFC 8291
// (Encrypt: a fresh salt and sender key pair each time, one record, at
// most MaxWebPushPayload bytes) and POSTed to the endpoint (RFC 8030) with
// TTL (24 h), Urgency (normal) and "Authorization: vapid t=<JWT>, k=<public
// key>", the JWT signed ES256 with aud = the endpoint's origin, exp = now +
// 12 h and sub = Subject (RFC 8292). The page's service worker decrypts
// nothing itself: the browser does, and hands it the JSON.
//
// The encryption is built from the standard library (crypto/ecdh,
// crypto/hkdf, AES-GCM), following the RFC's steps; its example is a
// test.
//
// # Addresses
//
// Every connection, to all three providers, goes through webhook.Guard:
// loopback, private, link-local and metadata addresses are refused after
// DNS resolution, as for webhooks. A Web Push endpoint must also be https
// and pass webhook.CheckURL. Network.AllowPrivate lifts both (and allows
// http endpoints) for development and tests.
package push
