package tui

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// TestStaleReadKeepsTheCountdown: reads race. The Detail the TUI asks for
// when the owner opens an invitation (enter right after A y), a reload or
// a watcher's event can have read the item before the answer and come
// back after it: such a copy (an older Item.Updated) never replaces the
// answered item, so the countdown stays and c still cancels the REPLY.
// Before versions, the stale copy put the item back to pending: the
// countdown went, c said "only a send that has not gone out can be
// cancelled", and the REPLY went out at the end of the window
// (TestReviewTUICancelsRSVP, with a watcher, under load). The stale copy
// comes as an open's Detail and as a list, before the answer's own read
// and after it.
func TestStaleReadKeepsTheCountdown(t *testing.T) {
	t.Parallel()
	for _, via := range []string{"detail", "list"} {
		for _, when := range []string{"after the answer's read", "before the answer's read"} {
			t.Run(via+" "+when, func(t *testing.T) {
				t.Parallel()
				inv := invitationItem("Design review")
				inv.Updated = fixedNow.Add(-time.Hour)
				f := inviteFake{newFake(append([]Item{inv}, sampleQueue()...)...)}
				m := newModel(t, f, Options{NoColor: true})
				send(t, m, press("3")...)
				stale := f.items[0] // read before the answer: pending
				deliverStale := func() {
					if via == "detail" {
						send(t, m, eventMsg{ev: Event{Kind: EventItemUpdated, Item: &stale}})
						return
					}
					items := slices.Clone(f.items)
					items[0] = stale
					send(t, m, loadedMsg{items: items, status: f.status})
				}
				if when == "after the answer's read" {
					send(t, m, press("A", "y")...)
					deliverStale()
				} else {
					// A y, by hand: the answer's own read held back.
					if err := f.RSVP(t.Context(), "inv", "accept"); err != nil {
						t.Fatal(err)
					}
					_, reload := m.Update(rsvpDoneMsg{id: "inv", answer: "accept", subject: inv.Subject})
					deliverStale()
					if e := m.c.items["inv"]; e.item.Status != StatusApproved {
						t.Errorf("a copy read before the answer, arriving before its own read, made it %s", e.item.Status)
					}
					run(t, m, reload)
				}
				if e := m.c.items["inv"]; e.item.Status != StatusApproved || !e.item.SendAt.After(fixedNow) {
					t.Fatalf("after a stale %s: inv is %s, send at %v; want approved in its window", via, e.item.Status, e.item.SendAt)
				}
				if note := m.renderNote(); !strings.Contains(note, "c cancels") {
					t.Fatalf("after a stale %s the note line lost the countdown: %q", via, note)
				}
				send(t, m, press("c")...)
				if c := f.callsOf("Cancel"); len(c) != 1 || c[0].id != "inv" {
					t.Fatalf("c in the window: Cancel calls %+v (note %q), want one for inv", c, m.renderNote())
				}
			})
		}
	}
}
