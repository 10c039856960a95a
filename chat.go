package chat

import (
	"context"
	"crypto/ecdsa"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Limits bounds the size of what the Service accepts. Every zero field takes
// the default named in its comment (docs/api.md section 1 (Limits and Decoding rules)).
type Limits struct {
	MaxIDBytes         int // ids (channelId, userId, messageId, roleId, reactionName): 256 bytes
	MaxDisplayName     int // displayName: 256 characters
	MaxTextChars       int // text of a text message or caption: 20,000 characters
	MaxCustomDataBytes int // JSON of custom data: 100 KiB
	MaxMetadataBytes   int // JSON of metadata: 64 KiB
	MaxIDsPerRequest   int // ids in one request: 1,000
	MaxTags            int // tags on one resource: 50
	MaxTagChars        int // one tag: 128 characters
	MaxPatternBytes    int // one blacklist or whitelist pattern: 512 bytes
	MaxPermissionChars int // one permission string: 128 characters
	MaxFileBytes       int64
	MaxImagePixels     int64
	DefaultPage        int // default page size of channels, users, reactions: 10
	DefaultMessagePage int // default page size of messages: 20
	MaxPage            int // largest page: 100
}

func (l *Limits) fill() {
	def := func(p *int, v int) {
		if *p <= 0 {
			*p = v
		}
	}
	def(&l.MaxIDBytes, 256)
	def(&l.MaxDisplayName, 256)
	def(&l.MaxTextChars, 20000)
	def(&l.MaxCustomDataBytes, 100<<10)
	def(&l.MaxMetadataBytes, 64<<10)
	def(&l.MaxIDsPerRequest, 1000)
	def(&l.MaxTags, 50)
	def(&l.MaxTagChars, 128)
	def(&l.MaxPatternBytes, 512)
	def(&l.MaxPermissionChars, 128)
	def(&l.DefaultPage, 10)
	def(&l.DefaultMessagePage, 20)
	def(&l.MaxPage, 100)
	if l.MaxFileBytes <= 0 {
		l.MaxFileBytes = 50 << 20
	}
	if l.MaxImagePixels <= 0 {
		l.MaxImagePixels = 50_000_000
	}
}

// Config configures a Service. The zero value works.
type Config struct {
	// Now returns the current time. Default time.Now.
	Now func() time.Time
	// NewID returns a new unique id for messages, reactions, webhooks and
	// deliveries. Default: 24 lowercase hex characters, a 48-bit millisecond
	// timestamp followed by 48 random bits (sortable like a Mongo ObjectId).
	NewID func() string
	// PagingKey signs paging tokens. Default: a random key created once and
	// kept in the store's meta table, so every process sharing the store
	// accepts the tokens of the others.
	PagingKey []byte
	// LinkKey keys the HMAC-SHA256 signatures of file links (data.urls of
	// image messages, data.url of file messages). Default: a random key
	// created once and kept in the store's meta table, as PagingKey, so a
	// link made by one process opens on every other.
	LinkKey []byte
	// LinkTTL is the least lifetime of a file link; the expiry is rounded
	// up to the next whole hour. Default DefaultLinkTTL (24 h).
	LinkTTL time.Duration
	// APIPrefix is where the HTTP API is served, as clients reach it: a
	// path ("/api/v2") or an absolute URL ("https://chat.example.com/api/v2").
	// File links begin with it. Default DefaultAPIPrefix ("/api/v2").
	APIPrefix string
	// Limits bounds inputs; zero fields take their defaults.
	Limits Limits
	// Logger receives warnings. Default slog.Default().
	Logger *slog.Logger
	// WebhookURLCheck, when not nil, vets webhook URLs at registration
	// (for example webhook.CheckURL, which refuses private addresses).
	WebhookURLCheck func(rawURL string) error
	// AllowPrivatePush is set where private addresses are allowed
	// (development and tests, as for webhooks): Web Push endpoints may
	// then use http. Default false: https only. Endpoints also pass
	// WebhookURLCheck, the address rules of webhook URLs, when it is set.
	AllowPrivatePush bool
	// UserTokenSecret signs and verifies user tokens (HS256 JWTs, docs/api.md
	// section 1). Default: a random secret created once and kept in the
	// store's meta table, so every process sharing the store accepts the
	// tokens of the others.
	UserTokenSecret []byte
	// UserTokenTTL is the lifetime of user tokens minted without one.
	// Default DefaultUserTokenTTL (24 h); negative: no expiry.
	UserTokenTTL time.Duration
	// PurgeBatch is how many messages PurgeUserMessages deletes per
	// transaction, and how many items ExportUser reads and EraseUser
	// handles per transaction. Default DefaultPurgeBatch (500).
	PurgeBatch int
	// OnCommit, when not nil, is called after every transaction that
	// enqueued webhook deliveries for a claim (not all of them leased to
	// the DeliveryTaker, see TakeDeliveries) committed, and after no other
	// (the webhook dispatcher's Wake fits here when the store cannot
	// signal by itself). Default nil.
	OnCommit func()
	// AdminPasswordCost is the bcrypt cost of admin panel passwords
	// hashed from now on (stored hashes keep theirs). Default
	// AdminPasswordCost (12); tests may lower it to bcrypt.MinCost (4).
	AdminPasswordCost int
	// PreSendHook, when not nil, decides about every new message (and
	// every edit) after the message rules passed and before it is stored
	// (webhook.NewPreSendHook calls an HTTPS endpoint). Default nil: no
	// hook, nothing asked.
	PreSendHook PreSendHook
	// PushWithoutText leaves the message's text out of push
	// notifications: the body is the sender's name alone. Default false.
	PushWithoutText bool
	// VAPIDKey is the server's VAPID key pair for Web Push (a P-256
	// key). Default: a key made once and kept in the store's meta table,
	// as PagingKey, so every process sharing the store signs with it and
	// publishes the same public key (GET /push/vapid).
	VAPIDKey *ecdsa.PrivateKey
	// OnPush, when not nil, is called after every transaction that wrote
	// pushes to the push outbox committed, and after no other (the push
	// worker's Wake fits here). Default nil.
	OnPush func()
	// EphemeralBroker, when not nil, carries the ephemeral events
	// (typing, read markers) between processes: Typing and MarkRead
	// publish through it, and SubscribeEphemeral relays what it receives
	// (the NATS broker, package broker/natsbroker, is one). Default nil:
	// the store's, when the store is an EphemeralBroker (Postgres), else
	// none (the events stay in the process).
	EphemeralBroker EphemeralBroker
}

// Service implements the chat rules on top of a Store. It is safe for
// concurrent use. Every method documents the error codes it returns; any
// method may also return CodeUnavailable when the store cannot be reached
// and CodeInternal for unexpected failures.
type Service struct {
	store     Store
	cfg       Config
	lim       Limits
	now       func() time.Time
	newID     func() string
	log       *slog.Logger
	pkey      []byte
	pmacs     sync.Pool // of hash.Hash: HMACs keyed with pkey (tokenMAC)
	rules     atomic.Pointer[ruleSet]
	rulesM    sync.Mutex
	hooks     atomic.Pointer[hookCache]
	links     *linkSigner
	typing    typingThrottle
	ephem     ephemeralSubs
	userKey   []byte
	tokenTTL  time.Duration
	jwtParser *jwt.Parser
	// muteSet wakes the mute expirer when a mute with an end is written.
	muteSet chan struct{}
	// blocks caches the users each user blocks (see blockedSet).
	blocks blockCache
	// vapid is the server's VAPID key pair (see VAPIDKey).
	vapid *ecdsa.PrivateKey
	// presence is the running Presence of this process, if any (Online
	// counts its streams before they are written).
	presence atomic.Pointer[Presence]
	// admins caches the admins of access tokens (see Authenticate).
	admins adminCache
	// authUsers caches the users of user tokens (see AuthenticateUser).
	authUsers userCache
	// taker takes the deliveries this Service enqueues (TakeDeliveries).
	taker atomic.Pointer[takerReg]
}

// New returns a Service over store. It reads or creates the paging key
// and loads the rules. Errors: CodeUnavailable, CodeInternal.
func New(ctx context.Context, store Store, cfg Config) (*Service, error) {
	if store == nil {
		return nil, errors.New("chat: nil store")
	}
	var err error
	s := &Service{store: store, cfg: cfg, lim: cfg.Limits, muteSet: make(chan struct{}, 1)}
	s.lim.fill()
	s.now = cfg.Now
	if s.now == nil {
		s.now = time.Now
	}
	s.newID = cfg.NewID
	if s.newID == nil {
		s.newID = NewID
	}
	s.log = cfg.Logger
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.pkey, err = sharedKey(ctx, store, "paging_key", cfg.PagingKey); err != nil {
		return nil, err
	}
	lkey, err := sharedKey(ctx, store, "link_key", cfg.LinkKey)
	if err != nil {
		return nil, err
	}
	prefix := strings.TrimRight(cfg.APIPrefix, "/")
	if cfg.APIPrefix == "" {
		prefix = DefaultAPIPrefix
	}
	ttl := cfg.LinkTTL
	if ttl <= 0 {
		ttl = DefaultLinkTTL
	}
	s.links = newLinkSigner(lkey, prefix, ttl)
	if s.userKey, err = sharedKey(ctx, store, userTokenSecretKey, cfg.UserTokenSecret); err != nil {
		return nil, err
	}
	if s.vapid, err = sharedVAPIDKey(ctx, store, cfg.VAPIDKey); err != nil {
		return nil, err
	}
	s.tokenTTL = cfg.UserTokenTTL
	if s.tokenTTL == 0 {
		s.tokenTTL = DefaultUserTokenTTL
	}
	s.jwtParser = newJWTParser(s.now)
	if err := s.ensureBuiltins(ctx); err != nil {
		return nil, err
	}
	if err := store.View(ctx, func(tx Tx) error {
		_, err := s.ruleSetTx(ctx, tx)
		return err
	}); err != nil {
		return nil, err
	}
	return s, nil
}

// sharedKey returns key when set, else the random key kept in the store's
// meta table under name, created on first use, so every process sharing
// the store uses the same key.
func sharedKey(ctx context.Context, store Store, name string, key []byte) ([]byte, error) {
	if len(key) > 0 {
		return key, nil
	}
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, err
	}
	var stored string
	err := store.Update(ctx, func(tx Tx) error {
		v, err := tx.PutMetaIfAbsent(ctx, name, hex.EncodeToString(b[:]))
		stored = v
		return err
	})
	if err != nil {
		return nil, err
	}
	k, err := hex.DecodeString(stored)
	if err != nil || len(k) == 0 {
		return nil, errors.New("chat: stored " + strings.ReplaceAll(name, "_", " ") + " is corrupt")
	}
	return k, nil
}

// Limits returns the effective limits.
func (s *Service) Limits() Limits { return s.lim }

// Now returns the Service's current time (UTC, milliseconds).
func (s *Service) Now() Time { return NewTime(s.now()) }

var idCounter atomic.Uint32

// NewID returns a new id: 24 lowercase hex characters, a 48-bit
// millisecond timestamp followed by a 16-bit process counter and 32 random
// bits, so ids sort by creation time and never collide within a process.
func NewID() string {
	var b [12]byte
	ms := uint64(time.Now().UnixMilli())
	b[0] = byte(ms >> 40)
	b[1] = byte(ms >> 32)
	b[2] = byte(ms >> 24)
	b[3] = byte(ms >> 16)
	b[4] = byte(ms >> 8)
	b[5] = byte(ms)
	c := idCounter.Add(1)
	b[6] = byte(c >> 8)
	b[7] = byte(c)
	_, _ = rand.Read(b[8:])
	return hex.EncodeToString(b[:])
}

// update runs fn in a store transaction and reports to OnCommit when it
// enqueued deliveries. The transaction's context names the calling method
// (see Operation).
func (s *Service) update(ctx context.Context, fn func(tx Tx, ev *events) error) error {
	ctx = withCaller(ctx)
	var ev events
	committed := false
	defer func() {
		if !committed {
			ev.release() // an error or a panic: nothing was committed
		}
	}()
	err := s.store.Update(ctx, func(tx Tx) error {
		ev.release() // fn runs again: the run before did not commit
		ev = events{}
		if err := fn(tx, &ev); err != nil {
			return err
		}
		return s.flushEvents(ctx, tx, &ev)
	})
	if err == nil {
		committed = true
		ev.handOver()
	}
	if err == nil && ev.enqueued > 0 && s.cfg.OnCommit != nil {
		s.cfg.OnCommit()
	}
	if err == nil && ev.pushes > 0 && s.cfg.OnPush != nil {
		s.cfg.OnPush()
	}
	return err
}

// view runs fn in a read-only store transaction whose context names the
// calling method (see Operation).
func (s *Service) view(ctx context.Context, fn func(tx Tx) error) error {
	return s.store.View(withCaller(ctx), fn)
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
