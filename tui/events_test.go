package tui

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/exp/teatest/v2"
)

// flakyBackend is a fakeBackend whose event stream can end and come back:
// each Events call takes the next stream offered on streams, or fails as
// a missing watcher does when none is offered.
type flakyBackend struct {
	*fakeBackend
	streams chan chan Event
}

func (f *flakyBackend) Events(ctx context.Context) (<-chan Event, error) {
	_ = f.record(call{method: "Events"}) // the fake never fails Events
	select {
	case ch := <-f.streams:
		return ch, nil
	default:
		return nil, errors.New("no watcher is running")
	}
}

func (f *flakyBackend) setConnected(on bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.status.WatcherConnected = on
	if on {
		f.status.Accounts = []AccountState{{Name: "work", State: "idle"}}
	} else {
		f.status.Accounts = nil
	}
}

func (f *flakyBackend) add(it Item) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.items = append(f.items, it)
}

// waitOutput waits until the program's output contains want, at most
// limit.
func waitOutput(t *testing.T, tm *teatest.TestModel, want string, limit time.Duration) {
	t.Helper()
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool { return bytes.Contains(b, []byte(want)) },
		teatest.WithDuration(limit), teatest.WithCheckInterval(20*time.Millisecond))
}

// TestProgramWatcherGoneAndBack: the event stream closes (the watcher
// stopped); the status line says so within 2 s, with no stale account
// state. The stream comes back: the line says connected within 2 s and
// the queue is reloaded, showing what arrived meanwhile.
func TestProgramWatcherGoneAndBack(t *testing.T) {
	t.Parallel()
	f := &flakyBackend{fakeBackend: newFake(sampleQueue()...), streams: make(chan chan Event, 1)}
	f.status.Accounts = []AccountState{{Name: "work", State: "syncing"}}
	first := make(chan Event)
	f.streams <- first
	tm, hook := startProgram(t, f, Options{Resubscribe: 100 * time.Millisecond, StatusEvery: time.Hour})
	hook.waitFor(t, "the subscription", func(msg tea.Msg) bool { r, ok := msg.(eventsReadyMsg); return ok && r.ch != nil })
	waitOutput(t, tm, "watcher connected", 2*time.Second)
	lists := len(f.callsOf("List"))

	f.setConnected(false)
	close(first)
	start := time.Now()
	waitOutput(t, tm, "no watcher: actions run locally", 2*time.Second)
	t.Logf("watcher gone shown after %s", time.Since(start))

	// While it is away, resubscribing fails quietly and is retried.
	deadline := time.Now().Add(2 * time.Second)
	for len(f.callsOf("Events")) < 3 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := len(f.callsOf("Events")); n < 3 {
		t.Fatalf("Events calls while the watcher is away: got %d, want retries (at least 3)", n)
	}

	// Meanwhile a draft arrived; then the watcher comes back.
	late := draft("late", "new@example.com", "Arrived while away", "low", 0)
	f.add(late)
	f.setConnected(true)
	second := make(chan Event)
	f.streams <- second
	start = time.Now()
	hook.waitFor(t, "the reload", func(msg tea.Msg) bool {
		l, ok := msg.(loadedMsg)
		return ok && slices.ContainsFunc(l.items, func(it Item) bool { return it.ID == "late" })
	})
	waitOutput(t, tm, "watcher connected", 2*time.Second)
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("watcher back shown after %s, want under 2s", d)
	}

	// The new stream is live.
	live := draft("live", "x@example.com", "Live again", "low", 0)
	second <- Event{Kind: EventItemAdded, Item: &live}
	hook.waitFor(t, "the live event", func(msg tea.Msg) bool {
		e, ok := msg.(eventMsg)
		return ok && e.ev.Item != nil && e.ev.Item.ID == "live"
	})

	m := finalModel(t, tm)
	if n := len(f.callsOf("List")); n <= lists {
		t.Errorf("List calls: got %d, want more than %d (a reload)", n, lists)
	}
	for _, id := range []string{"late", "live"} {
		if !slices.Contains(rowIDs(m, tabQueue), id) {
			t.Errorf("queue lacks %s: %v", id, rowIDs(m, tabQueue))
		}
	}
	if line := m.renderStatus(); !strings.Contains(line, "watcher connected") {
		t.Errorf("final status line: got %q, want connected", line)
	}
}

// TestProgramReloadEvent: an EventReload (a reset: events were lost)
// loads everything again.
func TestProgramReloadEvent(t *testing.T) {
	t.Parallel()
	f := newFake(sampleQueue()...)
	f.events = make(chan Event)
	tm, hook := startProgram(t, f, Options{})
	hook.waitFor(t, "the subscription", func(msg tea.Msg) bool { _, ok := msg.(eventsReadyMsg); return ok })
	f.update("med", func(it *Item) { it.Subject = "Changed behind our back" })
	f.events <- Event{Kind: EventReload}
	hook.waitFor(t, "the reload", func(msg tea.Msg) bool {
		l, ok := msg.(loadedMsg)
		return ok && slices.ContainsFunc(l.items, func(it Item) bool { return it.Subject == "Changed behind our back" })
	})
	m := finalModel(t, tm)
	if e := m.c.items["med"]; e == nil || e.item.Subject != "Changed behind our back" {
		t.Errorf("after reload: got %+v, want the changed subject", e)
	}
}

// TestProgramStatusRefreshedOnTimer: the status line is read again on a
// timer, so a sync state that ended does not linger.
func TestProgramStatusRefreshedOnTimer(t *testing.T) {
	t.Parallel()
	f := newFake(sampleQueue()...)
	f.status.Accounts = []AccountState{{Name: "work", State: "syncing"}}
	tm, _ := startProgram(t, f, Options{StatusEvery: 50 * time.Millisecond})
	waitOutput(t, tm, "work: syncing", 2*time.Second)
	f.mu.Lock()
	f.status.Accounts = []AccountState{{Name: "work", State: "idle"}}
	f.mu.Unlock()
	// The renderer redraws only what changed: the new word is enough.
	waitOutput(t, tm, "idle", 2*time.Second)
	m := finalModel(t, tm)
	if line := m.renderStatus(); !strings.Contains(line, "work: idle") {
		t.Errorf("status line: got %q, want work: idle", line)
	}
}

func TestStatusLineWatcherStates(t *testing.T) {
	t.Parallel()
	m := newModel(t, newFake(), Options{NoColor: true})
	if line := m.renderStatus(); !strings.Contains(line, "watcher connected") {
		t.Fatalf("start: got %q, want connected", line)
	}
	send(t, m, eventsClosedMsg{})
	if line := m.renderStatus(); !strings.Contains(line, "no watcher: actions run locally") || strings.Contains(line, "work: idle") {
		t.Errorf("after the stream closed: got %q, want no watcher and no stale account state", line)
	}
	// A status read that still says connected while the stream is down.
	send(t, m, statusMsg{status: Status{WatcherConnected: true}})
	if line := m.renderStatus(); !strings.Contains(line, "live updates lost") {
		t.Errorf("connected without a stream: got %q, want live updates lost", line)
	}
	// Never connected: the store was opened directly.
	f := newFake()
	f.status = Status{}
	if line := newModel(t, f, Options{NoColor: true}).renderStatus(); !strings.Contains(line, "no watcher: actions run locally") {
		t.Errorf("never connected: got %q", line)
	}
}
