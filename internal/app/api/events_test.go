package api

import (
	"bufio"
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/mailagent/mailagent/agent"
)

func ev(i int) agent.Event {
	return agent.Event{Kind: "queue_added", ID: fmt.Sprint(i), Account: "home"}
}

func TestBrokerFanOut(t *testing.T) {
	t.Parallel()
	const subs, pubs, perPub = 50, 4, 500
	b := &Broker{Buffer: pubs * perPub}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	chans := make([]<-chan agent.Event, subs)
	for i := range chans {
		chans[i] = b.Subscribe(ctx)
	}
	var wg sync.WaitGroup
	for p := range pubs {
		wg.Go(func() {
			for i := range perPub {
				b.Publish(agent.Event{Kind: "k", Account: fmt.Sprint(p), ID: fmt.Sprint(i)})
			}
		})
	}
	// Subscribers read concurrently with the publishers.
	got := make([]map[string][]string, subs)
	var readers sync.WaitGroup
	for i, ch := range chans {
		readers.Go(func() {
			got[i] = map[string][]string{}
			for range pubs * perPub {
				e, ok := <-ch
				if !ok {
					return
				}
				got[i][e.Account] = append(got[i][e.Account], e.ID)
			}
		})
	}
	wg.Wait()
	readers.Wait()
	want := make([]string, perPub)
	for i := range want {
		want[i] = fmt.Sprint(i)
	}
	for i := range subs {
		for p := range pubs {
			if g := got[i][fmt.Sprint(p)]; !slices.Equal(g, want) {
				t.Fatalf("subscriber %d, publisher %d: got %d events (first %v), want %d in order", i, p, len(g), g[:min(len(g), 5)], perPub)
			}
		}
	}
}

// TestBrokerSlowSubscriberReset: a subscriber that does not read never
// blocks Publish, and what it missed is replaced by a reset, never lost
// silently.
func TestBrokerSlowSubscriberReset(t *testing.T) {
	t.Parallel()
	b := &Broker{Buffer: 4}
	ch := b.Subscribe(context.Background())
	for i := range 10 {
		b.Publish(ev(i)) // nobody reads: must not block
	}
	b.Close()
	var got []string
	for e := range ch {
		got = append(got, e.Kind+":"+e.ID)
	}
	// Whatever the forwarder took first, the buffer overflowed: a reset
	// was delivered, and after the last reset come the events after it,
	// in order, up to the last one published.
	last := slices.Index(got, EventReset+":")
	if last < 0 {
		t.Fatalf("got %v, want a reset", got)
	}
	for i := len(got) - 1; i >= 0; i-- {
		if got[i] == EventReset+":" {
			last = i
			break
		}
	}
	tail := got[last+1:]
	for i, e := range tail {
		if want := fmt.Sprintf("queue_added:%d", 10-len(tail)+i); e != want {
			t.Errorf("after the reset, event %d: got %s, want %s (all: %v)", i, e, want, got)
		}
	}
}

func TestBrokerUnsubscribe(t *testing.T) {
	t.Parallel()
	b := &Broker{}
	ctx, cancel := context.WithCancel(context.Background())
	keep := b.Subscribe(context.Background())
	gone := b.Subscribe(ctx)
	if n := b.Subscribers(); n != 2 {
		t.Fatalf("subscribers: got %d, want 2", n)
	}
	cancel()
	drainClosed(t, gone)
	if n := b.Subscribers(); n != 1 {
		t.Errorf("subscribers after cancel: got %d, want 1", n)
	}
	b.Publish(ev(1))
	if e, _ := recv(t, keep); e.ID != "1" {
		t.Errorf("got %+v, want event 1", e)
	}
	// A context that has already ended closes the channel at once.
	drainClosed(t, b.Subscribe(ctx))

	b.Close()
	drainClosed(t, keep)
	drainClosed(t, b.Subscribe(context.Background()))
	b.Publish(ev(2)) // after Close: nothing to do, must not panic
	if n := b.Subscribers(); n != 0 {
		t.Errorf("subscribers after close: got %d, want 0", n)
	}
}

// TestBrokerRace subscribes, publishes and cancels all at once (for -race).
func TestBrokerRace(t *testing.T) {
	t.Parallel()
	b := &Broker{Buffer: 8}
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			ctx, cancel := context.WithCancel(context.Background())
			ch := b.Subscribe(ctx)
			for j := range 50 {
				b.Publish(ev(i*100 + j))
				if j%7 == 0 {
					select {
					case <-ch:
					default:
					}
				}
			}
			cancel()
			for range ch {
			}
		})
	}
	wg.Wait()
	b.Close()
}

func TestEventsOverSocket(t *testing.T) {
	base := runtime.NumGoroutine()
	st := openStore(t)
	b := &Broker{}
	srv := startServer(t, &Local{DB: st, Broker: b})
	c, err := Dial(context.Background(), srv.path)
	if err != nil {
		t.Fatal(err)
	}

	// Client cancel closes the channel; the server drops the subscription.
	cctx, ccancel := context.WithCancel(context.Background())
	early, err := c.Events(cctx)
	if err != nil {
		t.Fatal(err)
	}
	ccancel()
	drainClosed(t, early)

	actx, cancelAll := context.WithCancel(context.Background())
	defer cancelAll()
	ch, err := c.Events(actx)
	if err != nil {
		t.Fatal(err)
	}
	const n = 100
	for i := range n {
		b.Publish(ev(i))
	}
	for i := range n {
		e, ok := recv(t, ch)
		if !ok {
			t.Fatalf("stream closed after %d events, want %d", i, n)
		}
		if want := ev(i); e != want {
			t.Fatalf("event %d: got %+v, want %+v", i, e, want)
		}
	}

	// Server shutdown ends the subscription; the client says so and keeps
	// trying until its context ends.
	if err := srv.stop(t); err != nil {
		t.Fatalf("Serve: got %v, want nil after a shutdown", err)
	}
	if e, ok := recv(t, ch); !ok || e.Kind != EventWatcherGone {
		t.Fatalf("after shutdown: got %+v, %v, want %s", e, ok, EventWatcherGone)
	}
	if n := b.Subscribers(); n != 0 {
		t.Errorf("broker subscribers after shutdown: got %d, want 0", n)
	}
	cancelAll()
	drainClosed(t, ch)
	_ = c.Close()
	_ = st.Close()
	waitGoroutines(t, base)
}

func TestEventsLocal(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	ch, err := (&Local{DB: st}).Events(context.Background())
	if err != nil || ch != nil {
		t.Errorf("without a broker: got %v, %v, want a nil channel", ch, err)
	}
	b := &Broker{}
	ctx, cancel := context.WithCancel(context.Background())
	ch, err = (&Local{DB: st, Broker: b}).Events(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b.Publish(ev(7))
	if e, _ := recv(t, ch); e != ev(7) {
		t.Errorf("got %+v, want %+v", e, ev(7))
	}
	cancel()
	drainClosed(t, ch)
}

func TestEventsWithoutSourceStayOpen(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	srv := startServer(t, &Local{DB: st})
	c := dial(t, srv.path)
	ctx, cancel := context.WithCancel(context.Background())
	ch, err := c.Events(ctx)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case e, ok := <-ch:
		t.Fatalf("got %+v, %v from a watcher with no event source, want nothing", e, ok)
	default:
	}
	cancel()
	drainClosed(t, ch)
}

func TestReadEvents(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		stream string
		want   []agent.Event
	}{
		{"plain", "data: {\"kind\":\"sent\",\"id\":\"ob1\"}\n\n", []agent.Event{{Kind: "sent", ID: "ob1"}}},
		{"event name, comments and CRLF", ": ok\r\n\r\n: keep-alive\n\nevent: sent\r\ndata: {\"kind\":\"sent\"}\r\n\r\n", []agent.Event{{Kind: "sent"}}},
		{"data split over lines", "data: {\"kind\":\ndata: \"x\"}\n\n", []agent.Event{{Kind: "x"}}},
		{"garbage skipped", "data: nope\n\ndata: {\"kind\":\"y\"}\n\n", []agent.Event{{Kind: "y"}}},
		{"unterminated last event dropped", "data: {\"kind\":\"z\"}\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := make(chan agent.Event, 10)
			readEvents(context.Background(), bufio.NewReader(strings.NewReader(tt.stream)), out)
			close(out)
			var got []agent.Event
			for e := range out {
				got = append(got, e)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestFormatEvent(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		e    agent.Event
		want string
	}{
		{"named", agent.Event{Kind: "sent", ID: "ob1"}, "event: sent\ndata: {\"kind\":\"sent\",\"id\":\"ob1\"}\n\n"},
		{"kind with a newline is not a name", agent.Event{Kind: "a\nb"}, "data: {\"kind\":\"a\\nb\"}\n\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := formatEvent(tt.e); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}
