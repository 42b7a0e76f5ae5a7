package tui

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"
	"github.com/charmbracelet/x/exp/teatest/v2"
)

// inviteFake answers invitations like the review backend: the answer
// goes out through the outbox, so the item turns approved (undo window).
type inviteFake struct{ *fakeBackend }

func (f inviteFake) RSVP(_ context.Context, id, answer string) error {
	if err := f.record(call{method: "RSVP", id: id, arg: answer}); err != nil {
		return err
	}
	f.update(id, func(it *Item) { it.Status, it.SendAt = StatusApproved, fixedNow.Add(5*time.Second) })
	return nil
}

// invitationItem is a notification carrying a calendar invitation: the
// only row of the Needs attention view (3).
func invitationItem(title string) Item {
	it := Item{ID: "inv", Kind: KindNotify, Status: StatusPending, Account: "work", Received: fixedNow.Add(-time.Minute),
		From: Address{Name: "Ann", Email: "ann@example.com"}, Subject: "Invitation: Design review", Risk: "low", Confidence: 0.9,
		Summary: "an invitation to a design review", Invitation: title,
		Reasons: []string{"invitation REQUEST: " + title, "organizer ann@example.com (verified)", "when Tue 03 Mar 2026 14:00 UTC – 15:00 UTC (UTC)"}}
	return it
}

const rsvpHint = "accept invitation"

// TestRSVPKeysOnlyOnInvitations: A, D and T are offered (hint bar, help
// overlay) and act only on an item carrying an invitation still open, and
// only with a backend that can answer; elsewhere they do nothing at all.
func TestRSVPKeysOnlyOnInvitations(t *testing.T) {
	t.Parallel()
	f := inviteFake{newFake(append([]Item{invitationItem("Design review")}, sampleQueue()...)...)}
	m := newModel(t, f, Options{NoColor: true})
	send(t, m, press("3")...)
	if it, _ := m.selected(); it == nil || it.ID != "inv" {
		t.Fatalf("selected %v, want the invitation", it)
	}
	for _, want := range []string{"A accept invitation", "D decline invitation", "T tentative"} {
		if !strings.Contains(m.shortHelp(), want) {
			t.Errorf("hint bar on an invitation lacks %q: %q", want, m.shortHelp())
		}
	}
	send(t, m, press("?")...)
	if help := strings.Join(m.help.full(), "\n"); !strings.Contains(help, rsvpHint) {
		t.Errorf("help overlay with an Inviter lacks %q:\n%s", rsvpHint, help)
	}
	send(t, m, press("?")...)

	// A draft with no invitation: nothing offered, the keys do nothing.
	send(t, m, press("1")...)
	if it, _ := m.selected(); it == nil || it.Invitation != "" {
		t.Fatalf("selected %v, want a plain draft", it)
	}
	if h := m.shortHelp(); strings.Contains(h, rsvpHint) || strings.Contains(h, "tentative") {
		t.Errorf("hint bar offers RSVP on a plain draft: %q", h)
	}
	send(t, m, press("A", "D", "T")...)
	if m.mode() != modeNormal {
		t.Errorf("RSVP key on a plain draft opened a prompt %q", m.c.prompt.input.Prompt)
	}
	if c := f.callsOf("RSVP"); len(c) != 0 {
		t.Errorf("RSVP called on a plain draft: %v", c)
	}

	// An invitation already answered (approved, in its undo window).
	f.update("inv", func(it *Item) { it.Status = StatusApproved })
	send(t, m, loadCmd(m.c.ctx, f)())
	send(t, m, press("3")...)
	// It stays where it was answered, counting down its REPLY.
	if it, _ := m.selected(); it == nil || it.ID != "inv" || it.Status != StatusApproved {
		t.Fatalf("selected %v, want the answered invitation still in Needs attention", it)
	}
	if strings.Contains(m.shortHelp(), rsvpHint) {
		t.Errorf("hint bar offers RSVP on an answered invitation in the list: %q", m.shortHelp())
	}
	m.openDetail("inv")
	if it, _ := m.selected(); it == nil || it.ID != "inv" {
		t.Fatalf("detail shows %v, want the invitation", it)
	}
	if strings.Contains(m.shortHelp(), rsvpHint) {
		t.Errorf("hint bar offers RSVP on an answered invitation: %q", m.shortHelp())
	}
	send(t, m, press("A")...)
	if m.mode() != modeNormal || len(f.callsOf("RSVP")) != 0 {
		t.Errorf("A on an answered invitation: mode %v, calls %v", m.mode(), f.callsOf("RSVP"))
	}

	// A backend that cannot answer: never offered, never in the overlay.
	plain := newFake(invitationItem("Design review"))
	pm := newModel(t, plain, Options{NoColor: true})
	send(t, pm, press("3")...)
	if strings.Contains(pm.shortHelp(), rsvpHint) {
		t.Errorf("hint bar offers RSVP without an Inviter: %q", pm.shortHelp())
	}
	send(t, pm, press("?")...)
	if help := strings.Join(pm.help.full(), "\n"); strings.Contains(help, rsvpHint) {
		t.Errorf("help overlay lists RSVP without an Inviter:\n%s", help)
	}
	send(t, pm, press("?", "A")...)
	if pm.mode() != modeNormal {
		t.Errorf("A without an Inviter opened a prompt %q", pm.c.prompt.input.Prompt)
	}
}

// TestRSVPConfirmsAndSendsTheAnswer: each key asks y/N first; anything but
// y sends nothing; y gives the backend exactly the answer of the key, and
// the note line says what happened.
func TestRSVPConfirmsAndSendsTheAnswer(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ key, answer, verb string }{
		{"A", "accept", "accept the invitation"},
		{"D", "decline", "decline the invitation"},
		{"T", "tentative", "answer tentative to the invitation"},
	} {
		t.Run(tc.answer, func(t *testing.T) {
			f := inviteFake{newFake(append([]Item{invitationItem("Design review")}, sampleQueue()...)...)}
			m := newModel(t, f, Options{NoColor: true})
			send(t, m, press("3", tc.key)...)
			if m.mode() != modePrompt || !strings.Contains(m.c.prompt.input.Prompt, tc.verb) || !strings.HasSuffix(m.c.prompt.input.Prompt, "y/N: ") {
				t.Fatalf("after %s: mode %v prompt %q, want a y/N question with %q", tc.key, m.mode(), m.c.prompt.input.Prompt, tc.verb)
			}
			send(t, m, press("n")...)
			if c := f.callsOf("RSVP"); len(c) != 0 {
				t.Fatalf("answered n, yet RSVP was called: %v", c)
			}
			if m.c.note != "not sent" {
				t.Errorf("note after n: %q, want \"not sent\"", m.c.note)
			}
			send(t, m, press(tc.key)...)
			send(t, m, press("esc")...)
			if c := f.callsOf("RSVP"); len(c) != 0 {
				t.Fatalf("esc, yet RSVP was called: %v", c)
			}
			send(t, m, press(tc.key, "y")...)
			c := f.callsOf("RSVP")
			if len(c) != 1 || c[0].id != "inv" || c[0].arg != tc.answer {
				t.Fatalf("RSVP calls %+v, want one for inv with %q", c, tc.answer)
			}
			// The note line counts the REPLY's undo window down, as for
			// an approval, and says how to cancel it.
			if note := m.renderNote(); m.c.noteErr || !strings.Contains(note, "answered "+tc.answer+` to "Invitation: Design review": sending in 5s, c cancels`) {
				t.Errorf("note after y: %q (err %v), want the answer and its countdown", note, m.c.noteErr)
			}
			// The item was read again: answered, it left Needs attention.
			if e, ok := m.c.items["inv"]; !ok || e.item.Status != StatusApproved {
				t.Errorf("after the answer, inv is %+v, want approved", e.item)
			}
			if strings.Contains(m.shortHelp(), rsvpHint) {
				t.Errorf("hint bar still offers RSVP after the answer: %q", m.shortHelp())
			}
		})
	}
}

// TestRSVPErrorShown: a refused answer (an unverified organizer) shows the
// backend's reason as an error and leaves the item open to answer again.
func TestRSVPErrorShown(t *testing.T) {
	t.Parallel()
	f := inviteFake{newFake(invitationItem("Design review"))}
	f.errs["RSVP"] = errors.New("organizer not verified: organizer is not the authenticated sender")
	m := newModel(t, f, Options{NoColor: true})
	send(t, m, press("3", "enter")...) // from the detail view too
	if m.tab != tabDetail || !strings.Contains(m.shortHelp(), rsvpHint) {
		t.Fatalf("detail of the invitation: tab %v, hint %q", m.tab, m.shortHelp())
	}
	send(t, m, press("D", "y")...)
	if !m.c.noteErr || !strings.Contains(m.c.note, "organizer is not the authenticated sender") || !strings.Contains(m.c.note, "decline") {
		t.Errorf("note after a refused answer: %q (err %v)", m.c.note, m.c.noteErr)
	}
	if it, _ := m.selected(); it == nil || it.Status != StatusPending {
		t.Errorf("after a refused answer the item is %+v, want it pending", it)
	}
	if _, busy := m.c.busy["inv"]; busy {
		t.Error("item still marked busy after the failure")
	}
}

// hostileTitles are invitation titles (the organizer writes them) that
// would drive the terminal from the RSVP question or the frame behind it.
var hostileTitles = []struct{ name, title string }{
	{"osc title", "Sync\x1b]0;pwned\x07"},
	{"csi clear", "Sync\x1b[2J"},
	{"bidi override", "Sync \u202egnp.exe"},
	{"all three", "Sync\x1b]0;pwned\x07\x1b[2J \u202egnp.exe"},
}

// rsvpHostileTitles asks to accept an invitation with each hostile title
// and returns, per title, what of it reached the prompt or, after esc,
// the frame ("" when nothing did).
func rsvpHostileTitles(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, h := range hostileTitles {
		f := inviteFake{newFake(invitationItem(h.title))}
		m := newModel(t, f, Options{NoColor: true})
		send(t, m, press("3", "A")...)
		var why []string
		if p := m.c.prompt.input.Prompt; strings.ContainsAny(p, "\x1b\x07\u202e") || !strings.Contains(p, "Sync") {
			why = append(why, fmt.Sprintf("prompt carries hostile text: %q", p))
		}
		send(t, m, press("esc")...)
		if got := m.View().Content; strings.Contains(got, "\x1b]0;pwned") || strings.Contains(got, "\u202e") || strings.ContainsFunc(cursorSGR.Replace(got), forbidden) {
			why = append(why, fmt.Sprintf("frame carries hostile text: %q", got))
		}
		out = append(out, strings.Join(why, "; "))
	}
	return out
}

// TestRSVPHostileTitle: an invitation title with escape sequences and a
// bidi override never reaches the confirmation prompt as it is, nor the
// frame. Positive control: TestRSVPHostileTitleLandsWithoutClean.
func TestRSVPHostileTitle(t *testing.T) {
	t.Parallel()
	got := rsvpHostileTitles(t)
	through := 0
	for i, h := range hostileTitles {
		if got[i] != "" {
			through++
			t.Errorf("%s: %s", h.name, got[i])
		}
	}
	t.Logf("hostile invitation titles: %d tried, %d through", len(hostileTitles), through)
	if through != 0 {
		t.Fatalf("%d of %d hostile titles got through, want 0", through, len(hostileTitles))
	}
}

// TestRSVPHostileTitleLandsWithoutClean is the positive control of
// TestRSVPHostileTitle: the same titles in the same question with the
// TUI's cleaning off (cleanOff). Every one must reach the prompt or the
// frame. Not parallel: it sets a package switch.
func TestRSVPHostileTitleLandsWithoutClean(t *testing.T) {
	cleanOff.Store(true)
	defer cleanOff.Store(false)
	got := rsvpHostileTitles(t)
	landed := 0
	for i, h := range hostileTitles {
		if got[i] != "" {
			landed++
		} else {
			t.Errorf("%s: did not land with the cleaning off", h.name)
		}
	}
	t.Logf("hostile invitation titles, cleaning off: %d tried, %d landed", len(hostileTitles), landed)
	if landed != len(hostileTitles) {
		t.Fatalf("positive control: got %d of %d landed with the cleaning off, want all", landed, len(hostileTitles))
	}
}

// TestGoldenInvitation renders Needs attention, the detail of an invitation
// and the help overlay
// with an Inviter backend at 80×24 and 160×45: A, D and T are offered
// there (testdata/TestGoldenInvitation/*; -update rewrites them).
func TestGoldenInvitation(t *testing.T) {
	t.Parallel()
	for _, size := range goldenSizes {
		for _, v := range []struct {
			name string
			keys []string
		}{{"needs_attention", []string{"3"}}, {"detail", []string{"3", "enter"}}, {"help_overlay", []string{"3", "?"}}} {
			t.Run(fmt.Sprintf("%s_%dx%d", v.name, size.w, size.h), func(t *testing.T) {
				f := inviteFake{newFake(append([]Item{invitationItem("Design review")}, sampleQueue()...)...)}
				m := New(f, Options{NoColor: true, Now: func() time.Time { return fixedNow }})
				t.Cleanup(m.c.close)
				h := &hook{ch: make(chan tea.Msg, 64)}
				tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(size.w, size.h), teatest.WithProgramOptions(watch(h.ch), tea.WithFPS(goldenFPS)))
				h.waitFor(t, "the initial load", func(msg tea.Msg) bool { _, ok := msg.(loadedMsg); return ok })
				for _, k := range press(v.keys...) {
					tm.Send(k)
				}
				got := finalModel(t, tm).View().Content
				lines := strings.Split(got, "\n")
				if len(lines) != size.h {
					t.Errorf("frame height: got %d lines, want %d", len(lines), size.h)
				}
				for i, l := range lines {
					if w := ansi.StringWidth(l); w > size.w {
						t.Errorf("line %d: got %d cells, want at most %d: %q", i, w, size.w, l)
					}
				}
				if !strings.Contains(got, "accept") {
					t.Errorf("frame does not offer accept:\n%s", got)
				}
				golden.RequireEqual(t, got)
			})
		}
	}
}

// senderInviteFake answers invitations and leaves the end of the undo
// window to the TUI, as the review command does with no watcher.
type senderInviteFake struct{ inviteFake }

func (s senderInviteFake) SendApproved(_ context.Context, id string) error {
	if err := s.record(call{method: "SendApproved", id: id}); err != nil {
		return err
	}
	s.update(id, func(it *Item) { it.Status = StatusSent })
	return nil
}

// TestRSVPNotificationSentAfterWindow: with no watcher, the REPLY to an
// invitation that came as a notification (not a draft) is sent by the
// TUI once its undo window ends, like an approved draft.
func TestRSVPNotificationSentAfterWindow(t *testing.T) {
	t.Parallel()
	now := fixedNow
	f := senderInviteFake{inviteFake{newFake(invitationItem("Design review"))}}
	f.status.WatcherConnected = false
	m := newModel(t, f, Options{NoColor: true, Now: func() time.Time { return now }})
	send(t, m, press("3", "T", "y")...)
	if c := f.callsOf("RSVP"); len(c) != 1 || c[0].arg != "tentative" {
		t.Fatalf("RSVP calls %+v, want one tentative", c)
	}
	run(t, m, m.sendDue())
	if c := f.callsOf("SendApproved"); len(c) != 0 {
		t.Fatalf("sent inside the undo window: %v", c)
	}
	if n := m.waitingLocally(); n != 1 {
		t.Errorf("waitingLocally = %d, want the answered invitation counted", n)
	}
	now = fixedNow.Add(6 * time.Second)
	run(t, m, m.sendDue())
	if c := f.callsOf("SendApproved"); len(c) != 1 || c[0].id != "inv" {
		t.Fatalf("SendApproved calls %v after the window, want inv", c)
	}
}
