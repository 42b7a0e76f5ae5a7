package tui

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
)

// learnFake teaches something on every approval and can forget it.
type learnFake struct {
	*fakeBackend
	mu      sync.Mutex
	learned []Learned
	forgot  [][]string
	err     error
}

func (l *learnFake) LastLearned(string) []Learned {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.learned
	l.learned = nil // once, as the real backend
	return out
}

func (l *learnFake) ForgetLearned(_ context.Context, ids []string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.forgot = append(l.forgot, append([]string(nil), ids...))
	return l.err
}

// learnOnly teaches but cannot forget.
type learnOnly struct{ *fakeBackend }

func (learnOnly) LastLearned(string) []Learned {
	return []Learned{{ID: "mem_1", Text: "signs off with Best"}}
}

// hostileLearned are records an approval taught whose text a mail (or a
// model obeying it) wrote: bad is what of each must not reach the
// terminal.
var hostileLearned = []struct {
	learned Learned
	bad     string
}{
	{Learned{ID: "mem_a", Text: "signs off with \"Best, Ada\"\x1b]0;pwned\x07"}, "\x1b]0;"},
	{Learned{ID: "mem_b", Text: "carol@example.org prefers Tuesdays\u202e"}, "\u202e"},
}

// learnedRecords are hostileLearned's records, for a learnFake.
func learnedRecords() []Learned {
	var out []Learned
	for _, h := range hostileLearned {
		out = append(out, h.learned)
	}
	return out
}

// learnedThrough counts the hostile learned texts whose bad part is in
// view.
func learnedThrough(view string) (tried, through int) {
	for _, h := range hostileLearned {
		tried++
		if strings.Contains(view, h.bad) {
			through++
		}
	}
	return tried, through
}

// TestForgetWhatApprovalTaught: while the countdown note says what an
// approval taught, L (offered in the hint bar) forgets exactly those
// records through Forgetter and says so; the approval itself stands. L
// is neither offered nor acted on without an approval, after forgetting,
// or with a backend that cannot forget. Hostile record text is cleaned
// (positive control: TestForgetWhatApprovalTaughtLandsWithoutClean).
func TestForgetWhatApprovalTaught(t *testing.T) {
	t.Parallel()
	t.Run("forgets the records named", func(t *testing.T) {
		f := &learnFake{fakeBackend: newFake(sampleQueue()...), learned: learnedRecords()}
		m := newModel(t, f, Options{NoColor: true})
		send(t, m, press("L")...) // nothing approved yet: nothing to forget
		if len(f.forgot) != 0 {
			t.Fatalf("L without an approval forgot %v", f.forgot)
		}
		if strings.Contains(m.shortHelp(), "forget") {
			t.Errorf("hint bar offers forget before any approval: %q", m.shortHelp())
		}
		send(t, m, press("a")...)
		view := m.View().Content
		for _, want := range []string{`learned: signs off with "Best, Ada"`, "carol@example.org prefers Tuesdays", "(L forgets)", "L forget what this taught"} {
			if !strings.Contains(view, want) {
				t.Errorf("view lacks %q:\n%s", want, view)
			}
		}
		tried, through := learnedThrough(view)
		t.Logf("hostile learned text: %d tried, %d through", tried, through)
		if through != 0 {
			t.Errorf("hostile learned text reached the terminal: %d of %d", through, tried)
		}
		send(t, m, press("L")...)
		if len(f.forgot) != 1 || strings.Join(f.forgot[0], ",") != "mem_a,mem_b" {
			t.Fatalf("ForgetLearned calls: got %v, want one with mem_a,mem_b", f.forgot)
		}
		if !strings.Contains(m.c.note, "forgot what the approval taught (2 records)") {
			t.Errorf("note: got %q", m.c.note)
		}
		if e := m.c.items[m.undo.id]; e.item.Status != StatusApproved || len(f.callsOf("Cancel")) != 0 {
			t.Errorf("forgetting touched the approval: status %s, cancels %d", e.item.Status, len(f.callsOf("Cancel")))
		}
		m.c.setNote("")
		if n := m.undo.note(m.c); strings.Contains(n, "learned") || strings.Contains(m.shortHelp(), "forget") {
			t.Errorf("after forgetting, still offered: note %q, hints %q", n, m.shortHelp())
		}
		send(t, m, press("L")...)
		if len(f.forgot) != 1 {
			t.Errorf("L forgot twice: %v", f.forgot)
		}
	})
	t.Run("a failure is shown and the records stay offered", func(t *testing.T) {
		f := &learnFake{fakeBackend: newFake(sampleQueue()...), learned: []Learned{{ID: "mem_a", Text: "x"}}, err: errors.New("database is locked")}
		m := newModel(t, f, Options{NoColor: true})
		send(t, m, press("a", "L")...)
		if !m.c.noteErr || !strings.Contains(m.c.note, "database is locked") {
			t.Fatalf("note: got %q (err %v), want the failure", m.c.note, m.c.noteErr)
		}
		m.c.setNote("")
		if !m.forgettable() {
			t.Error("after a failed forget, L is no longer offered")
		}
	})
	t.Run("a backend that cannot forget", func(t *testing.T) {
		m := newModel(t, learnOnly{newFake(sampleQueue()...)}, Options{NoColor: true})
		send(t, m, press("a")...)
		view := m.View().Content
		if !strings.Contains(view, "learned: signs off with Best (undo: mailagent memory forget mem_1)") {
			t.Errorf("learned not shown:\n%s", view)
		}
		if strings.Contains(view, "L forget") || m.forgettable() {
			t.Errorf("forget offered without a Forgetter:\n%s", view)
		}
		send(t, m, press("?")...)
		if strings.Contains(m.View().Content, "forget what this taught") {
			t.Error("the help overlay lists forget without a Forgetter")
		}
	})
}

// TestForgetWhatApprovalTaughtLandsWithoutClean is the positive control
// of TestForgetWhatApprovalTaught's hostile learned text: the same
// records in the same note after an approval, with the TUI's cleaning
// off (cleanOff). Every one must reach the frame. Not parallel: it sets
// a package switch.
func TestForgetWhatApprovalTaughtLandsWithoutClean(t *testing.T) {
	cleanOff.Store(true)
	defer cleanOff.Store(false)
	f := &learnFake{fakeBackend: newFake(sampleQueue()...), learned: learnedRecords()}
	m := newModel(t, f, Options{NoColor: true})
	send(t, m, press("a")...)
	tried, landed := learnedThrough(m.View().Content)
	t.Logf("hostile learned text, cleaning off: %d tried, %d landed", tried, landed)
	if landed != tried {
		t.Fatalf("positive control: got %d of %d landed with the cleaning off, want all", landed, tried)
	}
}
