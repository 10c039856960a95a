package httpapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http"
	"net/url"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/media"
	"github.com/chatengine/chat/stream"
)

// Config configures the handler. The zero value works; each field's
// comment states its default.
type Config struct {
	// MaxBodyBytes bounds a JSON or form request body. Default 1 MiB.
	// Larger bodies are answered with 413 and code 400413.
	MaxBodyBytes int64
	// MaxUploadBytes bounds the file of an image or file upload. Default
	// 50 MiB. The multipart body as a whole may exceed it by MaxBodyBytes
	// (for the other fields and the multipart framing). Larger uploads are
	// answered with 413 and code 400413 as soon as the limit is crossed.
	// The Service refuses files over its own chat.Limits.MaxFileBytes
	// (also 50 MiB by default), so raise both together.
	MaxUploadBytes int64
	// MaxImagePixels bounds the width times height of an uploaded image,
	// checked before decoding. Default 50,000,000 (50 megapixels).
	MaxImagePixels int64
	// MaxImageMemory bounds the memory an uploaded image takes decoded:
	// width × height × the bytes of a decoded pixel (1.5 for a 4:2:0 JPEG,
	// 4 for an 8-bit RGBA PNG, 8 for a 16-bit one; media.Header), read
	// from the header before decoding. Larger images are answered with 413
	// and code 400413. Default media.DefaultMaxDecodedBytes (256 MiB).
	MaxImageMemory int64
	// ImageMemoryBudget bounds the estimated memory (media.Header.Memory)
	// of all the image uploads this handler decodes at once; an upload
	// that does not fit waits, in arrival order, for others to finish. An
	// image estimated above the budget waits until it can run alone.
	// Default 256 MiB for each of GOMAXPROCS (read by New), and at least
	// MaxImageMemory.
	ImageMemoryBudget int64
	// ImageQueueTimeout is how long an image upload waits for its share of
	// ImageMemoryBudget before it is answered with 503, code 500300 and
	// Retry-After (this timeout in whole seconds, at most 5). Default 30 s.
	ImageQueueTimeout time.Duration
	// JPEGQuality is the quality of JPEG renditions, 1-100. Default 0
	// lets package media choose (media.DefaultJPEGQuality, 85).
	JPEGQuality int
	// Logger receives the access log and the internal errors (with the
	// request id). Default slog.Default().
	Logger *slog.Logger
	// AccessLog, when true, logs one line per request at level Info:
	// method, path, status, bytes, duration and request id. Default false
	// (most hosts log requests themselves).
	AccessLog bool
	// AllowPrivateWebhooks lets POST /webhooks register URLs whose host is
	// a loopback, private or link-local address (passed to
	// webhook.CheckURL). Default false: such URLs are refused with 400000.
	AllowPrivateWebhooks bool
	// Events serves GET /events and POST /events/ticket (the event
	// stream). The host starts and stops it. Default nil: both answer 404
	// (400400).
	Events *stream.Hub
	// AdminRateLimit limits the requests of each admin account (all its
	// requests share one bucket, in this process). Default: no limit
	// (DefaultAdminRateLimit is the example server's).
	AdminRateLimit RateLimit
	// UserRateLimit limits the requests of each end user (one bucket per
	// user id, in this process). Default: no limit (DefaultUserRateLimit
	// is the example server's).
	UserRateLimit RateLimit
	// Anon counts the requests that come without a credential against a
	// bucket per client address: no Authorization header, a token that
	// is refused (bad, expired, revoked: 401), a stream ticket being
	// redeemed (GET /events?ticket=). Signed file links are not counted.
	// A host may share it with its own routes that take no credential
	// (AnonLimiter.Limit). Default nil: no limit (the example server:
	// NewAnonLimiter(DefaultAnonRateLimit, nil)).
	Anon *AnonLimiter
}

func (c Config) withDefaults() Config {
	if c.MaxBodyBytes <= 0 {
		c.MaxBodyBytes = 1 << 20
	}
	if c.MaxUploadBytes <= 0 {
		c.MaxUploadBytes = 50 << 20
	}
	if c.MaxImagePixels <= 0 {
		c.MaxImagePixels = 50_000_000
	}
	if c.MaxImageMemory <= 0 {
		c.MaxImageMemory = media.DefaultMaxDecodedBytes
	}
	if c.ImageMemoryBudget <= 0 {
		c.ImageMemoryBudget = max(int64(runtime.GOMAXPROCS(0))*256<<20, c.MaxImageMemory)
	}
	if c.ImageQueueTimeout <= 0 {
		c.ImageQueueTimeout = 30 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// handler holds what the endpoints share.
type handler struct {
	svc *chat.Service
	cfg Config
	log *slog.Logger
	mux *chi.Mux
	// adminLimits and userLimits are the request buckets; nil when off.
	adminLimits, userLimits *limiter
	// images bounds the memory of the images decoded at once.
	images *imageGate
}

// New returns the admin API handler for svc. It serves the routes listed
// by Routes relative to where it is mounted, for example with
// r.Mount("/api/v2", h) in chi or
// mux.Handle("/api/v2/", http.StripPrefix("/api/v2", h)) in net/http.
// Every request needs Authorization: Bearer <token>, with the access token
// of an admin account or the user token of an end user (the Service
// decides what each caller may do), except a signed file link (see the
// package documentation).
func New(svc *chat.Service, cfg Config) http.Handler {
	return newHandler(svc, cfg).mux
}

// newHandler builds the handler New serves.
func newHandler(svc *chat.Service, cfg Config) *handler {
	cfg = cfg.withDefaults()
	h := &handler{svc: svc, cfg: cfg, log: cfg.Logger, mux: chi.NewRouter(),
		adminLimits: newLimiter(cfg.AdminRateLimit), userLimits: newLimiter(cfg.UserRateLimit),
		images: newImageGate(cfg.ImageMemoryBudget, cfg.ImageQueueTimeout)}
	h.mux.Use(h.requestID, h.accessLog, h.recoverPanic)
	for _, rt := range h.routes() {
		if rt.link {
			h.mux.Method(rt.Method, rt.Pattern, h.linkOrAuth(h.wrap(rt.fn)))
		} else if rt.ticket {
			h.mux.Method(rt.Method, rt.Pattern, h.anonTicket(h.ticketOrAuth(h.wrap(rt.fn))))
		} else {
			h.mux.Method(rt.Method, rt.Pattern, h.auth(h.wrap(rt.fn)))
		}
	}
	h.mux.NotFound(h.auth(http.HandlerFunc(h.notFound)).ServeHTTP)
	h.mux.MethodNotAllowed(h.auth(http.HandlerFunc(h.methodNotAllowed)).ServeHTTP)
	return h
}

// Route is one served route: an HTTP method and a chi pattern relative to
// the mount point, such as POST /channel/{channelId}/users.
type Route struct {
	Method  string
	Pattern string
}

// Routes lists every route New serves, in a stable order.
func Routes() []Route {
	var h *handler
	rs := h.routes()
	out := make([]Route, len(rs))
	for i, r := range rs {
		out[i] = Route{Method: r.Method, Pattern: r.Pattern}
	}
	return out
}

type route struct {
	Route
	fn func(w http.ResponseWriter, r *http.Request) error
	// link marks the downloads that also open as signed links (a sig
	// parameter instead of an access token).
	link bool
	// ticket marks the event stream, which also opens with a ticket
	// parameter (from POST /events/ticket) instead of an access token.
	ticket bool
}

// routes is the route table. h may be nil (Routes only reads the table).
func (h *handler) routes() []route {
	rt := func(method, pattern string, fn func(http.ResponseWriter, *http.Request) error) route {
		return route{Route: Route{method, pattern}, fn: fn}
	}
	linked := func(r route) route {
		r.link = true
		return r
	}
	const (
		get, post, put, del = http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete
	)
	return []route{
		// Channels.
		rt(post, "/channels", h.queryChannels),
		rt(post, "/channel", h.createChannel),
		rt(get, "/channel/{channelId}", h.getChannel),
		rt(put, "/channel/{channelId}", h.updateChannel),
		rt(post, "/channel/displayName", h.renameChannel),
		rt(post, "/channel/{channelId}/displayName", h.renameChannel),
		rt(post, "/channel/{channelId}/users", h.addUsers),
		rt(del, "/channel/{channelId}/users", h.removeUsers),
		rt(post, "/channel/{channelId}/join", h.joinChannel),
		rt(post, "/channel/{channelId}/read", h.markRead),
		rt(post, "/channel/{channelId}/leave", h.leaveChannel),
		rt(post, "/channel/{channelId}/typing", h.typing),
		rt(put, "/channel/{channelId}/mute", h.muteChannel),
		rt(put, "/channel/{channelId}/users/mute", h.muteUsers),
		rt(put, "/channel/{channelId}/rateLimit", h.setRateLimit),
		rt(post, "/channel/{channelId}/users/ban", h.banUsers),
		rt(post, "/channel/{channelId}/users/unban", h.unbanUsers),
		rt(post, "/channel/{channelId}/close", h.closeChannel),
		rt(post, "/channels/{channelId}/close", h.closeChannel),
		// Messages.
		rt(post, "/messages", h.queryMessages),
		rt(post, "/messages/search", h.searchMessages),
		rt(post, "/messages/mentions", h.queryMentions),
		rt(get, "/message/{messageId}", h.getMessage),
		rt(post, "/message", h.createMessage),
		rt(put, "/message/{messageId}", h.updateMessage),
		rt(del, "/message/{messageId}", h.deleteMessage),
		rt(post, "/message/{messageId}/flags", h.flagMessage),
		rt(del, "/message/{messageId}/flags", h.clearMessageFlags),
		rt(post, "/messages/images", h.createImageMessage),
		linked(rt(get, "/messages/{messageId}/images", h.getImage)),
		rt(post, "/messages/files", h.createFileMessage),
		linked(rt(get, "/messages/{messageId}/files", h.getFile)),
		// Users.
		rt(get, "/users", h.queryUsers),
		rt(get, "/users/{userId}", h.getUser),
		rt(put, "/users", h.updateUser),
		rt(post, "/users/ban", h.globalBan),
		rt(post, "/users/unban", h.globalUnban),
		rt(post, "/users/{userId}/flags", h.flagUser),
		rt(del, "/users/{userId}/flags", h.clearUserFlags),
		rt(post, "/users/{userId}/token", h.mintUserToken),
		rt(post, "/users/{userId}/tokens/revoke", h.revokeUserTokens),
		rt(post, "/users/{userId}/messages/delete", h.purgeMessages),
		rt(get, "/users/{userId}/export", h.exportUser),
		rt(post, "/users/{userId}/erase", h.eraseUser),
		rt(post, "/users/{userId}/blocks", h.blockUser),
		rt(del, "/users/{userId}/blocks", h.unblockUser),
		rt(get, "/users/{userId}/blocks", h.listBlocks),
		// Push devices and notification settings.
		rt(post, "/users/{userId}/devices", h.registerDevice),
		rt(get, "/users/{userId}/devices", h.listDevices),
		rt(del, "/users/{userId}/devices/{deviceId}", h.deleteDevice),
		rt(put, "/users/{userId}/notifications", h.setNotifications("userId", (*chat.Service).SetUserNotifications)),
		rt(get, "/users/{userId}/notifications", h.getNotifications("userId", (*chat.Service).GetUserNotifications)),
		rt(put, "/channel/{channelId}/notifications", h.setNotifications("channelId", (*chat.Service).SetChannelNotifications)),
		rt(get, "/channel/{channelId}/notifications", h.getNotifications("channelId", (*chat.Service).GetChannelNotifications)),
		rt(get, "/push/vapid", h.pushVAPID),
		// Roles.
		rt(get, "/roles", h.queryRoles),
		rt(put, "/roles", h.putRoles),
		// Blacklist and whitelist.
		rt(get, "/blacklist/records", h.queryRules(chat.Blacklist)),
		rt(post, "/blacklist/records", h.addRules(chat.Blacklist)),
		rt(del, "/blacklist/records", h.deleteRules(chat.Blacklist)),
		rt(put, "/blacklist/records/{ruleId}", h.updateRule(chat.Blacklist)),
		rt(get, "/whitelist/records", h.queryRules(chat.Whitelist)),
		rt(post, "/whitelist/records", h.addRules(chat.Whitelist)),
		rt(del, "/whitelist/records", h.deleteRules(chat.Whitelist)),
		rt(put, "/whitelist/records/{ruleId}", h.updateRule(chat.Whitelist)),
		// Reactions.
		rt(get, "/reactions", h.queryReactors),
		rt(post, "/reactions", h.addReaction),
		rt(del, "/reactions", h.removeReaction),
		rt(get, "/reactions/messages/most", h.mostReacted),
		// Webhooks.
		rt(post, "/webhooks", h.createWebhook),
		rt(get, "/webhooks", h.listWebhooks),
		rt(del, "/webhooks/{webhookId}", h.deleteWebhook),
		rt(post, "/webhooks/{webhookId}/secret", h.rotateWebhookSecret),
		rt(get, "/webhooks/{webhookId}/deliveries", h.listDeliveries),
		rt(post, "/webhooks/{webhookId}/deliveries/{requestId}/redeliver", h.redeliver),
		// Moderation: the audit log and the dry run.
		rt(get, "/audit", h.queryAudit),
		rt(post, "/moderation/check", h.checkMessage),
		// Reports: the review queue.
		rt(post, "/reports", h.createReport),
		rt(get, "/reports", h.queryReports),
		rt(get, "/reports/{reportId}", h.getReport),
		rt(post, "/reports/{reportId}/resolve", h.resolveReport),
		// The event stream.
		{Route: Route{get, "/events"}, fn: h.events, ticket: true},
		rt(post, "/events/ticket", h.eventTicket),
	}
}

// wrap turns an endpoint that returns an error into an http.HandlerFunc.
func (h *handler) wrap(fn func(http.ResponseWriter, *http.Request) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := fn(w, r); err != nil {
			h.writeError(w, r, err)
		}
	}
}

// successBody is the response of actions with nothing to return.
type successBody struct {
	Success   bool    `json:"success"`
	AddedID   *string `json:"addedId,omitempty"`
	RemovedID *string `json:"removedId,omitempty"`
}

func writeSuccess(w http.ResponseWriter) error {
	writeJSON(w, http.StatusOK, successBody{Success: true})
	return nil
}

// decode reads the parameters of a JSON or form request.
func (h *handler) decode(w http.ResponseWriter, r *http.Request) (*params, error) {
	return decodeRequest(w, r, h.cfg.MaxBodyBytes)
}

// pathParam returns the URL-decoded path parameter name. chi matches on
// the escaped path when the request has one (r.URL.RawPath), so ids that
// contain '/' or '%' arrive escaped and are decoded here.
func pathParam(r *http.Request, name string) (string, error) {
	v := chi.URLParam(r, name)
	if r.URL.RawPath != "" {
		s, err := url.PathUnescape(v)
		if err != nil {
			return "", badRequest(name, "malformed URL escape in the path")
		}
		v = s
	}
	if err := checkText(name, v); err != nil {
		return "", err
	}
	return v, nil
}

// pathAndParams returns the URL-decoded path parameter name and the
// decoded request parameters.
func (h *handler) pathAndParams(w http.ResponseWriter, r *http.Request, name string) (string, *params, error) {
	id, err := pathParam(r, name)
	if err != nil {
		return "", nil, err
	}
	p, err := h.decode(w, r)
	return id, p, err
}

// actor returns the user id the caller acts as: the admin's user, or the
// end user of a user token.
func actor(r *http.Request) string {
	if ri := infoFrom(r.Context()); ri != nil {
		if ri.admin != nil {
			return ri.admin.UserID
		}
		if ri.user != nil {
			return ri.user.UserID
		}
	}
	return ""
}

type ctxKey int

// infoKey holds the *requestInfo of a request; one context value (and one
// request copy) carries what the middleware learns.
const infoKey ctxKey = 0

// requestInfo is what the middleware records about a request: its id, the
// server's ResponseWriter and, once authenticated, the admin or the end
// user.
type requestInfo struct {
	id    string
	w     http.ResponseWriter
	admin *chat.Admin
	user  *chat.User
	// ticketed is the caller of an event stream opened with a ticket.
	ticketed *stream.Caller
}

func infoFrom(ctx context.Context) *requestInfo {
	ri, _ := ctx.Value(infoKey).(*requestInfo)
	return ri
}

// serverWriter returns the ResponseWriter the requestID middleware
// received (normally the server's own), for http.MaxBytesReader: only the
// server's writer learns that a body was too large and closes the
// connection instead of draining the rest of an oversized upload.
func serverWriter(r *http.Request, w http.ResponseWriter) http.ResponseWriter {
	if ri := infoFrom(r.Context()); ri != nil && ri.w != nil {
		return ri.w
	}
	return w
}

// AdminFrom returns the admin account that authenticated the request, or
// nil outside a request authenticated with an admin token.
func AdminFrom(ctx context.Context) *chat.Admin {
	if ri := infoFrom(ctx); ri != nil {
		return ri.admin
	}
	return nil
}

// UserFrom returns the end user whose user token authenticated the
// request, or nil outside a request authenticated with a user token.
func UserFrom(ctx context.Context) *chat.User {
	if ri := infoFrom(ctx); ri != nil {
		return ri.user
	}
	return nil
}

// RequestIDFrom returns the request id of the request (also sent as the
// X-Request-Id response header), or "" outside the handler.
func RequestIDFrom(ctx context.Context) string {
	if ri := infoFrom(ctx); ri != nil {
		return ri.id
	}
	return ""
}

// requestID gives every request an id: the incoming X-Request-Id when it
// is a sane token (1-64 characters of A-Z a-z 0-9 . _ -), else a new one.
// The id is echoed in the X-Request-Id response header.
func (h *handler) requestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("X-Request-Id")
		if !saneRequestID(id) {
			var b [12]byte
			_, _ = rand.Read(b[:])
			id = hex.EncodeToString(b[:])
		}
		w.Header()["X-Request-Id"] = []string{id}
		ctx := context.WithValue(r.Context(), infoKey, &requestInfo{id: id, w: w})
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

func saneRequestID(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// statusWriter records the status and size of a response.
type statusWriter struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (s *statusWriter) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	n, err := s.ResponseWriter.Write(b)
	s.bytes += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// accessLog logs one line per request when Config.AccessLog is set.
func (h *handler) accessLog(next http.Handler) http.Handler {
	if !h.cfg.AccessLog {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r)
		if sw.status == 0 {
			sw.status = http.StatusOK
		}
		h.log.LogAttrs(r.Context(), slog.LevelInfo, "httpapi: request",
			slog.String("method", r.Method), slog.String("path", r.URL.Path),
			slog.Int("status", sw.status), slog.Int64("bytes", sw.bytes),
			slog.Duration("duration", time.Since(start)),
			slog.String("requestId", RequestIDFrom(r.Context())))
	})
}

// recoverPanic turns a panic in an endpoint into a logged 500000.
func (h *handler) recoverPanic(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w}
		defer func() {
			p := recover()
			if p == nil {
				return
			}
			if p == http.ErrAbortHandler {
				panic(p)
			}
			h.log.Error("httpapi: panic", "requestId", RequestIDFrom(r.Context()),
				"method", r.Method, "path", r.URL.Path, "panic", p, "stack", string(debug.Stack()))
			if sw.status == 0 {
				h.writeError(sw, r, chat.Errorf(chat.CodeInternal, "panic"))
			}
		}()
		next.ServeHTTP(sw, r)
	})
}

// auth authenticates the bearer token and puts the caller in the context:
// an admin for a token with the admin prefix (chat_), else the end user of
// a user token (a JWT). A globally banned user is refused here, on every
// call (403/400312). The caller's request is then counted against its rate
// limit (see Config.AdminRateLimit); a request without a token, or whose
// token is refused, against its address's (Config.Anon).
func (h *handler) auth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, ok := bearer(r.Header.Get("Authorization"))
		if !ok {
			if h.anon(w, r) {
				h.writeError(w, r, chat.Errorf(chat.CodeUnauthorized, "missing access token: send the header Authorization: Bearer <token>"))
			}
			return
		}
		var a *chat.Admin
		var u *chat.User
		var err error
		if chat.IsUserToken(token) {
			u, err = h.svc.AuthenticateUser(r.Context(), token)
		} else {
			a, err = h.svc.Authenticate(r.Context(), token)
		}
		if err != nil {
			// A refused token is no credential: the request counts
			// against its address. (A globally banned user's valid
			// token, 400312, counts against nothing.)
			if chat.ErrorCode(err) != chat.CodeUnauthorized || h.anon(w, r) {
				h.writeError(w, r, err)
			}
			return
		}
		ri := infoFrom(r.Context())
		if ri == nil {
			ri = &requestInfo{}
			r = r.WithContext(context.WithValue(r.Context(), infoKey, ri))
		}
		ri.admin, ri.user = a, u
		if !h.rateLimit(w, r, a, u) {
			return
		}
		next.ServeHTTP(w, r)
	})
}

// anonTicket counts a request that redeems a stream ticket (a ticket
// parameter, as ticketOrAuth decides) against its client address before
// the ticket is looked at: it carries no credential.
func (h *handler) anonTicket(next http.Handler) http.Handler {
	if h.cfg.Anon == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Has("ticket") && !h.anon(w, r) {
			return
		}
		next.ServeHTTP(w, r)
	})
}

// linkOrAuth lets a signed link (a request with a sig parameter) through
// without an access token, for the download handler to verify; any other
// request goes through auth.
func (h *handler) linkOrAuth(next http.Handler) http.Handler {
	authed := h.auth(next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isLinkRequest(r) {
			next.ServeHTTP(w, r)
			return
		}
		authed.ServeHTTP(w, r)
	})
}

// isLinkRequest reports whether a request is a signed link: its query
// string has a sig parameter (even an empty one, which then fails
// verification).
func isLinkRequest(r *http.Request) bool { return r.URL.Query().Has("sig") }

// bearer extracts the token of an Authorization: Bearer header (the scheme
// is case-insensitive).
func bearer(h string) (string, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(h), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

func (h *handler) notFound(w http.ResponseWriter, r *http.Request) {
	h.writeError(w, r, chat.Errorf(chat.CodeNotFound, "no such endpoint: %s %s", r.Method, r.URL.Path))
}

// methodNotAllowed answers 405 with the Allow header of the path.
func (h *handler) methodNotAllowed(w http.ResponseWriter, r *http.Request) {
	path := ""
	if rctx := chi.RouteContext(r.Context()); rctx != nil {
		path = rctx.RoutePath
	}
	if path == "" {
		path = r.URL.RawPath
		if path == "" {
			path = r.URL.Path
		}
	}
	var allow []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete} {
		if h.mux.Match(chi.NewRouteContext(), m, path) {
			allow = append(allow, m)
		}
	}
	if len(allow) > 0 {
		w.Header().Set("Allow", strings.Join(allow, ", "))
	}
	err := chat.Errorf(chat.CodeBadRequest, "method %s is not allowed on %s", r.Method, r.URL.Path)
	err.Detail = []chat.Detail{chat.AllowedMethods{Allow: allow}}
	h.writeErrorStatus(w, r, http.StatusMethodNotAllowed, err)
}

// writeErrorStatus writes a 4xx error body with an explicit status (405
// carries code 400000, which the table maps to 400).
func (h *handler) writeErrorStatus(w http.ResponseWriter, r *http.Request, status int, e *chat.Error) {
	detail := e.Detail
	if detail == nil {
		detail = []chat.Detail{}
	}
	writeJSON(w, status, errorBody{Status: "error", Code: e.Code, Message: e.Error(), Data: errorData{Detail: detail}})
}

// hasPathParam reports whether the matched route has the path parameter.
func hasPathParam(r *http.Request, name string) bool {
	rctx := chi.RouteContext(r.Context())
	return rctx != nil && slices.Contains(rctx.URLParams.Keys, name)
}

// reply writes v with status 200, or returns err.
func (h *handler) reply(w http.ResponseWriter, v any, err error) error {
	if err != nil {
		return err
	}
	writeResult(w, v)
	return nil
}

// writeResult writes a Service result as a 200 response: message lists as
// messagejson.go writes them, everything else normalized.
func writeResult(w http.ResponseWriter, v any) {
	if l, ok := v.(*chat.MessageList); ok {
		writeMessageList(w, l)
		return
	}
	normalize(v)
	writeJSON(w, http.StatusOK, v)
}

// done writes {"success":true}, or returns err.
func (h *handler) done(w http.ResponseWriter, err error) error {
	if err != nil {
		return err
	}
	return writeSuccess(w)
}

// normalize makes every array and object field of a response present
// ([] or {} instead of null), as docs/api.md sections 1 and 2 (Responses, Resources) requires. The Service
// already does it for channels and messages; user, role and webhook
// results can carry nil slices and maps from the store.
func normalize(v any) {
	switch x := v.(type) {
	case *chat.UserList:
		for i := range x.Users {
			u := &x.Users[i]
			if u.Roles == nil {
				u.Roles = []string{}
			}
			if u.Metadata == nil {
				u.Metadata = map[string]any{}
			}
			if u.Hashflag.Hash == nil {
				u.Hashflag.Hash = []uint32{}
			}
		}
	case *chat.RoleList:
		for i := range x.Roles {
			if x.Roles[i].Permissions == nil {
				x.Roles[i].Permissions = []string{}
			}
		}
	case *chat.WebhookList:
		for i := range x.Webhooks {
			if x.Webhooks[i].Events == nil {
				x.Webhooks[i].Events = []string{}
			}
		}
	}
}
