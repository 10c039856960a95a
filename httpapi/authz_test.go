package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/httpapi"
)

// The callers of the authorization matrix.
const (
	asAdmin     = "admin"     // an admin access token
	asMember    = "member"    // a user token of a member of channel c
	asNonMember = "nonMember" // a user token of a user in no channel
	asGranted   = "granted"   // a user token of a non-member whose role holds every Channel/ permission
	asBanned    = "banned"    // a user token of a globally banned user
	asExpired   = "expired"   // an expired user token of the member
	asForged    = "forged"    // the member's claims signed with another secret
	asRevoked   = "revoked"   // a token of a member, issued before its user's tokens were revoked
	asNewcomer  = "newcomer"  // a valid token of a user the store does not know yet
)

var matrixCallers = []string{asAdmin, asMember, asNonMember, asGranted, asBanned, asExpired, asForged, asRevoked, asNewcomer}

// The users of the matrix fixture.
const (
	memberID  = "mem"
	outsideID = "out"
	modID     = "mod"
	bannedID  = "gb"
	revokedID = "rv"
)

// access is who may call a route without a refusal (docs/api.md section 1 (Permissions of end users)).
type access int

const (
	adminOnly   access = iota // admins only
	anyUser                   // every caller that is not globally banned
	members                   // members of the channel, and Channel/GlobalAccess
	granted                   // the Channel/ permission of the operation
	own                       // the author of the message (it is the member's)
	ownOrManage               // the author, and Channel/ManageMessages
	ownRelation               // the channel's members only, admins included (mark read)
	ownDevice                 // the caller's own device (a newcomer has none: 404)
)

// allowed reports whether caller passes access.
func (a access) allowed(caller string) bool {
	switch caller {
	case asAdmin:
		return a != ownRelation // the admin is not a member of channel c
	case asMember:
		return a == anyUser || a == members || a == own || a == ownOrManage || a == ownRelation || a == ownDevice
	case asNonMember:
		return a == anyUser || a == ownDevice
	case asNewcomer:
		return a == anyUser
	case asGranted:
		return a == anyUser || a == members || a == granted || a == ownOrManage || a == ownDevice
	}
	return false
}

// want is the code a caller gets: 0 for success.
func (a access) want(caller string) chat.Code {
	switch caller {
	case asBanned:
		return chat.CodeGlobalBanned
	case asExpired, asForged, asRevoked:
		return chat.CodeUnauthorized
	}
	if a.allowed(caller) {
		return 0
	}
	if a == ownDevice && caller == asNewcomer {
		return chat.CodeNotFound
	}
	return chat.CodePermissionDenied
}

// matrixRow is one request to a route. {self} in the body stands for the
// caller's user id; {img}, {file}, {msg}, {hook}, {req} and {report} for fixture ids.
type matrixRow struct {
	method, pattern string
	path            string
	body            string
	upload          bool // multipart with channelId c and a file
	who             access
}

var matrixRows = []matrixRow{
	// Channels.
	{"POST", "/channels", "/channels", `{}`, false, anyUser},
	{"POST", "/channel", "/channel", `{"channelId":"fresh","type":"standard"}`, false, anyUser},
	{"POST", "/channel", "/channel", `{"channelId":"fresh","type":"standard","userIds":["{self}"]}`, false, anyUser},
	{"POST", "/channel", "/channel", `{"channelId":"fresh","type":"standard","userIds":["{self}","zed","unknown"]}`, false, granted},
	{"GET", "/channel/{channelId}", "/channel/c", ``, false, anyUser},
	{"PUT", "/channel/{channelId}", "/channel/c", `{"displayName":"New"}`, false, granted},
	{"POST", "/channel/displayName", "/channel/displayName", `{"channelId":"c","displayName":"New"}`, false, granted},
	{"POST", "/channel/{channelId}/displayName", "/channel/c/displayName", `{"displayName":"New"}`, false, granted},
	{"POST", "/channel/{channelId}/users", "/channel/c/users", `{"userIds":["zed"]}`, false, granted},
	{"POST", "/channel/{channelId}/users", "/channel/c/users", `{"userIds":["{self}"]}`, false, anyUser},
	{"DELETE", "/channel/{channelId}/users", "/channel/c/users", `{"userIds":["rv"]}`, false, granted},
	{"DELETE", "/channel/{channelId}/users", "/channel/c/users", `{"userIds":["{self}"]}`, false, anyUser},
	{"POST", "/channel/{channelId}/join", "/channel/c/join", ``, false, anyUser},
	{"POST", "/channel/{channelId}/leave", "/channel/c/leave", ``, false, anyUser},
	{"POST", "/channel/{channelId}/typing", "/channel/c/typing", ``, false, members},
	{"POST", "/channel/{channelId}/read", "/channel/c/read", ``, false, ownRelation},
	{"PUT", "/channel/{channelId}/mute", "/channel/c/mute", `{"mutePeriod":60000}`, false, granted},
	{"PUT", "/channel/{channelId}/users/mute", "/channel/c/users/mute", `{"userIds":["rv"],"mutePeriod":60000}`, false, granted},
	{"PUT", "/channel/{channelId}/rateLimit", "/channel/c/rateLimit", `{"rateLimitWindow":1000}`, false, granted},
	{"POST", "/channel/{channelId}/users/ban", "/channel/c/users/ban", `{"userIds":["rv"]}`, false, granted},
	{"POST", "/channel/{channelId}/users/unban", "/channel/c/users/unban", `{"userIds":["zed"]}`, false, granted},
	{"POST", "/channel/{channelId}/close", "/channel/c/close", ``, false, granted},
	{"POST", "/channels/{channelId}/close", "/channels/c/close", ``, false, granted},
	// Messages.
	{"POST", "/messages", "/messages", `{"channelId":"c"}`, false, members},
	{"POST", "/messages/search", "/messages/search", `{"query":"hello","channelId":"c"}`, false, members},
	{"POST", "/messages/search", "/messages/search", `{"query":"hello"}`, false, anyUser},
	{"POST", "/messages/mentions", "/messages/mentions", `{}`, false, anyUser},
	{"POST", "/messages/mentions", "/messages/mentions", `{"userId":"{self}"}`, false, anyUser},
	{"POST", "/messages/mentions", "/messages/mentions", `{"userId":"zed"}`, false, adminOnly},
	{"GET", "/message/{messageId}", "/message/{msg}", ``, false, members},
	{"POST", "/message", "/message", `{"channelId":"c","type":"text","data":{"text":"hello"}}`, false, members},
	{"PUT", "/message/{messageId}", "/message/{msg}", `{"data":{"text":"edited"}}`, false, own},
	{"DELETE", "/message/{messageId}", "/message/{msg}", ``, false, ownOrManage},
	{"POST", "/message/{messageId}/flags", "/message/{msg}/flags", ``, false, members},
	{"DELETE", "/message/{messageId}/flags", "/message/{msg}/flags", ``, false, adminOnly},
	{"POST", "/messages/images", "/messages/images", ``, true, members},
	{"GET", "/messages/{messageId}/images", "/messages/{img}/images?size=small", ``, false, members},
	{"POST", "/messages/files", "/messages/files", ``, true, members},
	{"GET", "/messages/{messageId}/files", "/messages/{file}/files", ``, false, members},
	// Users.
	{"GET", "/users", "/users", ``, false, anyUser},
	{"GET", "/users/{userId}", "/users/mem", ``, false, anyUser},
	{"PUT", "/users", "/users", `{"userId":"{self}","displayName":"Me","metadata":{"a":1}}`, false, anyUser},
	{"PUT", "/users", "/users", `{"userId":"zed","displayName":"Not me"}`, false, adminOnly},
	{"PUT", "/users", "/users", `{"userId":"{self}","roles":["moderator"]}`, false, adminOnly},
	{"POST", "/users/ban", "/users/ban", `{"userId":"zed"}`, false, adminOnly},
	{"POST", "/users/unban", "/users/unban", `{"userId":"gb"}`, false, adminOnly},
	{"POST", "/users/{userId}/flags", "/users/zed/flags", ``, false, anyUser},
	{"DELETE", "/users/{userId}/flags", "/users/zed/flags", ``, false, adminOnly},
	{"POST", "/users/{userId}/token", "/users/zed/token", `{"ttl":60}`, false, adminOnly},
	{"POST", "/users/{userId}/tokens/revoke", "/users/mem/tokens/revoke", ``, false, adminOnly},
	{"POST", "/users/{userId}/messages/delete", "/users/mem/messages/delete", `{}`, false, adminOnly},
	{"POST", "/users/{userId}/messages/delete", "/users/{self}/messages/delete", `{"channelId":"c"}`, false, adminOnly},
	{"GET", "/users/{userId}/export", "/users/mem/export", ``, false, adminOnly},
	{"GET", "/users/{userId}/export", "/users/{self}/export", ``, false, adminOnly},
	{"POST", "/users/{userId}/erase", "/users/zed/erase", ``, false, adminOnly},
	{"POST", "/users/{userId}/blocks", "/users/{self}/blocks", `{"userId":"zed"}`, false, anyUser},
	{"POST", "/users/{userId}/blocks", "/users/zed/blocks", `{"userId":"out"}`, false, adminOnly},
	{"DELETE", "/users/{userId}/blocks", "/users/{self}/blocks?userId=zed", ``, false, anyUser},
	{"DELETE", "/users/{userId}/blocks", "/users/{self}/blocks", `{"userId":"zed"}`, false, anyUser},
	{"DELETE", "/users/{userId}/blocks", "/users/zed/blocks", `{"userId":"out"}`, false, adminOnly},
	{"GET", "/users/{userId}/blocks", "/users/{self}/blocks", ``, false, anyUser},
	{"GET", "/users/{userId}/blocks", "/users/zed/blocks", ``, false, adminOnly},
	// Push devices and notification settings: a user its own, admins
	// anyone's; a channel's level is the member's own.
	{"POST", "/users/{userId}/devices", "/users/{self}/devices", `{"provider":"firebase","token":"fcm-new"}`, false, anyUser},
	{"POST", "/users/{userId}/devices", "/users/{self}/devices", `{"provider":"webpush","token":{"endpoint":"https://push.example.com/s/1",` +
		`"keys":{"p256dh":"BNo6ARYkQFH0Z2YNPjVUjqNKzPQ3roYHefpz_HVoo9Cb2sTNBCmmbVe72FdSf1i3l73kW_tsS381GHfJ7ZPsSv8","auth":"8SE5ZM2pOPU4ux2c-FIbLw"}}}`, false, anyUser},
	{"POST", "/users/{userId}/devices", "/users/zed/devices", `{"provider":"apn","token":"00112233445566778899aabbccddeeff"}`, false, adminOnly},
	{"GET", "/users/{userId}/devices", "/users/{self}/devices", ``, false, anyUser},
	{"GET", "/users/{userId}/devices", "/users/zed/devices", ``, false, adminOnly},
	{"DELETE", "/users/{userId}/devices/{deviceId}", "/users/{self}/devices/{selfDevice}", ``, false, ownDevice},
	{"DELETE", "/users/{userId}/devices/{deviceId}", "/users/zed/devices/{zedDevice}", ``, false, adminOnly},
	{"GET", "/push/vapid", "/push/vapid", ``, false, anyUser},
	{"PUT", "/users/{userId}/notifications", "/users/{self}/notifications", `{"level":"mentions"}`, false, anyUser},
	{"PUT", "/users/{userId}/notifications", "/users/zed/notifications", `{"level":"none"}`, false, adminOnly},
	{"GET", "/users/{userId}/notifications", "/users/{self}/notifications", ``, false, anyUser},
	{"GET", "/users/{userId}/notifications", "/users/zed/notifications", ``, false, adminOnly},
	{"PUT", "/channel/{channelId}/notifications", "/channel/c/notifications", `{"level":"mentions"}`, false, ownRelation},
	{"GET", "/channel/{channelId}/notifications", "/channel/c/notifications", ``, false, ownRelation},
	// Roles.
	{"GET", "/roles", "/roles", ``, false, adminOnly},
	{"PUT", "/roles", "/roles", `{"publicIds":["helper"],"permissions":["Channel/ManageChannel"]}`, false, adminOnly},
	// Blacklist and whitelist.
	{"GET", "/blacklist/records", "/blacklist/records", ``, false, adminOnly},
	{"POST", "/blacklist/records", "/blacklist/records", `{"regexs":["heck"]}`, false, adminOnly},
	{"DELETE", "/blacklist/records", "/blacklist/records", `{"ruleIds":["darn"]}`, false, adminOnly},
	{"PUT", "/blacklist/records/{ruleId}", "/blacklist/records/darn", `{"ruleId":"dang"}`, false, adminOnly},
	{"GET", "/whitelist/records", "/whitelist/records", ``, false, adminOnly},
	{"POST", "/whitelist/records", "/whitelist/records", `{"regexs":["example.org"]}`, false, adminOnly},
	{"DELETE", "/whitelist/records", "/whitelist/records", `{"ruleIds":["example.com"]}`, false, adminOnly},
	{"PUT", "/whitelist/records/{ruleId}", "/whitelist/records/example.com", `{"ruleId":"example.net"}`, false, adminOnly},
	// Reactions.
	{"GET", "/reactions", "/reactions?referenceId={msg}&referenceType=message", ``, false, members},
	{"POST", "/reactions", "/reactions", `{"referenceId":"{msg}","referenceType":"message","reactionName":"like"}`, false, members},
	{"DELETE", "/reactions", "/reactions", `{"referenceId":"{msg}","referenceType":"message","reactionName":"like"}`, false, members},
	{"GET", "/reactions/messages/most", "/reactions/messages/most?reactionName=like&channelId=c", ``, false, members},
	{"GET", "/reactions/messages/most", "/reactions/messages/most?reactionName=like", ``, false, granted},
	// Webhooks.
	{"POST", "/webhooks", "/webhooks", `{"url":"https://hooks.example.com/other"}`, false, adminOnly},
	{"GET", "/webhooks", "/webhooks", ``, false, adminOnly},
	{"DELETE", "/webhooks/{webhookId}", "/webhooks/{hook}", ``, false, adminOnly},
	{"POST", "/webhooks/{webhookId}/secret", "/webhooks/{hook}/secret", ``, false, adminOnly},
	{"GET", "/webhooks/{webhookId}/deliveries", "/webhooks/{hook}/deliveries", ``, false, adminOnly},
	{"POST", "/webhooks/{webhookId}/deliveries/{requestId}/redeliver", "/webhooks/{hook}/deliveries/{req}/redeliver", ``, false, adminOnly},
	// Moderation.
	{"GET", "/audit", "/audit", ``, false, adminOnly},
	{"GET", "/audit", "/audit?actorId={self}&options[limit]=5", ``, false, adminOnly},
	{"POST", "/moderation/check", "/moderation/check", `{"userId":"{self}","channelId":"c","type":"text","data":{"text":"hi"}}`, false, adminOnly},
	// Reports: anyone reports a user, and a message it may read; admins
	// review.
	{"POST", "/reports", "/reports", `{"targetType":"user","targetId":"zed","reason":"spam"}`, false, anyUser},
	{"POST", "/reports", "/reports", `{"targetType":"message","targetId":"{msg}","reason":"spam","note":"see this"}`, false, members},
	{"GET", "/reports", "/reports", ``, false, adminOnly},
	{"GET", "/reports", "/reports?state=open&targetType=user&options[limit]=5", ``, false, adminOnly},
	{"GET", "/reports/{reportId}", "/reports/{report}", ``, false, adminOnly},
	{"POST", "/reports/{reportId}/resolve", "/reports/{report}/resolve", `{"action":"dismiss"}`, false, adminOnly},
	{"POST", "/reports/{reportId}/resolve", "/reports/{report}/resolve", `{"action":"globalBan"}`, false, adminOnly},
	// The event stream: every caller, each seeing what it may.
	{"GET", "/events", "/events", ``, false, anyUser},
	{"POST", "/events/ticket", "/events/ticket", ``, false, anyUser},
}

// matrixSecret signs the user tokens of the matrix.
var matrixSecret = []byte("matrix user-token secret of 32 bytes!")

func matrixConfig(_ *httpapi.Config, c *chat.Config) { c.UserTokenSecret = matrixSecret }

// reopen serves the API over st, a copy of the store of m (same admin,
// tokens and fixture ids), for stores whose fixture is cheaper to copy
// than to build.
func (m *matrixEnv) reopen(t *testing.T, st chat.Store) *matrixEnv {
	t.Helper()
	cfg := httpapi.Config{Logger: slog.New(slog.DiscardHandler)}
	scfg := chat.Config{Logger: slog.New(slog.DiscardHandler)}
	matrixConfig(&cfg, &scfg)
	svc, err := chat.New(context.Background(), st, scfg)
	require.NoError(t, err)
	cfg.Events = startHub(t, svc)
	mux := http.NewServeMux()
	mux.Handle("/api/v2/", http.StripPrefix("/api/v2", httpapi.New(svc, cfg)))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	e := &env{t: t, store: st, svc: svc, srv: srv, base: srv.URL + "/api/v2", token: m.token, admin: m.admin}
	return &matrixEnv{env: e, ids: m.ids, tokens: m.tokens, selfID: m.selfID}
}

// matrixEnv is one API server with the matrix fixture.
type matrixEnv struct {
	*env
	ids    map[string]string // {msg}, {img}, {file}, {hook}, {req}
	tokens map[string]string // caller -> token
	selfID map[string]string // caller -> the user id it acts as
}

func newMatrixEnv(t *testing.T, newStore storeFactory) *matrixEnv {
	t.Helper()
	e := newEnv(t, newStore, matrixConfig)
	bg := context.Background()
	m := &matrixEnv{env: e, ids: map[string]string{}, tokens: map[string]string{asAdmin: e.token},
		selfID: map[string]string{asAdmin: e.admin}}
	hook, err := e.svc.CreateWebhook(bg, e.admin, "https://hooks.example.com/chat", nil)
	require.NoError(t, err)
	m.ids["{hook}"] = hook.WebhookID
	_, err = e.svc.PutRoles(bg, e.admin, []string{"moderator"}, []string{chat.PermManageChannel, chat.PermManageUsers,
		chat.PermMuteChannel, chat.PermMuteUser, chat.PermRateLimitChannel, chat.PermBanUser, chat.PermCloseChannel,
		chat.PermGlobalAccess, chat.PermManageMessages})
	require.NoError(t, err)
	roles := []string{"moderator"}
	_, err = e.svc.UpdateUser(bg, e.admin, chat.UpdateUserInput{UserID: modID, Roles: &roles})
	require.NoError(t, err)
	_, err = e.svc.CreateChannel(bg, e.admin, chat.CreateChannelInput{ChannelID: "c", Type: chat.ChannelTypeStandard,
		UserIDs: []string{memberID, revokedID, bannedID}})
	require.NoError(t, err)
	for _, id := range []string{outsideID, "zed"} {
		_, err = e.svc.UpdateUser(bg, e.admin, chat.UpdateUserInput{UserID: id})
		require.NoError(t, err)
	}
	ml, err := e.svc.CreateMessage(bg, memberID, chat.CreateMessageInput{ChannelID: "c", Type: chat.MessageTypeText, Data: map[string]any{"text": "hi"}})
	require.NoError(t, err)
	m.ids["{msg}"] = ml.Messages[0].MessageID
	_, err = e.svc.AddReaction(bg, memberID, m.ids["{msg}"], chat.ReferenceTypeMessage, "like")
	require.NoError(t, err)
	png := pngImage(t, 4, 4, false)
	il, err := e.svc.CreateImageMessage(bg, memberID, chat.CreateImageMessageInput{ChannelID: "c", FileName: "a.png", MimeType: "image/png",
		Width: 4, Height: 4, Renditions: []chat.ImageRendition{{Name: "small", ContentType: "image/png", Width: 4, Height: 4, Data: png}}})
	require.NoError(t, err)
	m.ids["{img}"] = il.Messages[0].MessageID
	fl, err := e.svc.CreateFileMessage(bg, memberID, chat.CreateFileMessageInput{ChannelID: "c", FileName: "a.txt", MimeType: "text/plain", Data: []byte("bytes")})
	require.NoError(t, err)
	m.ids["{file}"] = fl.Messages[0].MessageID
	_, err = e.svc.AddRules(bg, e.admin, chat.Blacklist, []string{"darn"}, false)
	require.NoError(t, err)
	_, err = e.svc.AddRules(bg, e.admin, chat.Whitelist, []string{"example.com"}, false)
	require.NoError(t, err)
	dl, err := e.svc.ListDeliveries(bg, e.admin, hook.WebhookID, 1, "")
	require.NoError(t, err)
	require.NotEmpty(t, dl.Deliveries)
	m.ids["{req}"] = dl.Deliveries[0].RequestID
	rl, err := e.svc.CreateReport(bg, revokedID, chat.CreateReportInput{TargetType: chat.ReportTargetUser, TargetID: "zed", Reason: "abuse"})
	require.NoError(t, err)
	m.ids["{report}"] = rl.Reports[0].ReportID
	for _, id := range []string{e.admin, memberID, outsideID, modID, "zed"} {
		dl, err := e.svc.RegisterDevice(bg, e.admin, chat.RegisterDeviceInput{UserID: id, Provider: chat.ProviderFirebase, Token: "fcm-" + id})
		require.NoError(t, err)
		m.ids["{device:"+id+"}"] = dl.Devices[0].DeviceID
	}
	m.ids["{zedDevice}"] = m.ids["{device:zed}"]
	require.NoError(t, e.svc.GlobalBan(bg, e.admin, bannedID, false))

	mint := func(user string) string {
		tok, err := e.svc.IssueUserToken(bg, "", user, time.Hour)
		require.NoError(t, err)
		return tok.Token
	}
	m.tokens[asMember], m.selfID[asMember] = mint(memberID), memberID
	m.tokens[asNonMember], m.selfID[asNonMember] = mint(outsideID), outsideID
	m.tokens[asGranted], m.selfID[asGranted] = mint(modID), modID
	m.tokens[asBanned], m.selfID[asBanned] = signToken(t, matrixSecret, jwtClaims{"user_id": bannedID, "iat": time.Now().Unix()}), bannedID
	m.tokens[asExpired], m.selfID[asExpired] = signToken(t, matrixSecret, jwtClaims{"user_id": memberID,
		"iat": time.Now().Add(-2 * time.Hour).Unix(), "exp": time.Now().Add(-time.Hour).Unix()}), memberID
	m.tokens[asForged], m.selfID[asForged] = signToken(t, []byte("another secret, not the server's"), jwtClaims{"user_id": memberID}), memberID
	m.tokens[asRevoked] = signToken(t, matrixSecret, jwtClaims{"user_id": revokedID, "iat": time.Now().Add(-time.Hour).Unix()})
	m.selfID[asRevoked] = revokedID
	m.tokens[asNewcomer], m.selfID[asNewcomer] = signToken(t, matrixSecret, jwtClaims{"sub": "newcomer", "iat": time.Now().Unix()}), "newcomer"
	require.NoError(t, e.svc.RevokeUserTokens(bg, e.admin, revokedID))
	return m
}

// request sends row as caller and returns the response.
func (m *matrixEnv) request(row matrixRow, caller string) *rawResponse {
	m.t.Helper()
	fill := func(s string) string {
		for k, v := range m.ids {
			s = strings.ReplaceAll(s, k, v)
		}
		dev, ok := m.ids["{device:"+m.selfID[caller]+"}"]
		if !ok {
			dev = "none"
		}
		s = strings.ReplaceAll(s, "{selfDevice}", dev)
		return strings.ReplaceAll(s, "{self}", m.selfID[caller])
	}
	auth := "Bearer " + m.tokens[caller]
	if row.upload {
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		require.NoError(m.t, mw.WriteField("channelId", "c"))
		fw, err := mw.CreateFormFile("file", "up.png")
		require.NoError(m.t, err)
		_, err = fw.Write(pngImage(m.t, 4, 4, false))
		require.NoError(m.t, err)
		require.NoError(m.t, mw.Close())
		return m.do(row.method, row.path, mw.FormDataContentType(), buf.String(), "Authorization", auth)
	}
	ct := ""
	if row.body != "" {
		ct = "application/json"
	}
	if row.pattern == "/events" {
		return m.do(row.method, fill(row.path), ct, fill(row.body), "Authorization", auth, "Accept", "text/event-stream")
	}
	return m.do(row.method, fill(row.path), ct, fill(row.body), "Authorization", auth)
}

// snapshot is everything a request could change, read from the store.
func (m *matrixEnv) snapshot() string {
	m.t.Helper()
	ctx := context.Background()
	var parts []any
	err := m.store.View(ctx, func(tx chat.Tx) error {
		chs, err := tx.QueryChannels(ctx, chat.ChannelFilter{IncludeClosed: true})
		if err != nil {
			return err
		}
		parts = append(parts, chs)
		for _, c := range chs {
			cus, err := tx.GetChannelUsers(ctx, c.ChannelID, nil)
			if err != nil {
				return err
			}
			ms, err := tx.QueryMessages(ctx, chat.MessageFilter{ChannelID: c.ChannelID, IncludeDeleted: true})
			if err != nil {
				return err
			}
			parts = append(parts, cus, ms)
			for _, msg := range ms {
				rs, err := tx.QueryReactions(ctx, chat.ReactionFilter{MessageID: msg.MessageID})
				if err != nil {
					return err
				}
				parts = append(parts, rs)
				for _, name := range []string{"file", "small"} {
					b, err := tx.GetBlob(ctx, msg.MessageID, name)
					if err == nil {
						parts = append(parts, b)
					}
				}
			}
		}
		us, err := tx.QueryUsers(ctx, chat.UserFilter{})
		if err != nil {
			return err
		}
		for _, u := range us {
			parts = append(parts, u, u.TokensRevokedAt)
			ds, err := tx.ListDevices(ctx, u.UserID)
			if err != nil {
				return err
			}
			ns, err := tx.ListNotificationLevels(ctx, u.UserID, "", false, 0)
			if err != nil {
				return err
			}
			for _, d := range ds {
				parts = append(parts, d, d.Token)
			}
			parts = append(parts, ns)
		}
		roles, err := tx.ListRoles(ctx, "")
		if err != nil {
			return err
		}
		parts = append(parts, roles)
		for _, l := range []chat.RuleList{chat.Blacklist, chat.Whitelist} {
			rs, err := tx.ListRules(ctx, l, nil)
			if err != nil {
				return err
			}
			parts = append(parts, rs)
		}
		hs, err := tx.ListWebhooks(ctx)
		if err != nil {
			return err
		}
		parts = append(parts, hs)
		audit, err := tx.QueryAudit(ctx, chat.AuditFilter{})
		if err != nil {
			return err
		}
		parts = append(parts, audit)
		reports, err := tx.QueryReports(ctx, chat.ReportFilter{})
		if err != nil {
			return err
		}
		parts = append(parts, reports)
		for _, h := range hs {
			ds, err := tx.ListDeliveries(ctx, h.WebhookID, "", 1000)
			if err != nil {
				return err
			}
			parts = append(parts, ds)
		}
		return nil
	})
	require.NoError(m.t, err)
	b, err := json.Marshal(parts)
	require.NoError(m.t, err)
	return string(b)
}

// TestAuthorizationMatrix sends every route of the router as every kind
// of caller, each on a fresh fixture, and checks the code of docs/api.md
// section 1; a refused call must leave the store exactly as it was.
func TestAuthorizationMatrix(t *testing.T) {
	runMatrix(t, func(t *testing.T) *matrixEnv { return newMatrixEnv(t, memoryStore) })
}

// checkMatrixCoverage fails when a route of the router has no row, or a
// row names a route the router does not serve.
func checkMatrixCoverage(t *testing.T) {
	t.Helper()
	covered := map[httpapi.Route]bool{}
	for _, row := range matrixRows {
		covered[httpapi.Route{Method: row.method, Pattern: row.pattern}] = true
	}
	for _, rt := range httpapi.Routes() {
		require.True(t, covered[rt], "route %s %s has no row in the authorization matrix", rt.Method, rt.Pattern)
		delete(covered, rt)
	}
	require.Empty(t, covered, "rows for routes the router does not serve")
}

// matrixRowName names a row in test names.
func matrixRowName(row matrixRow) string {
	return fmt.Sprintf("%s %s %s", row.method, row.path, strings.ReplaceAll(row.body, "/", "|"))
}

// runMatrix runs the matrix on fixtures made by fixture, one per call.
func runMatrix(t *testing.T, fixture func(t *testing.T) *matrixEnv) {
	checkMatrixCoverage(t)
	for _, row := range matrixRows {
		for _, caller := range matrixCallers {
			t.Run(matrixRowName(row)+"/"+caller, func(t *testing.T) {
				m := fixture(t)
				want := row.who.want(caller)
				before := m.snapshot()
				r := m.request(row, caller)
				if want == 0 {
					require.True(t, r.status == http.StatusOK || r.status == http.StatusCreated, "status %d body %s", r.status, r.body)
					return
				}
				requireError(t, r, want, "")
				require.Equal(t, before, m.snapshot(), "a refused call changed the store")
			})
		}
	}
}

// jwtClaims are the claims of a hand-made token.
type jwtClaims = jwt.MapClaims

// signToken signs claims with HS256 and secret, as a host application
// minting its own user tokens does.
func signToken(t *testing.T, secret []byte, c jwtClaims) string {
	t.Helper()
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(secret)
	require.NoError(t, err)
	return s
}
