package tui

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"
	"github.com/charmbracelet/x/exp/teatest/v2"
)

// clock is a test clock that can be moved.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// TestApproveUndoWindow: approving counts down policy.approval_delay in
// the list, the detail and the note line, c cancels within it (the draft
// is back, unsent), and with a backend that leaves the send to the TUI
// (no watcher) the reply goes when the countdown ends, not before.
func TestApproveUndoWindow(t *testing.T) {
	t.Parallel()
	t.Run("cancel in the window", func(t *testing.T) {
		f := newFake(sampleQueue()...)
		c := &clock{t: fixedNow}
		m := newModel(t, senderBackend{f}, Options{Now: c.now})
		send(t, m, press("enter", "a")...)
		if m.tab != tabDetail {
			t.Fatalf("approve left the detail view for %v; the countdown belongs there", m.tab)
		}
		c.add(2 * time.Second)
		send(t, m, tickMsg(c.now()))
		view := m.View().Content
		for _, want := range []string{"approved: sending in 3s (c cancels)", `approved "Legal notice": sending in 3s, c cancels`, "c cancel"} {
			if !strings.Contains(view, want) {
				t.Fatalf("view lacks %q:\n%s", want, view)
			}
		}
		send(t, m, press("c")...)
		if calls := f.callsOf("Cancel"); len(calls) != 1 || calls[0].id != "high-new" {
			t.Fatalf("Cancel calls: got %+v, want one for high-new", calls)
		}
		c.add(10 * time.Second)
		send(t, m, tickMsg(c.now()))
		if n := len(f.callsOf("SendApproved")); n != 0 {
			t.Fatalf("a cancelled approval was sent (%d calls)", n)
		}
		if e := m.c.items["high-new"]; e.item.Status != StatusPending || !strings.Contains(m.c.note, "back in the queue") {
			t.Fatalf("after cancel: status %s, note %q; want pending and said so", e.item.Status, m.c.note)
		}
	})
	t.Run("sent when the window ends", func(t *testing.T) {
		f := newFake(sampleQueue()...)
		c := &clock{t: fixedNow}
		m := newModel(t, senderBackend{f}, Options{Now: c.now})
		send(t, m, press("a")...)
		for range 4 {
			c.add(time.Second)
			send(t, m, tickMsg(c.now()))
		}
		if n := len(f.callsOf("SendApproved")); n != 0 {
			t.Fatalf("sent %d times inside the undo window", n)
		}
		c.add(time.Second)
		send(t, m, tickMsg(c.now()))
		send(t, m, tickMsg(c.now()))
		if calls := f.callsOf("SendApproved"); len(calls) != 1 || calls[0].id != "high-new" {
			t.Fatalf("SendApproved calls: got %+v, want one for high-new when due", calls)
		}
		if slices.Contains(rowIDs(m, tabQueue), "high-new") {
			t.Fatalf("sent item still queued: %v", rowIDs(m, tabQueue))
		}
		if !strings.Contains(m.c.note, `sent "Legal notice"`) {
			t.Fatalf("note: got %q, want the send said", m.c.note)
		}
	})
	t.Run("too late after the window", func(t *testing.T) {
		f := newFake(sampleQueue()...)
		c := &clock{t: fixedNow}
		m := newModel(t, f, Options{Now: c.now})
		send(t, m, press("a")...)
		c.add(6 * time.Second)
		send(t, m, press("c")...)
		if n := len(f.callsOf("Cancel")); n != 0 || !m.c.noteErr || !strings.Contains(m.c.note, "too late") {
			t.Fatalf("cancel after the window: %d calls, note %q; want none and too late", n, m.c.note)
		}
	})
}

// stateItems is one item in each state the detail view must explain.
func stateItems() map[string]Item {
	base := func(id, kind, status string) Item {
		it := draft(id, "kim@example.com", "Budget for Q3", "medium", 40*time.Minute)
		it.Kind, it.Status = kind, status
		it.Cc = []Address{{Name: "Lee", Email: "lee@example.com"}}
		it.Comments = "asks a direct question about the budget; no commitment needed"
		it.Decision = "queue"
		it.Reasons = []string{"policy.mode is review"}
		it.MessageID = "<budget-1@example.com>"
		it.TraceID = "tr_0123456789abcdef"
		it.QueueID = "q_0123456789abcdef"
		it.Gates = []Gate{{Name: "sender_auth", Pass: true, Reason: "dmarc pass for example.com"},
			{Name: "policy_mode", Pass: false, Reason: "policy.mode is review: every reply is approved by you"}}
		return it
	}
	out := map[string]Item{}
	out["queued"] = base("queued", KindDraft, StatusPending)
	approved := base("approved", KindDraft, StatusApproved)
	approved.SendAt = fixedNow.Add(4 * time.Second)
	approved.OutboxID = "ob_aaaa"
	out["approved"] = approved
	sent := base("sent", KindSent, StatusSent)
	sent.ID, sent.QueueID, sent.OutboxID = "ob_bbbb", "", "ob_bbbb"
	sent.Decision, sent.Reasons = "auto_send", []string{"every gate passed"}
	sent.Gates = []Gate{{Name: "sender_auth", Pass: true, Reason: "dmarc pass for example.com"}, {Name: "known_contact", Pass: true, Reason: "you wrote to kim@example.com before"}}
	sent.SendAt = fixedNow.Add(-10 * time.Minute)
	sent.Draft = "Hi Kim,\nthe Q3 budget is in the shared folder.\nBest"
	out["sent_by_agent"] = sent
	cancelled := base("cancelled", KindDraft, StatusPending)
	cancelled.Decision, cancelled.Reasons = "auto_send", []string{"every gate passed", "auto-send cancelled by the owner"}
	cancelled.OutboxID = "ob_cccc"
	out["cancelled"] = cancelled
	failed := base("failed", KindDraft, StatusFailed)
	failed.Error = "smtp: 550 mailbox unavailable"
	out["failed"] = failed
	snoozed := base("snoozed", KindDraft, StatusSnoozed)
	snoozed.SnoozeUntil = fixedNow.Add(22 * time.Hour)
	out["snoozed"] = snoozed
	archived := base("msg:tr_arch", KindDecided, StatusDone)
	archived.From, archived.To, archived.Draft = Address{Name: "Shop", Email: "news@shop.example"}, nil, ""
	archived.Subject, archived.Intents, archived.Risk, archived.Confidence, archived.Summary, archived.Comments = "Spring sale: 20% off", nil, "", 0, "", ""
	archived.Cc, archived.MessageID = nil, "<sale-7@shop.example>"
	archived.Thread = []ThreadMessage{{From: archived.From, Date: archived.Received, Subject: archived.Subject, Text: "Everything 20% off until Sunday."}}
	archived.Decision, archived.Reasons, archived.Gates = "archive", []string{"automated mail is never answered: List-Unsubscribe"}, nil
	archived.QueueID = ""
	out["archived"] = archived
	return out
}

// TestDetailEveryState opens each state's item and checks that the detail
// has the same parts: recipients (a sent reply's never as From), thread,
// classification with rationale, every gate with its mark and reason, the
// text, and the ids explain takes. Then the frames are pinned at 80×24 and
// 160×45 (testdata/TestDetailEveryState/*; -update rewrites them).
func TestDetailEveryState(t *testing.T) {
	t.Parallel()
	states := stateItems()
	names := make([]string, 0, len(states))
	for n := range states {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, name := range names {
		it := states[name]
		t.Run("parts_"+name, func(t *testing.T) {
			m := newModel(t, newFake(it), Options{NoColor: true})
			m.openDetail(it.ID)
			text := ansi.Strip(m.detail.text(&m.c.items[it.ID].item))
			want := []string{"── Thread (1) ──", "── Classification ──", "Rationale:", "── Gates ──", "Subject:    Budget for Q3",
				"Message-ID: ", "Trace:      tr_0123456789abcdef  (mailagent explain tr_0123456789abcdef)", "Status:"}
			if name != "archived" {
				want = append(want, "Cc:         Lee <lee@example.com>", "✓ sender_auth: dmarc pass for example.com")
			}
			switch name {
			case "sent_by_agent":
				want = append(want, "Sent to:    kim@example.com", "Answering:  kim@example.com", "── Sent reply ──", "the Q3 budget is in the shared folder", "Ids:        ob_bbbb")
			case "archived":
				want = append(want, "From:       Shop <news@shop.example>", "Decision:   archive", "archived by the agent, without asking", "(no reply",
					"Message-ID: sale-7@shop.example", "(not classified: decided before any model call", "Reason:     automated mail is never answered")
			case "approved":
				want = append(want, "To:         kim@example.com", "sending in 4s (c cancels)", "✗ policy_mode: policy.mode is review")
			case "snoozed":
				want = append(want, "snoozed until", "u brings it back")
			case "failed":
				want = append(want, "Error:      smtp: 550 mailbox unavailable")
			case "cancelled":
				want = append(want, "Reason:     auto-send cancelled by the owner", "Ids:        q_0123456789abcdef, ob_cccc")
			}
			for _, w := range want {
				if name == "archived" && strings.HasPrefix(w, "Subject:") {
					continue
				}
				if !strings.Contains(text, w) {
					t.Errorf("detail of %s lacks %q:\n%s", name, w, text)
				}
			}
			if name == "sent_by_agent" && strings.Contains(text, "From:") {
				t.Errorf("a sent reply labels someone From:\n%s", text)
			}
		})
	}
	for _, size := range goldenSizes {
		for _, name := range names {
			it := states[name]
			t.Run(fmt.Sprintf("%s_%dx%d", name, size.w, size.h), func(t *testing.T) {
				m := New(newFake(it), Options{NoColor: true, Now: func() time.Time { return fixedNow }})
				t.Cleanup(m.c.close)
				h := &hook{ch: make(chan tea.Msg, 64)}
				tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(size.w, size.h), teatest.WithProgramOptions(watch(h.ch), tea.WithFPS(goldenFPS)))
				h.waitFor(t, "the initial load", func(msg tea.Msg) bool { _, ok := msg.(loadedMsg); return ok })
				var keys []string
				switch it.Kind {
				case KindSent:
					keys = []string{"4"}
				case KindDecided:
					keys = []string{"5"}
				case KindDraft:
					if it.Status == StatusFailed {
						keys = []string{"3"}
					}
				}
				for _, k := range press(append(keys, "enter")...) {
					tm.Send(k)
				}
				fm := finalModel(t, tm)
				if fm.tab != tabDetail || fm.detail.id != it.ID {
					t.Fatalf("detail of %s did not open (tab %v, id %q)", name, fm.tab, fm.detail.id)
				}
				got := fm.View().Content
				lines := strings.Split(got, "\n")
				if len(lines) != size.h {
					t.Errorf("frame height: got %d lines, want %d", len(lines), size.h)
				}
				for i, l := range lines {
					if w := ansi.StringWidth(l); w > size.w {
						t.Errorf("line %d: got %d cells, want at most %d: %q", i, w, size.w, l)
					}
				}
				golden.RequireEqual(t, got)
			})
		}
	}
}

// TestDecidedView lists what the agent decided without asking, and only
// that; nothing there can be approved or sent.
func TestDecidedView(t *testing.T) {
	t.Parallel()
	st := stateItems()
	notified := st["archived"]
	notified.ID, notified.Decision, notified.Subject = "msg:tr_note", "notify", "Office closed Friday"
	ignored := st["archived"]
	ignored.ID, ignored.Decision, ignored.Subject, ignored.Received = "msg:tr_ign", "ignore", "Out of office", fixedNow.Add(-2*time.Hour)
	f := newFake(append(sampleQueue(), st["archived"], notified, ignored, st["sent_by_agent"])...)
	m := newModel(t, f, Options{NoColor: true})
	send(t, m, press("5")...)
	if got, want := rowIDs(m, tabDecided), []string{"msg:tr_arch", "msg:tr_note", "msg:tr_ign"}; !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))) {
		t.Fatalf("decided rows: got %v, want %v", got, want)
	}
	view := m.View().Content
	for _, want := range []string{"DECISION", "archive", "notify", "ignore", "Spring sale", "automated mail is never answered", "5 Decided without asking (3)"} {
		if !strings.Contains(view, want) {
			t.Errorf("decided view lacks %q:\n%s", want, view)
		}
	}
	send(t, m, press("a", "e", "s")...)
	if n := len(f.callsOf("Approve")) + len(f.callsOf("Edit")) + len(f.callsOf("Snooze")); n != 0 {
		t.Fatalf("%d actions reached the backend from the decided view", n)
	}
	if last := view[strings.LastIndex(view, "\n")+1:]; strings.Contains(last, "approve") {
		t.Errorf("hint bar offers approve on a decided item: %q", last)
	}
}

// TestApproveWithWarningsAsks: a draft whose safety gates failed for a
// reason a person should weigh (Warnings) is not sent by "a" alone; the
// prompt names the gates, and only y + enter sends.
func TestApproveWithWarningsAsks(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		keys     []string
		wantSent bool
	}{{[]string{"y"}, true}, {[]string{"enter"}, false}, {[]string{"esc"}, false}, {[]string{"a", "enter"}, false}} {
		it := draft("risky", "bob@example.com", "Invoice overdue", "high", time.Hour)
		it.Warnings = []string{"never_auto: intent sensitive_legal_financial is in policy.never_auto"}
		f := newFake(it)
		m := newModel(t, f, Options{})
		send(t, m, press("a")...)
		want := "send although safety gate never_auto failed? y/N: "
		if m.mode() != modePrompt || m.c.prompt.input.Prompt != want {
			t.Fatalf("after a: mode %v prompt %q, want %q", m.mode(), m.c.prompt.input.Prompt, want)
		}
		send(t, m, press(tt.keys...)...)
		if sent := len(f.callsOf("Approve")) == 1; sent != tt.wantSent {
			t.Errorf("keys %v: sent %v, want %v", tt.keys, sent, tt.wantSent)
		}
	}
	// With a new recipient too, one question covers both.
	it := strangerDraft()
	it.Warnings = []string{"sender_auth: not authenticated", "output_guard: a new link"}
	m := newModel(t, newFake(it), Options{})
	send(t, m, press("a")...)
	if want := "send to a new address collect@evil.test, although safety gates sender_auth, output_guard failed? y/N: "; m.c.prompt.input.Prompt != want {
		t.Errorf("prompt: got %q, want %q", m.c.prompt.input.Prompt, want)
	}
}

// hostileDetailText is what each hostile field carries: an OSC title, a
// screen clear, a bidi override and a line break that would start a
// forged line of its own.
const hostileDetailText = "\x1b]0;pwned\a\x1b[2J\u202e\r\nFAKE: line"

// hostileDetailFields are the fields TestHostileFieldsInEveryDetail
// attacks, one attack each per kind that draws it (draftOnly: only a
// draft's send question draws it): the count comes from the table.
var hostileDetailFields = []struct {
	name      string
	set       func(*Item)
	draftOnly bool
}{
	{"Cc", func(it *Item) {
		it.Cc = []Address{{Name: hostileDetailText, Email: "cc" + hostileDetailText + "@example.com"}}
	}, false},
	{"MessageID", func(it *Item) { it.MessageID = hostileDetailText }, false},
	{"TraceID", func(it *Item) { it.TraceID = "tr_" + hostileDetailText }, false},
	{"QueueID", func(it *Item) { it.QueueID = "q_" + hostileDetailText }, false},
	{"OutboxID", func(it *Item) { it.OutboxID = "ob_" + hostileDetailText }, false},
	{"Decision", func(it *Item) { it.Decision = "archive" + hostileDetailText }, false},
	{"Reasons", func(it *Item) { it.Reasons = []string{hostileDetailText, "why" + hostileDetailText} }, false},
	{"Warnings", func(it *Item) { it.Warnings = []string{"gate" + hostileDetailText + ": reason" + hostileDetailText} }, true},
	{"Gates", func(it *Item) {
		it.Gates = []Gate{{Name: "g" + hostileDetailText, Pass: false, Reason: hostileDetailText}}
	}, false},
	{"Comments", func(it *Item) { it.Comments = hostileDetailText }, false},
	{"Error", func(it *Item) { it.Error = hostileDetailText }, false},
}

// hostileDetailKinds are the item kinds whose views are attacked, each
// with the key of its tab.
var hostileDetailKinds = []struct{ kind, tab string }{
	{KindDraft, "1"}, {KindSent, "4"}, {KindDecided, "5"}, {KindNotify, "3"}, {KindNeedsReview, "3"},
}

// hostileDetailFrames draws an item of kind with the fields picked by
// set hostile: its row, its detail (as text and in the frame) and, for a
// draft, the send question; it returns what of the hostile text reached
// them ("" when nothing did).
func hostileDetailFrames(t *testing.T, kind, tab string, set ...func(*Item)) string {
	t.Helper()
	it := draft("h-"+kind, "x@example.com", "hostile "+kind, "high", time.Hour)
	it.Kind = kind
	for _, s := range set {
		s(&it)
	}
	m := newModel(t, newFake(it), Options{NoColor: true, ASCII: true})
	send(t, m, press(tab)...)
	frames := []string{m.View().Content}
	send(t, m, press("enter")...)
	frames = append(frames, ansi.Strip(m.detail.text(&m.c.items[it.ID].item)), m.View().Content)
	var why []string
	if kind == KindDraft {
		// The prompt's own cursor is drawn in reverse video; the
		// question must carry nothing of the mail's.
		send(t, m, press("a")...)
		q := m.View().Content
		if strings.Contains(q, "\x1b]") || strings.Contains(q, "\x1b[2J") || strings.Contains(q, "\u202e") || strings.Contains(q, "\r") {
			why = append(why, fmt.Sprintf("the send question passes the mail's control characters:\n%q", q))
		}
	}
	for _, f := range frames {
		if strings.Contains(f, "\x1b") || strings.Contains(f, "\u202e") || strings.Contains(f, "\r") {
			why = append(why, fmt.Sprintf("a control or bidi character got through:\n%q", f))
		}
		for _, l := range strings.Split(f, "\n") {
			if strings.HasPrefix(strings.TrimSpace(l), "FAKE: line") {
				why = append(why, fmt.Sprintf("a field started a line of its own: %q", l))
			}
		}
	}
	return strings.Join(why, "\n")
}

// TestHostileFieldsInEveryDetail puts escape sequences, bidi overrides
// and line breaks in every field the new detail, the Decided view and
// the send question draw (Cc, ids, decision, reasons, warnings, gate
// names), for each kind; with colour off no frame may carry an ESC, and
// no field may add a line of its own. Each field of each kind that draws
// it is one attack, drawn alone; every field at once is drawn too, for
// each kind. Positive control: TestHostileFieldsInEveryDetailLandWithoutClean.
func TestHostileFieldsInEveryDetail(t *testing.T) {
	t.Parallel()
	tried, through := 0, 0
	for _, k := range hostileDetailKinds {
		all := make([]func(*Item), 0, len(hostileDetailFields))
		for _, f := range hostileDetailFields {
			all = append(all, f.set)
			if f.draftOnly && k.kind != KindDraft {
				continue
			}
			tried++
			if why := hostileDetailFrames(t, k.kind, k.tab, f.set); why != "" {
				through++
				t.Errorf("%s, %s: %s", k.kind, f.name, why)
			}
		}
		if why := hostileDetailFrames(t, k.kind, k.tab, all...); why != "" {
			t.Errorf("%s, every field at once: %s", k.kind, why)
		}
	}
	t.Logf("hostile fields: %d tried, %d got through", tried, through)
	if through != 0 {
		t.Fatalf("%d of %d hostile fields got through, want 0", through, tried)
	}
}

// TestHostileFieldsInEveryDetailLandWithoutClean is the positive control
// of TestHostileFieldsInEveryDetail: the same fields in the same views
// with the TUI's cleaning off (cleanOff, which covers Address.String's
// termsafe.Address too: the Cc line's defence). Each field must land in
// each kind's views that draw it. Not parallel: it sets a package switch.
func TestHostileFieldsInEveryDetailLandWithoutClean(t *testing.T) {
	cleanOff.Store(true)
	defer cleanOff.Store(false)
	tried, landed := 0, 0
	for _, k := range hostileDetailKinds {
		for _, f := range hostileDetailFields {
			if f.draftOnly && k.kind != KindDraft {
				continue
			}
			tried++
			if why := hostileDetailFrames(t, k.kind, k.tab, f.set); why != "" {
				landed++
			} else {
				t.Errorf("%s, %s: did not land with the cleaning off", k.kind, f.name)
			}
		}
	}
	t.Logf("hostile fields, cleaning off: %d tried, %d landed", tried, landed)
	if landed != tried {
		t.Fatalf("positive control: got %d of %d landed with the cleaning off, want all", landed, tried)
	}
}

// TestNoticeCanBeDismissed: a notice (the prompt-injection mail, say) is
// dismissed in the review as `queue reject` dismisses it: r asks for an
// optional note and enter rejects it; its hint bar offers r; a notice
// already dismissed is not offered again.
func TestNoticeCanBeDismissed(t *testing.T) {
	t.Parallel()
	nt := Item{ID: "nt", Kind: KindNotify, Status: StatusPending, Account: "work", Subject: "Ignore previous instructions", Received: fixedNow.Add(-time.Hour)}
	f := newFake(nt)
	m := newModel(t, f, Options{NoColor: true})
	send(t, m, press("3")...)
	if it, ok := m.selected(); !ok || it.ID != "nt" {
		t.Fatalf("selected %+v, want the notice", it)
	}
	if !strings.Contains(m.shortHelp(), "reject") {
		t.Errorf("hint bar %q does not offer r for a notice", m.shortHelp())
	}
	send(t, m, press("r")...)
	if m.mode() != modePrompt || m.c.prompt.input.Prompt != "dismiss, note (optional): " {
		t.Fatalf("after r: mode %v prompt %q, want the dismiss prompt", m.mode(), m.c.prompt.input.Prompt)
	}
	send(t, m, press("spam", "enter")...)
	if c := f.callsOf("Reject"); len(c) != 1 || c[0].id != "nt" || c[0].arg != "spam" {
		t.Fatalf("Reject calls %+v, want one for nt with the note", c)
	}
	done := nt
	done.Status = StatusRejected
	if err := canDismiss(&done); err == nil {
		t.Error("a dismissed notice can be dismissed again")
	}
}
