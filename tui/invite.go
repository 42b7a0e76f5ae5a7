package tui

import (
	"context"
	"fmt"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
)

// Inviter is the optional part of a Backend behind the A, D and T keys:
// RSVP answers the calendar invitation of a queue item (Item.Invitation)
// with accept, decline or tentative, mailing an iTIP REPLY to its
// organizer (`mailagent queue rsvp`). The TUI calls it only after the
// owner confirmed with y.
type Inviter interface {
	RSVP(ctx context.Context, id, answer string) error
}

// The answers RSVP takes; they double as promptConfirmNew's confirmFor.
const (
	rsvpAccept    = "accept"
	rsvpDecline   = "decline"
	rsvpTentative = "tentative"
)

// rsvpDoneMsg reports RSVP's result.
type rsvpDoneMsg struct {
	id, answer, subject string
	err                 error
}

// canRSVP reports whether the item carries an invitation still open to
// an answer.
func canRSVP(it *Item) error {
	if it.Invitation == "" {
		return fmt.Errorf("no calendar invitation to answer: %w", errNotApplicable)
	}
	switch it.Status {
	case StatusApproved, StatusSent, StatusSending, StatusRejected, StatusDone:
		return fmt.Errorf("item is already %s: %w", it.Status, errNotApplicable)
	}
	return nil
}

// rsvpOffered reports whether A, D and T apply to it (the hint bar).
func (m *Model) rsvpOffered(it *Item) bool {
	_, ok := m.c.backend.(Inviter)
	return ok && it != nil && canRSVP(it) == nil
}

// rsvp asks "accept the invitation "…"? y/N" for the key pressed; y sends
// the answer (confirmed, then rsvpConfirmed).
func (m *Model) rsvp(msg tea.KeyPressMsg) tea.Cmd {
	if _, ok := m.c.backend.(Inviter); !ok {
		return nil
	}
	answer := rsvpAccept
	switch {
	case key.Matches(msg, m.c.keys.Decline):
		answer = rsvpDecline
	case key.Matches(msg, m.c.keys.Tentative):
		answer = rsvpTentative
	}
	it := m.current(canRSVP)
	if it == nil {
		return nil
	}
	verb := map[string]string{rsvpAccept: "accept", rsvpDecline: "decline", rsvpTentative: "answer tentative to"}[answer]
	cmd := m.c.prompt.confirm(it.ID, answer, fmt.Sprintf("%s the invitation %s (a reply goes to its organizer)", verb, quote(clean(it.Invitation))))
	m.c.setNote("")
	return cmd
}

// rsvpConfirmed sends the confirmed answer through Inviter.
func (m *Model) rsvpConfirmed(answer string, it *Item) tea.Cmd {
	inv, ok := m.c.backend.(Inviter)
	if !ok {
		return nil
	}
	if err := canRSVP(it); err != nil {
		m.c.setErr(err)
		return nil
	}
	m.markBusy(it, "answering")
	ctx, id, subject := m.c.ctx, it.ID, it.Subject
	return func() tea.Msg {
		return rsvpDoneMsg{id: id, answer: answer, subject: subject, err: inv.RSVP(ctx, id, answer)}
	}
}

// applyRSVP shows the result in the note line and, on success, reloads
// the items (the backend decides what the item became).
func (m *Model) applyRSVP(msg rsvpDoneMsg) tea.Cmd {
	delete(m.c.busy, msg.id)
	if msg.err != nil {
		m.c.log.Warn("rsvp failed", "id", msg.id, "answer", msg.answer, "err", msg.err)
		m.c.setErr(fmt.Errorf("%s %s failed: %w", msg.answer, quote(msg.subject), msg.err))
		return nil
	}
	m.c.log.Info("rsvp done", "id", msg.id, "answer", msg.answer)
	e, ok := m.c.items[msg.id]
	if !ok {
		m.c.setNote(fmt.Sprintf("answered %s to %s: the reply to the organizer is queued", msg.answer, quote(msg.subject)))
		return loadCmd(m.c.ctx, m.c.backend)
	}
	// The REPLY waits out its undo window like an approval: the note
	// line counts it down, c cancels it (the same Backend.Cancel). Its
	// send time comes with the item read again.
	e.item.Status = StatusApproved
	e.ahead = true // a copy read before the answer is stale (entry.stale)
	m.undo = undoState{id: msg.id, verb: "answered " + msg.answer + " to"}
	m.c.setNote("")
	m.rebuild()
	cmd := detailCmd(m.c.ctx, m.c.backend, msg.id)
	if cmd == nil {
		cmd = loadCmd(m.c.ctx, m.c.backend)
	}
	return cmd
}
