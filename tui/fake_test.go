package tui

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
)

// call is one recorded Backend call.
type call struct {
	method string
	id     string
	arg    string
	until  time.Time
}

// fakeBackend is an in-memory Backend. It records every action, can fail
// any method (errs by method name) and can push live events.
type fakeBackend struct {
	mu     sync.Mutex
	items  []Item
	status Status
	calls  []call
	errs   map[string]error
	events chan Event // nil: no live source
	// version counts the changes (update): each changed item's Updated.
	version int
}

func newFake(items ...Item) *fakeBackend {
	return &fakeBackend{
		items:  items,
		status: Status{WatcherConnected: true, Accounts: []AccountState{{Name: "work", State: "idle"}}, AutoSentToday: 3, AutoSendCap: 20},
		errs:   map[string]error{},
	}
}

func (f *fakeBackend) record(c call) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, c)
	return f.errs[c.method]
}

// update changes a stored item the way the real backend would: its
// version (Item.Updated) moves on.
func (f *fakeBackend) update(id string, fn func(*Item)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range f.items {
		if f.items[i].ID == id {
			fn(&f.items[i])
			f.version++
			f.items[i].Updated = fixedNow.Add(time.Duration(f.version) * time.Millisecond)
		}
	}
}

func (f *fakeBackend) callsOf(method string) []call {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []call
	for _, c := range f.calls {
		if c.method == method {
			out = append(out, c)
		}
	}
	return out
}

func (f *fakeBackend) List(ctx context.Context) ([]Item, error) {
	if err := f.record(call{method: "List"}); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.items), nil
}

func (f *fakeBackend) Status(ctx context.Context) (Status, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.status, f.errs["Status"]
}

func (f *fakeBackend) Approve(ctx context.Context, id, finalText string) error {
	if err := f.record(call{method: "Approve", id: id, arg: finalText}); err != nil {
		return err
	}
	// As with the default policy.approval_delay: the reply waits 5s.
	f.update(id, func(it *Item) { it.Status, it.SendAt = StatusApproved, fixedNow.Add(5*time.Second) })
	return nil
}

func (f *fakeBackend) Reject(ctx context.Context, id, reason string) error {
	if err := f.record(call{method: "Reject", id: id, arg: reason}); err != nil {
		return err
	}
	f.update(id, func(it *Item) { it.Status = StatusRejected })
	return nil
}

func (f *fakeBackend) Edit(ctx context.Context, id, text string) error {
	if err := f.record(call{method: "Edit", id: id, arg: text}); err != nil {
		return err
	}
	f.update(id, func(it *Item) { it.Final = text })
	return nil
}

func (f *fakeBackend) Regenerate(ctx context.Context, id, instruction string) (Item, error) {
	if err := f.record(call{method: "Regenerate", id: id, arg: instruction}); err != nil {
		return Item{}, err
	}
	var out Item
	f.update(id, func(it *Item) {
		it.Draft = "regenerated (" + instruction + ")"
		it.Final = ""
		out = *it
	})
	if out.ID == "" {
		return Item{}, errors.New("no such item")
	}
	return out, nil
}

func (f *fakeBackend) Snooze(ctx context.Context, id string, until time.Time) error {
	if err := f.record(call{method: "Snooze", id: id, until: until}); err != nil {
		return err
	}
	f.update(id, func(it *Item) { it.Status = StatusSnoozed })
	return nil
}

func (f *fakeBackend) Retry(ctx context.Context, id string) error {
	if err := f.record(call{method: "Retry", id: id}); err != nil {
		return err
	}
	// A successful retry produces a draft for review.
	f.update(id, func(it *Item) { it.Kind, it.Status, it.Error = KindDraft, StatusPending, "" })
	return nil
}

func (f *fakeBackend) Cancel(ctx context.Context, id string) error {
	if err := f.record(call{method: "Cancel", id: id}); err != nil {
		return err
	}
	f.update(id, func(it *Item) {
		if it.Kind == KindDraft {
			it.Status = StatusPending // an approval undone
		} else {
			it.Status = StatusRejected
		}
		it.SendAt = time.Time{}
	})
	return nil
}

// senderBackend is a fakeBackend that leaves the end of the undo window
// to the TUI, as the review command does with no watcher running.
type senderBackend struct{ *fakeBackend }

func (s senderBackend) SendApproved(ctx context.Context, id string) error {
	if err := s.record(call{method: "SendApproved", id: id}); err != nil {
		return err
	}
	s.update(id, func(it *Item) { it.Status = StatusSent })
	return nil
}

// Events forwards f.events until ctx ends, then closes the channel it
// returned, as the Backend contract requires.
func (f *fakeBackend) Events(ctx context.Context) (<-chan Event, error) {
	if err := f.errs["Events"]; err != nil {
		return nil, err
	}
	if f.events == nil {
		return nil, nil
	}
	out := make(chan Event)
	go func() {
		defer close(out)
		for {
			select {
			case <-ctx.Done():
				return
			case ev := <-f.events:
				select {
				case out <- ev:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return out, nil
}

// --- driving the model directly -----------------------------------------------

// fixedNow is the clock of every direct test.
var fixedNow = time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)

// newModel builds a model over b, loads it synchronously and sizes it.
func newModel(t testing.TB, b Backend, opts Options) *Model {
	t.Helper()
	if opts.Now == nil {
		opts.Now = func() time.Time { return fixedNow }
	}
	m := New(b, opts)
	m.c.ticks = false
	t.Cleanup(m.c.close)
	run(t, m, m.Init())
	send(t, m, tea.WindowSizeMsg{Width: 140, Height: 30})
	return m
}

// send delivers msgs to the model and runs the resulting commands to
// completion.
func send(t testing.TB, m *Model, msgs ...tea.Msg) {
	t.Helper()
	for _, msg := range msgs {
		_, cmd := m.Update(msg)
		run(t, m, cmd)
	}
}

// run executes a command synchronously, feeding its messages back in.
// The model emits no blocking command when ticks are off and the backend
// has no event source, so a command that does not return is a bug; the
// guard turns such a hang into a clear failure.
func run(t testing.TB, m *Model, cmd tea.Cmd) {
	t.Helper()
	if cmd == nil {
		return
	}
	done := make(chan tea.Msg, 1)
	go func() { done <- cmd() }()
	var msg tea.Msg
	select {
	case msg = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("a command blocked; the direct driver cannot run it")
	}
	switch msg := msg.(type) {
	case nil:
	case tea.BatchMsg:
		for _, c := range msg {
			run(t, m, c)
		}
	default:
		send(t, m, msg)
	}
}

// press turns key names into key presses: "enter", "esc", "tab",
// "shift+tab", "ctrl+s", "up", "down", "end", or text typed key by key.
func press(names ...string) []tea.Msg {
	var out []tea.Msg
	for _, n := range names {
		switch n {
		case "enter":
			out = append(out, tea.KeyPressMsg{Code: tea.KeyEnter})
		case "esc":
			out = append(out, tea.KeyPressMsg{Code: tea.KeyEscape})
		case "tab":
			out = append(out, tea.KeyPressMsg{Code: tea.KeyTab})
		case "shift+tab":
			out = append(out, tea.KeyPressMsg{Code: tea.KeyTab, Mod: tea.ModShift})
		case "ctrl+s":
			out = append(out, tea.KeyPressMsg{Code: 's', Mod: tea.ModCtrl})
		case "up":
			out = append(out, tea.KeyPressMsg{Code: tea.KeyUp})
		case "down":
			out = append(out, tea.KeyPressMsg{Code: tea.KeyDown})
		case "end":
			out = append(out, tea.KeyPressMsg{Code: tea.KeyEnd})
		case "ctrl+d", "ctrl+u", "ctrl+c":
			out = append(out, tea.KeyPressMsg{Code: rune(n[len(n)-1]), Mod: tea.ModCtrl})
		default:
			for _, r := range n {
				out = append(out, tea.KeyPressMsg{Code: r, Text: string(r)})
			}
		}
	}
	return out
}

// queueIDs lists a view's rows in order.
func rowIDs(m *Model, t tab) []string {
	var ids []string
	for _, e := range m.lists[t].rows {
		ids = append(ids, e.item.ID)
	}
	return ids
}

func draft(id, from, subject, risk string, age time.Duration) Item {
	return Item{
		ID: id, Kind: KindDraft, Status: StatusPending, Account: "work",
		Received: fixedNow.Add(-age), From: Address{Email: from}, To: []Address{{Email: from}}, Subject: subject,
		Intents: []string{"question"}, Risk: risk, Confidence: 0.9,
		Summary: "asks about " + subject, Comments: "plain question",
		Draft:  "Hello, about " + subject + ".",
		Gates:  []Gate{{Name: "known_contact", Pass: true, Reason: "owner wrote before"}, {Name: "risk_low", Pass: risk == "low", Reason: "risk is " + risk}},
		Thread: []ThreadMessage{{From: Address{Email: from}, Date: fixedNow.Add(-age), Subject: subject, Text: "Hi,\nwhat about " + subject + "?"}},
	}
}
