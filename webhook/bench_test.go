package webhook

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	chat "github.com/chatengine/chat"
	"github.com/stretchr/testify/require"
)

// benchReceiver answers 204 at once and counts requests.
func benchReceiver(tb testing.TB) (*httptest.Server, *atomic.Int64) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	tb.Cleanup(srv.Close)
	return srv, &n
}

// waitReceived waits until the receiver counted n requests, checking a
// counter only, so that the wait takes no CPU or database time from the
// dispatcher it measures.
func waitReceived(tb testing.TB, got *atomic.Int64, n int, timeout time.Duration) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for got.Load() < int64(n) {
		if time.Now().After(deadline) {
			tb.Fatalf("%d of %d deliveries received after %v", got.Load(), n, timeout)
		}
		time.Sleep(time.Millisecond)
	}
}

// waitDrained waits until the store has no pending delivery left.
func waitDrained(tb testing.TB, s chat.Store, timeout time.Duration) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for {
		var ok bool
		require.NoError(tb, s.View(context.Background(), func(tx chat.Tx) (err error) {
			_, ok, err = tx.NextDeliveryAt(context.Background())
			return err
		}))
		if !ok {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("deliveries still pending after %v", timeout)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// BenchmarkDeliveries measures throughput: b.N deliveries are committed in
// batches of 500 while a dispatcher with the default Config (but
// AllowPrivate) sends them to a receiver that answers 204 at once; the
// clock stops when the store has no pending delivery left, that is when
// every delivery was sent and recorded.
//
//	go test -run '^$' -bench BenchmarkDeliveries -benchtime 20000x ./webhook/
func BenchmarkDeliveries(b *testing.B) {
	for _, be := range backends() {
		b.Run(be.name, func(b *testing.B) {
			s := be.open(b)
			srv, got := benchReceiver(b)
			hook := createHook(b, s, srv.URL, "bench-secret")
			const batch = 500
			var batches [][]*chat.Delivery
			for left := b.N; left > 0; left -= batch {
				batches = append(batches, newDeliveries(b, hook.WebhookID, min(batch, left)))
			}
			start(b, s, Config{AllowPrivate: true, Logger: testLogger()})
			b.ResetTimer()
			begin := time.Now()
			for _, ds := range batches {
				enqueue(b, s, ds)
			}
			waitReceived(b, got, b.N, 10*time.Minute)
			waitDrained(b, s, 10*time.Minute)
			elapsed := time.Since(begin)
			b.StopTimer()
			require.EqualValues(b, b.N, got.Load())
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "deliveries/s")
		})
	}
}

// BenchmarkDrain measures the dispatcher alone: b.N deliveries are
// committed first, then a dispatcher with the default Config (but
// AllowPrivate) starts, and the clock stops when none is pending.
//
//	go test -run '^$' -bench BenchmarkDrain -benchtime 20000x ./webhook/
func BenchmarkDrain(b *testing.B) {
	for _, be := range backends() {
		b.Run(be.name, func(b *testing.B) {
			s := be.open(b)
			srv, got := benchReceiver(b)
			hook := createHook(b, s, srv.URL, "bench-secret")
			for left := b.N; left > 0; left -= 500 {
				enqueue(b, s, newDeliveries(b, hook.WebhookID, min(500, left)))
			}
			b.ResetTimer()
			begin := time.Now()
			start(b, s, Config{AllowPrivate: true, Logger: testLogger()})
			waitReceived(b, got, b.N, 10*time.Minute)
			waitDrained(b, s, 10*time.Minute)
			elapsed := time.Since(begin)
			b.StopTimer()
			require.EqualValues(b, b.N, got.Load())
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "deliveries/s")
		})
	}
}

// latencies commits n single deliveries one after another, pausing between
// them so the dispatcher is idle, and returns the time from each commit
// returning to the receiver getting the request, sorted.
func latencies(tb testing.TB, s chat.Store, n int, pause time.Duration, cfg Config) []time.Duration {
	received := make(chan time.Time, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		at := time.Now()
		w.WriteHeader(http.StatusNoContent)
		received <- at
	}))
	tb.Cleanup(srv.Close)
	hook := createHook(tb, s, srv.URL, "k")
	d := newDispatcher(tb, s, cfg)
	require.NoError(tb, d.Start(context.Background()))
	defer func() { require.NoError(tb, d.Stop(context.Background())) }()
	_, watches := s.(chat.OutboxWatcher)
	out := make([]time.Duration, 0, n)
	for i := 0; i < n; i++ {
		ds := newDeliveries(tb, hook.WebhookID, 1)
		time.Sleep(pause)
		enqueue(tb, s, ds)
		committed := time.Now()
		if !watches {
			d.Wake() // what the Service's OnCommit does
		}
		select {
		case at := <-received:
			out = append(out, at.Sub(committed))
		case <-time.After(patience):
			tb.Fatalf("event %d not received", i)
		}
	}
	waitDrained(tb, s, patience)
	slices.Sort(out)
	return out
}

func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted)-1) * p)
	return sorted[i]
}

// BenchmarkLatency measures commit-to-receipt latency at idle: b.N events
// one at a time, 10 ms apart, reporting the median and the 99th percentile.
//
//	go test -run '^$' -bench BenchmarkLatency -benchtime 200x ./webhook/
func BenchmarkLatency(b *testing.B) {
	for _, be := range backends() {
		b.Run(be.name, func(b *testing.B) {
			s := be.open(b)
			b.ResetTimer()
			lat := latencies(b, s, b.N, 10*time.Millisecond, Config{AllowPrivate: true, Logger: testLogger()})
			b.StopTimer()
			b.ReportMetric(float64(percentile(lat, 0.5).Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(percentile(lat, 0.99).Microseconds())/1000, "p99-ms")
		})
	}
}

// TestWakesOnCommit checks that an idle dispatcher is woken by the commit
// itself, not by polling: the poll interval is an hour, so every delivery
// that arrives at all (latencies fails after patience) was started by the
// store's commit signal (or, for a store without one, by Wake). The
// latency figures themselves come from BenchmarkLatency.
func TestWakesOnCommit(t *testing.T) {
	for _, be := range backends() {
		t.Run(be.name, func(t *testing.T) {
			cfg := Config{AllowPrivate: true, Logger: testLogger(), PollInterval: time.Hour}
			lat := latencies(t, be.open(t), 10, 5*time.Millisecond, cfg)
			require.Len(t, lat, 10)
			t.Logf("%s: median commit-to-receipt %v", be.name, percentile(lat, 0.5))
		})
	}
}
