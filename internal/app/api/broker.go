package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/mailagent/mailagent/agent"
)

// DefaultBuffer is how many undelivered events a subscriber may fall
// behind before it is told to reload (an EventReset).
const DefaultBuffer = 256

// DefaultRing is how many recent events a Broker keeps for subscribers
// that resume after a reconnect.
const DefaultRing = 1024

// Kinds of the events the api package adds to agent's own.
const (
	// EventReset: events were lost (a slow subscriber, a gap too large to
	// replay, or a watcher that restarted); the consumer must reload
	// everything it shows.
	EventReset = "reset"
	// EventWatcherGone: the client lost the watcher's event stream; it
	// keeps trying to reconnect.
	EventWatcherGone = "watcher_gone"
	// EventWatcherBack: the client reached a watcher again (also the first
	// time, for FollowEvents). Events missed meanwhile follow, or a reset.
	EventWatcherBack = "watcher_back"
)

// Sequenced is an event with its place in the stream of one watcher run:
// Seq grows by one with each published event, and Epoch names the run, so
// a restarted watcher (a new Epoch) is recognised.
type Sequenced struct {
	Epoch string
	Seq   uint64
	Event agent.Event
}

// ID is the SSE id of the event: "epoch-seq".
func (s Sequenced) ID() string { return formatID(s.Epoch, s.Seq) }

func formatID(epoch string, seq uint64) string { return epoch + "-" + strconv.FormatUint(seq, 10) }

// parseID splits an id made by formatID.
func parseID(id string) (epoch string, seq uint64, err error) {
	i := strings.LastIndexByte(id, '-')
	if i <= 0 {
		return "", 0, fmt.Errorf("event id %q: want epoch-seq", id)
	}
	seq, err = strconv.ParseUint(id[i+1:], 10, 64)
	if err != nil {
		return "", 0, fmt.Errorf("event id %q: %w", id, err)
	}
	return id[:i], seq, nil
}

// Broker fans agent.Event values out to any number of subscribers. The
// zero value is ready to use; it is safe for concurrent use.
//
// Every published event gets the next sequence number of the Broker's
// Epoch, and the last Ring events are kept, so that a subscriber that
// reconnects with the id of the last event it saw (SubscribeFrom) gets
// what it missed. Publish never blocks: when a subscriber's buffer is full
// its pending events are dropped and replaced by one EventReset, so a slow
// subscriber reloads instead of missing changes silently, and it never
// stalls the watcher. The fan-out is hand-rolled because no library in
// go.mod offers one with replay.
type Broker struct {
	// Buffer is the per-subscriber buffer (0 means DefaultBuffer). Set it
	// before the first Subscribe.
	Buffer int
	// Ring is how many recent events are kept for resuming subscribers
	// (0 means DefaultRing). Set it before the first Publish.
	Ring int
	// Epoch names this run of the watcher ("" means a random one, chosen
	// on first use). Set it before first use.
	Epoch string

	mu     sync.Mutex
	subs   map[chan Sequenced]func() bool // the AfterFunc stop of each
	closed bool
	seq    uint64      // the last published sequence number
	ring   []Sequenced // ring[s % len] holds event s while it is recent
}

// init sets the defaults; b.mu is held.
func (b *Broker) init() {
	if b.Epoch == "" {
		var r [8]byte
		_, _ = rand.Read(r[:]) // never fails (crypto/rand)
		b.Epoch = hex.EncodeToString(r[:])
	}
	if b.ring == nil {
		n := b.Ring
		if n <= 0 {
			n = DefaultRing
		}
		b.ring = make([]Sequenced, n)
	}
	if b.subs == nil {
		b.subs = map[chan Sequenced]func() bool{}
	}
}

func (b *Broker) buffer() int {
	if b.Buffer > 0 {
		return b.Buffer
	}
	return DefaultBuffer
}

// reset is the EventReset that brings a subscriber to the current
// position; b.mu is held.
func (b *Broker) reset() Sequenced {
	return Sequenced{Epoch: b.Epoch, Seq: b.seq, Event: agent.Event{Kind: EventReset}}
}

// Publish delivers e to every current subscriber without blocking.
func (b *Broker) Publish(e agent.Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	b.init()
	b.seq++
	s := Sequenced{Epoch: b.Epoch, Seq: b.seq, Event: e}
	b.ring[b.seq%uint64(len(b.ring))] = s
	for ch := range b.subs {
		select {
		case ch <- s:
			continue
		default:
		}
		// Full: what it has not read is stale anyway. Publishers are
		// serialised by mu and the subscriber only takes events out, so
		// after draining there is room for the reset (which covers s).
	drain:
		for {
			select {
			case <-ch:
			default:
				break drain
			}
		}
		select {
		case ch <- b.reset():
		default:
		}
	}
}

// Position returns the id of the last published event (seq 0 before the
// first), the point a new subscriber starts from.
func (b *Broker) Position() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.init()
	return formatID(b.Epoch, b.seq)
}

// SubscribeFrom returns a channel of the events published after the event
// whose id is lastID, and the current position (the id a subscriber with
// an empty lastID starts after). An empty lastID starts from now. When
// lastID names another epoch, is malformed, or is too old for the ring or
// the buffer, the first event is an EventReset. The channel is closed when
// ctx ends or the Broker is closed; a closed Broker returns a closed
// channel.
func (b *Broker) SubscribeFrom(ctx context.Context, lastID string) (<-chan Sequenced, string) {
	n := b.buffer()
	ch := make(chan Sequenced, n)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.init()
	pos := formatID(b.Epoch, b.seq)
	if b.closed {
		close(ch)
		return ch, pos
	}
	if lastID != "" {
		b.replay(ch, lastID, n)
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
	return ch, pos
}

// replay puts into ch (of capacity n) the events after lastID, or a reset
// when they are not all available; b.mu is held.
func (b *Broker) replay(ch chan Sequenced, lastID string, n int) {
	epoch, seq, err := parseID(lastID)
	oldest := uint64(1) // the oldest sequence number still in the ring
	if r := uint64(len(b.ring)); b.seq > r {
		oldest = b.seq - r + 1
	}
	switch {
	case err != nil, epoch != b.Epoch, seq > b.seq, seq+1 < oldest, b.seq-seq > uint64(n):
		ch <- b.reset()
	default:
		for s := seq + 1; s <= b.seq; s++ {
			ch <- b.ring[s%uint64(len(b.ring))]
		}
	}
}

// Subscribe returns a channel of the events published from now on,
// without their sequence numbers (see SubscribeFrom). An EventReset says
// events were dropped. It is closed when ctx ends or the Broker is closed.
func (b *Broker) Subscribe(ctx context.Context) <-chan agent.Event {
	in, _ := b.SubscribeFrom(ctx, "")
	out := make(chan agent.Event)
	// The forwarder ends when in is closed (ctx or Close); a consumer
	// that stops reading must end ctx, as with any subscription.
	go func() {
		defer close(out)
		for s := range in {
			select {
			case out <- s.Event:
			case <-ctx.Done():
				for range in { // wait for the close, dropping the rest
				}
				return
			}
		}
	}()
	return out
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

// EventsFrom is Events with sequence numbers, for the SSE stream: see
// Broker.SubscribeFrom. Without a Broker it returns a nil channel.
func (l *Local) EventsFrom(ctx context.Context, lastID string) (<-chan Sequenced, string, error) {
	if l.Broker == nil {
		return nil, "", nil
	}
	ch, pos := l.Broker.SubscribeFrom(ctx, lastID)
	return ch, pos, nil
}
