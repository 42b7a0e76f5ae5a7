package tui

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode"

	tea "charm.land/bubbletea/v2"
)

// Hostile text in every component: each escape sequence, control or
// format character a mail (or a model obeying it, or a server's error
// text) can carry, put in what each component draws, must not reach
// the terminal. The frame is drawn plain (NoColor, ASCII), so any such
// rune in it came from the data.

// hostileTexts are the attacks: each would drive the terminal. Each is
// framed by "zq" and "qz", which show whatever the defence does, so a
// scene that does not draw the text is caught.
var hostileTexts = []struct{ name, text string }{
	{"osc title", "zq\x1b]0;pwned\x07qz"},
	{"osc52 clipboard", "zq\x1b]52;c;cm0gLXJmIH4K\x07qz"},
	{"csi clear", "zq\x1b[2J\x1b[Hqz"},
	{"csi cursor up", "zq\x1b[3Aqz"},
	{"c1 csi", "zq\u009b2Jqz"},
	{"bidi override", "zq\u202egpj.exe\u202cqz"},
	{"carriage return", "zq\rqz"},
	{"dcs", "zq\x1bPq#0;2;0;0;0\x1b\\qz"},
	{"bell and backspace", "zq\x07\x08\x08qz"},
}

// forbidden reports whether r may not reach the terminal from data.
func forbidden(r rune) bool {
	return (r < 0x20 && r != '\n') || (r >= 0x7f && r <= 0x9f) || unicode.Is(unicode.Cf, r) || r == unicode.ReplacementChar
}

// hostileUnsub plans an unsubscribe with hostile text.
type hostileUnsub struct {
	*fakeBackend
	what string
}

func (h hostileUnsub) UnsubscribePlan(context.Context, string) (string, error) { return h.what, nil }
func (h hostileUnsub) Unsubscribe(context.Context, string) error               { return nil }

// hostileScenes put text v where one component draws it and return the
// frame that shows it.
var hostileScenes = []struct {
	component string
	frame     func(t *testing.T, v string) string
}{
	{"queue list", func(t *testing.T, v string) string {
		it := draft("d1", "a@example.com", "S"+v, "low", time.Hour)
		it.Summary, it.Intents = v, []string{v}
		return hostileFrame(t, newFake(it))
	}},
	{"attention list", func(t *testing.T, v string) string {
		it := draft("n1", "a@example.com", "S"+v, "low", time.Hour)
		it.Kind, it.Error = KindNeedsReview, v
		return hostileFrame(t, newFake(it), "3")
	}},
	{"sent list", func(t *testing.T, v string) string {
		it := draft("s1", "a@example.com", "S"+v, "low", time.Hour)
		it.Kind, it.Status, it.Summary = KindSent, StatusSent, v
		return hostileFrame(t, newFake(it), "4")
	}},
	{"decided list", func(t *testing.T, v string) string {
		it := Item{ID: "x1", Kind: KindDecided, Status: StatusDone, Decision: v, Reasons: []string{v}, Subject: "S" + v, Received: fixedNow}
		return hostileFrame(t, newFake(it), "5")
	}},
	{"detail", func(t *testing.T, v string) string {
		it := draft("d1", "a@example.com", "S"+v, "low", time.Hour)
		it.Thread[0].Text, it.Comments, it.Draft, it.Account = v, v, v, v
		it.Gates = []Gate{{Name: v, Reason: v}}
		it.Steps = []StepSnapshot{{Name: v, Input: v, Output: v}}
		return hostileFrame(t, newFake(it), "enter")
	}},
	{"follow-ups", func(t *testing.T, v string) string {
		fb := &followupFake{fakeBackend: newFake(), rows: []Followup{{ID: "f1", State: v, With: v, Subject: v, Tier: v, LastAt: fixedNow, Deadline: fixedNow}}}
		return hostileFrame(t, fb, "F")
	}},
	{"prompt: confirm a send", func(t *testing.T, v string) string {
		it := draft("d1", "a@example.com", "Hi", "low", time.Hour)
		it.Warnings = []string{v + ": " + v}
		return hostileFrame(t, newFake(it), "a")
	}},
	{"prompt: rsvp", func(t *testing.T, v string) string {
		return hostileFrame(t, inviteFake{newFake(invitationItem(v))}, "3", "A")
	}},
	{"prompt: unsubscribe on the note line", func(t *testing.T, v string) string {
		return hostileFrame(t, hostileUnsub{newFake(draft("d1", "a@example.com", "Hi", "low", time.Hour)), v}, "U")
	}},
	{"note: a failed action", func(t *testing.T, v string) string {
		f := newFake(draft("d1", "a@example.com", "Hi", "low", time.Hour))
		f.errs["Approve"] = errors.New("server said " + v)
		return hostileFrame(t, f, "a")
	}},
	{"note: what an approval taught", func(t *testing.T, v string) string {
		f := &learnFake{fakeBackend: newFake(draft("d1", "a@example.com", "Hi", "low", time.Hour)), learned: []Learned{{ID: v, Text: v}}}
		return hostileFrame(t, f, "a")
	}},
	{"status line", func(t *testing.T, v string) string {
		f := newFake()
		f.status.Accounts = []AccountState{{Name: v, State: v}}
		return hostileFrame(t, f)
	}},
	{"inline editor", func(t *testing.T, v string) string {
		return hostileFrame(t, newFake(draft("d1", "a@example.com", "S"+v, "low", time.Hour)), "e")
	}},
}

// cursorSGR are the only escape sequences a plain frame draws itself:
// the reverse video of a text cursor (the prompt's, the editor's).
// None of the attacks uses them.
var cursorSGR = strings.NewReplacer("\x1b[7m", "", "\x1b[m", "")

// hostileFrame loads b into a plain 160×60 model, presses keys and
// returns the frame without its own cursor.
func hostileFrame(t *testing.T, b Backend, keys ...string) string {
	t.Helper()
	m := newModel(t, b, Options{NoColor: true, ASCII: true})
	send(t, m, tea.WindowSizeMsg{Width: 160, Height: 60})
	send(t, m, press(keys...)...)
	return cursorSGR.Replace(m.View().Content)
}

// attackHostile runs every attack in every scene; it returns the count
// tried and, per component, the attacks that reached the frame.
func attackHostile(t *testing.T) (tried int, through map[string][]string) {
	through = map[string][]string{}
	for _, sc := range hostileScenes {
		for _, h := range hostileTexts {
			tried++
			frame := sc.frame(t, h.text)
			if !strings.Contains(frame, "zq") {
				t.Fatalf("%s / %s: the scene does not draw the text:\n%s", sc.component, h.name, frame)
			}
			if strings.ContainsFunc(frame, forbidden) {
				through[sc.component] = append(through[sc.component], h.name)
			}
		}
	}
	return tried, through
}

func TestHostileTextInEveryComponent(t *testing.T) {
	t.Parallel()
	// The frame alone is clean: a forbidden rune can only come from data.
	if benign := hostileFrame(t, newFake(sampleQueue()...)); strings.ContainsFunc(benign, forbidden) {
		t.Fatalf("a benign plain frame has a forbidden rune: %q", benign)
	}
	tried, through := attackHostile(t)
	n := 0
	for comp, names := range through {
		n += len(names)
		t.Errorf("%s: %v reached the terminal", comp, names)
	}
	t.Logf("hostile text: %d attacks tried in %d components, %d through", tried, len(hostileScenes), n)
	if n != 0 {
		t.Fatalf("%d of %d attacks got through", n, tried)
	}
}

// The positive control: the same attacks with clean and cleanText
// switched off land in every component, so the test above measures the
// defence and not a scene that never draws the text. It switches a
// package-wide flag, so it is not parallel: go test runs it before the
// parallel tests go on.
func TestHostileTextLandsWithoutClean(t *testing.T) {
	cleanOff.Store(true)
	defer cleanOff.Store(false)
	tried, through := attackHostile(t)
	n := 0
	for _, sc := range hostileScenes {
		if len(through[sc.component]) == 0 {
			t.Errorf("%s: no attack landed with clean off; the scene proves nothing", sc.component)
		}
		n += len(through[sc.component])
	}
	t.Logf("defence off: %d attacks tried, %d through", tried, n)
}

// hostileDrafts are drafts a model obeying a mail might write, opened in
// the inline editor. second names a defence behind editorText that also
// stops one ("" when editorText is the only one): the textarea drops
// control characters (ESC, BEL, CR) as they are put in, but not format
// characters such as a bidi override.
var hostileDrafts = []struct{ name, draft, second string }{
	{"bidi override", "Pay \u202eexe.txt\u202c now", ""},
	{"osc title", "Pay \x1b]0;pwned\x07now", "the textarea's own sanitiser"},
	{"csi clear", "Pay \x1b[2J now", "the textarea's own sanitiser"},
}

// editHostileDrafts opens each hostile draft in the inline editor, saves
// it unchanged, then with "!" added, and returns per draft whether its
// text reached the frame or the stored edit (an attack that got through)
// and what else was wrong: an unchanged save that stored something, or
// an edit other than the cleaned text with the owner's change.
func editHostileDrafts(t *testing.T) (through []bool, wrong []string) {
	t.Helper()
	for _, h := range hostileDrafts {
		it := draft("d1", "a@example.com", "Hi", "low", time.Hour)
		it.Draft = h.draft
		f := newFake(it)
		m := newModel(t, f, Options{NoColor: true, ASCII: true})
		send(t, m, press("e")...)
		frame := cursorSGR.Replace(m.View().Content)
		send(t, m, press("ctrl+s")...)
		var w []string
		if m.c.note != "draft unchanged" || len(f.callsOf("Edit")) != 0 {
			w = append(w, fmt.Sprintf("unchanged save: note %q, Edit calls %v", m.c.note, f.callsOf("Edit")))
		}
		n := len(f.callsOf("Edit"))
		send(t, m, press("e", "end", "!", "ctrl+s")...)
		calls := f.callsOf("Edit")[n:]
		landed := strings.ContainsFunc(frame, forbidden)
		for _, c := range calls {
			landed = landed || strings.ContainsFunc(c.arg, forbidden)
		}
		if h.name == "bidi override" && (len(calls) != 1 || calls[0].arg != "Pay exe.txt now!") {
			w = append(w, fmt.Sprintf("edit stored %v, want the cleaned text with the owner's change", calls))
		}
		through = append(through, landed)
		wrong = append(wrong, strings.Join(w, "; "))
	}
	return through, wrong
}

// TestInlineEditorHostileDraft: the inline editor shows a hostile draft
// cleaned; saving it unchanged stores nothing, and an edit stores what
// the owner saw and changed. Positive control:
// TestInlineEditorHostileDraftLandsWithoutClean.
func TestInlineEditorHostileDraft(t *testing.T) {
	t.Parallel()
	through, wrong := editHostileDrafts(t)
	n := 0
	for i, h := range hostileDrafts {
		if through[i] {
			n++
			t.Errorf("%s: the draft's text reached the frame or the stored edit", h.name)
		}
		if wrong[i] != "" {
			t.Errorf("%s: %s", h.name, wrong[i])
		}
	}
	t.Logf("hostile drafts in the inline editor: %d tried, %d through", len(hostileDrafts), n)
	if n != 0 {
		t.Fatalf("%d of %d hostile drafts got through, want 0", n, len(hostileDrafts))
	}
}

// TestInlineEditorHostileDraftLandsWithoutClean is the positive control
// of TestInlineEditorHostileDraft: the same drafts in the same editor
// with the TUI's cleaning off (cleanOff: editorText returns the draft as
// it is). The drafts editorText alone stops must reach the frame and the
// stored edit; those hostileDrafts.second names must still be stopped,
// which shows that defence. Not parallel: it sets a package switch.
func TestInlineEditorHostileDraftLandsWithoutClean(t *testing.T) {
	cleanOff.Store(true)
	defer cleanOff.Store(false)
	through, _ := editHostileDrafts(t)
	landed, want := 0, 0
	for i, h := range hostileDrafts {
		if h.second == "" {
			want++
		}
		switch {
		case through[i] && h.second == "":
			landed++
		case through[i]:
			landed++
			t.Errorf("%s: landed with the cleaning off, though %s is said to stop it too", h.name, h.second)
		case h.second == "":
			t.Errorf("%s: did not land with the cleaning off, and nothing else is said to stop it", h.name)
		}
	}
	t.Logf("hostile drafts, cleaning off: %d tried, %d landed (want %d: the rest are stopped by the textarea too)", len(hostileDrafts), landed, want)
	if landed != want || want == 0 {
		t.Fatalf("positive control: got %d of %d landed with the cleaning off, want %d", landed, len(hostileDrafts), want)
	}
}
