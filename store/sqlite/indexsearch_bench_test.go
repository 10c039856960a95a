//go:build unix

package sqlite

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	chat "github.com/chatengine/chat"
)

// BenchmarkIndexSearch measures IndexSearch on batches of messages stored
// by one transaction each (as posts are): the time per message indexed and
// the longest time one IndexSearch call held the writer ("hold-ms"), which
// a post arriving meanwhile waits for.
//
//	go test -bench IndexSearch -run '^$' ./store/sqlite/
func BenchmarkIndexSearch(b *testing.B) {
	for _, batch := range []int{100, 500} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			s := newStore(b, nil)
			ctx := context.Background()
			must(b, s.Update(ctx, func(tx chat.Tx) error { return tx.CreateChannel(ctx, testChannel("c")) }))
			seq := 0
			var hold, used time.Duration
			b.ResetTimer()
			for done := 0; done < b.N; done += batch {
				b.StopTimer()
				must(b, s.Update(ctx, func(tx chat.Tx) error {
					for i := 0; i < batch; i++ {
						seq++
						if _, err := postMessage(ctx, tx, "c", fmt.Sprintf("m%d", seq), fmt.Sprintf("%s number%d", benchText, seq)); err != nil {
							return err
						}
					}
					return nil
				}))
				b.StartTimer()
				t0, c0 := time.Now(), cpuTime()
				n, err := s.IndexSearch(ctx, batch)
				if err != nil || n != batch {
					b.Fatal(n, err)
				}
				hold = max(hold, time.Since(t0))
				used += cpuTime() - c0
			}
			b.ReportMetric(float64(hold.Microseconds())/1000, "hold-ms")
			b.ReportMetric(float64(used.Nanoseconds())/float64(b.N), "cpu-ns/msg")
		})
	}
}

// cpuTime is the CPU time (user and system) of the process so far, a
// measure the other processes of a loaded machine disturb less than the
// wall clock.
func cpuTime() time.Duration {
	var r syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &r)
	return time.Duration(r.Utime.Nano() + r.Stime.Nano())
}
