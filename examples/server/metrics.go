package main

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/push"
	"github.com/chatengine/chat/webhook"
)

// metrics holds the server's Prometheus collectors, registered in their own
// registry (so that tests can run several servers in one process).
type metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	storeOps *prometheus.HistogramVec
	webhooks *prometheus.CounterVec
	preSend  *prometheus.CounterVec
	pushes   *prometheus.CounterVec
	inFlight prometheus.GaugeFunc
	streams  prometheus.GaugeFunc
}

// newMetrics creates and registers the collectors. inFlight reports the
// webhook deliveries this process claimed and has not yet recorded; the
// durable backlog is added by reportBacklog; streams reports the open
// event streams (chat_stream_connections).
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
		Help:    "Duration of store transactions, retries included, by operation (the Service method, webhook.claim, webhook.finish, push.claim, push.finish, push.prune, metrics.backlog, other) and kind (view: read-only, update: read-write).",
		Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
	}, []string{"op", "kind"})
	m.webhooks = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "chat_webhook_deliveries_total",
		Help: "Webhook attempts recorded by this process, by the delivery's resulting state: delivered, pending (will retry) or failed (gave up).",
	}, []string{"result"})
	for _, r := range []string{chat.DeliveryDelivered, chat.DeliveryPending, chat.DeliveryFailed} {
		m.webhooks.WithLabelValues(r) // export zeros from the start
	}
	m.preSend = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "chat_presend_hook_total",
		Help: "Calls of the pre-send hook by result: allow, reject, flag (its answers), error_allowed or error_rejected (no usable answer: timeout, transport error, non-2xx status, unreadable body; the policy let the message through or refused it).",
	}, []string{"result"})
	for _, r := range webhook.PreSendResults {
		m.preSend.WithLabelValues(r)
	}
	m.pushes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "chat_push_total",
		Help: "Push notification attempts recorded by this process, by provider (apn, firebase, webpush) and result: delivered, retry (pending again), failed (gave up), gone (the device was removed).",
	}, []string{"provider", "result"})
	for _, p := range []string{push.APNs, push.FCM, push.WebPush} {
		for _, r := range []string{push.ResultDelivered, push.ResultRetry, push.ResultFailed, push.ResultGone} {
			m.pushes.WithLabelValues(p, r)
		}
	}
	m.inFlight = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "chat_webhook_in_flight",
		Help: "Webhook deliveries this process has claimed and not yet recorded (sending or waiting to be recorded).",
	}, func() float64 { return float64(inFlight()) })
	m.streams = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "chat_stream_connections",
		Help: "Event stream connections (GET /events, WebSocket and SSE) open on this process.",
	}, func() float64 { return float64(streams()) })
	m.reg.MustRegister(m.requests, m.duration, m.storeOps, m.webhooks, m.preSend, m.pushes, m.inFlight, m.streams,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// reportBacklog adds chat_webhook_backlog and chat_webhook_backlog_due,
// read from st at scrape time.
func (m *metrics) reportBacklog(st chat.Store) {
	m.reg.MustRegister(newBacklogCollector(st))
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

// timedStore times the transactions of the store it wraps, by operation
// name (chat.Operation: the Service method, or "webhook.claim" and
// "webhook.finish" for the dispatcher; "other" when the context names
// none) and kind.
type timedStore struct {
	chat.Store
	ops *prometheus.HistogramVec
}

// timedWatchStore is a timedStore over a store that signals outbox
// commits: it keeps that capability visible to the dispatcher and the
// event stream hub, which would otherwise fall back to polling.
type timedWatchStore struct {
	*timedStore
	w chat.OutboxWatcher
}

// WatchOutbox passes the wrapped store's commit signals through.
func (s timedWatchStore) WatchOutbox(ctx context.Context) (<-chan struct{}, error) {
	return s.w.WatchOutbox(ctx)
}

// WatchEvents passes the wrapped store's signals of appended events
// through (all its commit signals when it cannot tell them apart).
func (s timedWatchStore) WatchEvents(ctx context.Context) (<-chan struct{}, error) {
	if w, ok := s.w.(chat.EventWatcher); ok {
		return w.WatchEvents(ctx)
	}
	return s.w.WatchOutbox(ctx)
}

// WatchDeliveries passes the wrapped store's signals of enqueued webhook
// deliveries through (all its commit signals when it cannot tell them
// apart).
func (s timedWatchStore) WatchDeliveries(ctx context.Context) (<-chan struct{}, error) {
	if w, ok := s.w.(chat.DeliveryWatcher); ok {
		return w.WatchDeliveries(ctx)
	}
	return s.w.WatchOutbox(ctx)
}

// timedBroker is a timedWatchStore over a store that is also a
// chat.EphemeralBroker (Postgres), which it stays.
type timedBroker struct {
	timedWatchStore
	chat.EphemeralBroker
}

// timeStore wraps s. The wrapper keeps the optional interfaces that the
// Service and the stream hub look for: chat.OutboxWatcher (without it the
// hub would only poll the event log) and chat.EphemeralBroker (without it
// typing events would not leave the process; every broker, Postgres, also
// watches).
func (m *metrics) timeStore(s chat.Store) chat.Store {
	t := &timedStore{Store: s, ops: m.storeOps}
	w, watches := s.(chat.OutboxWatcher)
	b, brokers := s.(chat.EphemeralBroker)
	switch {
	case watches && brokers:
		return &timedBroker{timedWatchStore: timedWatchStore{timedStore: t, w: w}, EphemeralBroker: b}
	case watches:
		return timedWatchStore{timedStore: t, w: w}
	}
	return t
}

// RecentEvents passes the wrapped store's latest committed events through
// (chat.RecentEventReader: the hub reads them without a transaction); nil,
// so that the log is read, when the store keeps none.
func (s *timedStore) RecentEvents(after int64, limit int) []*chat.Event {
	if r, ok := s.Store.(chat.RecentEventReader); ok {
		return r.RecentEvents(after, limit)
	}
	return nil
}

func (s *timedStore) observe(ctx context.Context, kind string, start time.Time) {
	op := chat.Operation(ctx)
	if op == "" {
		op = "other"
	}
	s.ops.WithLabelValues(op, kind).Observe(time.Since(start).Seconds())
}

// View runs fn in a read-only transaction of the wrapped store and
// records its duration.
func (s *timedStore) View(ctx context.Context, fn func(tx chat.Tx) error) error {
	defer s.observe(ctx, "view", time.Now())
	return s.Store.View(ctx, fn)
}

// Update runs fn in a read-write transaction of the wrapped store and
// records its duration.
func (s *timedStore) Update(ctx context.Context, fn func(tx chat.Tx) error) error {
	defer s.observe(ctx, "update", time.Now())
	return s.Store.Update(ctx, fn)
}

// backlogCollector reads the durable webhook backlog from the store when
// scraped (one indexed count), so that every process reports the backlog
// shared by all of them. A result is reused for up to a second, so that
// several scrapers cost one count; when the store does not answer within
// two seconds the gauges are left out of that scrape.
type backlogCollector struct {
	store                chat.Store
	pending, due         *prometheus.Desc
	pushPending, pushDue *prometheus.Desc
	mu                   sync.Mutex
	at                   time.Time
	last, lastPush       chat.OutboxBacklog
	now                  func() time.Time
	timeout, reuse       time.Duration
}

func newBacklogCollector(st chat.Store) *backlogCollector {
	return &backlogCollector{
		store: st,
		pending: prometheus.NewDesc("chat_webhook_backlog",
			"Webhook deliveries pending in the store, for every process sharing it: due now (being sent or waiting for a worker) or waiting for a retry.", nil, nil),
		due: prometheus.NewDesc("chat_webhook_backlog_due",
			"Pending webhook deliveries whose attempt is due now (being sent, or waiting for a dispatcher), for every process sharing the store.", nil, nil),
		pushPending: prometheus.NewDesc("chat_push_backlog",
			"Push notifications pending in the store's push outbox, for every process sharing it: due now or waiting for a retry.", nil, nil),
		pushDue: prometheus.NewDesc("chat_push_backlog_due",
			"Pending push notifications whose attempt is due now (being sent, or waiting for a worker), for every process sharing the store.", nil, nil),
		now:     time.Now,
		timeout: 2 * time.Second,
		reuse:   time.Second,
	}
}

// Describe implements prometheus.Collector.
func (c *backlogCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.pending
	ch <- c.due
	ch <- c.pushPending
	ch <- c.pushDue
}

// Collect implements prometheus.Collector.
func (c *backlogCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if c.at.IsZero() || now.Sub(c.at) >= c.reuse {
		ctx, cancel := context.WithTimeout(chat.WithOperation(context.Background(), "metrics.backlog"), c.timeout)
		defer cancel()
		var b, p chat.OutboxBacklog
		err := c.store.View(ctx, func(tx chat.Tx) (err error) {
			if b, err = tx.CountDeliveries(ctx, now); err != nil {
				return err
			}
			p, err = tx.CountPushes(ctx, now)
			return err
		})
		if err != nil {
			c.at = time.Time{}
			return
		}
		c.at, c.last, c.lastPush = now, b, p
	}
	ch <- prometheus.MustNewConstMetric(c.pending, prometheus.GaugeValue, float64(c.last.Pending))
	ch <- prometheus.MustNewConstMetric(c.due, prometheus.GaugeValue, float64(c.last.Due))
	ch <- prometheus.MustNewConstMetric(c.pushPending, prometheus.GaugeValue, float64(c.lastPush.Pending))
	ch <- prometheus.MustNewConstMetric(c.pushDue, prometheus.GaugeValue, float64(c.lastPush.Due))
}
