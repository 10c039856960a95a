package push

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/jwt"
)

// FCM endpoints and scope.
const (
	// FCMEndpoint is the base URL of the FCM HTTP v1 API.
	FCMEndpoint = "https://fcm.googleapis.com"
	// GoogleTokenURL is Google's OAuth 2.0 token endpoint, used when the
	// credentials name none.
	GoogleTokenURL = "https://oauth2.googleapis.com/token"
	// fcmScope is the OAuth scope that allows sending messages.
	fcmScope = "https://www.googleapis.com/auth/firebase.messaging"
)

// FCMConfig configures an FCMSender. Credentials is required; every other
// field's zero value works.
type FCMConfig struct {
	// Credentials is a Google service account's JSON key file (from the
	// Firebase console: Project settings, Service accounts). Its
	// client_email, private_key and private_key_id sign the OAuth assertion;
	// its project_id and token_uri are the defaults below.
	Credentials []byte
	// ProjectID is the Firebase project. Default: the credentials'
	// project_id.
	ProjectID string
	// Endpoint is the FCM base URL. Default FCMEndpoint.
	Endpoint string
	// TokenURL is the OAuth 2.0 token endpoint. Default: the credentials'
	// token_uri, else GoogleTokenURL.
	TokenURL string
	// Network says how to reach the endpoint and the token URL. Default:
	// public addresses, system TLS roots, 30 s per request.
	Network Network
}

// serviceAccount is the part of a service account key file FCM needs.
type serviceAccount struct {
	Type         string `json:"type"`
	ProjectID    string `json:"project_id"`
	PrivateKeyID string `json:"private_key_id"`
	PrivateKey   string `json:"private_key"`
	ClientEmail  string `json:"client_email"`
	TokenURI     string `json:"token_uri"`
}

// FCMSender sends notifications through the FCM HTTP v1 API, authorized
// by OAuth 2.0 access tokens obtained with the service account's key (a
// signed JWT assertion exchanged at the token URL; each token is reused
// until shortly before it expires).
type FCMSender struct {
	url    string
	client *http.Client
	jwt    *jwt.Config
	ctx    context.Context // carries client for the token exchange

	mu sync.Mutex
	ts oauth2.TokenSource
}

// NewFCM checks cfg and returns a sender. It starts no goroutines and
// makes no request: the first Send fetches the first access token.
func NewFCM(cfg FCMConfig) (*FCMSender, error) {
	var sa serviceAccount
	if err := json.Unmarshal(cfg.Credentials, &sa); err != nil {
		return nil, fmt.Errorf("push: FCM credentials: %w", err)
	}
	if sa.Type != "" && sa.Type != "service_account" {
		return nil, fmt.Errorf("push: FCM credentials are of type %q, want service_account", sa.Type)
	}
	if sa.ClientEmail == "" || sa.PrivateKey == "" {
		return nil, errors.New("push: FCM credentials need client_email and private_key")
	}
	project := cfg.ProjectID
	if project == "" {
		project = sa.ProjectID
	}
	if project == "" {
		return nil, errors.New("push: FCM needs a project ID (ProjectID or the credentials' project_id)")
	}
	tokenURL := cfg.TokenURL
	if tokenURL == "" {
		tokenURL = sa.TokenURI
	}
	if tokenURL == "" {
		tokenURL = GoogleTokenURL
	}
	endpoint := cfg.Endpoint
	if endpoint == "" {
		endpoint = FCMEndpoint
	}
	client := cfg.Network.client(false)
	s := &FCMSender{
		url:    strings.TrimSuffix(endpoint, "/") + "/v1/projects/" + url.PathEscape(project) + "/messages:send",
		client: client,
		jwt: &jwt.Config{
			Email:        sa.ClientEmail,
			PrivateKey:   []byte(sa.PrivateKey),
			PrivateKeyID: sa.PrivateKeyID,
			Scopes:       []string{fcmScope},
			TokenURL:     tokenURL,
		},
		ctx: context.WithValue(context.Background(), oauth2.HTTPClient, client),
	}
	s.ts = s.jwt.TokenSource(s.ctx)
	return s, nil
}

// tokenSource returns the current token source.
func (s *FCMSender) tokenSource() oauth2.TokenSource {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ts
}

// renew replaces the token source ts (whose token FCM refused) with a new
// one, so the next send exchanges a new assertion.
func (s *FCMSender) renew(ts oauth2.TokenSource) {
	s.mu.Lock()
	if s.ts == ts {
		s.ts = s.jwt.TokenSource(s.ctx)
	}
	s.mu.Unlock()
}

// fcmMessage is the body of messages:send.
type fcmMessage struct {
	Message struct {
		Token        string            `json:"token"`
		Notification fcmNotification   `json:"notification"`
		Data         map[string]string `json:"data,omitempty"`
	} `json:"message"`
}

type fcmNotification struct {
	Title string `json:"title"`
	Body  string `json:"body"`
}

// fcmError is the error body of the v1 API (google.rpc.Status with FCM's
// error code and field violations in details).
type fcmError struct {
	Error struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Status  string `json:"status"`
		Details []struct {
			Type            string `json:"@type"`
			ErrorCode       string `json:"errorCode"`
			FieldViolations []struct {
				Field string `json:"field"`
			} `json:"fieldViolations"`
		} `json:"details"`
	} `json:"error"`
}

// Send posts one message to the device's registration token.
func (s *FCMSender) Send(ctx context.Context, d Device, n Notification) error {
	if d.Token == "" {
		return &Error{Kind: Gone, Provider: FCM, Reason: "empty registration token"}
	}
	var m fcmMessage
	m.Message.Token = d.Token
	m.Message.Notification = fcmNotification{Title: n.Title, Body: n.Body}
	m.Message.Data = n.Data
	body, err := json.Marshal(m)
	if err != nil {
		return &Error{Kind: Permanent, Provider: FCM, Err: err}
	}
	ts := s.tokenSource()
	tok, err := ts.Token()
	if err != nil {
		return tokenError(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url, bytes.NewReader(body))
	if err != nil {
		return &Error{Kind: Permanent, Provider: FCM, Err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	tok.SetAuthHeader(req)
	resp, err := s.client.Do(req)
	if err != nil {
		return transportError(FCM, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
		return nil
	}
	var fe fcmError
	_ = json.NewDecoder(io.LimitReader(resp.Body, 16<<10)).Decode(&fe)
	kind, reason := fcmKind(resp.StatusCode, &fe)
	if resp.StatusCode == http.StatusUnauthorized && reason != "THIRD_PARTY_AUTH_ERROR" {
		s.renew(ts)
		kind = Retry
	}
	return &Error{Kind: kind, Provider: FCM, Status: resp.StatusCode, Reason: reason,
		RetryAfter: parseRetryAfter(resp.Header.Get("Retry-After"), time.Now())}
}

// fcmKind maps an FCM error response to what the caller must do, and the
// reason to report: FCM's error code, else the RPC status.
//
// UNREGISTERED (404) means the app was uninstalled or the token expired;
// SENDER_ID_MISMATCH means the token belongs to another project; a 400
// whose field violation names message.token is a token that is not a
// registration token. All three are Gone. Other 400s are Permanent; 429
// and 5xx are Retry.
func fcmKind(status int, fe *fcmError) (Kind, string) {
	reason := fe.Error.Status
	tokenField := false
	for _, d := range fe.Error.Details {
		if d.ErrorCode != "" {
			reason = d.ErrorCode
		}
		for _, v := range d.FieldViolations {
			if v.Field == "message.token" {
				tokenField = true
			}
		}
	}
	switch {
	case reason == "UNREGISTERED", status == http.StatusNotFound:
		return Gone, reason
	case reason == "SENDER_ID_MISMATCH":
		return Gone, reason
	case status == http.StatusBadRequest && tokenField:
		return Gone, "invalid registration token"
	}
	return statusKind(status), reason
}

// tokenError classifies a failed token exchange: the token endpoint's
// 4xx (credentials it refuses) is Permanent, its 429 and 5xx and network
// failures are Retry.
func tokenError(err error) error {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) && re.Response != nil {
		return &Error{Kind: statusKind(re.Response.StatusCode), Provider: FCM,
			Status: re.Response.StatusCode, Reason: "token exchange: " + re.ErrorCode, Err: err}
	}
	if blockedAddress(err) {
		return &Error{Kind: Permanent, Provider: FCM, Reason: "token exchange", Err: err}
	}
	return &Error{Kind: Retry, Provider: FCM, Reason: "token exchange", Err: err}
}
