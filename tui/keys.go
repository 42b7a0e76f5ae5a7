package tui

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/mailagent/mailagent/internal/humantime"
)

// handleKey routes a key press to the focused component.
func (m *Model) handleKey(msg tea.KeyPressMsg) tea.Cmd {
	switch m.mode {
	case modePrompt:
		return m.handlePromptKey(msg)
	case modeInlineEdit:
		return m.handleEditorKey(msg)
	}
	return m.handleNormalKey(msg)
}

func (m *Model) handleNormalKey(msg tea.KeyPressMsg) tea.Cmd {
	k := m.keys
	if m.showHelp {
		// The overlay swallows everything but its own toggles.
		// A window too small for it scrolls it.
		if msg.String() == "g" {
			if m.pendingG {
				m.scrollHelp(-1 << 30)
			}
			m.pendingG = !m.pendingG
			return nil
		}
		m.pendingG = false
		switch {
		case key.Matches(msg, k.Help, k.Back):
			m.showHelp = false
		case key.Matches(msg, k.Quit) && (m.tab == tabDetail || m.fu.open) && msg.String() != "ctrl+c":
			// The detail and follow-ups views' overlays list "q/esc
			// back": q leaves the overlay, never the program.
			m.showHelp = false
		case key.Matches(msg, k.Quit):
			return m.quit()
		case key.Matches(msg, k.Down):
			m.scrollHelp(1)
		case key.Matches(msg, k.Up):
			m.scrollHelp(-1)
		case key.Matches(msg, k.HalfPageDown, k.PageDown):
			m.scrollHelp(max(1, m.bodyHeight()/2))
		case key.Matches(msg, k.HalfPageUp, k.PageUp):
			m.scrollHelp(-max(1, m.bodyHeight()/2))
		case key.Matches(msg, k.Top):
			m.scrollHelp(-1 << 30)
		case key.Matches(msg, k.Bottom):
			m.scrollHelp(1 << 30)
		}
		return nil
	}
	// "gg" jumps to the top (vim, less); a lone g does nothing yet.
	if msg.String() == "g" {
		if m.pendingG {
			m.pendingG = false
			m.scroll(-1 << 30)
			return nil
		}
		m.pendingG = true
		return nil
	}
	m.pendingG = false
	if cmd, ok := m.quittingKey(key.Matches(msg, k.Cancel), key.Matches(msg, k.Back)); ok {
		return cmd // quit.go: c or esc while a quit waits for sends
	}
	switch {
	case key.Matches(msg, k.Quit):
		if m.tab == tabDetail && msg.String() != "ctrl+c" {
			// neomutt, aerc: q leaves the message before the program.
			m.switchTab(m.detailFrom)
			return nil
		}
		return m.quit()
	case key.Matches(msg, k.Help):
		m.showHelp, m.helpOffset = true, 0
	case key.Matches(msg, k.NextTab):
		m.switchTab((m.tab + 1) % numTabs)
	case key.Matches(msg, k.PrevTab):
		m.switchTab((m.tab + numTabs - 1) % numTabs)
	case key.Matches(msg, k.GotoTab):
		if n, err := strconv.Atoi(msg.String()); err == nil && n >= 1 && n <= int(numTabs) {
			m.switchTab(tab(n - 1))
		}
	case key.Matches(msg, k.Back):
		switch {
		case m.tab == tabDetail:
			m.switchTab(m.detailFrom)
		case m.filter != "":
			m.filter = ""
			m.rebuild()
			m.setNote("filter cleared")
		}
	case key.Matches(msg, k.Up):
		m.scroll(-1)
	case key.Matches(msg, k.Down):
		m.scroll(1)
	case key.Matches(msg, k.PageUp):
		m.scroll(-m.bodyHeight())
	case key.Matches(msg, k.PageDown):
		m.scroll(m.bodyHeight())
	case key.Matches(msg, k.HalfPageUp):
		m.scroll(-max(1, m.bodyHeight()/2))
	case key.Matches(msg, k.HalfPageDown):
		m.scroll(max(1, m.bodyHeight()/2))
	case key.Matches(msg, k.Top):
		m.scroll(-1 << 30)
	case key.Matches(msg, k.Bottom):
		m.scroll(1 << 30)
	case key.Matches(msg, k.Open):
		if m.tab != tabDetail {
			if it, ok := m.selected(); ok {
				m.openDetail(it.ID)
				return detailCmd(m.ctx, m.backend, it.ID)
			}
		}
	case key.Matches(msg, k.Filter):
		if m.tab != tabDetail {
			return m.openPrompt(promptFilter, "", m.filter)
		}
	case key.Matches(msg, k.Approve):
		return m.approve()
	case key.Matches(msg, k.Edit):
		return m.edit()
	case key.Matches(msg, k.Reject):
		return m.startPrompt(promptReject, canDismiss)
	case key.Matches(msg, k.Regenerate):
		return m.startPrompt(promptRegenerate, canRegenerate)
	case key.Matches(msg, k.Snooze):
		return m.startPrompt(promptSnooze, canDismiss)
	case key.Matches(msg, k.Retry):
		return m.retry()
	case key.Matches(msg, k.Cancel):
		return m.cancelSend()
	case key.Matches(msg, k.Forget):
		return m.forgetLearned()
	case key.Matches(msg, k.Unsnooze):
		return m.unsnooze()
	case key.Matches(msg, k.Accept, k.Decline, k.Tentative):
		return m.rsvp(msg) // invite.go
	}
	return nil
}

func (m *Model) switchTab(t tab) {
	if t != m.tab {
		m.setNote("") // a flash belongs to the view it was shown in
	}
	if t == tabDetail && m.tab != tabDetail {
		if it, ok := m.selected(); ok {
			m.openDetail(it.ID)
			return
		}
		m.detailFrom = m.tab
		m.detailID = ""
	}
	m.tab = t
	if t == tabDetail {
		m.refreshDetail()
	}
}

func (m *Model) openDetail(id string) {
	if m.tab != tabDetail {
		m.detailFrom = m.tab
		m.setNote("")
	}
	m.detailID = id
	m.tab = tabDetail
	m.refreshDetail()
	m.viewport.GotoTop()
}

func (m *Model) scroll(n int) {
	if m.tab == tabDetail {
		if n < 0 {
			m.viewport.ScrollUp(-n)
		} else {
			m.viewport.ScrollDown(n)
		}
		return
	}
	m.moveCursor(n)
}

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
		m.setErr(errors.New("nothing selected"))
		return nil
	}
	if a, busy := m.busy[it.ID]; busy {
		m.setErr(fmt.Errorf("%s already in progress for %q", a, it.Subject))
		return nil
	}
	if check != nil {
		if err := check(it); err != nil {
			m.setErr(err)
			return nil
		}
	}
	cp := *it
	return &cp
}

func (m *Model) markBusy(it *Item, action string) {
	m.busy[it.ID] = action
	m.setNote(action + " " + quote(it.Subject) + "…")
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
	return approveCmd(m.ctx, m.backend, it.ID, it.Final, it.Subject)
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
	cmd := m.openPrompt(promptConfirmNew, it.ID, "")
	m.confirmFor = action
	m.input.Prompt = strings.Join(questions, ", ") + confirmSuffix
	m.setNote("")
	return cmd
}

// confirmed carries out a confirmed action on the item as it is now.
func (m *Model) confirmed(action string, it *Item) tea.Cmd {
	if a, busy := m.busy[it.ID]; busy {
		m.setErr(fmt.Errorf("%s already in progress for %q", a, it.Subject))
		return nil
	}
	switch action {
	case "approve":
		if err := canReview(it); err != nil {
			m.setErr(err)
			return nil
		}
		m.markBusy(it, "approving")
		return approveCmd(m.ctx, m.backend, it.ID, it.Final, it.Subject)
	case "retry":
		m.markBusy(it, "retrying")
		return retryCmd(m.ctx, m.backend, it.ID, it.Subject)
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
	if strings.TrimSpace(m.opts.Editor) != "" {
		m.markBusy(it, "editing")
		return prepareEditorCmd(it.ID, text)
	}
	m.mode = modeInlineEdit
	m.editID = it.ID
	m.editor.SetValue(text)
	m.editor.MoveToBegin()
	m.setNote("editing " + quote(it.Subject))
	return m.editor.Focus()
}

// runEditor hands the terminal to the external editor.
func (m *Model) runEditor(msg editorReadyMsg) tea.Cmd {
	if msg.err != nil {
		delete(m.busy, msg.id)
		m.setErr(fmt.Errorf("edit: %w", msg.err))
		return nil
	}
	c, err := editorCommand(m.opts.Editor, msg.path)
	if err != nil {
		// Still route through finishEditCmd so that the temp file goes.
		return func() tea.Msg { return editorExitedMsg{id: msg.id, path: msg.path, orig: msg.orig, err: err} }
	}
	m.log.Debug("run editor", "editor", c.Path)
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
	return retryCmd(m.ctx, m.backend, it.ID, it.Subject)
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
	return unsnoozeCmd(m.ctx, m.backend, it.ID, m.now(), it.Subject)
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
	now := m.now()
	check := func(it *Item) error { return canCancel(it, now) }
	if it, ok := m.selected(); (!ok || check(it) != nil) && m.undoNote() != "" {
		// The note line says "c cancels" of the send last started: c
		// is about that one, wherever the cursor is.
		if e, ok := m.items[m.undoID]; ok && check(&e.item) == nil {
			if _, busy := m.busy[m.undoID]; !busy {
				m.markBusy(&e.item, "cancelling")
				return cancelCmd(m.ctx, m.backend, e.item.ID, e.item.Subject)
			}
		}
	}
	it := m.current(check)
	if it == nil {
		return nil
	}
	m.markBusy(it, "cancelling")
	return cancelCmd(m.ctx, m.backend, it.ID, it.Subject)
}

// sendDue sends, when the backend leaves that to the TUI (ApprovalSender),
// each approved reply whose undo window has ended. It runs on every tick.
func (m *Model) sendDue() tea.Cmd {
	s, ok := m.backend.(ApprovalSender)
	if !ok {
		return nil
	}
	now := m.now()
	var cmds []tea.Cmd
	for id, e := range m.items {
		it := &e.item
		// Whatever its kind: an answered invitation (invite.go) may be a
		// notification.
		if !awaitingSend(it) || it.SendAt.IsZero() || it.SendAt.After(now) {
			continue
		}
		if _, busy := m.busy[id]; busy {
			continue
		}
		m.busy[id] = "sending"
		cmds = append(cmds, sendApprovedCmd(m.ctx, s, id, it.Subject))
	}
	return tea.Batch(cmds...)
}

// applyAction folds an action's result into the model. On failure the item
// stays exactly as it was and the error is shown.
func (m *Model) applyAction(msg actionMsg) tea.Cmd {
	delete(m.busy, msg.id)
	subject := msg.subject
	if e, ok := m.items[msg.id]; ok && subject == "" {
		subject = e.item.Subject
	}
	if msg.err != nil {
		m.log.Warn("action failed", "action", msg.action, "id", msg.id, "err", msg.err)
		m.setErr(fmt.Errorf("%s %s failed: %w", msg.action, quote(subject), msg.err))
		m.abortQuit() // quit.go: the owner must see this before leaving
		return nil
	}
	m.log.Info("action done", "action", msg.action, "id", msg.id)
	e, ok := m.items[msg.id]
	if !ok && msg.action != "regenerate" {
		// The item went away meanwhile (an event removed it).
		m.setNote(msg.action + " done")
		return nil
	}
	var cmd tea.Cmd
	switch msg.action {
	case "approve":
		// The reply waits out its undo window: the item stays in sight
		// with a countdown (see undoNote) and c cancels it. Its send time
		// comes with the item read again.
		e.item.Status = StatusApproved
		m.undoID, m.undoVerb = msg.id, ""
		m.undoLearned = nil
		if l, ok := m.backend.(Learner); ok {
			m.undoLearned = l.LastLearned(msg.id)
		}
		m.setNote("")
		if cmd = detailCmd(m.ctx, m.backend, msg.id); cmd == nil {
			cmd = loadCmd(m.ctx, m.backend)
		}
	case "send":
		e.item.Status = StatusSent // until the reload says more
		m.setNote("sent " + quote(subject))
		cmd = loadCmd(m.ctx, m.backend)
	case "reject":
		e.item.Status = StatusRejected
		if msg.text != "" {
			m.setNote("rejected " + quote(subject) + " (" + msg.text + ")")
		} else {
			m.setNote("rejected " + quote(subject))
		}
		m.leaveDetailOf(msg.id)
	case "edit":
		if msg.noop {
			m.setNote("draft unchanged")
			return nil
		}
		e.item.Final = msg.text
		m.setNote("saved edit of " + quote(subject))
	case "regenerate":
		if msg.item != nil && msg.item.ID != "" {
			m.items[msg.item.ID] = newEntry(*msg.item)
		}
		m.setNote("regenerated " + quote(subject))
	case "unsnooze":
		e.item.Status = StatusPending
		m.setNote("unsnoozed " + quote(subject))
		cmd = loadCmd(m.ctx, m.backend)
	case "snooze":
		e.item.Status = StatusSnoozed
		m.setNote("snoozed " + quote(subject) + " until " + msg.until.Format("Mon 15:04"))
		m.leaveDetailOf(msg.id)
	case "retry":
		m.setNote("retrying " + quote(subject))
		cmd = loadCmd(m.ctx, m.backend) // the backend decides where it goes
	case "cancel":
		e.item.SendAt = time.Time{}
		switch {
		case e.item.Kind == KindDraft:
			e.item.Status = StatusPending
			m.setNote("not sent: " + quote(subject) + " is back in the queue")
		case e.item.Kind != KindSent:
			// An answered invitation: open to an answer again.
			e.item.Status = StatusPending
			m.setNote("not sent: " + quote(subject) + " is back, unanswered")
		default:
			e.item.Status = StatusRejected
			m.setNote("cancelled the send of " + quote(subject))
		}
		cmd = loadCmd(m.ctx, m.backend)
	}
	m.rebuild()
	return cmd
}

// leaveDetailOf returns to the list when the detail view shows an item
// that has just left its list.
func (m *Model) leaveDetailOf(id string) {
	if m.tab == tabDetail && m.detailID == id {
		m.tab = m.detailFrom
	}
}

// --- prompts ------------------------------------------------------------------

func (m *Model) startPrompt(kind promptKind, check func(*Item) error) tea.Cmd {
	it := m.current(check)
	if it == nil {
		return nil
	}
	m.promptID = it.ID
	return m.openPrompt(kind, it.ID, "")
}

func (m *Model) openPrompt(kind promptKind, id, value string) tea.Cmd {
	m.mode = modePrompt
	m.prompt = kind
	m.promptID = id
	m.input.Reset()
	m.input.SetValue(value)
	m.input.CursorEnd()
	switch kind {
	case promptFilter:
		m.input.Prompt = "filter: "
		m.input.Placeholder = "from, subject, summary or intent"
	case promptReject:
		m.input.Prompt = "reject, reason (optional): "
		if e, ok := m.items[id]; ok && e.item.Kind == KindNotify {
			m.input.Prompt = "dismiss, note (optional): "
		}
		m.input.Placeholder = ""
	case promptRegenerate:
		m.input.Prompt = "regenerate, instruction: "
		m.input.Placeholder = "shorter / decline politely"
	case promptSnooze:
		m.input.Prompt = "snooze for: "
		m.input.Placeholder = "4h (or 1h, 30m, 2d, tomorrow)"
	case promptConfirmNew:
		m.input.Placeholder = ""
	}
	m.sizeInput()
	return m.input.Focus()
}

func (m *Model) closePrompt() {
	m.mode = modeNormal
	m.prompt = promptNone
	m.confirmFor = ""
	m.input.Blur()
}

func (m *Model) handlePromptKey(msg tea.KeyPressMsg) tea.Cmd {
	if m.prompt == promptConfirmNew {
		// A y/N question takes one key, as every y/N question in a
		// terminal does: y answers yes at once; any other key (n, enter,
		// esc, a stray q) is no.
		m.input.SetValue(msg.String())
		return m.submitPrompt()
	}
	switch {
	case key.Matches(msg, m.keys.Back):
		if m.prompt == promptFilter {
			m.filter = ""
			m.rebuild()
		}
		m.closePrompt()
		m.setNote("")
		return nil
	case key.Matches(msg, m.keys.Submit):
		return m.submitPrompt()
	}
	var cmd tea.Cmd
	m.input, cmd = m.input.Update(msg)
	if m.prompt == promptFilter && m.filter != m.input.Value() {
		// Narrow as the owner types.
		m.filter = m.input.Value()
		m.rebuild()
	}
	return cmd
}

func (m *Model) submitPrompt() tea.Cmd {
	kind, id, value, confirmFor := m.prompt, m.promptID, strings.TrimSpace(m.input.Value()), m.confirmFor
	m.closePrompt()
	if kind == promptFilter {
		m.filter = value
		m.rebuild()
		if value != "" {
			m.setNote(fmt.Sprintf("filter %q: %d match(es)", value, len(m.lists[m.tab].rows)))
		}
		return nil
	}
	e, ok := m.items[id]
	if !ok {
		m.setErr(errors.New("the item is gone"))
		return nil
	}
	it := e.item
	switch kind {
	case promptConfirmNew:
		if v := strings.ToLower(value); v != "y" {
			m.setNote("not sent")
			return nil
		}
		return m.confirmed(confirmFor, &it)
	case promptReject:
		m.markBusy(&it, "rejecting")
		return rejectCmd(m.ctx, m.backend, id, value, it.Subject)
	case promptRegenerate:
		if value == "" {
			m.setErr(errors.New("regenerate needs an instruction"))
			return nil
		}
		m.markBusy(&it, "regenerating")
		return regenerateCmd(m.ctx, m.backend, id, value, it.Subject)
	case promptSnooze:
		until, err := ParseSnooze(value, m.now())
		if err != nil {
			m.setErr(err)
			return nil
		}
		m.markBusy(&it, "snoozing")
		return snoozeCmd(m.ctx, m.backend, id, until, it.Subject)
	}
	return nil
}

// defaultSnooze is the snooze length when the prompt is left empty.
const defaultSnooze = 4 * time.Hour

// ParseSnooze turns the snooze prompt (or a CLI --for value, so both
// accept the same words) into a time: "" is 4h, "tomorrow" (08:00 local
// time the next day), or a positive duration in the one grammar
// (humantime.ParseDuration: "90m", "1h30m", "2d", "1w").
func ParseSnooze(s string, now time.Time) (time.Time, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	switch {
	case s == "":
		return now.Add(defaultSnooze), nil
	case s == "tomorrow":
		y, mo, d := now.Date()
		return time.Date(y, mo, d+1, 8, 0, 0, 0, now.Location()), nil
	}
	d, err := humantime.ParseDuration(s)
	if err != nil {
		return time.Time{}, fmt.Errorf("snooze %q: want 4h, 30m, 2d or tomorrow", s)
	}
	if d <= 0 {
		return time.Time{}, fmt.Errorf("snooze %q: must be in the future", s)
	}
	return now.Add(d), nil
}

// --- inline editor ------------------------------------------------------------

func (m *Model) handleEditorKey(msg tea.KeyPressMsg) tea.Cmd {
	switch {
	case key.Matches(msg, m.keys.Back):
		m.mode = modeNormal
		m.editor.Blur()
		m.setNote("edit cancelled")
		return nil
	case key.Matches(msg, m.keys.Save):
		m.mode = modeNormal
		m.editor.Blur()
		id, text := m.editID, m.editor.Value()
		e, ok := m.items[id]
		if !ok {
			m.setErr(errors.New("the item is gone"))
			return nil
		}
		orig := e.item.Final
		if orig == "" {
			orig = e.item.Draft
		}
		if text == orig {
			m.setNote("draft unchanged")
			return nil
		}
		it := e.item
		m.markBusy(&it, "saving")
		return editCmd(m.ctx, m.backend, id, text, it.Subject)
	}
	var cmd tea.Cmd
	m.editor, cmd = m.editor.Update(msg)
	return cmd
}

// forwardToInput passes non-key messages (paste, cursor) to the focused
// text component.
func (m *Model) forwardToInput(msg tea.Msg) tea.Cmd {
	var cmd tea.Cmd
	switch m.mode {
	case modePrompt:
		m.input, cmd = m.input.Update(msg)
	case modeInlineEdit:
		m.editor, cmd = m.editor.Update(msg)
	}
	return cmd
}

func quote(s string) string {
	if s == "" {
		s = "(no subject)"
	}
	return strconv.Quote(s)
}

// forgettable reports whether the Forget key applies: the countdown note
// shows what the approval taught, and the backend can forget it.
func (m *Model) forgettable() bool {
	_, ok := m.backend.(Forgetter)
	return ok && len(m.undoLearned) > 0 && m.note == "" && m.undoNote() != ""
}

// forgotMsg reports ForgetLearned's result.
type forgotMsg struct {
	n   int
	err error
}

// forgetLearned forgets the records the approval in its undo window
// wrote; the approval itself stands (c cancels it).
func (m *Model) forgetLearned() tea.Cmd {
	if !m.forgettable() {
		return nil
	}
	f := m.backend.(Forgetter)
	ids := make([]string, 0, len(m.undoLearned))
	for _, l := range m.undoLearned {
		ids = append(ids, l.ID)
	}
	ctx := m.ctx
	return func() tea.Msg { return forgotMsg{n: len(ids), err: f.ForgetLearned(ctx, ids)} }
}

func (m *Model) applyForgot(msg forgotMsg) {
	if msg.err != nil {
		m.setErr(fmt.Errorf("forget what the approval taught: %w", msg.err))
		return
	}
	m.undoLearned = nil
	if msg.n == 1 {
		m.setNote("forgot what the approval taught (1 record)")
		return
	}
	m.setNote(fmt.Sprintf("forgot what the approval taught (%d records)", msg.n))
}
