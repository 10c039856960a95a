package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// fanout measures the event stream at scale: o.conns end users' WebSocket
// connections in channels of o.channelSize members, spread over the
// server processes in turn (so a channel's members are on every process),
// while messages are posted at o.rate per second across the channels (in
// turn, through each process in turn) for o.duration. It reports the
// deliveries per second (frames received by the members, from the first
// post to the last receipt), the servers' CPU time per delivery (user +
// system of all server processes over the same span, posting included),
// and each message's time from its post to its last member's receipt
// (p50, p99). The ceiling is the bare coder/websocket server holding as
// many connections in groups of the same size, sent one frame of the same
// size per message at the same rate.
//
// The chat servers are example server processes (see example.go): one
// over SQLite (in process), or o.procs over Postgres, with -broker
// o.broker when it is set ("nats" starts a local nats-server, whose CPU
// time counts with the servers').
func fanout(ctx context.Context, o options, w io.Writer) error {
	dir, err := os.MkdirTemp("", "streamload-fanout")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin, err := o.exampleBin()
	if err != nil {
		return err
	}
	broker := o.broker
	var natsProc []*proc // its CPU counts with the servers'
	if broker == "nats" {
		u, np, err := startNATS(ctx, dir)
		if err != nil {
			return err
		}
		defer np.stop()
		broker, natsProc = u, []*proc{np}
	}
	n := 1
	if o.store == "postgres" {
		n = o.procs
	}
	ps, token, err := exampleServers(ctx, o, bin, dir, broker, n)
	if err != nil {
		return err
	}
	defer stopAll(ps)
	chans := o.conns / o.channelSize
	apis := make([]*api, len(ps))
	for i, p := range ps {
		apis[i] = newAPI(p, token)
	}
	// The channels, 8 at a time.
	sem := make(chan struct{}, 8)
	errc := make(chan error, 1)
	var wg sync.WaitGroup
	for c := range chans {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := apis[c%len(apis)].createChannel(ctx, "f"+strconv.Itoa(c), c*o.channelSize, o.channelSize); err != nil {
				select {
				case errc <- err:
				default:
				}
			}
		}()
	}
	wg.Wait()
	select {
	case err := <-errc:
		return err
	default:
	}
	// The posts alone first (nobody connected; the texts are not
	// counted), for the servers' CPU time of posting.
	counted := append(slices.Clip(ps), natsProc...)
	alone, err := drive(ctx, o, nil, counted, func(ctx context.Context, k int) error {
		return apis[k%len(apis)].createMessage(ctx, "f"+strconv.Itoa(k%chans), "alone")
	})
	if err != nil {
		return err
	}
	var cs clients
	if err := cs.connect(ctx, o, addrsOf(ps), "/api/v2/events", 0, o.conns, true); err != nil {
		cs.close()
		return err
	}
	chat, err := drive(ctx, o, &cs, counted, func(ctx context.Context, k int) error {
		return apis[k%len(apis)].createMessage(ctx, "f"+strconv.Itoa(k%chans), "f"+strconv.Itoa(k))
	})
	size := frameSize(&cs)
	cs.close()
	stopAll(ps)
	if err != nil {
		return err
	}
	ld := load()

	cp, err := start(o, "ceiling", false)
	if err != nil {
		return err
	}
	defer cp.stop()
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}, Timeout: time.Minute}
	send := func(text func(int) string) func(ctx context.Context, k int) error {
		return func(ctx context.Context, k int) error {
			u := fmt.Sprintf("http://%s/send?group=%d&size=%d&text=%s", cp.Addr, k%chans, size, url.QueryEscape(text(k)))
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, nil)
			if err != nil {
				return err
			}
			resp, err := hc.Do(req)
			if err != nil {
				return err
			}
			resp.Body.Close()
			return nil
		}
	}
	bareAlone, err := drive(ctx, o, nil, []*proc{cp}, send(func(int) string { return "alone" }))
	if err != nil {
		return err
	}
	var bs clients
	defer bs.close()
	if err := bs.connectPaths(ctx, o, []string{cp.Addr}, func(i int) string { return "/ws?group=" + strconv.Itoa(i/o.channelSize) }, 0, o.conns, false); err != nil {
		return err
	}
	bare, err := drive(ctx, o, &bs, []*proc{cp}, send(func(k int) string { return "f" + strconv.Itoa(k) }))
	if err != nil {
		return err
	}
	label := "SQLite, 1 process (in process)"
	if o.store == "postgres" {
		label = fmt.Sprintf("Postgres, %d processes", n)
	}
	if o.broker != "" {
		label += ", -broker " + o.broker
	}
	// The stream's own CPU per delivery: the run's, less the posts'
	// alone (per message, shared by its deliveries).
	per := float64(o.channelSize)
	chatNet, bareNet := chat.cpuPer-alone.cpuPer/per, bare.cpuPer-bareAlone.cpuPer/per
	fmt.Fprintf(w, "| Event stream, %s: %d connections in channels of %d, %d messages/s posted across the channels for %s (frames of %d bytes): deliveries/s; server CPU per delivery, posting included (the posts alone, per delivery); post to last member's receipt p50 / p99 | %.0f /s; %.1f µs (%.1f), so %.1f µs for the stream; %s / %s ms | bare coder/websocket server, same connections in groups, same rate and frame size: %.0f /s; %.1f µs (%.1f), so %.1f µs; %s / %s ms | %.2f; stream CPU %.1f x | %s | %s |\n",
		label, o.conns, o.channelSize, o.rate, o.duration, size,
		chat.rate, chat.cpuPer, alone.cpuPer/per, chatNet, ms(chat.p50), ms(chat.p99),
		bare.rate, bare.cpuPer, bareAlone.cpuPer/per, bareNet, ms(bare.p50), ms(bare.p99),
		chat.rate/bare.rate, chatNet/bareNet, ld, fanoutCmd(o))
	return nil
}

func fanoutCmd(o options) string {
	c := fmt.Sprintf("go run ./bench/streamload -scenarios fanout -conns %d -rate %d -duration %s", o.conns, o.rate, o.duration)
	if o.store == "postgres" {
		c += fmt.Sprintf(" -store postgres -procs %d -dsn $CHAT_TEST_POSTGRES_URL", o.procs)
	}
	if o.broker != "" {
		c += " -broker " + o.broker
	}
	return "`" + c + "`"
}

// driveResult is what drive measured.
type driveResult struct {
	rate     float64 // deliveries per second
	cpuPer   float64 // server CPU µs per delivery
	p50, p99 time.Duration
}

// drive posts o.rate*o.duration messages at o.rate per second with post
// (16 at a time at most), and waits until every member received each.
// The clients' frames carry the message's number k as the text "f<k>".
// Without clients (cs nil) it only posts, and cpuPer is the servers' CPU
// time per message.
func drive(ctx context.Context, o options, cs *clients, servers []*proc, post func(ctx context.Context, k int) error) (driveResult, error) {
	total := int(float64(o.rate) * o.duration.Seconds())
	want := int64(total) * int64(o.channelSize)
	posted := make([]atomic.Int64, total) // UnixNano before the post
	counts := make([]atomic.Int32, total)
	lat := make([]atomic.Int64, total)
	var got, complete atomic.Int64
	var lastAt atomic.Int64
	all := make(chan struct{})
	fn := func(b []byte) {
		k := messageNumber(b)
		if k < 0 || k >= total {
			return
		}
		now := time.Now().UnixNano()
		got.Add(1)
		lastAt.Store(now)
		if counts[k].Add(1) == int32(o.channelSize) {
			lat[k].Store(now - posted[k].Load())
			if complete.Add(1) == int64(total) {
				close(all)
			}
		}
	}
	if cs != nil {
		cs.onFrame.Store(&fn)
	} else {
		close(all) // nobody to wait for
	}
	cpu0, err := cpuSum(servers)
	if err != nil {
		return driveResult{}, err
	}
	jobs := make(chan int, 1024)
	errc := make(chan error, 1)
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range jobs {
				posted[k].Store(time.Now().UnixNano())
				if err := post(ctx, k); err != nil {
					select {
					case errc <- fmt.Errorf("message %d: %w", k, err):
					default:
					}
					return
				}
			}
		}()
	}
	t0 := time.Now()
	interval := time.Duration(float64(time.Second) / float64(o.rate))
	behind := time.Duration(0)
	for k := range total {
		at := t0.Add(time.Duration(k) * interval)
		if d := time.Until(at); d > 0 {
			time.Sleep(d)
		} else {
			behind = max(behind, -d)
		}
		jobs <- k
	}
	close(jobs)
	wg.Wait()
	select {
	case err := <-errc:
		return driveResult{}, err
	default:
	}
	if behind > 100*time.Millisecond {
		fmt.Fprintf(os.Stderr, "fanout: the posts fell up to %v behind the rate\n", behind.Round(time.Millisecond))
	}
	if cs == nil { // the posts alone: CPU per message
		cpu1, err := cpuSum(servers)
		if err != nil {
			return driveResult{}, err
		}
		return driveResult{cpuPer: float64((cpu1 - cpu0).Microseconds()) / float64(total)}, nil
	}
	select {
	case <-all:
	case <-ctx.Done():
		return driveResult{}, fmt.Errorf("%d of %d deliveries (%d of %d messages complete), %d connections closed by the server: %w",
			got.Load(), want, complete.Load(), total, cs.closed.Load(), ctx.Err())
	}
	cpu1, err := cpuSum(servers)
	if err != nil {
		return driveResult{}, err
	}
	span := time.Duration(lastAt.Load() - t0.UnixNano())
	ds := make([]time.Duration, total)
	for i := range lat {
		ds[i] = time.Duration(lat[i].Load())
	}
	return driveResult{
		rate:   float64(got.Load()) / span.Seconds(),
		cpuPer: float64((cpu1 - cpu0).Microseconds()) / float64(got.Load()),
		p50:    pct(ds, 50), p99: pct(ds, 99),
	}, nil
}

var textKey = []byte(`"text":"f`)

// messageNumber reads k from the first "text":"f<k>" of a frame; -1 when
// there is none.
func messageNumber(b []byte) int {
	i := bytes.Index(b, textKey)
	if i < 0 {
		return -1
	}
	k, n := 0, 0
	for _, c := range b[i+len(textKey):] {
		if c < '0' || c > '9' {
			break
		}
		k = k*10 + int(c-'0')
		n++
	}
	if n == 0 {
		return -1
	}
	return k
}
