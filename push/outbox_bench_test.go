package push

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/store/memory"
	"github.com/chatengine/chat/store/postgres"
	"github.com/chatengine/chat/store/sqlite"
)

// benchStores opens each store the benchmarks run on: memory, SQLite in
// a temporary file, and Postgres (a fresh schema, dropped afterwards)
// when CHAT_TEST_POSTGRES_URL is set.
func benchStores(b *testing.B) []struct {
	name string
	open func(b *testing.B) chat.Store
} {
	out := []struct {
		name string
		open func(b *testing.B) chat.Store
	}{
		{"memory", func(*testing.B) chat.Store { return memory.New() }},
		{"sqlite", func(b *testing.B) chat.Store {
			s, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "chat.db"), nil)
			if errors.Is(err, sqlite.ErrNeedsCgo) {
				b.Skip(err.Error())
			}
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = s.Close() })
			return s
		}},
	}
	if url := os.Getenv("CHAT_TEST_POSTGRES_URL"); url != "" {
		out = append(out, struct {
			name string
			open func(b *testing.B) chat.Store
		}{"postgres", func(b *testing.B) chat.Store {
			var r [6]byte
			_, _ = rand.Read(r[:])
			schema := "push_bench_" + hex.EncodeToString(r[:])
			s, err := postgres.Open(context.Background(), url, &postgres.Options{Schema: schema})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() {
				_, _ = s.DB().ExecContext(context.Background(), `DROP SCHEMA "`+schema+`" CASCADE`)
				_ = s.Close()
			})
			return s
		}})
	}
	return out
}

// bigChannel makes channel "c" with members m0000..m0999 and, with
// devices, one Firebase device per member.
func bigChannel(b *testing.B, st chat.Store, members int, devices bool) *chat.Service {
	b.Helper()
	ctx := context.Background()
	svc, err := chat.New(ctx, st, chat.Config{})
	if err != nil {
		b.Fatal(err)
	}
	a, _, err := svc.CreateAdmin(ctx, "", "bench", "")
	if err != nil {
		b.Fatal(err)
	}
	if _, err := svc.CreateChannel(ctx, a.UserID, chat.CreateChannelInput{ChannelID: "c", Type: "standard", DisplayName: "Lobby"}); err != nil {
		b.Fatal(err)
	}
	var ids []string
	for i := range members {
		ids = append(ids, fmt.Sprintf("m%04d", i))
	}
	for i := 0; i < len(ids); i += 100 {
		if _, err := svc.AddUsers(ctx, a.UserID, "c", ids[i:min(i+100, len(ids))]); err != nil {
			b.Fatal(err)
		}
	}
	if devices {
		for _, id := range ids {
			if _, err := svc.RegisterDevice(ctx, id, chat.RegisterDeviceInput{UserID: id, Provider: chat.ProviderFirebase, Token: "tok-" + id}); err != nil {
				b.Fatal(err)
			}
		}
	}
	return svc
}

// BenchmarkCreateMessagePushes measures creating a message in a channel of
// 1,000 members, everyone offline: without devices (no push) and with one
// device per member (the decision and 999 pushes written in the message's
// transaction). The difference is what pushes add to a create.
func BenchmarkCreateMessagePushes(b *testing.B) {
	for _, s := range benchStores(b) {
		for _, devices := range []bool{false, true} {
			name := s.name + "/nodevices"
			if devices {
				name = s.name + "/devices"
			}
			b.Run(name, func(b *testing.B) {
				svc := bigChannel(b, s.open(b), 1000, devices)
				ctx := context.Background()
				in := chat.CreateMessageInput{ChannelID: "c", Type: "text", Data: chat.TextData("hello everyone, the release is out")}
				b.ReportAllocs()
				cpu := cpuTime()
				for b.Loop() {
					if _, err := svc.CreateMessage(ctx, "m0000", in); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64((cpuTime()-cpu).Microseconds())/float64(b.N), "cpu-µs/op")
			})
		}
	}
}

// BenchmarkWorkerDeliveries measures pushes sent per second by one Worker
// to a local APNs stand-in (HTTP/2 over TLS, checking each provider
// token), with the claims and records in each store.
func BenchmarkWorkerDeliveries(b *testing.B) {
	for _, s := range benchStores(b) {
		b.Run(s.name, func(b *testing.B) {
			st := s.open(b)
			apns, _, _ := newAPNs(b, true)
			ctx := context.Background()
			if _, err := chat.New(ctx, st, chat.Config{}); err != nil { // migrates nothing but fills the meta table
				b.Fatal(err)
			}
			const devices = 100
			var ds []*chat.Device
			for i := range devices {
				ds = append(ds, &chat.Device{DeviceID: fmt.Sprintf("d%03d", i), UserID: fmt.Sprintf("u%03d", i), Provider: APNs,
					Token: fmt.Sprintf("%064x", i+1), CreatedAt: chat.NewTime(time.Now()), UpdatedAt: chat.NewTime(time.Now())})
			}
			if err := st.Update(ctx, func(tx chat.Tx) error {
				for _, d := range ds {
					if err := tx.CreateDevice(ctx, d); err != nil {
						return err
					}
				}
				return nil
			}); err != nil {
				b.Fatal(err)
			}
			w := NewWorker(st, apns, WorkerConfig{})
			now := chat.NewTime(time.Now().Add(-time.Second))
			round := 0
			b.ResetTimer()
			cpu := cpuTime()
			for sent := 0; sent < b.N; {
				b.StopTimer()
				n := min(b.N-sent, 1000)
				ps := make([]*chat.PushDelivery, n)
				for i := range ps {
					ps[i] = &chat.PushDelivery{PushID: fmt.Sprintf("p%06d-%06d", round, i), MessageID: fmt.Sprintf("m%06d-%06d", round, i/devices),
						ChannelID: "c", UserID: ds[i%devices].UserID, DeviceID: ds[i%devices].DeviceID, Title: "Lobby",
						Body: "ann: hello", State: chat.DeliveryPending, NextAttemptAt: now, CreatedAt: now, UpdatedAt: now}
				}
				round++
				if err := st.Update(ctx, func(tx chat.Tx) error { return tx.EnqueuePushes(ctx, ps) }); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				for left := n; left > 0; {
					k, err := w.RunOnce(ctx)
					if err != nil {
						b.Fatal(err)
					}
					if k == 0 {
						b.Fatalf("%d pushes left unclaimed", left)
					}
					left -= k
				}
				sent += n
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pushes/s")
			b.ReportMetric(float64(b.N)/(cpuTime()-cpu).Seconds(), "pushes/cpu-s")
		})
	}
}

// cpuTime returns the user and system time this process has used: under a
// loaded machine, what an operation costs this process is steadier than
// its wall time (a database server's own time is not in it).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
