package tui

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/charmbracelet/x/ansi"

	tea "charm.land/bubbletea/v2"
)

// Quitting while this process still has sends to make (issue 9, undo
// window): with no watcher connected, nothing but this TUI sends an
// approval (or an RSVP) when its undo window ends, so quitting must never
// leave one approved and unsent. The rule:
//
//   - q (or ctrl+c) keeps the TUI open until every waiting send has gone
//     out, with the line "sending in 4s… (c cancel, q again to quit and
//     cancel)", and then quits by itself;
//   - q again cancels every waiting send (the items go back as they
//     were, nothing is sent) and quits once the backend confirmed;
//   - c cancels them and stays; esc stays and lets them go;
//   - a send or a cancel that fails stops the quit and shows the error;
//   - a program ended from outside (its context: a signal) cancels what
//     was still waiting before Run returns (cancelLeft).
//
// With a watcher connected q quits at once: the watcher sends.

// quitState is a quit waiting for sends: pending, q was pressed while
// sends were waiting for this process, and the TUI quits once they are
// out; cancel, q again: the waiting sends are being cancelled before
// quitting.
type quitState struct {
	pending, cancel bool
}

// quitTimeout bounds cancelLeft's backend calls.
const quitTimeout = 15 * time.Second

// waiting returns the sends this process would make (ApprovalSender, no
// watcher connected): every item in its undo window, whatever its kind.
func (m *Model) waiting() []*Item {
	if _, ok := m.c.backend.(ApprovalSender); !ok || m.conn.stat.WatcherConnected {
		return nil
	}
	var out []*Item
	for _, e := range m.c.items {
		if awaitingSend(&e.item) {
			out = append(out, &e.item)
		}
	}
	slices.SortFunc(out, func(a, b *Item) int { return a.SendAt.Compare(b.SendAt) })
	return out
}

// waitingLocally counts waiting().
func (m *Model) waitingLocally() int { return len(m.waiting()) }

// quit is the Quit key.
func (m *Model) quit() tea.Cmd {
	if m.waitingLocally() == 0 && !m.exit.pending {
		m.close()
		return tea.Quit
	}
	if !m.exit.pending {
		// First q: stay until the sends have gone (quitNote says so).
		m.exit.pending = true
		m.c.setNote("")
		return nil
	}
	// q again: cancel and quit.
	m.exit.cancel = true
	return m.cancelWaiting()
}

// cancelWaiting cancels every waiting send that is not already in
// flight, through Backend.Cancel like the c key.
func (m *Model) cancelWaiting() tea.Cmd {
	var cmds []tea.Cmd
	for _, it := range m.waiting() {
		if _, busy := m.c.busy[it.ID]; busy {
			continue // being sent (or cancelled) already
		}
		m.c.busy[it.ID] = "cancelling"
		cmds = append(cmds, cancelCmd(m.c.ctx, m.c.backend, it.ID, it.Subject))
	}
	m.c.setNote("")
	return tea.Batch(cmds...)
}

// quittingKey handles c and esc while the quit waits for sends; handled
// is false for every other key.
func (m *Model) quittingKey(isCancel, isBack bool) (cmd tea.Cmd, handled bool) {
	if !m.exit.pending || m.exit.cancel {
		return nil, false
	}
	switch {
	case isCancel:
		m.exit.pending = false
		cmd := m.cancelWaiting()
		m.c.setNote("cancelling the waiting sends; still open")
		return cmd, true
	case isBack:
		m.exit.pending = false
		m.c.setNote("not quitting: the waiting sends go out when their countdown ends")
		return nil, true
	}
	return nil, false
}

// abortQuit stops a pending quit (an action failed: the owner must see
// the error first).
func (m *Model) abortQuit() {
	m.exit.pending, m.exit.cancel = false, false
}

// quitWhenDone quits once a pending quit has nothing left to wait for.
func (m *Model) quitWhenDone() tea.Cmd {
	if !m.exit.pending || len(m.c.busy) > 0 || m.waitingLocally() > 0 {
		return nil
	}
	m.exit.pending, m.exit.cancel = false, false
	m.close()
	return tea.Quit
}

// quitNote is the note line while a quit waits: what is sent when, and
// the keys. The keys come first when the line is narrow.
func (m *Model) quitNote() string {
	w := m.waiting()
	if m.exit.cancel {
		return fmt.Sprintf("cancelling %d %s, then quitting…", max(len(w), 1), plural(max(len(w), 1), "send", "sends"))
	}
	now := m.c.now()
	var base string
	switch {
	case len(w) == 0:
		return "sending…, then quitting"
	case w[len(w)-1].SendAt.After(now):
		base = "sending in " + countdown(w[len(w)-1].SendAt.Sub(now)) + "… (c cancel, q again to quit and cancel)"
	default:
		base = "sending now…, then quitting (q again to quit and cancel)"
	}
	what := fmt.Sprintf("%d sends ", len(w))
	if len(w) == 1 {
		what = quote(clean(w[0].Subject)) + " "
	}
	if ansi.StringWidth(what+base) <= m.c.width {
		return what + base
	}
	return base
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// cancelLeft cancels, after the program ended, every send still waiting
// for this process (a program ended from outside, by its context). It
// uses a fresh context: the program's own has ended. Each failure is
// returned; a send that went out meanwhile is one of them.
func (m *Model) cancelLeft(ctx context.Context) error {
	w := m.waiting()
	if len(w) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), quitTimeout)
	defer cancel()
	var errs []error
	for _, it := range w {
		if err := m.c.backend.Cancel(ctx, it.ID); err != nil {
			errs = append(errs, fmt.Errorf("could not cancel the send of %s (it may have gone out): %w", quote(clean(it.Subject)), err))
			continue
		}
		m.c.log.Info("review ended in the undo window: send cancelled", "id", it.ID)
	}
	return errors.Join(errs...)
}
