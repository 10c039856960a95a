package chat

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"
)

// background runs step in one goroutine between start and stop: at once,
// then after the wait step returns, or sooner when wake receives. Errors
// of step are logged as fail, unless stop caused them.
type background struct {
	what string // names it in start's errors: "expirer"
	fail string
	log  *slog.Logger
	wake <-chan struct{}
	step func(ctx context.Context) (time.Duration, error) // nil: nothing to run

	mu      sync.Mutex
	started bool
	stopped bool
	cancel  context.CancelFunc
	done    chan struct{}
}

func (b *background) start(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.started {
		return errors.New("chat: " + b.what + " already started")
	}
	if b.stopped {
		return errors.New("chat: " + b.what + " stopped")
	}
	b.started = true
	if b.step == nil {
		return nil
	}
	runCtx, cancel := context.WithCancel(context.Background())
	b.cancel, b.done = cancel, make(chan struct{})
	go b.run(runCtx)
	return nil
}

func (b *background) stop(ctx context.Context) error {
	b.mu.Lock()
	if !b.stopped && b.cancel != nil {
		b.cancel()
	}
	b.stopped = true
	done := b.done
	b.mu.Unlock()
	if done == nil {
		return nil
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (b *background) run(ctx context.Context) {
	defer close(b.done)
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		case <-b.wake:
		}
		wait, err := b.step(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			b.log.Error(b.fail, "err", err)
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(wait)
	}
}
