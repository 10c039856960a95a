package chat

import (
	"context"
	"runtime"
	"strings"
	"sync"
)

type operationKey struct{}

// WithOperation returns a copy of ctx naming the operation that the store
// transactions run with it perform, for a Store wrapper that measures them
// (see Operation). The Service names its own transactions after the
// Service method (or internal function) that runs them: "CreateMessage",
// "QueryChannels". Other code that calls a Store directly names its own
// (the webhook dispatcher: "webhook.claim", "webhook.finish"). Names
// should come from code, never from input, so that the set stays small.
func WithOperation(ctx context.Context, name string) context.Context {
	return context.WithValue(ctx, operationKey{}, &name)
}

// Operation returns the operation name that ctx carries (see
// WithOperation), or "" when none.
func Operation(ctx context.Context) string {
	if p, _ := ctx.Value(operationKey{}).(*string); p != nil {
		return *p
	}
	return ""
}

// callerNames caches the operation name of each call site (a program
// counter) of Service.update and Service.view. The names are kept as
// pointers, so that putting one in a context allocates nothing.
var callerNames = struct {
	sync.RWMutex
	m map[uintptr]*string
}{m: map[uintptr]*string{}}

// withCaller returns ctx naming the function that called the caller of
// withCaller (a Service method calling update or view), found from the
// call stack: so every transaction of the Service is named without
// listing names at each call site, and the set of names is the set of
// functions in this package.
func withCaller(ctx context.Context) context.Context {
	var pc [1]uintptr
	// Skip runtime.Callers, withCaller and update/view.
	if runtime.Callers(3, pc[:]) == 0 {
		return ctx
	}
	callerNames.RLock()
	name := callerNames.m[pc[0]]
	callerNames.RUnlock()
	if name == nil {
		f, _ := runtime.CallersFrames([]uintptr{pc[0]}).Next()
		n := operationName(f.Function)
		name = &n
		callerNames.Lock()
		callerNames.m[pc[0]] = name
		callerNames.Unlock()
	}
	return context.WithValue(ctx, operationKey{}, name)
}

// operationName turns a function's full name into an operation name:
// "github.com/chatengine/chat.(*Service).CreateMessage.func1" becomes
// "CreateMessage", "github.com/chatengine/chat.sharedKey" "sharedKey".
func operationName(full string) string {
	name := full[strings.LastIndexByte(full, '/')+1:]
	if i := strings.IndexByte(name, '.'); i >= 0 {
		name = name[i+1:] // the package name
	}
	name = strings.TrimPrefix(name, "(*Service).")
	if i := strings.IndexByte(name, '.'); i >= 0 {
		name = name[:i] // closures: .func1, .func2.1
	}
	if name == "" {
		return "other"
	}
	return name
}

type lazyCommitKey struct{}

// WithLazyCommit returns a copy of ctx under which an Update may be
// answered before its commit is durable, where the store can (Postgres:
// synchronous_commit off for that transaction, so it waits for no disk
// flush and adds none to the flushes the posts wait for; SQLite:
// synchronous NORMAL for that transaction, no fsync of its own, the next
// durable commit's fsync of the log covering it; the memory store ignores
// it). A crash of the machine (or of the database server) can then lose
// the transaction, never a later durable one. Only for work that is done
// again when its record is lost: the webhook dispatcher's and the push
// worker's claims and finishes (a lost claim leaves the delivery due; a
// lost finish sends it again, which at-least-once delivery allows).
func WithLazyCommit(ctx context.Context) context.Context {
	return context.WithValue(ctx, lazyCommitKey{}, true)
}

// LazyCommit reports whether ctx carries WithLazyCommit.
func LazyCommit(ctx context.Context) bool {
	v, _ := ctx.Value(lazyCommitKey{}).(bool)
	return v
}

type commitGroupKey struct{}

// WithCommitGroup returns a copy of ctx under which an Update may share
// its transaction, and so its commit, with other such Updates that arrive
// while one of them is running (Postgres; SQLite commits its writes in
// groups already and the memory store has no commit to share, so both
// ignore it). Each Update is still answered only after the commit that
// holds its writes is durable. The key names what the Update locks (the
// Service's CreateMessage uses the channel's id, whose row every post to
// the channel locks): Updates of one key always may share a transaction,
// and a store that groups Updates of different keys runs them in
// ascending order of their keys, so that group transactions take those
// locks in one order.
func WithCommitGroup(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, commitGroupKey{}, key)
}

type postReadsKey struct{}

// postReads is what WithPostReads announces.
type postReads struct{ channelID, userID string }

// WithPostReads returns a copy of ctx that announces an Update whose
// function begins with PostPrefetcher.PrefetchPost(ctx, channelID,
// userID), as the Service's CreateMessage does: a store that runs several
// Updates in one transaction (WithCommitGroup) may read those rows for all
// of them in one statement before their functions run. Stores that do not
// ignore it.
func WithPostReads(ctx context.Context, channelID, userID string) context.Context {
	return context.WithValue(ctx, postReadsKey{}, postReads{channelID, userID})
}

// PostReads returns what WithPostReads announced in ctx; ok is false when
// it announced nothing.
func PostReads(ctx context.Context) (channelID, userID string, ok bool) {
	p, ok := ctx.Value(postReadsKey{}).(postReads)
	return p.channelID, p.userID, ok
}

// CommitGroup returns the key that ctx carries (see WithCommitGroup), or
// "" when none.
func CommitGroup(ctx context.Context) string {
	k, _ := ctx.Value(commitGroupKey{}).(string)
	return k
}
