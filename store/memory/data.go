package memory

import (
	"cmp"
	"slices"

	chat "github.com/chatengine/chat"
)

// data is everything the store holds, with its indexes. Every pointer in it
// points at a value owned by the store; values are replaced, never edited in
// place, except through replace (which snapshots for undo).
type data struct {
	// Channels, and every channel in (CreatedAt, ChannelID) ascending order;
	// queries walk chanOrder from the end for newest first.
	channels  map[string]*chat.Channel
	chanOrder []*chat.Channel
	// The channels (userID "") and relations whose MuteTimeout is set:
	// what LapsedMutes and NextMuteEnd read (see expiry.go).
	muted map[muteKey]struct{}

	// Relations by channel and by user (the same pointers in both).
	members   map[string]map[string]*chat.ChannelUser // channelID -> userID
	userChans map[string]map[string]*chat.ChannelUser // userID -> channelID
	// Per user, the existing channels whose relation has membership
	// "member", in chanOrder's order: a page of a user's channels reads
	// about as many entries as it returns.
	memberOf map[string]*[]*chat.Channel

	// Messages by id, and in creation order (allMsgs). The other indexes
	// hold positions in allMsgs rather than pointers, so the garbage
	// collector does not scan them: per channel in segment order (all, and
	// top-level only); comments per parent in segment order; per author in
	// creation order.
	msgs     map[string]*msg
	allMsgs  []*msg
	chanMsgs map[string]*chanMsgs
	children map[string]*msgList
	byAuthor map[string]*msgList
	// Per channel and author, that author's messages there in segment
	// order: the user's own messages above a read marker.
	chanAuthor map[chanAuthorKey]*msgList

	strs    []string         // interned strings (see intern), by number
	strIDs  map[string]strID // and their numbers
	scratch []byte           // encodeData's buffer (write transactions only)

	// Users by id, and their ids in ascending order.
	users     map[string]*chat.User
	userOrder []string

	// Presence: the leases by process, the users with a stream row by
	// process and the processes by user, and the users' OfflineSince
	// (Online and LastActiveAt live on the users).
	presenceProcs map[string]*chat.PresenceProcess
	procUsers     map[string]map[string]struct{}
	userProcs     map[string]map[string]struct{}
	offlineSince  map[string]chat.Time

	roles        map[string]*chat.Role
	rules        map[chat.RuleList]map[string]*chat.Rule
	rulesVersion int64

	// Reactions by (user, message, name) and by id; per message in
	// (CreatedAt, ReactionID) ascending order; per name the messages that
	// have a positive count of it.
	reactions  map[reactKey]*chat.Reaction
	reactIDs   map[string]reactKey
	msgReacts  map[string]*reactList
	reactNames map[string]map[string]*msg

	flags map[flagKey]map[string]chat.Time // target -> flagger -> when

	admins      map[string]*chat.Admin
	adminHashes map[string]string // token hash -> admin name
	// Admin panel sessions by id hash.
	adminSessions map[string]*chat.AdminSession

	webhooks     map[string]*chat.Webhook
	hooksVersion int64

	// Outbox: deliveries by id and by webhook; pending ones in
	// (NextAttemptAt, RequestID) order; attempts per delivery.
	deliveries map[string]*chat.Delivery
	hookDels   map[string]map[string]*chat.Delivery
	pending    []*chat.Delivery
	attempts   map[string][]*chat.DeliveryAttempt

	// The event log in id order (retention deletes from the front), and
	// the last id assigned.
	events      []*chat.Event
	lastEventID int64

	blobs     map[string]map[string]*chat.Blob // messageID -> name
	chanBlobs map[string]map[string]int        // channelID -> messageID -> blob count

	meta map[string]string

	// The audit log in (CreatedAt, AuditID) ascending order, and by id.
	audit    []*chat.AuditEntry
	auditIDs map[string]*chat.AuditEntry
	tickets  map[string]*chat.StreamTicket // stream tickets by hash

	// Reports by id, in (CreatedAt, ReportID) ascending order, and the
	// open ones by (reporter, target).
	reports     map[string]*chat.Report
	reportOrder []*chat.Report
	openReports map[openReportKey]string
	// Blocks: blocker -> blocked -> when.
	blocks map[string]map[string]chat.Time

	// Devices by id, by (provider, token), and by user; notification
	// levels by user then channel ("" for the user's own).
	devices     map[string]*chat.Device
	deviceToks  map[deviceTokKey]string
	userDevices map[string]map[string]*chat.Device
	notify      map[string]map[string]*chat.NotificationSetting

	// mentioned holds, by user, the positions (in allMsgs) of the
	// messages that mention it or did: an edit that drops a mention
	// leaves the position, and readers check the message's mentions.
	mentioned map[string]*[]int32
	// The push outbox: pushes by id, by (message, device), the pending
	// ones, and push ids per device and per message.
	pushes        map[string]*chat.PushDelivery
	pushKeys      map[pushKey]string
	pendingPushes map[string]*chat.PushDelivery
	devicePushes  map[string]map[string]bool
	msgPushes     map[string]map[string]bool
	// Push batches by message id, not yet expanded.
	pushBatches map[string]*chat.PushBatch
}

type deviceTokKey struct{ provider, token string }

type openReportKey struct{ reporter, targetType, target string }

type reactKey struct{ user, msg, name string }

type flagKey struct{ kind, target string }

type chanMsgs struct {
	all msgList
	top msgList
	// deleted holds the deleted messages in segment order: the deleted
	// messages above a read marker.
	deleted msgList
}

// chanAuthorKey is a channel and an author (interned strings).
type chanAuthorKey struct{ ch, user strID }

func newData() *data {
	return &data{
		channels:      map[string]*chat.Channel{},
		muted:         map[muteKey]struct{}{},
		members:       map[string]map[string]*chat.ChannelUser{},
		userChans:     map[string]map[string]*chat.ChannelUser{},
		memberOf:      map[string]*[]*chat.Channel{},
		msgs:          map[string]*msg{},
		chanMsgs:      map[string]*chanMsgs{},
		children:      map[string]*msgList{},
		byAuthor:      map[string]*msgList{},
		mentioned:     map[string]*[]int32{},
		chanAuthor:    map[chanAuthorKey]*msgList{},
		strIDs:        map[string]strID{},
		users:         map[string]*chat.User{},
		presenceProcs: map[string]*chat.PresenceProcess{},
		procUsers:     map[string]map[string]struct{}{},
		userProcs:     map[string]map[string]struct{}{},
		offlineSince:  map[string]chat.Time{},
		roles:         map[string]*chat.Role{},
		rules:         map[chat.RuleList]map[string]*chat.Rule{},
		reactions:     map[reactKey]*chat.Reaction{},
		reactIDs:      map[string]reactKey{},
		msgReacts:     map[string]*reactList{},
		reactNames:    map[string]map[string]*msg{},
		flags:         map[flagKey]map[string]chat.Time{},
		admins:        map[string]*chat.Admin{},
		adminHashes:   map[string]string{},
		adminSessions: map[string]*chat.AdminSession{},
		webhooks:      map[string]*chat.Webhook{},
		deliveries:    map[string]*chat.Delivery{},
		hookDels:      map[string]map[string]*chat.Delivery{},
		attempts:      map[string][]*chat.DeliveryAttempt{},
		blobs:         map[string]map[string]*chat.Blob{},
		chanBlobs:     map[string]map[string]int{},
		meta:          map[string]string{},
		auditIDs:      map[string]*chat.AuditEntry{},
		tickets:       map[string]*chat.StreamTicket{},
		reports:       map[string]*chat.Report{},
		openReports:   map[openReportKey]string{},
		blocks:        map[string]map[string]chat.Time{},
		devices:       map[string]*chat.Device{},
		deviceToks:    map[deviceTokKey]string{},
		userDevices:   map[string]map[string]*chat.Device{},
		notify:        map[string]map[string]*chat.NotificationSetting{},
		pushes:        map[string]*chat.PushDelivery{},
		pushKeys:      map[pushKey]string{},
		pendingPushes: map[string]*chat.PushDelivery{},
		devicePushes:  map[string]map[string]bool{},
		msgPushes:     map[string]map[string]bool{},
		pushBatches:   map[string]*chat.PushBatch{},
	}
}

// ---- sorted index helpers ----

// sortedInsert inserts v into the sorted slice *s (cmp orders it) and
// records the inverse. Appending at the end, the common case for
// increasing keys, costs O(1).
func sortedInsert[T any](t *tx, s *[]T, v T, cmp func(a, b T) int) {
	insertSorted(s, v, cmp)
	t.onUndo(func() { removeSorted(s, v, cmp) })
}

// sortedRemove removes the element equal to v (by cmp) from *s, if there,
// and records the inverse.
func sortedRemove[T any](t *tx, s *[]T, v T, cmp func(a, b T) int) {
	if removeSorted(s, v, cmp) {
		t.onUndo(func() { insertSorted(s, v, cmp) })
	}
}

func insertSorted[T any](s *[]T, v T, cmp func(a, b T) int) {
	n := len(*s)
	if n == 0 || cmp((*s)[n-1], v) < 0 {
		*s = append(*s, v)
		return
	}
	i, _ := slices.BinarySearchFunc(*s, v, cmp)
	*s = slices.Insert(*s, i, v)
}

func removeSorted[T any](s *[]T, v T, cmp func(a, b T) int) bool {
	i, ok := slices.BinarySearchFunc(*s, v, cmp)
	if !ok {
		return false
	}
	*s = slices.Delete(*s, i, i+1) // Delete zeroes the vacated tail slot
	return true
}

// msgList is a list of messages (positions in data.allMsgs), in
// channelSegment order except for data.byAuthor.
type msgList []int32

// segAt returns the segment of the message at position i of allMsgs.
func (d *data) segAt(i int32) int64 { return d.allMsgs[i].seg }

// search returns the first index of l whose segment is >= seg, and
// whether it is equal.
func (d *data) search(l msgList, seg int64) (int, bool) {
	return slices.BinarySearchFunc(l, seg, func(i int32, s int64) int { return cmp.Compare(d.segAt(i), s) })
}

// find returns the message of l with segment seg, or nil.
func (d *data) find(l msgList, seg int64) *msg {
	if n := len(l); n == 0 || d.segAt(l[n-1]) < seg {
		return nil // past the end: the check of every new message
	}
	i, ok := d.search(l, seg)
	if !ok {
		return nil
	}
	return d.allMsgs[l[i]]
}

// insertSeg inserts position p into l by segment. Appending at the end,
// the common case for increasing segments, costs O(1).
func (d *data) insertSeg(l *msgList, p int32) {
	seg := d.segAt(p)
	if n := len(*l); n == 0 || d.segAt((*l)[n-1]) < seg {
		*l = append(*l, p)
		return
	}
	i, _ := d.search(*l, seg)
	*l = slices.Insert(*l, i, p)
}

// removeSeg removes position p from l (found by its segment; a list of
// comments may hold equal segments of different channels).
func (d *data) removeSeg(l *msgList, p int32) {
	seg := d.segAt(p)
	i, _ := d.search(*l, seg)
	for ; i < len(*l) && d.segAt((*l)[i]) == seg; i++ {
		if (*l)[i] == p {
			*l = slices.Delete(*l, i, i+1)
			return
		}
	}
}

// bounds returns the index range [lo, hi) of segments strictly between
// after and before (0 = unbounded).
func (d *data) bounds(l msgList, after, before int64) (lo, hi int) {
	hi = len(l)
	if after > 0 {
		lo, _ = d.search(l, after+1)
	}
	if before > 0 {
		hi, _ = d.search(l, before)
	}
	if hi < lo {
		hi = lo
	}
	return lo, hi
}

// reactList is a message's reactions in (CreatedAt, ReactionID) order.
type reactList = []*chat.Reaction

func cmpReaction(a, b *chat.Reaction) int {
	if c := a.CreatedAt.Compare(b.CreatedAt.Time); c != 0 {
		return c
	}
	return cmp.Compare(a.ReactionID, b.ReactionID)
}

func cmpChannel(a, b *chat.Channel) int {
	if c := a.CreatedAt.Compare(b.CreatedAt.Time); c != 0 {
		return c
	}
	return cmp.Compare(a.ChannelID, b.ChannelID)
}

func cmpDelivery(a, b *chat.Delivery) int {
	if c := a.NextAttemptAt.Compare(b.NextAttemptAt.Time); c != 0 {
		return c
	}
	return cmp.Compare(a.RequestID, b.RequestID)
}

// window computes which part of an ascending list a keyset query reads. pos
// reports where an element is relative to a cursor (<0 before it, 0 at it,
// >0 after it, in ascending order). lowCur and highCur are the cursors that
// bound the range from below and from above (nil = unbounded); the range
// excludes the cursors themselves.
func window[T any](l []T, low, high func(T) int) (lo, hi int) {
	hi = len(l)
	if low != nil {
		// first index whose element is > low cursor
		lo, _ = slices.BinarySearchFunc(l, 0, func(e T, _ int) int {
			if low(e) <= 0 {
				return -1
			}
			return 1
		})
	}
	if high != nil {
		// first index whose element is >= high cursor
		hi, _ = slices.BinarySearchFunc(l, 0, func(e T, _ int) int {
			if high(e) < 0 {
				return -1
			}
			return 1
		})
	}
	if hi < lo {
		hi = lo
	}
	return lo, hi
}

// walk visits l[lo:hi] ascending, or descending when desc, until visit
// returns false.
func walk[T any](l []T, lo, hi int, desc bool, visit func(T) bool) {
	if desc {
		for i := hi - 1; i >= lo; i-- {
			if !visit(l[i]) {
				return
			}
		}
		return
	}
	for i := lo; i < hi; i++ {
		if !visit(l[i]) {
			return
		}
	}
}

// page applies offset and limit while collecting.
type page struct {
	skip  int
	limit int
	n     int
}

// take reports whether the next matching row is kept, and full whether the
// page is complete afterwards.
func (p *page) take() (keep, full bool) {
	if p.skip > 0 {
		p.skip--
		return false, false
	}
	p.n++
	return true, p.limit > 0 && p.n >= p.limit
}

func anyOf(have, want []string) bool {
	for _, w := range want {
		if slices.Contains(have, w) {
			return true
		}
	}
	return false
}

// tagsMatch applies the any-of and none-of tag filters.
func tagsMatch(have, anyTags, noneTags []string) bool {
	if len(anyTags) > 0 && !anyOf(have, anyTags) {
		return false
	}
	if len(noneTags) > 0 && anyOf(have, noneTags) {
		return false
	}
	return true
}
