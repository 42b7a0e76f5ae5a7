package api

import (
	"bufio"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mailagent/mailagent/agent"
)

// serveAt serves svc on path (which must be free) until the returned stop
// is called.
func serveAt(t *testing.T, path string, svc Service) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ln, err := listen(ctx, path, discard())
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- serveOn(ctx, ln, path, svc, discard()) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(waitLimit):
			t.Fatal("Serve did not return")
		}
	}
	t.Cleanup(stop)
	return stop
}

// expectKinds reads events and checks their kind and id ("kind" or
// "kind:id"); each must come within limit.
func expectKinds(t *testing.T, ch <-chan agent.Event, limit time.Duration, want ...string) {
	t.Helper()
	for i, w := range want {
		select {
		case e, ok := <-ch:
			if !ok {
				t.Fatalf("event %d: channel closed, want %s", i, w)
			}
			got := e.Kind
			if e.ID != "" {
				got += ":" + e.ID
			}
			if got != w {
				t.Fatalf("event %d: got %s, want %s", i, got, w)
			}
		case <-time.After(limit):
			t.Fatalf("event %d: nothing within %s, want %s", i, limit, w)
		}
	}
}

func queued(ids ...int) []string {
	var out []string
	for _, i := range ids {
		out = append(out, fmt.Sprintf("queue_added:%d", i))
	}
	return out
}

// TestEventsReconnectResume: the watcher's server stops mid-stream while
// events keep being published; when it serves again the client
// reconnects by itself and resumes with Last-Event-ID, losing nothing.
// A watcher that restarted (a new epoch) makes the client reset.
func TestEventsReconnectResume(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	path := SocketPath(shortDir(t))
	b := &Broker{}
	stop := serveAt(t, path, &Local{DB: st, Broker: b})

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := dial(t, path)
	ch, err := c.Events(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		b.Publish(ev(i))
	}
	expectKinds(t, ch, waitLimit, queued(0, 1, 2)...)

	// The server goes away: the client says so at once.
	stop()
	expectKinds(t, ch, 2*time.Second, EventWatcherGone)
	for i := 3; i < 8; i++ {
		b.Publish(ev(i)) // published while nobody listens
	}

	// Back on the same socket with the same run: the missed events
	// arrive, in order, then live ones.
	start := time.Now()
	stop = serveAt(t, path, &Local{DB: st, Broker: b})
	expectKinds(t, ch, 2*time.Second, EventWatcherBack)
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("reconnect took %s, want under 2s", d)
	}
	expectKinds(t, ch, waitLimit, queued(3, 4, 5, 6, 7)...)
	b.Publish(ev(8))
	expectKinds(t, ch, waitLimit, queued(8)...)

	// A restarted watcher has a new epoch: the client is told to reload.
	stop()
	expectKinds(t, ch, 2*time.Second, EventWatcherGone)
	b2 := &Broker{}
	b2.Publish(ev(100))
	serveAt(t, path, &Local{DB: st, Broker: b2})
	expectKinds(t, ch, 2*time.Second, EventWatcherBack, EventReset)
	b2.Publish(ev(101))
	expectKinds(t, ch, waitLimit, queued(101)...)

	cancel()
	drainClosed(t, ch)
}

// TestFollowEventsWaitsForWatcher: FollowEvents starts without a watcher,
// reports it when it appears, and again when it goes and comes back.
func TestFollowEventsWaitsForWatcher(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	path := SocketPath(shortDir(t))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := FollowEvents(ctx, path)
	select {
	case e := <-ch:
		t.Fatalf("got %+v without a watcher, want nothing", e)
	case <-time.After(300 * time.Millisecond):
	}
	b := &Broker{}
	stop := serveAt(t, path, &Local{DB: st, Broker: b})
	expectKinds(t, ch, 2*time.Second, EventWatcherBack)
	b.Publish(ev(1))
	expectKinds(t, ch, waitLimit, queued(1)...)
	stop()
	expectKinds(t, ch, 2*time.Second, EventWatcherGone)
	serveAt(t, path, &Local{DB: st, Broker: b})
	expectKinds(t, ch, 2*time.Second, EventWatcherBack)
	cancel()
	drainClosed(t, ch)
}

// TestReadStreamGap: ids that skip a sequence number, or change epoch
// without a reset, produce a reset before the event.
func TestReadStreamGap(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		stream string
		want   []string
	}{
		{"consecutive", "id: e-1\ndata: {\"kind\":\"a\"}\n\nid: e-2\ndata: {\"kind\":\"b\"}\n\n", []string{"a", "b"}},
		{"hello then next", ": ok\nid: e-5\n\nid: e-6\ndata: {\"kind\":\"a\"}\n\n", []string{"a"}},
		{"gap", "id: e-1\ndata: {\"kind\":\"a\"}\n\nid: e-3\ndata: {\"kind\":\"b\"}\n\n", []string{"a", EventReset, "b"}},
		{"gap after hello", ": ok\nid: e-5\n\nid: e-7\ndata: {\"kind\":\"a\"}\n\n", []string{EventReset, "a"}},
		{"epoch change", "id: e-1\ndata: {\"kind\":\"a\"}\n\nid: f-2\ndata: {\"kind\":\"b\"}\n\n", []string{"a", EventReset, "b"}},
		{"server reset is not doubled", "id: e-1\ndata: {\"kind\":\"a\"}\n\nid: f-9\ndata: {\"kind\":\"reset\"}\n\n", []string{"a", EventReset}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := make(chan agent.Event, 10)
			pos := &position{}
			readStream(context.Background(), bufioReader(tt.stream), pos, out)
			close(out)
			var got []string
			for e := range out {
				got = append(got, e.Kind)
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func bufioReader(s string) *bufio.Reader { return bufio.NewReader(strings.NewReader(s)) }
