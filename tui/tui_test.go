package tui

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"
	"github.com/charmbracelet/x/exp/teatest/v2"
)

func sampleQueue() []Item {
	return []Item{
		draft("low-new", "ann@example.com", "Lunch on Friday", "low", 5*time.Minute),
		draft("high-old", "bob@example.com", "Contract renewal", "high", 3*time.Hour),
		draft("med", "cat@example.com", "Invoice 42", "medium", 10*time.Minute),
		draft("high-new", "dan@example.com", "Legal notice", "high", 1*time.Hour),
	}
}

func TestQueueOrder(t *testing.T) {
	t.Parallel()
	m := newModel(t, newFake(sampleQueue()...), Options{})
	got := rowIDs(m, tabQueue)
	want := []string{"high-new", "high-old", "med", "low-new"}
	if !slices.Equal(got, want) {
		t.Fatalf("queue order: got %v, want %v", got, want)
	}
}

func TestApprove(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		final     string
		wantFinal string
	}{
		{name: "unedited draft sends empty final", final: "", wantFinal: ""},
		{name: "edited draft sends the final text", final: "My own words.", wantFinal: "My own words."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			items := sampleQueue()
			items[3].Final = tt.final // high-new, the top row
			f := newFake(items...)
			m := newModel(t, f, Options{})
			send(t, m, press("a")...)

			calls := f.callsOf("Approve")
			if len(calls) != 1 {
				t.Fatalf("Approve calls: got %d, want 1", len(calls))
			}
			if calls[0].id != "high-new" || calls[0].arg != tt.wantFinal {
				t.Fatalf("Approve(%q, %q): want (%q, %q)", calls[0].id, calls[0].arg, "high-new", tt.wantFinal)
			}
			// The reply waits out its undo window in sight, counting down.
			if !slices.Contains(rowIDs(m, tabQueue), "high-new") {
				t.Fatalf("approved item left the queue during its undo window: %v", rowIDs(m, tabQueue))
			}
			view := m.View().Content
			for _, want := range []string{"(sending in 5s) Legal notice", `approved "Legal notice": sending in 5s, c cancels`} {
				if !strings.Contains(view, want) {
					t.Fatalf("view lacks %q:\n%s", want, view)
				}
			}
		})
	}
}

func TestApproveErrorKeepsItem(t *testing.T) {
	t.Parallel()
	f := newFake(sampleQueue()...)
	f.errs["Approve"] = errors.New("smtp: connection refused")
	m := newModel(t, f, Options{NoColor: true})
	send(t, m, press("a")...)

	if got := len(f.callsOf("Approve")); got != 1 {
		t.Fatalf("Approve calls: got %d, want 1", got)
	}
	if !slices.Contains(rowIDs(m, tabQueue), "high-new") {
		t.Fatalf("failed item left the queue: %v", rowIDs(m, tabQueue))
	}
	if st := m.c.items["high-new"].item.Status; st != StatusPending {
		t.Fatalf("status: got %q, want %q", st, StatusPending)
	}
	if !m.c.noteErr {
		t.Fatalf("note is not an error: %q", m.c.note)
	}
	if view := m.View().Content; !strings.Contains(view, "smtp: connection refused") {
		t.Fatalf("view does not show the error:\n%s", view)
	}
	if len(m.c.busy) != 0 {
		t.Fatalf("busy after failure: %v", m.c.busy)
	}
}

func TestReject(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		keys   []string
		reason string
	}{
		{name: "with reason", keys: []string{"r", "not my business", "enter"}, reason: "not my business"},
		{name: "without reason via n", keys: []string{"n", "enter"}, reason: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(sampleQueue()...)
			m := newModel(t, f, Options{})
			send(t, m, press(tt.keys...)...)
			calls := f.callsOf("Reject")
			if len(calls) != 1 {
				t.Fatalf("Reject calls: got %d, want 1", len(calls))
			}
			if calls[0].id != "high-new" || calls[0].arg != tt.reason {
				t.Fatalf("Reject(%q, %q): want (%q, %q)", calls[0].id, calls[0].arg, "high-new", tt.reason)
			}
			if slices.Contains(rowIDs(m, tabQueue), "high-new") {
				t.Fatalf("rejected item still queued")
			}
			if m.mode() != modeNormal {
				t.Fatalf("mode after submit: got %v, want normal", m.mode())
			}
		})
	}
}

func TestRejectPromptEscCancels(t *testing.T) {
	t.Parallel()
	f := newFake(sampleQueue()...)
	m := newModel(t, f, Options{})
	send(t, m, press("r", "why", "esc")...)
	if got := len(f.callsOf("Reject")); got != 0 {
		t.Fatalf("Reject calls after esc: got %d, want 0", got)
	}
	if got := len(m.lists[tabQueue].rows); got != 4 {
		t.Fatalf("queue length: got %d, want 4", got)
	}
}

func TestRegenerate(t *testing.T) {
	t.Parallel()
	f := newFake(sampleQueue()...)
	m := newModel(t, f, Options{})
	send(t, m, press("R", "shorter", "enter")...)
	calls := f.callsOf("Regenerate")
	if len(calls) != 1 || calls[0].id != "high-new" || calls[0].arg != "shorter" {
		t.Fatalf("Regenerate calls: got %+v, want one for high-new with %q", calls, "shorter")
	}
	if got, want := m.c.items["high-new"].item.Draft, "regenerated (shorter)"; got != want {
		t.Fatalf("draft: got %q, want %q", got, want)
	}
}

func TestSnooze(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		input string
		want  time.Time
	}{
		{name: "default is 4h", input: "", want: fixedNow.Add(4 * time.Hour)},
		{name: "duration", input: "1h", want: fixedNow.Add(time.Hour)},
		{name: "tomorrow", input: "tomorrow", want: time.Date(2026, 3, 3, 8, 0, 0, 0, time.UTC)},
		{name: "days", input: "2d", want: fixedNow.AddDate(0, 0, 2)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(sampleQueue()...)
			m := newModel(t, f, Options{})
			send(t, m, press("s", tt.input, "enter")...)
			calls := f.callsOf("Snooze")
			if len(calls) != 1 {
				t.Fatalf("Snooze calls: got %d, want 1", len(calls))
			}
			if !calls[0].until.Equal(tt.want) {
				t.Fatalf("snooze until: got %v, want %v", calls[0].until, tt.want)
			}
			// Snoozed items stay in sight, below the pending ones.
			ids := rowIDs(m, tabQueue)
			if len(ids) == 0 || ids[len(ids)-1] != "high-new" || m.c.items["high-new"].item.Status != StatusSnoozed {
				t.Fatalf("queue after snooze: got %v, want high-new last and snoozed", ids)
			}
		})
	}
}

func TestParseSnoozeErrors(t *testing.T) {
	t.Parallel()
	for _, in := range []string{"soon", "-1h", "0d", "xd"} {
		t.Run(in, func(t *testing.T) {
			if got, err := ParseSnooze(in, fixedNow); err == nil {
				t.Fatalf("ParseSnooze(%q): got %v, want an error", in, got)
			}
		})
	}
	f := newFake(sampleQueue()...)
	m := newModel(t, f, Options{})
	send(t, m, press("s", "soon", "enter")...)
	if got := len(f.callsOf("Snooze")); got != 0 {
		t.Fatalf("Snooze calls on bad input: got %d, want 0", got)
	}
	if !m.c.noteErr {
		t.Fatalf("bad snooze input shows no error: %q", m.c.note)
	}
}

func TestInlineEdit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		keys      []string
		wantCalls int
		wantFinal string
	}{
		{name: "ctrl+s saves", keys: []string{"e", "PS ", "ctrl+s"}, wantCalls: 1, wantFinal: "PS Hello, about Legal notice."},
		{name: "esc cancels", keys: []string{"e", "PS ", "esc"}, wantCalls: 0, wantFinal: ""},
		{name: "unchanged text is not stored", keys: []string{"e", "ctrl+s"}, wantCalls: 0, wantFinal: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(sampleQueue()...)
			m := newModel(t, f, Options{Editor: ""})
			send(t, m, press(tt.keys...)...)
			calls := f.callsOf("Edit")
			if len(calls) != tt.wantCalls {
				t.Fatalf("Edit calls: got %d, want %d", len(calls), tt.wantCalls)
			}
			if got := m.c.items["high-new"].item.Final; got != tt.wantFinal {
				t.Fatalf("Final: got %q, want %q", got, tt.wantFinal)
			}
			if m.mode() != modeNormal {
				t.Fatalf("mode: got %v, want normal", m.mode())
			}
		})
	}
}

func TestFilterNarrows(t *testing.T) {
	t.Parallel()
	items := sampleQueue()
	items[0].Intents = []string{"scheduling"}
	tests := []struct {
		name  string
		query string
		want  []string
	}{
		{name: "from", query: "bob@", want: []string{"high-old"}},
		{name: "subject case-insensitive", query: "INVOICE", want: []string{"med"}},
		{name: "summary", query: "asks about legal", want: []string{"high-new"}},
		{name: "intent", query: "scheduling", want: []string{"low-new"}},
		{name: "no match", query: "zebra", want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newModel(t, newFake(items...), Options{})
			send(t, m, press("/", tt.query, "enter")...)
			if got := rowIDs(m, tabQueue); !slices.Equal(got, tt.want) {
				t.Fatalf("filtered rows: got %v, want %v", got, tt.want)
			}
			send(t, m, press("esc")...)
			if got := len(m.lists[tabQueue].rows); got != len(items) {
				t.Fatalf("rows after esc: got %d, want %d", got, len(items))
			}
		})
	}
}

func TestTabSwitching(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		keys []string
		want tab
	}{
		{name: "tab goes to detail", keys: []string{"tab"}, want: tabDetail},
		{name: "tab twice goes to attention", keys: []string{"tab", "tab"}, want: tabAttention},
		{name: "shift+tab wraps to decided", keys: []string{"shift+tab"}, want: tabDecided},
		{name: "digit 5", keys: []string{"5"}, want: tabDecided},
		{name: "digit 3", keys: []string{"3"}, want: tabAttention},
		{name: "digit 4", keys: []string{"4"}, want: tabSent},
		{name: "digit 1 after 4", keys: []string{"4", "1"}, want: tabQueue},
		{name: "enter opens detail", keys: []string{"enter"}, want: tabDetail},
		{name: "esc leaves detail", keys: []string{"enter", "esc"}, want: tabQueue},
		{name: "esc returns to the list it came from", keys: []string{"3", "enter", "esc"}, want: tabAttention},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			items := append(sampleQueue(), Item{ID: "n1", Kind: KindNeedsReview, Status: StatusPending, Subject: "odd", Error: "llm: schema mismatch"})
			m := newModel(t, newFake(items...), Options{})
			send(t, m, press(tt.keys...)...)
			if m.tab != tt.want {
				t.Fatalf("tab: got %v (%s), want %v (%s)", m.tab, tabTitles[m.tab], tt.want, tabTitles[tt.want])
			}
		})
	}
}

func TestDetailShowsEverything(t *testing.T) {
	t.Parallel()
	for _, ascii := range []bool{false, true} {
		t.Run(fmt.Sprintf("ascii=%v", ascii), func(t *testing.T) {
			m := newModel(t, newFake(sampleQueue()...), Options{ASCII: ascii, NoColor: ascii})
			send(t, m, tea.WindowSizeMsg{Width: 100, Height: 60})
			send(t, m, press("enter")...)
			view := ansi.Strip(m.View().Content)
			ok, fail := "✓ known_contact", "✗ risk_low"
			if ascii {
				ok, fail = "[ok] known_contact", "[x] risk_low"
			}
			for _, want := range []string{"what about Legal notice?", "plain question", ok, fail, "risk is high", "Hello, about Legal notice."} {
				if !strings.Contains(view, want) {
					t.Errorf("detail lacks %q", want)
				}
			}
			if t.Failed() {
				t.Logf("view:\n%s", view)
			}
		})
	}
}

func TestAttentionRetry(t *testing.T) {
	t.Parallel()
	items := append(sampleQueue(),
		Item{ID: "nr", Kind: KindNeedsReview, Status: StatusPending, Subject: "Broken", Received: fixedNow, Error: "llm: schema mismatch"},
		Item{ID: "nt", Kind: KindNotify, Status: StatusPending, Subject: "FYI", Received: fixedNow.Add(-time.Hour)},
	)
	f := newFake(items...)
	m := newModel(t, f, Options{NoColor: true})
	send(t, m, press("3")...)
	if got, want := rowIDs(m, tabAttention), []string{"nr", "nt"}; !slices.Equal(got, want) {
		t.Fatalf("attention rows: got %v, want %v", got, want)
	}
	if view := m.View().Content; !strings.Contains(view, "llm: schema mismatch") {
		t.Fatalf("attention view lacks the error:\n%s", view)
	}
	send(t, m, press("t")...)
	if calls := f.callsOf("Retry"); len(calls) != 1 || calls[0].id != "nr" {
		t.Fatalf("Retry calls: got %+v, want one for nr", calls)
	}
	// The fake turns a retried item into a draft; the reload shows it.
	if !slices.Contains(rowIDs(m, tabQueue), "nr") {
		t.Fatalf("retried item not reloaded into the queue: %v", rowIDs(m, tabQueue))
	}
	// A notify item cannot be retried.
	send(t, m, press("t")...)
	if got := len(f.callsOf("Retry")); got != 1 {
		t.Fatalf("Retry calls after R on notify: got %d, want 1", got)
	}
	if !m.c.noteErr {
		t.Fatalf("R on notify shows no error: %q", m.c.note)
	}
}

func TestCancelOnSentView(t *testing.T) {
	t.Parallel()
	items := []Item{
		{ID: "later", Kind: KindSent, Status: StatusSending, To: []Address{{Email: "eve@example.com"}}, Subject: "Thanks", SendAt: fixedNow.Add(80 * time.Second)},
		{ID: "gone", Kind: KindSent, Status: StatusSent, To: []Address{{Email: "fay@example.com"}}, Subject: "Re: hello", Received: fixedNow.Add(-time.Hour), SendAt: fixedNow.Add(-5 * time.Minute)},
	}
	f := newFake(items...)
	m := newModel(t, f, Options{NoColor: true})
	send(t, m, press("4")...)
	if got, want := rowIDs(m, tabSent), []string{"later", "gone"}; !slices.Equal(got, want) {
		t.Fatalf("sent rows: got %v, want %v", got, want)
	}
	view := m.View().Content
	for _, want := range []string{"sending in 1m20s", "sent 5m ago"} {
		if !strings.Contains(view, want) {
			t.Fatalf("sent view lacks %q:\n%s", want, view)
		}
	}

	send(t, m, press("c")...)
	if calls := f.callsOf("Cancel"); len(calls) != 1 || calls[0].id != "later" {
		t.Fatalf("Cancel calls: got %+v, want one for later", calls)
	}
	if strings.Contains(m.View().Content, "sending in") {
		t.Fatalf("cancelled send still counts down:\n%s", m.View().Content)
	}

	// The one already sent cannot be cancelled.
	m.lists[tabSent].cursor = slices.Index(rowIDs(m, tabSent), "gone")
	send(t, m, press("c")...)
	if got := len(f.callsOf("Cancel")); got != 1 {
		t.Fatalf("Cancel calls after c on a sent item: got %d, want 1", got)
	}
	if !m.c.noteErr || !strings.Contains(m.c.note, "too late") {
		t.Fatalf("note: got %q, want a too-late error", m.c.note)
	}
}

func TestActionsIgnoredOnWrongKind(t *testing.T) {
	t.Parallel()
	items := []Item{{ID: "s", Kind: KindSent, Status: StatusSent, Subject: "done", SendAt: fixedNow.Add(-time.Minute)}}
	f := newFake(items...)
	m := newModel(t, f, Options{})
	send(t, m, press("4", "a", "e", "R")...)
	for _, method := range []string{"Approve", "Edit", "Regenerate"} {
		if got := len(f.callsOf(method)); got != 0 {
			t.Errorf("%s calls on a sent item: got %d, want 0", method, got)
		}
	}
}

func TestScrollWindow(t *testing.T) {
	t.Parallel()
	f := newFake(manyDrafts(500)...)
	m := newModel(t, f, Options{NoColor: true})
	send(t, m, press("down", "down", "j")...)
	if got := m.lists[tabQueue].cursor; got != 3 {
		t.Fatalf("cursor after 3 downs: got %d, want 3", got)
	}
	send(t, m, press("end")...)
	ls := m.lists[tabQueue]
	if ls.cursor != 499 {
		t.Fatalf("cursor after end: got %d, want 499", ls.cursor)
	}
	last := ls.rows[499].item.Subject
	view := m.View().Content
	if !strings.Contains(view, last) {
		t.Fatalf("view after end lacks the last row %q", last)
	}
	if lines := strings.Count(view, "\n") + 1; lines != 30 {
		t.Fatalf("frame height: got %d lines, want 30", lines)
	}
	send(t, m, press("k")...)
	if got := m.lists[tabQueue].cursor; got != 498 {
		t.Fatalf("cursor after k: got %d, want 498", got)
	}
}

func TestNoColorRendering(t *testing.T) {
	t.Parallel()
	items := append(sampleQueue(),
		Item{ID: "evil", Kind: KindDraft, Status: StatusPending, Risk: "high", Received: fixedNow,
			From: Address{Name: "\u202eevil\x1b[8m", Email: "x@example.com"}, To: []Address{{Email: "x@example.com", New: true}}, Subject: "hi\x1b[31mred\x1b]0;pwned\a", Draft: "body\x1b[2J"},
		Item{ID: "nr", Kind: KindNeedsReview, Status: StatusFailed, Subject: "Broken", Error: "boom"},
		Item{ID: "s", Kind: KindSent, Status: StatusSending, Subject: "Soon", SendAt: fixedNow.Add(time.Minute)},
	)
	tests := []struct {
		name    string
		opts    Options
		wantESC bool
	}{
		{name: "no colour", opts: Options{NoColor: true, ASCII: true}, wantESC: false},
		{name: "colour", opts: Options{}, wantESC: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newModel(t, newFake(items...), tt.opts)
			frames := map[string]string{"queue": m.View().Content}
			send(t, m, press("enter")...)
			frames["detail"] = m.View().Content
			send(t, m, press("3")...)
			frames["attention"] = m.View().Content
			send(t, m, press("4")...)
			frames["sent"] = m.View().Content
			send(t, m, press("?")...)
			frames["help"] = m.View().Content
			for name, frame := range frames {
				if got := strings.Contains(frame, "\x1b"); got != tt.wantESC {
					t.Errorf("%s frame contains ESC: got %v, want %v\n%q", name, got, tt.wantESC, frame)
				}
				if strings.Contains(frame, "pwned") && strings.Contains(frame, "\x1b]0;") {
					t.Errorf("%s frame passes an email's escape sequence through", name)
				}
			}
			if tt.opts.ASCII {
				for name, frame := range frames {
					for _, r := range frame {
						if r > 0x7e && !strings.ContainsRune("…", r) {
							// Only the email's own text may be non-ASCII; the fixtures are ASCII.
							t.Errorf("%s frame has non-ASCII glyph %q", name, r)
							break
						}
					}
				}
			}
		})
	}
}

func TestStatusLine(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		status Status
		want   []string
	}{
		{name: "connected", status: Status{WatcherConnected: true, Accounts: []AccountState{{Name: "work", State: "idle"}, {Name: "home", State: "syncing"}}, AutoSentToday: 3, AutoSendCap: 20},
			want: []string{"watcher connected", "work: idle", "home: syncing", "auto-sent today 3/20"}},
		{name: "offline", status: Status{}, want: []string{"no watcher: actions run locally", "auto-sent today 0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(sampleQueue()...)
			f.status = tt.status
			m := newModel(t, f, Options{NoColor: true})
			line := m.renderStatus()
			for _, w := range tt.want {
				if !strings.Contains(line, w) {
					t.Errorf("status line %q lacks %q", line, w)
				}
			}
		})
	}
}

func TestStatusEventUpdatesLine(t *testing.T) {
	t.Parallel()
	m := newModel(t, newFake(), Options{NoColor: true})
	send(t, m, eventMsg{ev: Event{Kind: EventStatus, Status: &Status{WatcherConnected: true, AutoSentToday: 7, AutoSendCap: 9}}})
	if line := m.renderStatus(); !strings.Contains(line, "auto-sent today 7/9") {
		t.Fatalf("status line after event: got %q, want auto-sent today 7/9", line)
	}
}

func TestListErrorShown(t *testing.T) {
	t.Parallel()
	f := newFake()
	f.errs["List"] = errors.New("database locked")
	m := newModel(t, f, Options{NoColor: true})
	if !m.c.noteErr || !strings.Contains(m.c.note, "database locked") {
		t.Fatalf("note: got %q, want the list error", m.c.note)
	}
	if _, err := Snapshot(f, 80, 24); err == nil {
		t.Fatal("Snapshot with a failing List: got nil error")
	}
}

// --- teatest: the real program loop ----------------------------------------------

// watch is a tea.WithFilter hook that reports the messages Update is
// about to see; a test waits on it instead of sleeping.
func watch(ch chan<- tea.Msg) tea.ProgramOption {
	return tea.WithFilter(func(_ tea.Model, msg tea.Msg) tea.Msg {
		switch msg.(type) {
		case loadedMsg, eventMsg, actionMsg, eventsReadyMsg, followupsLoadedMsg:
			ch <- msg
		}
		return msg
	})
}

// hook collects the messages seen by watch. Messages that arrive while a
// test waits for something else are kept for later waits, because the
// initial commands run concurrently and their order is not fixed.
type hook struct {
	ch   chan tea.Msg
	seen []tea.Msg
}

// waitFor returns the first message, earlier or future, that satisfies ok.
func (h *hook) waitFor(t *testing.T, what string, ok func(tea.Msg) bool) tea.Msg {
	t.Helper()
	for i, msg := range h.seen {
		if ok(msg) {
			h.seen = slices.Delete(h.seen, i, i+1)
			return msg
		}
	}
	timeout := time.After(10 * time.Second)
	for {
		select {
		case msg := <-h.ch:
			if ok(msg) {
				return msg
			}
			h.seen = append(h.seen, msg)
		case <-timeout:
			t.Fatalf("never saw %s", what)
			return nil
		}
	}
}

func startProgram(t *testing.T, b Backend, opts Options) (*teatest.TestModel, *hook) {
	t.Helper()
	opts.Now = func() time.Time { return fixedNow }
	m := New(b, opts)
	t.Cleanup(m.c.close)
	h := &hook{ch: make(chan tea.Msg, 64)}
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(120, 30), teatest.WithProgramOptions(watch(h.ch)))
	h.waitFor(t, "the initial load", func(msg tea.Msg) bool { _, ok := msg.(loadedMsg); return ok })
	return tm, h
}

func finalModel(t *testing.T, tm *teatest.TestModel) *Model {
	t.Helper()
	if err := tm.Quit(); err != nil {
		t.Fatal(err)
	}
	fm, ok := tm.FinalModel(t, teatest.WithFinalTimeout(10*time.Second)).(*Model)
	if !ok {
		t.Fatal("final model is not *Model")
	}
	return fm
}

func TestProgramApprove(t *testing.T) {
	t.Parallel()
	f := newFake(sampleQueue()...)
	tm, hook := startProgram(t, f, Options{})
	tm.Send(tea.KeyPressMsg{Code: 'a', Text: "a"})
	hook.waitFor(t, "the approve result", func(msg tea.Msg) bool { a, ok := msg.(actionMsg); return ok && a.action == "approve" })
	hook.waitFor(t, "the item read again", func(msg tea.Msg) bool { _, ok := msg.(loadedMsg); return ok })
	m := finalModel(t, tm)
	if calls := f.callsOf("Approve"); len(calls) != 1 || calls[0].id != "high-new" {
		t.Fatalf("Approve calls: got %+v, want one for high-new", calls)
	}
	if e := m.c.items["high-new"]; e == nil || e.item.Status != StatusApproved || !e.item.SendAt.Equal(fixedNow.Add(5*time.Second)) {
		t.Fatalf("approved item: got %+v, want approved with its send time read back", e)
	}
}

func TestProgramEventsAddRowsLive(t *testing.T) {
	t.Parallel()
	f := newFake(sampleQueue()...)
	f.events = make(chan Event)
	tm, hook := startProgram(t, f, Options{})
	hook.waitFor(t, "the subscription", func(msg tea.Msg) bool { _, ok := msg.(eventsReadyMsg); return ok })

	for i, id := range []string{"live-1", "live-2"} { // the second proves the wait is re-armed
		it := draft(id, "new@example.com", fmt.Sprintf("Fresh %d", i), "high", 0)
		f.events <- Event{Kind: EventItemAdded, Item: &it}
		hook.waitFor(t, "event "+id, func(msg tea.Msg) bool { e, ok := msg.(eventMsg); return ok && e.ev.Item != nil && e.ev.Item.ID == id })
	}
	f.events <- Event{Kind: EventItemRemoved, ID: "med"}
	hook.waitFor(t, "the removal", func(msg tea.Msg) bool { e, ok := msg.(eventMsg); return ok && e.ev.ID == "med" })

	m := finalModel(t, tm)
	got := rowIDs(m, tabQueue)
	for _, id := range []string{"live-1", "live-2"} {
		if !slices.Contains(got, id) {
			t.Errorf("queue lacks live item %s: %v", id, got)
		}
	}
	if slices.Contains(got, "med") {
		t.Errorf("removed item still queued: %v", got)
	}
}

func TestProgramExternalEditor(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	script := filepath.Join(dir, "fake-editor")
	// The fake editor records the file's mode and path, then rewrites it.
	body := fmt.Sprintf("#!/bin/sh\nstat -c %%a \"$1\" > %q\nprintf '%%s' \"$1\" > %q\nprintf 'Thanks, edited.\\n' > \"$1\"\n",
		filepath.Join(dir, "mode"), filepath.Join(dir, "path"))
	if err := os.WriteFile(script, []byte(body), 0o700); err != nil {
		t.Fatal(err)
	}
	f := newFake(sampleQueue()...)
	tm, hook := startProgram(t, f, Options{Editor: script})
	tm.Send(tea.KeyPressMsg{Code: 'e', Text: "e"})
	res := hook.waitFor(t, "the edit result", func(msg tea.Msg) bool { a, ok := msg.(actionMsg); return ok && a.action == "edit" }).(actionMsg)
	if res.err != nil {
		t.Fatalf("edit failed: %v", res.err)
	}
	m := finalModel(t, tm)

	if got, want := m.c.items["high-new"].item.Final, "Thanks, edited."; got != want {
		t.Fatalf("Final: got %q, want %q", got, want)
	}
	if calls := f.callsOf("Edit"); len(calls) != 1 || calls[0].id != "high-new" {
		t.Fatalf("Edit calls: got %+v, want one for high-new", calls)
	}
	mode, err := os.ReadFile(filepath.Join(dir, "mode"))
	if err != nil {
		t.Fatalf("the editor did not run: %v", err)
	}
	if got := strings.TrimSpace(string(mode)); got != "600" {
		t.Fatalf("temp file mode: got %s, want 600", got)
	}
	path, err := os.ReadFile(filepath.Join(dir, "path"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(string(path)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("temp file %s not removed: %v", path, err)
	}
}

// --- snapshot ----------------------------------------------------------------------

func TestSnapshotGolden(t *testing.T) {
	t.Parallel()
	f := newFake(sampleQueue()...)
	got, err := snapshot(t.Context(), f, 100, 14, Options{Now: func() time.Time { return fixedNow }})
	if err != nil {
		t.Fatal(err)
	}
	// testdata/TestSnapshotGolden.golden; go test -run SnapshotGolden -update rewrites it.
	golden.RequireEqual(t, got)
	if strings.Contains(got, "\x1b") {
		t.Fatal("snapshot contains escape sequences")
	}
}

func TestSnapshotExported(t *testing.T) {
	t.Parallel()
	got, err := Snapshot(newFake(sampleQueue()...), 100, 12)
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Count(got, "\n") + 1; lines != 12 {
		t.Fatalf("snapshot height: got %d lines, want 12", lines)
	}
	if !strings.Contains(got, "Legal notice") {
		t.Fatalf("snapshot lacks the top draft:\n%s", got)
	}
	if _, err := Snapshot(newFake(), 0, 10); err == nil {
		t.Fatal("Snapshot 0x10: got nil error")
	}
}

// --- benchmarks ------------------------------------------------------------------------

func manyDrafts(n int) []Item {
	risks := []string{"low", "medium", "high"}
	items := make([]Item, n)
	for i := range items {
		items[i] = draft(fmt.Sprintf("d%05d", i), fmt.Sprintf("sender%d@example.com", i),
			fmt.Sprintf("Subject number %d", i), risks[i%3], time.Duration(i)*time.Minute)
	}
	return items
}

func BenchmarkOpen10k(b *testing.B) {
	f := newFake(manyDrafts(10000)...)
	opts := Options{Now: func() time.Time { return fixedNow }}
	b.ReportAllocs()
	for b.Loop() {
		m := New(f, opts)
		m.Update(tea.WindowSizeMsg{Width: 160, Height: 50})
		m.Update(load(m.c.ctx, f))
		_ = m.View()
		m.c.close()
	}
}

func BenchmarkScroll10k(b *testing.B) {
	f := newFake(manyDrafts(10000)...)
	m := New(f, Options{Now: func() time.Time { return fixedNow }})
	defer m.c.close()
	m.Update(tea.WindowSizeMsg{Width: 160, Height: 50})
	m.Update(load(m.c.ctx, f))
	down := tea.KeyPressMsg{Code: tea.KeyDown}
	b.ReportAllocs()
	for b.Loop() {
		m.Update(down)
		_ = m.View()
	}
}

func TestTinyWindowsDoNotPanic(t *testing.T) {
	t.Parallel()
	items := append(sampleQueue(),
		Item{ID: "nr", Kind: KindNeedsReview, Status: StatusPending, Subject: "Broken", Error: "boom"},
		Item{ID: "s", Kind: KindSent, Status: StatusSending, Subject: "Soon", SendAt: fixedNow.Add(time.Minute)},
	)
	sizes := []struct{ w, h int }{{0, 0}, {1, 1}, {10, 3}, {40, 6}, {300, 5}}
	for _, sz := range sizes {
		t.Run(fmt.Sprintf("%dx%d", sz.w, sz.h), func(t *testing.T) {
			m := newModel(t, newFake(items...), Options{})
			send(t, m, tea.WindowSizeMsg{Width: sz.w, Height: sz.h})
			for _, k := range []string{"1", "enter", "3", "4", "?", "?", "1", "/", "x", "enter", "e"} {
				send(t, m, press(k)...)
				_ = m.View()
			}
			for i, line := range strings.Split(m.View().Content, "\n") {
				if w := ansi.StringWidth(line); sz.w > 0 && w > sz.w {
					t.Errorf("line %d is %d cells wide, want at most %d", i, w, sz.w)
				}
			}
		})
	}
}

// TestLongErrorIsReadWhole: a failed approval's reason wider than the
// window is wrapped onto the lines above the status line, whole, and the
// frame keeps its height; a reason longer than three lines ends in "…".
func TestLongErrorIsReadWhole(t *testing.T) {
	t.Parallel()
	long := "send failed: smtp: 454 4.7.0 Temporary authentication failure: the relay at mail.example.org:587 refused AUTH PLAIN; retried 3 times"
	for _, c := range []struct {
		err   string
		whole bool
	}{{long, true}, {strings.Repeat(long+" ", 4), false}} {
		f := newFake(sampleQueue()...)
		f.errs["Approve"] = errors.New(c.err)
		m := newModel(t, f, Options{NoColor: true})
		send(t, m, tea.WindowSizeMsg{Width: 80, Height: 24})
		send(t, m, press("a")...)
		view := m.View().Content
		lines := strings.Split(view, "\n")
		if len(lines) != 24 {
			t.Fatalf("frame has %d lines, want 24", len(lines))
		}
		for i, l := range lines {
			if ansi.StringWidth(l) > 80 {
				t.Errorf("line %d is %d cells wide", i, ansi.StringWidth(l))
			}
		}
		joined := strings.Join(strings.Fields(view), " ")
		if c.whole && !strings.Contains(joined, "refused AUTH PLAIN; retried 3 times") {
			t.Errorf("the error's end is not shown:\n%s", view)
		}
		if !c.whole && !strings.Contains(view, "…") {
			t.Errorf("a cut error does not say so:\n%s", view)
		}
		if !strings.Contains(lines[len(lines)-2], "watcher") && !strings.Contains(lines[len(lines)-2], "auto-sent") {
			t.Errorf("the status line moved: %q", lines[len(lines)-2])
		}
	}
}
