package main

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	chat "github.com/chatengine/chat"
)

// metrics holds the server's Prometheus collectors, registered in their own
// registry (so that tests can run several servers in one process).
type metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	storeOps *prometheus.HistogramVec
	webhooks *prometheus.CounterVec
	backlog  prometheus.GaugeFunc
	streams  prometheus.GaugeFunc
}

// newMetrics creates and registers the collectors. inFlight reports the
// webhook deliveries claimed and not yet recorded (chat_webhook_backlog);
// streams the open event streams (chat_stream_connections).
func newMetrics(inFlight, streams func() int) *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "chat_http_requests_total",
		Help: "HTTP requests served, by chi route pattern, method and status code.",
	}, []string{"route", "method", "code"})
	m.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "chat_http_request_duration_seconds",
		Help:    "Time from reading a request's headers to the end of its handler, by chi route pattern and method.",
		Buckets: prometheus.DefBuckets,
	}, []string{"route", "method"})
	m.storeOps = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "chat_store_operation_duration_seconds",
		Help:    "Duration of the Service's store transactions, by kind (view: read-only, update: read-write), retries included.",
		Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
	}, []string{"op"})
	m.webhooks = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "chat_webhook_deliveries_total",
		Help: "Webhook attempts recorded by this process, by the delivery's resulting state: delivered, pending (will retry) or failed (gave up).",
	}, []string{"result"})
	for _, r := range []string{chat.DeliveryDelivered, chat.DeliveryPending, chat.DeliveryFailed} {
		m.webhooks.WithLabelValues(r) // export zeros from the start
	}
	m.backlog = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "chat_webhook_backlog",
		Help: "Webhook deliveries this process has claimed and not yet recorded (sending or waiting to be recorded).",
	}, func() float64 { return float64(inFlight()) })
	m.streams = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "chat_stream_connections",
		Help: "Event stream connections (GET /events, WebSocket and SSE) open on this process.",
	}, func() float64 { return float64(streams()) })
	m.reg.MustRegister(m.requests, m.duration, m.storeOps, m.webhooks, m.backlog, m.streams,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// handler serves the registry in the Prometheus text format.
func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// middleware counts and times requests by their chi route pattern (never
// the raw path, so the label set stays small). It must be installed with
// Use on the top router: the pattern is complete once the request has been
// routed through every mounted router. Unrouted requests get "unmatched".
func (m *metrics) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
		next.ServeHTTP(ww, r)
		route := "unmatched"
		if rc := chi.RouteContext(r.Context()); rc != nil {
			if p := rc.RoutePattern(); p != "" {
				route = p
			}
		}
		code := ww.Status()
		if code == 0 {
			code = http.StatusOK
		}
		m.requests.WithLabelValues(route, r.Method, strconv.Itoa(code)).Inc()
		m.duration.WithLabelValues(route, r.Method).Observe(time.Since(start).Seconds())
	})
}

// timedStore times the transactions of the store it wraps.
type timedStore struct {
	chat.Store
	view, update prometheus.Observer
}

// timedBroker is a timedStore over a store that is also a
// chat.EphemeralBroker (Postgres), which it stays.
type timedBroker struct {
	*timedStore
	chat.EphemeralBroker
}

// timeStore wraps s. The wrapper keeps the optional interfaces that the
// Service and the stream hub look for: chat.OutboxWatcher (without it the
// hub would only poll the event log) and chat.EphemeralBroker (without it
// typing events would not leave the process).
func (m *metrics) timeStore(s chat.Store) chat.Store {
	t := &timedStore{Store: s, view: m.storeOps.WithLabelValues("view"), update: m.storeOps.WithLabelValues("update")}
	if b, ok := s.(chat.EphemeralBroker); ok {
		return &timedBroker{timedStore: t, EphemeralBroker: b}
	}
	return t
}

// WatchOutbox implements chat.OutboxWatcher with the wrapped store's; a
// store without one gives a channel that never receives.
func (s *timedStore) WatchOutbox(ctx context.Context) (<-chan struct{}, error) {
	if w, ok := s.Store.(chat.OutboxWatcher); ok {
		return w.WatchOutbox(ctx)
	}
	return nil, nil
}

// View runs fn in a read-only transaction of the wrapped store and
// records its duration.
func (s *timedStore) View(ctx context.Context, fn func(tx chat.Tx) error) error {
	start := time.Now()
	defer func() { s.view.Observe(time.Since(start).Seconds()) }()
	return s.Store.View(ctx, fn)
}

// Update runs fn in a read-write transaction of the wrapped store and
// records its duration.
func (s *timedStore) Update(ctx context.Context, fn func(tx chat.Tx) error) error {
	start := time.Now()
	defer func() { s.update.Observe(time.Since(start).Seconds()) }()
	return s.Store.Update(ctx, fn)
}
