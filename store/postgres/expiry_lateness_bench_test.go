package postgres_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	chat "github.com/chatengine/chat"
)

// BenchmarkMuteExpiryLateness measures how late mutes are announced with
// the default expirer settings, on two Services over one database
// (two processes), real time: 50 members muted for 50 ms to 1 s, written
// through process A, with the expirer running in A (it is woken by the
// write and knows each end) or only in B (it learns of the mutes from the
// store, at least once a second). Lateness is the event's createdAt minus
// the mute's end (both in milliseconds):
//
//	CHAT_TEST_POSTGRES_URL=... go test -run '^$' -bench MuteExpiryLateness -benchtime 1x ./store/postgres/
func BenchmarkMuteExpiryLateness(b *testing.B) {
	for _, where := range []string{"same-process", "other-process"} {
		b.Run(where, func(b *testing.B) {
			schema := newSchema(b)
			ctx := context.Background()
			var svcs []*chat.Service
			for range 2 {
				svc, err := chat.New(ctx, openStore(b, schema), chat.Config{})
				if err != nil {
					b.Fatal(err)
				}
				svcs = append(svcs, svc)
			}
			a, _, err := svcs[0].CreateAdmin(ctx, "", "root", "admin")
			if err != nil {
				b.Fatal(err)
			}
			runner := svcs[0]
			if where == "other-process" {
				runner = svcs[1]
			}
			x := chat.NewExpirer(runner, chat.ExpirerConfig{})
			if err := x.Start(ctx); err != nil {
				b.Fatal(err)
			}
			defer x.Stop(context.Background())
			var late []time.Duration
			for i := range b.N {
				ch := fmt.Sprintf("c%d", i)
				var ids []string
				for j := range 50 {
					ids = append(ids, fmt.Sprintf("u%d", j))
				}
				if _, err := svcs[0].CreateChannel(ctx, a.UserID, chat.CreateChannelInput{ChannelID: ch, Type: chat.ChannelTypeStandard, UserIDs: ids}); err != nil {
					b.Fatal(err)
				}
				after, err := svcs[0].LastEventID(ctx)
				if err != nil {
					b.Fatal(err)
				}
				ends := map[string]time.Time{}
				for j, u := range ids {
					d := 50*time.Millisecond + time.Duration(j)*19*time.Millisecond
					if err := svcs[0].MuteUsers(ctx, a.UserID, ch, []string{u}, d); err != nil {
						b.Fatal(err)
					}
					cu, err := svcs[0].GetChannel(ctx, a.UserID, ch)
					if err != nil {
						b.Fatal(err)
					}
					for _, m := range cu.ChannelUsers {
						if m.UserID == u && m.MuteTimeout != nil {
							ends[u] = m.MuteTimeout.Time
						}
					}
				}
				deadline := time.Now().Add(30 * time.Second)
				for len(ends) > 0 && time.Now().Before(deadline) {
					time.Sleep(20 * time.Millisecond)
					evs, err := svcs[0].ReadEvents(ctx, after, 1000)
					if err != nil {
						b.Fatal(err)
					}
					err = func() error {
						for _, e := range evs {
							after = e.ID
							if e.Name != chat.EventChannelDidUnmuteUsers {
								continue
							}
							var d chat.ChannelEventData
							if err := json.Unmarshal(e.Data, &d); err != nil {
								return err
							}
							for _, u := range d.UserIDs {
								late = append(late, e.CreatedAt.Sub(ends[u]))
								delete(ends, u)
							}
						}
						return nil
					}()
					if err != nil {
						b.Fatal(err)
					}
				}
				if len(ends) > 0 {
					b.Fatalf("%d mutes not announced in 30 s", len(ends))
				}
			}
			slices.Sort(late)
			b.ReportMetric(float64(late[len(late)/2].Milliseconds()), "p50-ms")
			b.ReportMetric(float64(late[len(late)*99/100].Milliseconds()), "p99-ms")
			b.ReportMetric(float64(late[len(late)-1].Milliseconds()), "max-ms")
		})
	}
}
