package api

import (
	"context"
	"sync"

	"github.com/mailagent/mailagent/agent"
)

// DefaultBuffer is how many undelivered events a subscriber may fall
// behind before the oldest are dropped.
const DefaultBuffer = 256

// Broker fans agent.Event values out to any number of subscribers. The
// zero value is ready to use; it is safe for concurrent use.
//
// Publish never blocks: each subscriber has a buffer of Buffer events and,
// when it is full, the oldest event is dropped. A slow TUI therefore loses
// events (and should refresh), but it never stalls the watcher. The
// channel-based buffer is hand-rolled because no library in go.mod offers
// a drop-oldest fan-out.
type Broker struct {
	// Buffer is the per-subscriber buffer (0 means DefaultBuffer). Set it
	// before the first Subscribe.
	Buffer int

	mu     sync.Mutex
	subs   map[chan agent.Event]func() bool // the AfterFunc stop of each
	closed bool
}

// Publish delivers e to every current subscriber without blocking.
func (b *Broker) Publish(e agent.Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for ch := range b.subs {
		// Publishers are serialised by mu and the subscriber only takes
		// events out, so after dropping one there is room for e.
		select {
		case ch <- e:
			continue
		default:
		}
		select {
		case <-ch:
		default:
		}
		select {
		case ch <- e:
		default:
		}
	}
}

// Subscribe returns a channel of the events published from now on. It is
// closed when ctx ends or the Broker is closed; a closed Broker returns a
// closed channel.
func (b *Broker) Subscribe(ctx context.Context) <-chan agent.Event {
	n := b.Buffer
	if n <= 0 {
		n = DefaultBuffer
	}
	ch := make(chan agent.Event, n)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		close(ch)
		return ch
	}
	if b.subs == nil {
		b.subs = map[chan agent.Event]func() bool{}
	}
	// The AfterFunc goroutine is the subscription's stop path; it runs
	// once, when ctx ends.
	b.subs[ch] = context.AfterFunc(ctx, func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		if _, ok := b.subs[ch]; ok {
			delete(b.subs, ch)
			close(ch)
		}
	})
	return ch
}

// Subscribers returns the number of live subscriptions.
func (b *Broker) Subscribers() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.subs)
}

// Close ends every subscription and makes later ones end at once.
// Publish after Close does nothing.
func (b *Broker) Close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	for ch, stop := range b.subs {
		stop()
		delete(b.subs, ch)
		close(ch)
	}
}
