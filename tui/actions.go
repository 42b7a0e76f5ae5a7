package tui

import (
	"errors"
	"fmt"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
)

// The actions on items: the root's, since a list and the detail view
// offer the same keys on the selected item. Each checks that it applies
// (the can* rules, which the hint bar uses too), marks the item busy and
// runs its Backend call in a Cmd; applyAction folds the result in.

// errNotApplicable explains why a key does nothing for the selected item.
var errNotApplicable = errors.New("not applicable")

// --- applicability ----------------------------------------------------------

// canReview reports whether the owner can approve, edit, reject,
// regenerate or snooze an item.
func canReview(it *Item) error {
	if it.Kind == KindSent || it.Kind == KindNotify || it.Kind == KindDecided {
		return fmt.Errorf("%s items have no draft to review: %w", it.Kind, errNotApplicable)
	}
	switch it.Status {
	case StatusApproved, StatusSent, StatusSending, StatusRejected:
		return fmt.Errorf("item is already %s: %w", it.Status, errNotApplicable)
	}
	return nil
}

// canDismiss reports whether the owner can reject or snooze an item: a
// reviewable draft, or a notice (rejecting a notice dismisses it, as
// `queue reject` does).
func canDismiss(it *Item) error {
	if it.Kind == KindNotify {
		switch it.Status {
		case StatusPending, StatusSnoozed:
			return nil
		}
		return fmt.Errorf("notice is already %s: %w", it.Status, errNotApplicable)
	}
	return canReview(it)
}

// canRegenerate reports whether the item has a draft to write again.
func canRegenerate(it *Item) error {
	if err := canReview(it); err != nil {
		return err
	}
	if it.Kind != KindDraft {
		return fmt.Errorf("only drafts can be regenerated: %w", errNotApplicable)
	}
	return nil
}

// current returns the selected item after checking that the action fits
// it and that no other action on it is in flight; otherwise it shows why
// and returns nil.
func (m *Model) current(check func(*Item) error) *Item {
	it, ok := m.selected()
	if !ok {
		m.c.setErr(errors.New("nothing selected"))
		return nil
	}
	if a, busy := m.c.busy[it.ID]; busy {
		m.c.setErr(fmt.Errorf("%s already in progress for %q", a, it.Subject))
		return nil
	}
	if check != nil {
		if err := check(it); err != nil {
			m.c.setErr(err)
			return nil
		}
	}
	cp := *it
	return &cp
}

func (m *Model) markBusy(it *Item, action string) {
	m.c.busy[it.ID] = action
	m.c.setNote(action + " " + quote(it.Subject) + "…")
}

// --- actions ------------------------------------------------------------------

func (m *Model) approve() tea.Cmd {
	it := m.current(func(it *Item) error {
		if err := canReview(it); err != nil {
			return err
		}
		if it.Draft == "" && it.Final == "" {
			return fmt.Errorf("no draft to send: %w", errNotApplicable)
		}
		return nil
	})
	if it == nil {
		return nil
	}
	if news := it.NewRecipients(); len(news) > 0 || len(it.Warnings) > 0 {
		return m.confirmNew(it, "approve", news)
	}
	m.markBusy(it, "approving")
	return approveCmd(m.c.ctx, m.c.backend, it.ID, it.Final, it.Subject)
}

// confirmNew asks before sending to addresses the owner has never written
// to (a Reply-To stranger, say), or a draft with Warnings (safety gates
// that failed for a reason a person should weigh): "send to a new address
// x@y? y/N", "send although safety gate never_auto failed? y/N". The
// key y sends; any other key does not.
func (m *Model) confirmNew(it *Item, action string, news []Address) tea.Cmd {
	var questions []string
	if len(news) > 0 {
		addrs := make([]string, 0, len(news))
		for _, a := range news {
			addrs = append(addrs, clean(a.Email))
		}
		what := "a new address"
		if len(addrs) > 1 {
			what = "new addresses"
		}
		questions = append(questions, fmt.Sprintf("send to %s %s", what, strings.Join(addrs, ", ")))
	}
	if n := len(it.Warnings); n > 0 {
		// Gate names only, so that "y/N" stays on the line; the detail
		// view has each reason.
		names := make([]string, 0, n)
		for _, w := range it.Warnings {
			name, _, _ := strings.Cut(w, ":")
			names = append(names, clean(name))
		}
		gates := "gate " + names[0]
		if n > 1 {
			gates = "gates " + strings.Join(names, ", ")
		}
		q := "although safety " + gates + " failed"
		if len(questions) == 0 {
			q = "send " + q
		}
		questions = append(questions, q)
	}
	cmd := m.c.prompt.confirm(it.ID, action, strings.Join(questions, ", "))
	m.c.setNote("")
	return cmd
}

// confirmed carries out a confirmed action on the item as it is now.
func (m *Model) confirmed(action string, it *Item) tea.Cmd {
	if a, busy := m.c.busy[it.ID]; busy {
		m.c.setErr(fmt.Errorf("%s already in progress for %q", a, it.Subject))
		return nil
	}
	switch action {
	case "approve":
		if err := canReview(it); err != nil {
			m.c.setErr(err)
			return nil
		}
		m.markBusy(it, "approving")
		return approveCmd(m.c.ctx, m.c.backend, it.ID, it.Final, it.Subject)
	case "retry":
		m.markBusy(it, "retrying")
		return retryCmd(m.c.ctx, m.c.backend, it.ID, it.Subject)
	case rsvpAccept, rsvpDecline, rsvpTentative:
		return m.rsvpConfirmed(action, it) // invite.go
	}
	return nil
}

func (m *Model) edit() tea.Cmd {
	it := m.current(canReview)
	if it == nil {
		return nil
	}
	text := it.Final
	if text == "" {
		text = it.Draft
	}
	if strings.TrimSpace(m.c.opts.Editor) != "" {
		m.markBusy(it, "editing")
		return prepareEditorCmd(it.ID, text)
	}
	m.c.setNote("editing " + quote(it.Subject))
	return m.editor.start(it.ID, text)
}

// runEditor hands the terminal to the external editor.
func (m *Model) runEditor(msg editorReadyMsg) tea.Cmd {
	if msg.err != nil {
		delete(m.c.busy, msg.id)
		m.c.setErr(fmt.Errorf("edit: %w", msg.err))
		return nil
	}
	c, err := editorCommand(m.c.opts.Editor, msg.path)
	if err != nil {
		// Still route through finishEditCmd so that the temp file goes.
		return func() tea.Msg { return editorExitedMsg{id: msg.id, path: msg.path, orig: msg.orig, err: err} }
	}
	m.c.log.Debug("run editor", "editor", c.Path)
	id, path, orig := msg.id, msg.path, msg.orig
	return tea.ExecProcess(c, func(err error) tea.Msg {
		return editorExitedMsg{id: id, path: path, orig: orig, err: err}
	})
}

func (m *Model) retry() tea.Cmd {
	it := m.current(func(it *Item) error {
		if it.Kind != KindNeedsReview && it.Status != StatusFailed {
			return fmt.Errorf("only needs_review or failed items can be retried: %w", errNotApplicable)
		}
		return nil
	})
	if it == nil {
		return nil
	}
	// Retrying a failed draft approves it again: it sends.
	if news := it.NewRecipients(); (len(news) > 0 || len(it.Warnings) > 0) && it.Kind == KindDraft && it.Status == StatusFailed {
		return m.confirmNew(it, "retry", news)
	}
	m.markBusy(it, "retrying")
	return retryCmd(m.c.ctx, m.c.backend, it.ID, it.Subject)
}

// canUnsnooze reports whether an item is snoozed.
func canUnsnooze(it *Item) error {
	if it.Status != StatusSnoozed {
		return fmt.Errorf("only snoozed items can be unsnoozed: %w", errNotApplicable)
	}
	return nil
}

// unsnooze brings a snoozed item back: through Unsnoozer when the backend
// has it, else by snoozing it until now, which makes it due at once.
func (m *Model) unsnooze() tea.Cmd {
	it := m.current(canUnsnooze)
	if it == nil {
		return nil
	}
	m.markBusy(it, "unsnoozing")
	return unsnoozeCmd(m.c.ctx, m.c.backend, it.ID, m.c.now(), it.Subject)
}

// awaitingSend reports whether it is a send the owner started that has
// not gone out: an approved draft (a follow-up nudge is one), an answered
// invitation, whatever the item's kind. Its undo window is SendAt.
func awaitingSend(it *Item) bool {
	return it.Status == StatusApproved && it.Kind != KindSent && it.Kind != KindDecided
}

// canCancel reports whether a send can still be stopped: a delayed
// auto-send, or any send the owner started still in its undo window
// (policy.approval_delay): an approval, an RSVP.
func canCancel(it *Item, now time.Time) error {
	if !awaitingSend(it) && it.Kind != KindSent {
		return fmt.Errorf("only a send that has not gone out can be cancelled: %w", errNotApplicable)
	}
	if it.Status == StatusSent {
		return fmt.Errorf("too late to cancel: already sent: %w", errNotApplicable)
	}
	if !it.SendAt.After(now) {
		return fmt.Errorf("too late to cancel: it is being sent: %w", errNotApplicable)
	}
	return nil
}

func (m *Model) cancelSend() tea.Cmd {
	now := m.c.now()
	check := func(it *Item) error { return canCancel(it, now) }
	if it, ok := m.selected(); (!ok || check(it) != nil) && m.undo.note(m.c) != "" {
		// The note line says "c cancels" of the send last started: c
		// is about that one, wherever the cursor is.
		if e, ok := m.c.items[m.undo.id]; ok && check(&e.item) == nil {
			if _, busy := m.c.busy[m.undo.id]; !busy {
				m.markBusy(&e.item, "cancelling")
				return cancelCmd(m.c.ctx, m.c.backend, e.item.ID, e.item.Subject)
			}
		}
	}
	it := m.current(check)
	if it == nil {
		return nil
	}
	m.markBusy(it, "cancelling")
	return cancelCmd(m.c.ctx, m.c.backend, it.ID, it.Subject)
}

// sendDue sends, when the backend leaves that to the TUI (ApprovalSender),
// each approved reply whose undo window has ended. It runs on every tick.
func (m *Model) sendDue() tea.Cmd {
	s, ok := m.c.backend.(ApprovalSender)
	if !ok {
		return nil
	}
	now := m.c.now()
	var cmds []tea.Cmd
	for id, e := range m.c.items {
		it := &e.item
		// Whatever its kind: an answered invitation (invite.go) may be a
		// notification.
		if !awaitingSend(it) || it.SendAt.IsZero() || it.SendAt.After(now) {
			continue
		}
		if _, busy := m.c.busy[id]; busy {
			continue
		}
		m.c.busy[id] = "sending"
		cmds = append(cmds, sendApprovedCmd(m.c.ctx, s, id, it.Subject))
	}
	return tea.Batch(cmds...)
}

// applyAction folds an action's result into the model. On failure the item
// stays exactly as it was and the error is shown.
func (m *Model) applyAction(msg actionMsg) tea.Cmd {
	delete(m.c.busy, msg.id)
	subject := msg.subject
	if e, ok := m.c.items[msg.id]; ok && subject == "" {
		subject = e.item.Subject
	}
	if msg.err != nil {
		m.c.log.Warn("action failed", "action", msg.action, "id", msg.id, "err", msg.err)
		m.c.setErr(fmt.Errorf("%s %s failed: %w", msg.action, quote(subject), msg.err))
		m.abortQuit() // quit.go: the owner must see this before leaving
		return nil
	}
	m.c.log.Info("action done", "action", msg.action, "id", msg.id)
	e, ok := m.c.items[msg.id]
	if !ok && msg.action != "regenerate" {
		// The item went away meanwhile (an event removed it).
		m.c.setNote(msg.action + " done")
		return nil
	}
	if msg.action != "send" && msg.action != "retry" && msg.action != "regenerate" && !msg.noop {
		// The backend changed the item: a copy read before is stale
		// (entry.stale). "send" is left to the reload (with a watcher
		// it sends nothing itself), "retry" changes nothing here and
		// "regenerate" brings the item read again.
		e.ahead = true
	}
	var cmd tea.Cmd
	switch msg.action {
	case "approve":
		// The reply waits out its undo window: the item stays in sight
		// with a countdown (see undoState.note) and c cancels it. Its send time
		// comes with the item read again.
		e.item.Status = StatusApproved
		m.undo = undoState{id: msg.id}
		if l, ok := m.c.backend.(Learner); ok {
			m.undo.learned = l.LastLearned(msg.id)
		}
		m.c.setNote("")
		if cmd = detailCmd(m.c.ctx, m.c.backend, msg.id); cmd == nil {
			cmd = loadCmd(m.c.ctx, m.c.backend)
		}
	case "send":
		e.item.Status = StatusSent // until the reload says more
		m.c.setNote("sent " + quote(subject))
		cmd = loadCmd(m.c.ctx, m.c.backend)
	case "reject":
		e.item.Status = StatusRejected
		if msg.text != "" {
			m.c.setNote("rejected " + quote(subject) + " (" + msg.text + ")")
		} else {
			m.c.setNote("rejected " + quote(subject))
		}
		m.leaveDetailOf(msg.id)
	case "edit":
		if msg.noop {
			m.c.setNote("draft unchanged")
			return nil
		}
		e.item.Final = msg.text
		m.c.setNote("saved edit of " + quote(subject))
	case "regenerate":
		if msg.item != nil && msg.item.ID != "" {
			m.c.put(*msg.item)
		}
		m.c.setNote("regenerated " + quote(subject))
	case "unsnooze":
		e.item.Status = StatusPending
		m.c.setNote("unsnoozed " + quote(subject))
		cmd = loadCmd(m.c.ctx, m.c.backend)
	case "snooze":
		e.item.Status = StatusSnoozed
		m.c.setNote("snoozed " + quote(subject) + " until " + msg.until.Format("Mon 15:04"))
		m.leaveDetailOf(msg.id)
	case "retry":
		m.c.setNote("retrying " + quote(subject))
		cmd = loadCmd(m.c.ctx, m.c.backend) // the backend decides where it goes
	case "cancel":
		e.item.SendAt = time.Time{}
		switch {
		case e.item.Kind == KindDraft:
			e.item.Status = StatusPending
			m.c.setNote("not sent: " + quote(subject) + " is back in the queue")
		case e.item.Kind != KindSent:
			// An answered invitation: open to an answer again.
			e.item.Status = StatusPending
			m.c.setNote("not sent: " + quote(subject) + " is back, unanswered")
		default:
			e.item.Status = StatusRejected
			m.c.setNote("cancelled the send of " + quote(subject))
		}
		cmd = loadCmd(m.c.ctx, m.c.backend)
	}
	m.rebuild()
	return cmd
}

// leaveDetailOf returns to the list when the detail view shows an item
// that has just left its list.
func (m *Model) leaveDetailOf(id string) {
	if m.tab == tabDetail && m.detail.id == id {
		m.tab = m.detail.from
	}
}

// undoState is the send the owner started last (an approval, an RSVP):
// while its undo window runs the note line counts down and says how to
// cancel.
type undoState struct {
	id string
	// verb says what it was ("approved" when empty).
	verb string
	// learned is what the approval of id taught (tui.Learner), shown
	// with its countdown; L forgets it (tui.Forgetter).
	learned []Learned
}

// note counts down the undo window of the send last started, an
// approval or an RSVP: "approved "X": sending in 4s, c cancels". It is
// empty once the reply has left (or was cancelled).
func (u undoState) note(c *Common) string {
	e, ok := c.items[u.id]
	if !ok || !awaitingSend(&e.item) {
		return ""
	}
	verb := u.verb
	if verb == "" {
		verb = "approved"
	}
	if a, busy := c.busy[u.id]; busy {
		return a + " " + quote(clean(e.item.Subject)) + "…"
	}
	learned := ""
	if len(u.learned) > 0 {
		_, forgets := c.backend.(Forgetter)
		texts := make([]string, 0, len(u.learned))
		for _, l := range u.learned {
			t := clean(l.Text)
			if !forgets { // the way to undo it without L
				t += " (undo: mailagent memory forget " + clean(l.ID) + ")"
			}
			texts = append(texts, t)
		}
		learned = "; learned: " + strings.Join(texts, "; ")
		if forgets {
			learned += " (L forgets)"
		}
	}
	now := c.now()
	if !e.item.SendAt.After(now) {
		return verb + " " + quote(clean(e.item.Subject)) + ": sending" + learned
	}
	return verb + " " + quote(clean(e.item.Subject)) + ": sending in " + countdown(e.item.SendAt.Sub(now)) + ", c cancels" + learned
}
