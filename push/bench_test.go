package push

import (
	"bytes"
	"context"
	"crypto/ecdh"
	"crypto/rand"
	"io"
	"net/http"
	"testing"
)

// The benchmarks send to the local stand-ins of the tests (loopback TLS,
// the stand-in's checks included in the figure) from one process, with
// GOMAXPROCS senders in parallel; deliveries/s is 1e9 / ns/op.

func BenchmarkAPNsSend(b *testing.B) {
	s, a, _ := newAPNs(b, true)
	d := Device{Provider: APNs, Token: apnsDevice}
	n := ForMessage("General", "Ada", "a message of some length, as people write them", "ch1", "m1")
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := s.Send(context.Background(), d, n); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	a.check()
}

func BenchmarkFCMSend(b *testing.B) {
	s, f := newFCM(b)
	d := Device{Provider: FCM, Token: "fcm-token-1"}
	n := ForMessage("General", "Ada", "a message of some length, as people write them", "ch1", "m1")
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := s.Send(context.Background(), d, n); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	f.check()
}

func BenchmarkWebPushSend(b *testing.B) {
	s, p, base := newWebPush(b)
	d := Device{Provider: WebPush, Token: p.subscription(base + "/push/abc")}
	n := ForMessage("General", "Ada", "a message of some length, as people write them", "ch1", "m1")
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := s.Send(context.Background(), d, n); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	p.check()
}

// BenchmarkEncrypt is the sender's share of a Web Push delivery: one ECDH
// key pair and agreement, the key derivation and AES-GCM.
func BenchmarkEncrypt(b *testing.B) {
	ua, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	auth := make([]byte, 16)
	_, _ = rand.Read(auth)
	plain := []byte(`{"title":"General","body":"Ada: a message of some length, as people write them","data":{"channelId":"ch1","messageId":"m1"}}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Encrypt(plain, ua.PublicKey().Bytes(), auth); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCeilingPOST is the ceiling of the three: a bare HTTP/2 POST of
// a payload of the same size over the same loopback TLS, to a handler that
// reads it and answers 200 without checking anything.
func BenchmarkCeilingPOST(b *testing.B) {
	srv := tlsServer(b, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusOK)
	}), true)
	c := trusting(srv).client(true)
	body := []byte(`{"aps":{"alert":{"title":"General","body":"Ada: a message of some length, as people write them"}},"channelId":"ch1","messageId":"m1"}`)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			resp, err := c.Post(srv.URL+"/3/device/x", "application/json", bytes.NewReader(body))
			if err != nil {
				b.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	})
}
