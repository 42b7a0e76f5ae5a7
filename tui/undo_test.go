package tui

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"
	"github.com/charmbracelet/x/exp/teatest/v2"
)

// undoFake is a backend with every kind of send the owner can start from
// the TUI: approve (fakeBackend), RSVP (inviteFake) and a follow-up
// nudge that queues a draft (FollowupNudge). local makes it leave the
// end of the undo window to the TUI (ApprovalSender), as review does
// with no watcher; window is the undo window every send gets.
type undoFake struct {
	inviteFake
	clock  func() time.Time
	window time.Duration
	nudged int
}

func newUndoFake(watcher bool, items ...Item) *undoFake {
	f := &undoFake{inviteFake: inviteFake{newFake(items...)}, clock: func() time.Time { return fixedNow }, window: 5 * time.Second}
	f.status.WatcherConnected = watcher
	return f
}

func (f *undoFake) startSend(id string) {
	f.update(id, func(it *Item) { it.Status, it.SendAt = StatusApproved, f.clock().Add(f.window) })
}

func (f *undoFake) Approve(ctx context.Context, id, final string) error {
	if err := f.record(call{method: "Approve", id: id, arg: final}); err != nil {
		return err
	}
	f.startSend(id)
	return nil
}

func (f *undoFake) RSVP(_ context.Context, id, answer string) error {
	if err := f.record(call{method: "RSVP", id: id, arg: answer}); err != nil {
		return err
	}
	f.startSend(id)
	return nil
}

// Cancel puts any approved item back as it was (the real backend's one
// call for every kind), an auto-send is dropped.
func (f *undoFake) Cancel(ctx context.Context, id string) error {
	if err := f.record(call{method: "Cancel", id: id}); err != nil {
		return err
	}
	f.update(id, func(it *Item) {
		if it.Kind == KindSent {
			it.Status = StatusRejected
		} else {
			it.Status = StatusPending
		}
		it.SendAt = time.Time{}
	})
	return nil
}

func (f *undoFake) Followups(context.Context) ([]Followup, error) {
	return []Followup{{ID: "fu_1", State: "awaiting_reply", With: "zed@example.com", Subject: "Quote", LastAt: fixedNow.Add(-72 * time.Hour), Deadline: fixedNow.Add(-time.Hour)}}, nil
}
func (f *undoFake) FollowupDone(context.Context, string) error              { return nil }
func (f *undoFake) FollowupSnooze(context.Context, string, time.Time) error { return nil }

// FollowupNudge queues a follow-up draft, as the agent does.
func (f *undoFake) FollowupNudge(_ context.Context, id string) (string, error) {
	if err := f.record(call{method: "FollowupNudge", id: id}); err != nil {
		return "", err
	}
	it := draft("q_nudge", "zed@example.com", "Re: Quote", "low", 0)
	it.Reasons = []string{"follow-up: no reply in 3 days"}
	f.mu.Lock()
	f.items = append(f.items, it)
	f.nudged++
	f.mu.Unlock()
	return it.ID, nil
}

// localUndoFake is an undoFake that leaves the send to the TUI.
type localUndoFake struct{ *undoFake }

func (s localUndoFake) SendApproved(_ context.Context, id string) error {
	if err := s.record(call{method: "SendApproved", id: id}); err != nil {
		return err
	}
	s.update(id, func(it *Item) { it.Status = StatusSent })
	return nil
}

// inviteDraft is a draft that also carries an invitation.
func inviteDraft() Item {
	it := draft("invd", "kim@example.com", "Invitation: Offsite", "low", 2*time.Minute)
	it.Invitation = "Offsite"
	return it
}

// sendKinds are the sends the owner starts from the TUI: the keys that
// start each and the item they start it on.
var sendKinds = []struct {
	name, id    string
	keys, again []string // again: the keys that start it a second time
}{
	{"draft approve", "low-new", []string{"a"}, []string{"a"}},
	{"rsvp on a notification", "inv", []string{"3", "A", "y"}, []string{"A", "y"}},
	{"rsvp on a draft", "invd", []string{"T", "y"}, []string{"T", "y"}},
	{"follow-up nudge", "q_nudge", []string{"F", "n", "q", "a"}, []string{"a"}},
}

// startKind runs the keys of one send kind; the cursor is put on its
// item first (the nudge's item exists only after n).
func startKind(t *testing.T, m *Model, id string, keys []string) {
	t.Helper()
	for _, k := range keys {
		if k == "a" || k == "A" || k == "T" {
			selectRow(t, m, id)
		}
		send(t, m, press(k)...)
	}
}

func selectRow(t *testing.T, m *Model, id string) {
	t.Helper()
	for _, tb := range listTabs {
		if i := slices.Index(rowIDs(m, tb), id); i >= 0 {
			m.tab = tb
			m.lists[tb].cursor = i
			return
		}
	}
	t.Fatalf("%s is in no list", id)
}

func undoItems() []Item {
	return append([]Item{invitationItem("Design review"), inviteDraft()}, sampleQueue()...)
}

// TestUndoWindowEveryKind: every send the owner starts from the TUI (a
// draft's approval, an RSVP on a notification or on a draft, the
// approval of a follow-up nudge's draft) shows the same countdown in the
// queue, the detail and the note line, and c cancels it in its window
// through the one Backend.Cancel, with a watcher and without one; the
// item comes back whole (kind, sender, gates, invitation) and nothing is
// sent, even after the window. Without a watcher, an uncancelled send
// goes exactly once when its window ends, not before.
func TestUndoWindowEveryKind(t *testing.T) {
	t.Parallel()
	for _, watcher := range []bool{true, false} {
		for _, k := range sendKinds {
			t.Run(fmt.Sprintf("%s/watcher=%v", k.name, watcher), func(t *testing.T) {
				f := newUndoFake(watcher, undoItems()...)
				c := &clock{t: fixedNow}
				f.clock = c.now
				var b Backend = f
				if !watcher {
					b = localUndoFake{f}
				}
				m := newModel(t, b, Options{NoColor: true, Now: c.now})
				startKind(t, m, k.id, k.keys)
				before := *itemByID(t, f, k.id)
				if before.Status != StatusApproved {
					t.Fatalf("%s: backend item %s, want approved (keys %v)", k.name, before.Status, k.keys)
				}
				c.add(2 * time.Second)
				send(t, m, tickMsg(c.now()))

				// The same countdown everywhere. It stays in the list it was
				// started from: drafts in the queue, a notification in Needs
				// attention.
				home := tabQueue
				if before.Kind == KindNotify {
					home = tabAttention
				}
				if !slices.Contains(rowIDs(m, home), k.id) {
					t.Fatalf("the send is not in view %d during its window: %v", home+1, rowIDs(m, home))
				}
				if note := m.renderNote(); !strings.Contains(note, "sending in 3s, c cancels") {
					t.Errorf("note line %q, want the countdown and c", note)
				}
				m.openDetail(k.id)
				if got := ansi.Strip(m.detail.text(&m.c.items[k.id].item)); !strings.Contains(got, "sending in 3s (c cancels)") {
					t.Errorf("detail lacks the countdown:\n%s", got)
				}
				m.switchTab(home)
				if list := ansi.Strip(m.View().Content); !strings.Contains(list, "(sending in 3s)") {
					t.Errorf("view %d lacks the countdown:\n%s", home+1, list)
				}
				selectRow(t, m, k.id)
				if h := m.shortHelp(); !strings.Contains(h, "c cancel") || strings.Contains(h, "approve") {
					t.Errorf("hint bar on the waiting send: %q, want c offered and approve not", h)
				}

				// c cancels it, wherever the cursor is while the note line
				// says "c cancels": the one Backend call, the item back
				// whole.
				m.switchTab(tabSent) // nothing there to cancel
				send(t, m, press("c")...)
				if calls := f.callsOf("Cancel"); len(calls) != 1 || calls[0].id != k.id {
					t.Fatalf("Cancel calls %+v, want one for %s", calls, k.id)
				}
				after := m.c.items[k.id].item
				if after.Status != StatusPending || after.Kind != before.Kind || after.From != before.From ||
					after.Invitation != before.Invitation || !slices.Equal(after.Gates, before.Gates) || !after.SendAt.IsZero() {
					t.Errorf("after cancel: %+v\nwant %+v back pending", after, before)
				}
				if !strings.Contains(m.c.note, "not sent") {
					t.Errorf("note after cancel %q, want \"not sent\"", m.c.note)
				}
				c.add(10 * time.Second)
				send(t, m, tickMsg(c.now()))
				if n := len(f.callsOf("SendApproved")); n != 0 {
					t.Fatalf("a cancelled send was sent (%d calls)", n)
				}

				if watcher {
					return
				}
				// Started again and left alone: sent once, when due.
				c.t = fixedNow
				startKind(t, m, k.id, k.again)
				for range 4 {
					c.add(time.Second)
					send(t, m, tickMsg(c.now()))
				}
				if n := len(f.callsOf("SendApproved")); n != 0 {
					t.Fatalf("sent %d times inside the window", n)
				}
				c.add(2 * time.Second)
				send(t, m, tickMsg(c.now()), tickMsg(c.now()))
				if calls := f.callsOf("SendApproved"); len(calls) != 1 || calls[0].id != k.id {
					t.Fatalf("SendApproved calls %+v, want one for %s", calls, k.id)
				}
			})
		}
	}
}

func itemByID(t *testing.T, f *undoFake, id string) *Item {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range f.items {
		if f.items[i].ID == id {
			it := f.items[i]
			return &it
		}
	}
	t.Fatalf("no item %s in the backend", id)
	return nil
}

// quitted reports whether the model ended its program.
func quitted(m *Model) bool { return m.c.ctx.Err() != nil }

// TestQuitWithLocalSends: with no watcher, q during an undo window never
// leaves a send approved and unsent. q keeps the TUI open with
// "sending in Ns… (c cancel, q again to quit and cancel)" and quits by
// itself once the send is out; q again cancels (nothing sent) and quits;
// c cancels and stays; esc stays and lets it go; a failed send stops the
// quit and shows why. With a watcher q quits at once.
func TestQuitWithLocalSends(t *testing.T) {
	t.Parallel()
	setup := func(t *testing.T) (*undoFake, *clock, *Model) {
		f := newUndoFake(false, undoItems()...)
		c := &clock{t: fixedNow}
		f.clock = c.now
		m := newModel(t, localUndoFake{f}, Options{NoColor: true, Now: c.now})
		send(t, m, tea.WindowSizeMsg{Width: 80, Height: 24})
		startKind(t, m, "low-new", []string{"a"})
		return f, c, m
	}
	q := func(t *testing.T, m *Model) { send(t, m, press("q")...) }

	t.Run("q waits, sends, then quits", func(t *testing.T) {
		f, c, m := setup(t)
		q(t, m)
		if quitted(m) {
			t.Fatal("q quit with a send waiting for this process")
		}
		want := `"Lunch on Friday" sending in 5s… (c cancel, q again to quit and cancel)`
		if note := m.renderNote(); !strings.Contains(note, want) {
			t.Fatalf("note line %q, want %q", note, want)
		}
		c.add(3 * time.Second)
		send(t, m, tickMsg(c.now()))
		if quitted(m) || len(f.callsOf("SendApproved")) != 0 || !strings.Contains(m.renderNote(), "sending in 2s…") {
			t.Fatalf("inside the window: quit %v, sends %v, note %q", quitted(m), f.callsOf("SendApproved"), m.renderNote())
		}
		c.add(3 * time.Second)
		send(t, m, tickMsg(c.now()))
		if calls := f.callsOf("SendApproved"); len(calls) != 1 || calls[0].id != "low-new" {
			t.Fatalf("SendApproved calls %+v, want one", calls)
		}
		if !quitted(m) {
			t.Fatal("the send went out, yet the TUI did not quit")
		}
		if n := len(f.callsOf("Cancel")); n != 0 {
			t.Errorf("%d cancels on the way out", n)
		}
	})
	t.Run("q again cancels and quits", func(t *testing.T) {
		f, c, m := setup(t)
		q(t, m)
		q(t, m)
		if calls := f.callsOf("Cancel"); len(calls) != 1 || calls[0].id != "low-new" {
			t.Fatalf("Cancel calls %+v, want one for low-new", calls)
		}
		if !quitted(m) {
			t.Fatal("q again did not quit once the send was cancelled")
		}
		c.add(time.Minute)
		send(t, m, tickMsg(c.now()))
		if n := len(f.callsOf("SendApproved")); n != 0 {
			t.Fatalf("sent %d after quit-and-cancel", n)
		}
		if it := itemByID(t, f, "low-new"); it.Status != StatusPending {
			t.Errorf("after quit-and-cancel the item is %s, want pending", it.Status)
		}
	})
	t.Run("ctrl+c is q", func(t *testing.T) {
		f, _, m := setup(t)
		send(t, m, press("ctrl+c")...)
		if quitted(m) || !strings.Contains(m.renderNote(), "q again to quit and cancel") {
			t.Fatalf("ctrl+c with a send waiting: quit %v, note %q", quitted(m), m.renderNote())
		}
		send(t, m, press("ctrl+c")...)
		if !quitted(m) || len(f.callsOf("Cancel")) != 1 {
			t.Fatalf("second ctrl+c: quit %v, cancels %v", quitted(m), f.callsOf("Cancel"))
		}
	})
	t.Run("c cancels and stays", func(t *testing.T) {
		f, c, m := setup(t)
		send(t, m, press("j", "j")...) // the cursor elsewhere: c is about the waiting send
		q(t, m)
		send(t, m, press("c")...)
		if calls := f.callsOf("Cancel"); len(calls) != 1 || calls[0].id != "low-new" {
			t.Fatalf("Cancel calls %+v, want one for low-new", calls)
		}
		c.add(time.Minute)
		send(t, m, tickMsg(c.now()))
		if quitted(m) || len(f.callsOf("SendApproved")) != 0 {
			t.Fatalf("after c: quit %v, sends %v; want open and nothing sent", quitted(m), f.callsOf("SendApproved"))
		}
		q(t, m)
		if !quitted(m) {
			t.Fatal("nothing waits any more, yet q did not quit")
		}
	})
	t.Run("esc stays and lets it go", func(t *testing.T) {
		f, c, m := setup(t)
		q(t, m)
		send(t, m, press("esc")...)
		c.add(6 * time.Second)
		send(t, m, tickMsg(c.now()))
		if quitted(m) || len(f.callsOf("SendApproved")) != 1 {
			t.Fatalf("after esc: quit %v, sends %v; want open and sent", quitted(m), f.callsOf("SendApproved"))
		}
	})
	t.Run("a failed send stops the quit", func(t *testing.T) {
		f, c, m := setup(t)
		f.errs["SendApproved"] = errors.New("smtp: 451 try later")
		q(t, m)
		c.add(6 * time.Second)
		send(t, m, tickMsg(c.now()))
		if quitted(m) || !m.c.noteErr || !strings.Contains(m.c.note, "451") {
			t.Fatalf("failed send while quitting: quit %v, note %q; want open and the error shown", quitted(m), m.c.note)
		}
	})
	t.Run("an answered invitation waits too", func(t *testing.T) {
		f := newUndoFake(false, undoItems()...)
		m := newModel(t, localUndoFake{f}, Options{NoColor: true})
		startKind(t, m, "inv", []string{"3", "A", "y"})
		q(t, m)
		if quitted(m) || !strings.Contains(m.renderNote(), "q again to quit and cancel") {
			t.Fatalf("q with an RSVP waiting: quit %v, note %q", quitted(m), m.renderNote())
		}
		q(t, m)
		if calls := f.callsOf("Cancel"); !quitted(m) || len(calls) != 1 || calls[0].id != "inv" {
			t.Fatalf("q again: quit %v, cancels %+v; want inv cancelled", quitted(m), calls)
		}
	})
	t.Run("a hostile subject stays text", func(t *testing.T) {
		it := draft("evil", "mal@example.com", "Hi\x1b]0;pwned\a\x1b[2J\u202eexe.txt\r\nFAKE: sent", "high", time.Minute)
		f := newUndoFake(false, it)
		m := newModel(t, localUndoFake{f}, Options{NoColor: true})
		send(t, m, tea.WindowSizeMsg{Width: 160, Height: 24})
		startKind(t, m, "evil", []string{"a"})
		q(t, m)
		note := m.renderNote()
		if strings.ContainsAny(note, "\x1b\a\u202e\r\n") || !strings.Contains(note, "q again to quit and cancel") {
			t.Fatalf("quit line with a hostile subject: %q", note)
		}
	})
	t.Run("with a watcher q quits at once", func(t *testing.T) {
		f := newUndoFake(true, undoItems()...)
		m := newModel(t, localUndoFake{f}, Options{NoColor: true})
		startKind(t, m, "low-new", []string{"a"})
		q(t, m)
		if !quitted(m) || len(f.callsOf("Cancel")) != 0 {
			t.Fatalf("with a watcher: quit %v, cancels %v; want a plain quit", quitted(m), f.callsOf("Cancel"))
		}
	})
	t.Run("ended from outside: the waiting send is cancelled", func(t *testing.T) {
		f, _, m := setup(t)
		m.c.close() // a signal ended Run's context
		if err := m.cancelLeft(context.Background()); err != nil {
			t.Fatal(err)
		}
		if calls := f.callsOf("Cancel"); len(calls) != 1 || calls[0].id != "low-new" {
			t.Fatalf("Cancel calls %+v, want low-new cancelled", calls)
		}
		g, _, m2 := setup(t)
		g.errs["Cancel"] = errors.New("too late: it is sending")
		err := m2.cancelLeft(context.Background())
		if err == nil || !strings.Contains(err.Error(), `"Lunch on Friday"`) || !strings.Contains(err.Error(), "too late") {
			t.Fatalf("a failed cancel on the way out: %v, want it said with the subject", err)
		}
	})
}

// slowSender sends like localUndoFake but with the real clock and a
// one-second window, for the real program loop.
type slowSender struct {
	*undoFake
	sent chan string
}

func (s slowSender) SendApproved(_ context.Context, id string) error {
	if err := s.record(call{method: "SendApproved", id: id}); err != nil {
		return err
	}
	s.update(id, func(it *Item) { it.Status = StatusSent })
	s.sent <- id
	return nil
}

// TestProgramQuitWaitsForSend drives the real program loop (teatest, real
// ticks): approve, q, and the program says it is sending, sends when the
// window ends and exits by itself.
func TestProgramQuitWaitsForSend(t *testing.T) {
	t.Parallel()
	f := newUndoFake(false, sampleQueue()...)
	f.clock, f.window = time.Now, 1500*time.Millisecond
	b := slowSender{undoFake: f, sent: make(chan string, 1)}
	m := New(b, Options{NoColor: true})
	t.Cleanup(m.c.close)
	h := &hook{ch: make(chan tea.Msg, 64)}
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(80, 24), teatest.WithProgramOptions(watch(h.ch)))
	h.waitFor(t, "the initial load", func(msg tea.Msg) bool { _, ok := msg.(loadedMsg); return ok })
	tm.Send(press("a")[0])
	h.waitFor(t, "the approval", func(msg tea.Msg) bool { a, ok := msg.(actionMsg); return ok && a.action == "approve" })
	tm.Send(press("q")[0])
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool {
		return strings.Contains(string(b), "q again to quit and cancel")
	}, teatest.WithDuration(5*time.Second))
	select {
	case id := <-b.sent:
		if id != "high-new" {
			t.Fatalf("sent %s, want high-new", id)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the approval was never sent")
	}
	tm.WaitFinished(t, teatest.WithFinalTimeout(10*time.Second))
	if n := len(f.callsOf("Cancel")); n != 0 {
		t.Errorf("%d cancels", n)
	}
}

// TestTabBarSelectedWhole: at 60, 80 and 160 columns, whichever view is
// selected, its tab label is whole (title and count), every tab keeps
// its number, nothing is cut with an ellipsis, and the bar fits. The
// bars are kept in testdata/TestTabBarSelectedWhole (-update rewrites).
func TestTabBarSelectedWhole(t *testing.T) {
	t.Parallel()
	for _, size := range []struct{ w, h int }{{60, 20}, {80, 24}, {160, 45}} {
		t.Run(fmt.Sprintf("%dx%d", size.w, size.h), func(t *testing.T) {
			m := newModel(t, newFake(append(goldenItems(), decidedItems()...)...), Options{NoColor: true})
			send(t, m, tea.WindowSizeMsg{Width: size.w, Height: size.h})
			var bars []string
			for n := range numTabs {
				send(t, m, press(fmt.Sprint(int(n)+1))...)
				bar := strings.Split(m.View().Content, "\n")[0]
				bars = append(bars, bar)
				whole := fmt.Sprintf("[%d %s", n+1, tabShort[n])
				if size.w >= 160 {
					whole = fmt.Sprintf("[%d %s", n+1, tabTitles[n])
				}
				if n != tabDetail {
					whole += fmt.Sprintf(" (%d)]", len(m.lists[n].rows))
				}
				if !strings.Contains(bar, whole) {
					t.Errorf("view %d: bar %q lacks the whole label %q", n+1, bar, whole)
				}
				if strings.Contains(bar, "…") || ansi.StringWidth(bar) > size.w {
					t.Errorf("view %d: bar %q cut or wider than %d", n+1, bar, size.w)
				}
				for k := 1; k <= int(numTabs); k++ {
					if !strings.Contains(bar, fmt.Sprint(k)) {
						t.Errorf("view %d: bar %q lost tab %d", n+1, bar, k)
					}
				}
			}
			golden.RequireEqual(t, strings.Join(bars, "\n")+"\n")
		})
	}
}

// TestGoldenQuitLine: the line shown while a quit waits for a send fits
// 60, 80 and 160 columns, the keys always whole.
func TestGoldenQuitLine(t *testing.T) {
	t.Parallel()
	for _, size := range []struct{ w, h int }{{60, 20}, {80, 24}, {160, 45}} {
		t.Run(fmt.Sprintf("%dx%d", size.w, size.h), func(t *testing.T) {
			f := newUndoFake(false, undoItems()...)
			m := newModel(t, localUndoFake{f}, Options{NoColor: true})
			send(t, m, tea.WindowSizeMsg{Width: size.w, Height: size.h})
			startKind(t, m, "low-new", []string{"a"})
			send(t, m, press("q")...)
			frame := m.View().Content
			if !strings.Contains(frame, "sending in 5s… (c cancel, q again to quit and cancel)") {
				t.Errorf("frame lacks the whole quit line:\n%s", frame)
			}
			for i, l := range strings.Split(frame, "\n") {
				if w := ansi.StringWidth(l); w > size.w {
					t.Errorf("line %d: %d cells > %d: %q", i, w, size.w, l)
				}
			}
			golden.RequireEqual(t, frame)
		})
	}
}
