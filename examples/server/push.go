package main

import (
	"log/slog"
	"os"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/push"
)

// pushSenders makes the senders of the providers the flags configure:
// APNs with -apns-key-file and the other -apns- flags, FCM with
// -fcm-credentials-file, Web Push with -webpush-subject (signed with the
// server's VAPID key). A provider left out gets no sender: its devices'
// pushes fail at once instead of waiting.
func pushSenders(cfg *config, svc *chat.Service, log *slog.Logger) (push.Mux, error) {
	net := push.Network{AllowPrivate: cfg.allowPrivate}
	var pc push.Config
	if cfg.apnsKeyFile != "" {
		key, err := os.ReadFile(cfg.apnsKeyFile)
		if err != nil {
			return nil, usagef("-apns-key-file: %v", err)
		}
		pc.APNs = &push.APNsConfig{Key: key, KeyID: cfg.apnsKeyID, TeamID: cfg.apnsTeamID, Topic: cfg.apnsTopic,
			Endpoint: cfg.apnsEndpoint, Network: net}
	}
	if cfg.fcmCredentials != "" {
		creds, err := os.ReadFile(cfg.fcmCredentials)
		if err != nil {
			return nil, usagef("-fcm-credentials-file: %v", err)
		}
		pc.FCM = &push.FCMConfig{Credentials: creds, Endpoint: cfg.fcmEndpoint, TokenURL: cfg.fcmTokenURL, Network: net}
	}
	if cfg.webPushSubject != "" {
		pc.WebPush = &push.WebPushConfig{VAPIDKey: svc.VAPIDKey(), Subject: cfg.webPushSubject, Network: net}
	}
	m, err := push.New(pc)
	if err != nil {
		return nil, usagef("push: %v", err)
	}
	for _, p := range []string{push.APNs, push.FCM, push.WebPush} {
		if m[p] != nil {
			log.Info("push notifications on", "provider", p)
		}
	}
	return m, nil
}
