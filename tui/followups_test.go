package tui

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"
)

// followupFake adds the followups and unsubscribe parts to fakeBackend.
type followupFake struct {
	*fakeBackend
	mu      sync.Mutex
	rows    []Followup
	actions []string
}

func (f *followupFake) Followups(context.Context) ([]Followup, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Followup(nil), f.rows...), nil
}

func (f *followupFake) act(s string) {
	f.mu.Lock()
	f.actions = append(f.actions, s)
	f.mu.Unlock()
}

func (f *followupFake) FollowupDone(_ context.Context, id string) error {
	f.act("done " + id)
	f.mu.Lock()
	f.rows = f.rows[1:]
	f.mu.Unlock()
	return nil
}

func (f *followupFake) FollowupSnooze(_ context.Context, id string, until time.Time) error {
	f.act("snooze " + id + " " + until.Format(time.RFC3339))
	return nil
}

func (f *followupFake) FollowupNudge(_ context.Context, id string) (string, error) {
	f.act("nudge " + id)
	return "q_" + id + "_1", nil
}

func (f *followupFake) UnsubscribePlan(_ context.Context, id string) (string, error) {
	f.act("plan " + id)
	return "a one-click request to https://lists.example.org/u\x1b[31m", nil
}

func (f *followupFake) Unsubscribe(_ context.Context, id string) error {
	f.act("unsubscribe " + id)
	return nil
}

func TestFollowupsView(t *testing.T) {
	t.Parallel()
	fb := &followupFake{fakeBackend: newFake(draft("q1", "news@lists.example.org", "Weekly", "low", time.Hour)),
		rows: []Followup{
			{ID: "fu_a", State: "awaiting_reply", With: "carol@example.org", Subject: "Report\x1b]0;pwned\x07", LastAt: fixedNow.Add(-80 * time.Hour), Deadline: fixedNow.Add(-8 * time.Hour), Tier: "reminded"},
			{ID: "fu_b", State: "needs_reply", With: "bob@example.org", Subject: "Budget", LastAt: fixedNow.Add(-time.Hour), Deadline: fixedNow.Add(71 * time.Hour)},
		}}
	m := newModel(t, fb, Options{})
	send(t, m, press("F")...)
	if !m.fu.open {
		t.Fatal("F did not open the followups view")
	}
	out := m.render()
	for _, want := range []string{"Follow-ups", "awaiting-reply", "carol@example.org", "overdue", "needs-reply", "Budget"} {
		if !strings.Contains(out, want) {
			t.Errorf("view lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\x1b]0;") || strings.Contains(out, "pwned\x07") {
		t.Error("a hostile subject reached the terminal unsanitised")
	}
	send(t, m, press("n", "j", "s", "k", "d")...)
	want := []string{"nudge fu_a", "snooze fu_b " + fixedNow.Add(followupSnooze).Format(time.RFC3339), "done fu_a"}
	if strings.Join(fb.actions, "|") != strings.Join(want, "|") {
		t.Fatalf("actions: got %v, want %v", fb.actions, want)
	}
	if len(m.fu.rows) != 1 || m.fu.rows[0].ID != "fu_b" {
		t.Fatalf("after done, the view was not reloaded: %+v", m.fu.rows)
	}
	send(t, m, press("q")...)
	if m.fu.open {
		t.Fatal("q did not close the view")
	}

	// Unsubscribe: U shows what would be sent; only y sends it.
	fb.actions = nil
	send(t, m, press("U", "n")...)
	send(t, m, press("U", "y")...)
	if got := strings.Join(fb.actions, "|"); got != "plan q1|plan q1|unsubscribe q1" {
		t.Fatalf("unsubscribe: got %s, want a plan, a refusal, then plan and send", got)
	}
}
