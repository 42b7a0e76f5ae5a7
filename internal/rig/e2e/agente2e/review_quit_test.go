package agente2e

import (
	"testing"
	"time"

	"github.com/mailagent/mailagent/internal/rig/e2e"
	"github.com/mailagent/mailagent/store"
)

// TestReviewQuitInUndoWindowUnderTmux runs `mailagent review` in a real
// terminal with no watcher running (review itself sends when an undo
// window ends) against the real Dovecot and Postfix. An approval followed
// by q is never left approved and unsent: after q the TUI says
// "sending in …… (c cancel, q again to quit and cancel)", Bob gets exactly
// one reply when the window ends and review exits by itself; after q q
// review cancels and exits, nothing reaches Bob and the draft is pending.
func TestReviewQuitInUndoWindowUnderTmux(t *testing.T) {
	parallel(t)
	for _, tc := range []struct {
		name    string
		keys    []string
		replies int
		status  string
	}{
		{"q waits and sends", []string{"q"}, 1, store.QueueSent},
		{"q again cancels", []string{"q", "q"}, 0, store.QueuePending},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, options{})
			e.seedSent(bobAddr) // known: "a" asks nothing
			w := e.startWatch()
			m := message{From: bobAddr, To: adaAddr, Subject: "Quit in the window " + e.tag, ID: e.id("quit"),
				Body: "Hi Ada,\ncould you confirm the numbers?\nBob"}
			e.deliver(m)
			item := w.queueItem(m.ID, waitLong)
			w.stop() // from here on only review sends

			x := startReview(t, e)
			x.waitScreen(e.tag, waitShort)
			x.filter(e.tag)
			x.keys("a")
			x.waitScreen("c cancels", waitShort)
			x.keys(tc.keys[0])
			x.waitScreen("q again to quit and cancel", waitShort)
			x.keys(tc.keys[1:]...)
			eventually(t, waitLong, "review exits by itself", func() (bool, string) {
				_, err := x.run("has-session", "-t", "review")
				return err != nil, "screen:\n" + x.screen()
			})
			if tc.replies > 0 {
				e.waitFind(e2e.Bob, "INBOX", "In-Reply-To", m.ID, tc.replies, waitLong)
			} else {
				time.Sleep(6 * time.Second) // past the default 5s window: a send left behind would go now
			}
			e.barrier(e2e.Bob)
			if got := e.find(e2e.Bob, "INBOX", "In-Reply-To", m.ID); len(got) != tc.replies {
				t.Fatalf("bob's INBOX: %d replies to %s, want %d", len(got), m.ID, tc.replies)
			}
			q, err := e.openStore().GetQueueItem(item.ID)
			if err != nil || q.Status != tc.status {
				t.Fatalf("after review exited: %v (%v), want %s: never approved and unsent", q, err, tc.status)
			}
		})
	}
}
