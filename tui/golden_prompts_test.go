package tui

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"
	"github.com/charmbracelet/x/exp/teatest/v2"
)

// goldenSizes are the windows every prompt, overlay and line is drawn at:
// the two of issue 9's goldens and the smallest the TUI must serve.
var goldenSizes = []struct{ w, h int }{{80, 24}, {160, 45}, {60, 20}}

// promptItems are goldenItems with, first in the queue, a high-risk draft
// to an address the owner never wrote to whose gates failed: approving it
// asks first.
func promptItems() []Item {
	s := strangerDraft()
	s.Received = fixedNow.Add(-time.Minute) // first: high risk, newest
	s.Warnings = []string{"sender_auth: dmarc=fail", "recipients: collect@evil.test is new"}
	return append(goldenItems(), s)
}

// goldenFrame is one frame of the prompt test: the keys that reach it,
// the action whose result must have come back first, and texts the frame
// must show at every size.
type goldenFrame struct {
	name string
	keys []string
	// action: wait for this action's result, and for the list read again
	// when the action reloads it.
	action string
	reload bool
	// out: wait until the terminal shows this text (a result no hook
	// reports).
	out string
	// backend: a backend of its own instead of newFake(promptItems()…).
	backend func() Backend
	want    []string
	// hint is what the hint bar must keep at every size; empty: "? help"
	// and "q quit" (or "q/esc back" in the detail view).
	hint []string
}

// TestGoldenPromptsAndLines drives the real program loop (teatest) to the
// prompt line (reject reason, snooze, regenerate instruction, filter), the
// confirm-new-recipient question, the inline editor, the help overlay of
// every view, the undo countdown and the flash line (a result and an
// error) at 80×24, 160×45 and 60×20, and compares each frame with
// testdata/TestGoldenPromptsAndLines/* (-update rewrites them). The clock
// is fixed, colour is off and the cursor does not blink, so the frames are
// the same under -race and load. Each frame also asserts in code what must
// hold at any size: exactly the window, the texts that make the line
// usable (the question whole with its y/N, the keys that leave it), and a
// way to help and out.
func TestGoldenPromptsAndLines(t *testing.T) {
	t.Parallel()
	prompt := []string{"enter confirm", "esc back"}
	yesNo := []string{"y yes", "n/esc no"} // a y/N question takes one key
	frames := []goldenFrame{
		{name: "prompt_reject", keys: []string{"r", "not for me"}, want: []string{"reject, reason (optional): not for me"}, hint: prompt},
		{name: "prompt_snooze", keys: []string{"s"}, want: []string{"snooze for: ", "4h (or 1h, 30m, 2d, tomorrow)"}, hint: prompt},
		{name: "prompt_regenerate", keys: []string{"R", "shorter"}, want: []string{"regenerate, instruction: shorter"}, hint: prompt},
		{name: "prompt_filter", keys: []string{"/", "eve"}, want: []string{"filter: eve", "Quarterly planning"}, hint: prompt},
		{name: "confirm_new_recipient", keys: []string{"a"},
			want: []string{"send to a new address collect@evil.test", "? y/N: "}, hint: yesNo},
		{name: "confirm_from_detail", keys: []string{"enter", "a"},
			want: []string{"[new] collect@evil.test", "? y/N: "}, hint: yesNo},
		{name: "inline_editor", keys: []string{"j", "j", "j", "j", "e"}, // the long draft
			want: []string{"Editing Quarterly planning", "Hi Eve,", "ctrl+s saves, esc cancels"}, hint: []string{"ctrl+s save", "esc back"}},
		{name: "inline_editor_typed", keys: []string{"j", "e", "Dear Dan, "},
			want: []string{"Dear Dan, Hello, about Legal notice."}, hint: []string{"ctrl+s save", "esc back"}},
		{name: "detail_help", keys: []string{"enter", "?"}, want: []string{"q/esc", "back", "ctrl+c", "quit", "try again"}},
		{name: "attention_help", keys: []string{"3", "?"}, want: []string{"t try again", "q", "quit"}},
		{name: "sent_help", keys: []string{"4", "?"}, want: []string{"c cancel send", "q", "quit"}},
		{name: "decided_help", keys: []string{"5", "?"}, want: []string{"enter open", "q", "quit"},
			backend: func() Backend { return newFake(append(promptItems(), decidedItems()...)...) }},
		{name: "undo_countdown", keys: []string{"j", "a"}, action: "approve", reload: true,
			want: []string{`approved "Legal notice": sending in 5s, c cancels`, "(sending in 5s) Legal n"}},
		{name: "flash_result", keys: []string{"j", "r", "too late", "enter"}, action: "reject",
			want: []string{`rejected "Legal notice" (too late)`}},
		{name: "flash_error", keys: []string{"4", "a"},
			want: []string{"error: sent items have no draft to review: not applicable"}},
		{name: "flash_not_sent", keys: []string{"a", "n"}, want: []string{"not sent"}},
		{name: "flash_not_sent_enter", keys: []string{"a", "enter"}, want: []string{"not sent"}},
		{name: "confirm_y_sends", keys: []string{"a", "y"}, action: "approve", reload: true,
			want: []string{"sending in 5s, c cancels"}},
		{name: "confirm_unsubscribe", keys: []string{"U"}, out: "y/N",
			backend: func() Backend { return &followupFake{fakeBackend: newFake(promptItems()...)} },
			want:    []string{"unsubscribe with a one-click request to", "? y/N"}},
		{name: "confirm_rsvp", keys: []string{"3", "A"}, hint: yesNo,
			backend: func() Backend { return inviteFake{newFake(append(promptItems(), invitationItem("Design review"))...)} },
			want:    []string{"accept the invitation", "? y/N: "}},
	}
	for _, size := range goldenSizes {
		for _, f := range frames {
			t.Run(fmt.Sprintf("%s_%dx%d", f.name, size.w, size.h), func(t *testing.T) {
				fb := newFake(promptItems()...)
				var b Backend = fb
				if f.backend != nil {
					b = f.backend()
				}
				got, fm := driveFrame(t, b, size.w, size.h, f)
				checkFrame(t, got, size.w, size.h)
				last := lastLine(got)
				hint := f.hint
				if len(hint) == 0 {
					hint = []string{"? help", "q quit"}
					if fm.tab == tabDetail {
						hint[1] = "q/esc back"
					}
				}
				for _, h := range hint {
					if !strings.Contains(last, h) {
						t.Errorf("hint bar %q lacks %q", last, h)
					}
				}
				bare := strings.ReplaceAll(strings.ReplaceAll(got, cursorOn, ""), cursorOff, "")
				for _, w := range f.want {
					if !strings.Contains(bare, w) {
						t.Errorf("frame lacks %q:\n%s", w, got)
					}
				}
				switch f.name {
				case "confirm_new_recipient":
					// Whole where it fits; cut before "? y/N" where not.
					q := "send to a new address collect@evil.test, although safety gates sender_auth, recipients failed? y/N: "
					if size.w >= 120 && !strings.Contains(bare, q) {
						t.Errorf("%d columns: the question is not whole: %q", size.w, q)
					}
				case "flash_error":
					if len(fb.callsOf("Approve")) != 0 {
						t.Error("approve on a sent reply reached the backend")
					}
				}
				switch f.name {
				case "confirm_y_sends":
					if c := fb.callsOf("Approve"); len(c) != 1 {
						t.Errorf("y answered the question, yet Approve was called %d times, want 1", len(c))
					}
				case "flash_not_sent", "flash_not_sent_enter", "confirm_new_recipient", "confirm_from_detail":
					if len(fb.callsOf("Approve")) != 0 {
						t.Error("the question was not answered yes, yet the draft was approved")
					}
				case "flash_result":
					if c := fb.callsOf("Reject"); len(c) != 1 || c[0].id != "high-new" || c[0].arg != "too late" {
						t.Errorf("Reject calls: %+v, want one for high-new with the reason", c)
					}
				}
				golden.RequireEqual(t, got)
			})
		}
	}
}

// goldenFPS is the renderer's frame rate in the golden tests. Their
// frames are the final model's View, not the terminal's bytes, so the
// renderer only has to run (it is the real program loop all the same); at
// bubbletea's default 60 it redrew the terminal after nearly every key,
// about 45% of these tests' CPU under -race. An output wait (goldenFrame's
// out) sees the text at most a frame (200 ms) later.
const goldenFPS = 5

// driveFrame runs the program at w×h, presses f.keys, waits for f.action
// and returns the last frame and the final model.
func driveFrame(t *testing.T, b Backend, w, h int, f goldenFrame) (string, *Model) {
	t.Helper()
	m := New(b, Options{NoColor: true, Now: func() time.Time { return fixedNow }})
	t.Cleanup(m.c.close)
	hk := &hook{ch: make(chan tea.Msg, 64)}
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(w, h), teatest.WithProgramOptions(watch(hk.ch), tea.WithFPS(goldenFPS)))
	hk.waitFor(t, "the initial load", func(msg tea.Msg) bool { _, ok := msg.(loadedMsg); return ok })
	for _, k := range press(f.keys...) {
		tm.Send(k)
	}
	if f.out != "" {
		teatest.WaitFor(t, tm.Output(), func(b []byte) bool { return bytes.Contains(b, []byte(f.out)) }, teatest.WithDuration(10*time.Second))
	}
	if f.action != "" {
		hk.waitFor(t, "the "+f.action+" result", func(msg tea.Msg) bool { a, ok := msg.(actionMsg); return ok && a.action == f.action })
		if f.reload {
			hk.waitFor(t, "the list read again", func(msg tea.Msg) bool { _, ok := msg.(loadedMsg); return ok })
		}
	}
	fm := finalModel(t, tm)
	return fm.View().Content, fm
}

// checkFrame asserts what every frame owes the terminal: exactly h lines,
// none wider than w, and with colour off no escape sequence but the one
// reverse-video cell of a text cursor (reverse video is not colour).
func checkFrame(t *testing.T, frame string, w, h int) {
	t.Helper()
	if n := strings.Count(frame, cursorOn); n > 1 {
		t.Errorf("%d text cursors in the frame, want at most one", n)
	}
	if bare := strings.ReplaceAll(strings.ReplaceAll(frame, cursorOn, ""), cursorOff, ""); strings.Contains(bare, "\x1b") {
		t.Fatalf("NO_COLOR frame contains an escape sequence:\n%q", frame)
	}
	lines := strings.Split(frame, "\n")
	if len(lines) != h {
		t.Errorf("frame height: got %d lines, want %d", len(lines), h)
	}
	for i, l := range lines {
		if n := ansi.StringWidth(l); n > w {
			t.Errorf("line %d: got %d cells, want at most %d: %q", i, n, w, l)
		}
	}
}

// cursorOn and cursorOff draw the text cursor of a prompt or the inline
// editor when colour is off.
const cursorOn, cursorOff = "\x1b[7m", "\x1b[m"

func lastLine(frame string) string {
	lines := strings.Split(frame, "\n")
	return lines[len(lines)-1]
}
