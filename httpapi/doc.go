// Package httpapi serves the chat API (docs/api.md) as one http.Handler
// over a *chat.Service.
//
// # Mounting
//
// New returns a handler that serves the routes listed by Routes relative
// to where it is mounted. The example server mounts it at /api/v2, with
// chi:
//
//	r := chi.NewRouter()
//	r.Mount("/api/v2", httpapi.New(svc, httpapi.Config{}))
//
// or with the standard library:
//
//	mux := http.NewServeMux()
//	mux.Handle("/api/v2/", http.StripPrefix("/api/v2", httpapi.New(svc, httpapi.Config{})))
//
// Path parameters are URL-escaped ids: an id that contains '/' or '%' is
// sent escaped (%2F, %25) and decoded by the handler. Two paths of later
// revisions of the API are served beside the spec's:
// POST /channel/{channelId}/displayName and POST /channels/{channelId}/close.
//
// # Authentication
//
// Every request, including requests for unknown paths, needs the header
// Authorization: Bearer <token> (the scheme is case-insensitive) with the
// access token of an admin account (it starts with chat_) or an end
// user's token (any other token is read as an HS256 JWT, see
// chat.Service.AuthenticateUser). A missing, unknown, revoked, expired or
// forged token is answered with 401, code 400100 and a WWW-Authenticate
// header; a globally banned user's token with 403, code 400312. The
// Service acts as the admin's user or as the end user and decides every
// right; AdminFrom and UserFrom return the caller of a request.
//
// The one exception is a signed file link: a GET of
// /messages/{messageId}/images or /messages/{messageId}/files whose query
// string has a sig parameter is judged by the link alone
// (chat.Service.OpenLink: signature, then expiry), without a token; an
// altered or expired link is 403 with code 400300. The links are the
// data.urls and data.url of the image and file messages the API returns.
//
// # Rate limits
//
// With Config.AdminRateLimit or Config.UserRateLimit set, each admin
// account and each end user has a token bucket of requests
// (golang.org/x/time/rate), in this process. Every response to an
// authenticated caller carries X-RateLimit-Limit (the burst),
// X-RateLimit-Remaining (whole requests left) and X-RateLimit-Reset
// (seconds until the bucket is full); a request over the limit is
// answered with 429, code 400311 and Retry-After, and does nothing.
// With Config.Anon set (NewAnonLimiter), requests without a credential
// (no token, a refused token, a stream ticket redemption) count against a
// bucket per client address, with the same headers and answers; a host
// may put its own sign-in routes behind the same buckets
// (AnonLimiter.Limit). Signed file links are never counted; an event
// stream counts once, when it opens.
//
// # Request decoding
//
// Every endpoint with parameters accepts a JSON body (application/json,
// or a body that starts with '{' sent without a Content-Type or labelled
// as a form, as curl -d does) and a form body
// (application/x-www-form-urlencoded, or no Content-Type otherwise),
// whatever content type the spec lists. Other content types are answered
// with 415 and code 400415, and so is a body with a Content-Encoding other
// than identity (bodies are never decompressed). GET and DELETE also read the query string;
// DELETE reads its body too, and a body field wins over a query field of
// the same name. Uploads (POST /messages/images, POST /messages/files)
// take multipart/form-data.
//
// In forms and query strings, an array may be sent as repeated keys
// (userIds=a&userIds=b), with empty brackets (userIds[]=a), with indexes
// (userIds[0]=a, ordered by index) or as one JSON array string
// (userIds=["a","b"]); a single empty value (userIds=) is an empty array.
// An object may be sent with brackets (options[limit]=10,
// metadata[a][b]=1, at most 32 levels) or as one JSON object string
// (options={"limit":10}). Booleans are true, false, 1 or 0; integers are
// decimal; an empty value of a boolean or integer field counts as absent.
// In JSON, every field must have its JSON type (a number, not a string
// holding one); integers may be written 10.0 or 1e1. JSON null counts as
// absent. Unknown fields are ignored, so old clients may send channelId
// beside the path or referenceVersion.
//
// A field of the wrong type, a missing required field, an unknown enum
// value or a value out of range is answered with 400 and code 400000; the
// message starts with the field's name (options.limit: must be an
// integer) and data.detail holds {"field": name}. A rejected request
// changes nothing.
//
// # Uploads and downloads
//
// Uploads are read as a stream. Clients should send the channelId (and
// parentId) fields before the file part: the posting rules (channel
// exists and is open, the admin may post) are then checked before the file
// is read. When the file comes first they are checked after it. The file
// is read into memory up to Config.MaxUploadBytes; one byte more is
// answered with 413 (code 400413) at once. An image upload whose first
// bytes are not JPEG, PNG, GIF or WebP is refused with 415 (code 400415)
// before the rest is read; an image of more than Config.MaxImagePixels
// pixels, or that takes more than Config.MaxImageMemory bytes decoded, is
// refused with 413, decided from its header. Images are then decoded
// within Config.ImageMemoryBudget: an upload whose estimated memory does
// not fit beside the images being decoded waits, in arrival order, up to
// Config.ImageQueueTimeout, and is then answered with 503 (code 500300)
// and Retry-After. A file's content
// type is the one its part declares when that is a well-formed, specific
// media type, and otherwise the one http.DetectContentType finds.
//
// GET /messages/{messageId}/images?size=small|medium|large|full serves a
// rendition; size defaults to medium, full exists only for images uploaded
// with fullImage=true (otherwise 404), and any other size is 400000 (403
// with a signed link: a link opens only its own size, and a file's link
// only /files).
// GET /messages/{messageId}/files serves a file's exact bytes. Downloads
// carry the stored Content-Type, X-Content-Type-Options: nosniff,
// Content-Security-Policy: default-src 'none'; sandbox, Content-Disposition
// (attachment for files, inline only for raster image renditions) with an ASCII filename and the exact UTF-8
// filename*, a strong ETag, Last-Modified (the message's createdAt) and
// Cache-Control: private, no-cache; they answer Range requests (206) and
// If-None-Match (304). An unsatisfiable Range is answered by net/http with
// a plain-text 416.
//
// # Responses
//
// Responses are JSON with Content-Type: application/json; charset=utf-8.
// Reads, creates and updates return the resources keyed by their plural
// name (channels, channelUsers, users, messages, roles, records, webhooks,
// deliveries), queries add paging; actions return {"success":true};
// POST /reactions adds "addedId" and DELETE /reactions "removedId" (null
// when there was no such reaction); POST /webhooks answers 201. Every
// response carries an X-Request-Id header: the request's own X-Request-Id
// when it is 1-64 characters of A-Z, a-z, 0-9, '.', '_' and '-', else a
// new one.
//
// The JSON of each plain message (text data, no reactions, not flagged)
// that an answer carried is kept, at most about 8 MiB per process, and
// written again by the next answers that carry the message while it is
// unchanged; an entry serves only a message equal in every field that
// shows, so it is never stale.
//
// # Errors
//
// Errors have the body
//
//	{"status":"error","code":400000,"message":"...","data":{"detail":[...]}}
//
// and the HTTP status of the code, from one table:
//
//	400000 400  bad request: validation, bad paging token, wrong method (then 405)
//	400001 400  invalid regular expression
//	400100 401  missing, unknown or revoked access token
//	400300 403  forbidden, e.g. a write to a closed channel
//	400301 403  permission denied
//	400302 403  user is muted in this channel
//	400303 403  channel is muted
//	400304 403  user is banned from this channel
//	400308 403  text contains a blacklisted word
//	400309 403  link not allowed by the whitelist
//	400311 429  rate limited (with Retry-After)
//	400312 403  user is globally banned
//	400400 404  not found, also an unknown path
//	400900 409  conflict
//	400413 413  body or upload too large
//	400415 415  unsupported media type, not an image
//	500000 500  internal error
//	500300 503  store unavailable
//
// A request with a method the path does not serve is answered with 405,
// code 400000 and an Allow header. For 500000 and 500300 the message is
// generic and names the request id; the cause is logged with the request
// id through Config.Logger and never shown. A panic in an endpoint is
// recovered and answered with 500000.
//
// # Limits
//
// JSON and form bodies are limited to Config.MaxBodyBytes (default 1 MiB)
// and uploads to Config.MaxUploadBytes (default 50 MiB), each answered
// with 413 and code 400413 beyond. The other limits of docs/api.md section 1 (Limits and Decoding rules)
// (id lengths, text length, tags, page sizes) are the Service's.
package httpapi
