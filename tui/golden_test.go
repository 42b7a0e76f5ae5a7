package tui

import (
	"fmt"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"
	"github.com/charmbracelet/x/exp/teatest/v2"
)

// goldenItems has something for every view: drafts (one snoozed, one with
// long, wrapping text in several scripts and a hostile escape sequence),
// items that need attention, and the agent's sends.
func goldenItems() []Item {
	items := sampleQueue()
	long := draft("long", "eve@example.com", "Quarterly planning: a rather long subject line that must give way gracefully", "medium", 30*time.Minute)
	long.Intents = []string{"scheduling", "question"}
	long.Thread[0].Text = "Hello,\nCould we move the quarterly planning meeting to Thursday afternoon? " +
		"The room on the third floor is booked, so I suggest the one next to the kitchen. " +
		"会議室は三階ではなく、キッチンの隣の部屋を使いましょう。 \x1b]52;c;ZXZpbA==\x07Thanks 🙂\n" +
		"https://example.com/a/very/long/link/that/cannot/be/broken/at/a/space/anywhere/at/all/really"
	long.Draft = "Hi Eve,\nThursday afternoon works for me; the room next to the kitchen is fine. " +
		"I will send an updated invitation once the booking is confirmed.\nBest"
	snoozed := draft("snz", "fay@example.com", "Newsletter", "low", 26*time.Hour)
	snoozed.Status = StatusSnoozed
	return append(items, long, snoozed,
		Item{ID: "nr", Kind: KindNeedsReview, Status: StatusPending, Account: "work", Received: fixedNow.Add(-2 * time.Hour),
			From: Address{Email: "gus@example.com"}, Subject: "Model gave up", Error: "classify: invalid JSON after retry"},
		Item{ID: "fail", Kind: KindDraft, Status: StatusFailed, Account: "work", Received: fixedNow.Add(-3 * time.Hour),
			From: Address{Email: "hal@example.com"}, To: []Address{{Email: "hal@example.com"}}, Subject: "Re: invoice",
			Draft: "Paid.", Error: "smtp: 451 try later"},
		Item{ID: "snt", Kind: KindSent, Status: StatusSent, Account: "work", Received: fixedNow.Add(-50 * time.Minute),
			SendAt: fixedNow.Add(-45 * time.Minute), From: Address{Email: "ivy@example.com"}, To: []Address{{Email: "ivy@example.com"}},
			Subject: "Thanks!", Summary: "a thank-you", Intents: []string{"thanks"}, Risk: "low", Confidence: 0.97,
			Gates: []Gate{{Name: "known_contact", Pass: true, Reason: "owner wrote before"}}, Draft: "You're welcome!"},
		Item{ID: "pend", Kind: KindSent, Status: StatusSending, Account: "work", Received: fixedNow.Add(-2 * time.Minute),
			SendAt: fixedNow.Add(80 * time.Second), From: Address{Email: "jo@example.com"}, To: []Address{{Email: "jo@example.com"}},
			Subject: "Meeting confirmed", Summary: "confirms a meeting", Draft: "See you then."},
	)
}

// TestGoldenViews drives the real program loop (teatest) to every view at
// 80×24 and 160×45 and compares the frame with testdata/TestGoldenViews/*.
// The clock is fixed and colour is off, so the frames are stable;
// go test ./tui -run GoldenViews -update rewrites them.
func TestGoldenViews(t *testing.T) {
	t.Parallel()
	views := []struct {
		name string
		keys []string
	}{
		{name: "queue"},
		{name: "detail", keys: []string{"j", "j", "j", "enter"}}, // the long draft, fourth by risk
		{name: "needs_attention", keys: []string{"3"}},
		{name: "sent_by_agent", keys: []string{"4"}},
		{name: "help_overlay", keys: []string{"?"}},
	}
	for _, size := range goldenSizes {
		for _, v := range views {
			t.Run(fmt.Sprintf("%s_%dx%d", v.name, size.w, size.h), func(t *testing.T) {
				m := New(newFake(goldenItems()...), Options{NoColor: true, Now: func() time.Time { return fixedNow }})
				t.Cleanup(m.c.close)
				h := &hook{ch: make(chan tea.Msg, 64)}
				tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(size.w, size.h), teatest.WithProgramOptions(watch(h.ch), tea.WithFPS(goldenFPS)))
				h.waitFor(t, "the initial load", func(msg tea.Msg) bool { _, ok := msg.(loadedMsg); return ok })
				for _, k := range press(v.keys...) {
					tm.Send(k)
				}
				fm := finalModel(t, tm)
				got := fm.View().Content
				if strings.Contains(got, "\x1b") {
					t.Fatalf("NO_COLOR frame contains an escape sequence:\n%q", got)
				}
				lines := strings.Split(got, "\n")
				if len(lines) != size.h {
					t.Errorf("frame height: got %d lines, want %d", len(lines), size.h)
				}
				for i, l := range lines {
					if w := ansi.StringWidth(l); w > size.w {
						t.Errorf("line %d: got %d cells, want at most %d: %q", i, w, size.w, l)
					}
				}
				if last := lines[len(lines)-1]; !strings.Contains(last, "? help") || !strings.Contains(last, "q quit") && !strings.Contains(last, "q/esc back") {
					t.Errorf("hint bar lost help or quit/back: %q", last)
				}
				golden.RequireEqual(t, got)
			})
		}
	}
}
