package tui

import (
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/teatest/v2"
)

// strangerDraft is a reply that goes to a Reply-To stranger: the mail
// claims to be from the bank (display name "bob@bank.test"), but it came
// from evil@x.test and asks for replies to go to collect@evil.test.
func strangerDraft() Item {
	it := draft("stranger", "evil@x.test", "Account check", "high", 30*time.Minute)
	it.From = Address{Name: "bob@bank.test", Email: "evil@x.test"}
	it.To = []Address{{Name: "bob@bank.test", Email: "collect@evil.test", New: true}}
	it.Thread[0].From = it.From
	return it
}

func openStrangerDetail(t *testing.T, m *Model) string {
	t.Helper()
	send(t, m, tea.WindowSizeMsg{Width: 120, Height: 60})
	send(t, m, press("enter")...)
	if m.tab != tabDetail || m.detail.id != "stranger" {
		t.Fatalf("detail: got tab %v id %q, want the stranger's detail", m.tab, m.detail.id)
	}
	return ansi.Strip(m.View().Content)
}

func TestDetailShowsRecipientsAndNewMark(t *testing.T) {
	t.Parallel()
	for _, plain := range []bool{false, true} {
		t.Run(map[bool]string{false: "colour", true: "plain"}[plain], func(t *testing.T) {
			m := newModel(t, newFake(strangerDraft()), Options{NoColor: plain, ASCII: plain})
			view := openStrangerDetail(t, m)
			for _, want := range []string{
				"To:         [new] collect@evil.test (name \"bob@bank.test\" looks like an address)",
				"you have never written to the address marked [new]",
				"From:       evil@x.test (name \"bob@bank.test\" looks like an address)",
			} {
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

// TestDisplayNameNeverShownAsAddress: wherever an address is drawn (list
// row, detail From and To, thread header), a display name holding an @
// never stands where the address belongs.
func TestDisplayNameNeverShownAsAddress(t *testing.T) {
	t.Parallel()
	m := newModel(t, newFake(strangerDraft()), Options{NoColor: true, ASCII: true})
	send(t, m, tea.WindowSizeMsg{Width: 200, Height: 60})
	list := ansi.Strip(m.View().Content)
	view := openStrangerDetail(t, m)
	for name, frame := range map[string]string{"list": list, "detail": view} {
		for _, line := range strings.Split(frame, "\n") {
			i := strings.Index(line, "bob@bank.test")
			if i < 0 {
				continue
			}
			// The name may appear only quoted, after the real address.
			if !strings.Contains(line[:i], "evil@x.test") && !strings.Contains(line[:i], "collect@evil.test") {
				t.Errorf("%s: display name shown before any real address: %q", name, line)
			}
			if strings.Contains(line, "bob@bank.test <") || strings.Contains(line, "<bob@bank.test>") {
				t.Errorf("%s: display name in the address position: %q", name, line)
			}
		}
	}
	if !strings.Contains(list, "[new] collect@evil") || !strings.Contains(list, "evil@x.test (name") {
		t.Errorf("list row lacks the new recipient:\n%s", list)
	}
}

func TestApproveNewRecipientAsksFirst(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		keys     []string
		wantSent bool
	}{
		{"y sends at once", []string{"y"}, true},
		{"Y sends", []string{"Y"}, true},
		{"enter alone is no", []string{"enter"}, false},
		{"n is no", []string{"n"}, false},
		{"esc is no", []string{"esc"}, false},
		{"a second approve key is not a yes", []string{"a"}, false},
		{"key repeat aa is not a yes, and asks nothing more", []string{"a", "a"}, false},
		{"q is no, and does not quit", []string{"q"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, from := range []string{"list", "detail"} {
				f := newFake(strangerDraft())
				m := newModel(t, f, Options{})
				if from == "detail" {
					send(t, m, press("enter")...)
				}
				send(t, m, press("a")...)
				if m.mode() != modePrompt || m.c.prompt.kind != promptConfirmNew {
					t.Fatalf("%s: after a: mode %v prompt %v, want the confirm prompt", from, m.mode(), m.c.prompt.kind)
				}
				if got, want := m.c.prompt.input.Prompt, "send to a new address collect@evil.test? y/N: "; got != want {
					t.Errorf("%s: prompt %q, want %q", from, got, want)
				}
				if n := len(f.callsOf("Approve")); n != 0 {
					t.Fatalf("%s: Approve called %d times before the answer", from, n)
				}
				send(t, m, press(tt.keys...)...)
				calls := f.callsOf("Approve")
				if tt.wantSent && (len(calls) != 1 || calls[0].id != "stranger") {
					t.Fatalf("%s: Approve calls %+v, want one for stranger", from, calls)
				}
				if !tt.wantSent && len(calls) != 0 {
					t.Fatalf("%s: Approve calls %+v, want none", from, calls)
				}
			}
		})
	}
}

func TestApproveKnownRecipientSendsAtOnce(t *testing.T) {
	t.Parallel()
	it := strangerDraft()
	it.To[0].New = false
	f := newFake(it)
	m := newModel(t, f, Options{})
	send(t, m, press("a")...)
	if n := len(f.callsOf("Approve")); n != 1 {
		t.Fatalf("Approve calls: got %d, want 1 (no confirmation for known addresses)", n)
	}
}

func TestRetryFailedDraftToNewRecipientAsksFirst(t *testing.T) {
	t.Parallel()
	it := strangerDraft()
	it.Status = StatusFailed
	it.Error = "550 temporary"
	f := newFake(it)
	m := newModel(t, f, Options{})
	send(t, m, press("3")...) // needs attention
	send(t, m, press("t")...)
	if m.c.prompt.kind != promptConfirmNew {
		t.Fatalf("retry of a failed send to a new address: prompt %v, want the confirm prompt", m.c.prompt.kind)
	}
	if n := len(f.callsOf("Retry")); n != 0 {
		t.Fatalf("Retry called %d times before the answer", n)
	}
	send(t, m, press("y")...)
	if n := len(f.callsOf("Retry")); n != 1 {
		t.Fatalf("Retry calls after yes: got %d, want 1", n)
	}
}

// TestProgramApproveNewRecipientConfirms runs the real program loop
// (teatest): approve opens the confirmation, nothing is sent until it is
// answered.
func TestProgramApproveNewRecipientConfirms(t *testing.T) {
	t.Parallel()
	f := newFake(strangerDraft())
	tm, hook := startProgram(t, f, Options{})
	tm.Send(tea.KeyPressMsg{Code: 'a', Text: "a"})
	teatestWaitFor(t, tm, "send to a new address collect@evil.test? y/N")
	if n := len(f.callsOf("Approve")); n != 0 {
		t.Fatalf("Approve called %d times before the answer", n)
	}
	tm.Send(tea.KeyPressMsg{Code: 'y', Text: "y"})
	hook.waitFor(t, "the approve result", func(msg tea.Msg) bool { a, ok := msg.(actionMsg); return ok && a.action == "approve" })
	finalModel(t, tm)
	if calls := f.callsOf("Approve"); len(calls) != 1 || calls[0].id != "stranger" {
		t.Fatalf("Approve calls: got %+v, want one for stranger", calls)
	}
}

// teatestWaitFor waits until the program's output, escape sequences
// stripped, contains want.
func teatestWaitFor(t *testing.T, tm *teatest.TestModel, want string) {
	t.Helper()
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool {
		return strings.Contains(ansi.Strip(string(b)), want)
	}, teatest.WithDuration(10*time.Second))
}
