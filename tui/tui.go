// Package tui is mailagent's review app: a bubbletea program in which the
// owner approves, edits, rejects, regenerates or snoozes queued drafts,
// retries items that need attention, and cancels delayed auto-sends.
//
// The package depends on nothing else in mailagent. It talks to the rest of
// the application only through the Backend interface and its own view types
// (Item, Status, Event); cmd/mailagent supplies an adapter over the store or
// the watcher's socket. Every Backend call runs inside a tea.Cmd that copies
// the values it needs, and its result comes back to Update as a typed
// message, so Update and View never block. A failed action leaves the item
// where it was and shows the error in the status area.
//
// Live changes arrive through Backend.Events: one Cmd waits for the next
// event and is re-armed after each, so new drafts appear without a restart.
// Live updates never stop silently: when the stream closes the status line
// says the watcher is gone at once, the TUI subscribes again every
// Options.Resubscribe and, once it succeeds, reloads everything (as it does
// on an EventReload). Timers: a one-second tea.Tick refreshes ages and the
// "sending in" countdown, and the status line is read again every
// Options.StatusEvery, so it never shows a stale sync state.
//
// Optional interfaces widen what the TUI offers: FollowupBackend (the
// follow-ups view, F), Unsubscriber (U), Learner and Forgetter (what an
// approval taught, and L to forget it), Inviter (A, D, T answer an
// item's calendar invitation after a y/N question). The help overlay lists only the
// keys the backend supports, and the hint bar only those that apply to
// the selected item, always ending in "? help" and "q quit" (or "q/esc
// back") whatever the width.
//
// Every send the owner starts (an approval, an RSVP) waits out its undo
// window in the list it was started from, with a countdown, and c
// cancels it (or the one the note line counts down). With no
// watcher, this process sends (ApprovalSender), so q waits for those
// sends and q again cancels them (quit.go); Run cancels what a signal
// left waiting.
//
// Lists render only the rows that fit the window, so a queue of 10,000
// drafts opens and scrolls without building a 10,000-line string.
//
// The TUI is built of components (the pattern of soft-serve's ui): one
// Common (common.go: context, size, palette, keymap, backend, clock,
// item cache, note line) shared by every component; a listView per list
// tab (list.go: the queue, needs attention, sent, decided), the detail
// view (detail.go), the follow-ups view (followups.go), the help overlay
// (help.go), the prompt box for every question (prompt.go) and the
// inline editor (editor.go). The root Model owns them, routes each
// message and key to the one that is active, and draws the frame around
// its body (view.go). What acts on items (approve, reject, …) is the
// root's (actions.go), since a list and the detail view offer the same.
//
// The program logs to Options.Logger only, never to the terminal it draws
// on.
package tui

import (
	"fmt"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/mailagent/mailagent/tui/styles"
)

// tab identifies one of the five tabs.
type tab int

const (
	tabQueue tab = iota
	tabDetail
	tabAttention
	tabSent
	tabDecided
	numTabs
)

var tabTitles = [numTabs]string{"Queue", "Detail", "Needs attention", "Sent by the agent", "Decided without asking"}

// listTabs are the views that list items.
var listTabs = []tab{tabQueue, tabAttention, tabSent, tabDecided}

// mode is what currently receives key presses.
type mode int

const (
	modeNormal mode = iota
	modePrompt
	modeInlineEdit
)

// Model is the root bubbletea model: it owns the components, routes
// messages and keys to the active one and draws the frame. Create it
// with New; it is used through a pointer and is not safe for concurrent
// use (bubbletea calls it from one goroutine).
type Model struct {
	c *Common

	tab    tab
	lists  [numTabs]*listView // nil at tabDetail
	detail *detailView
	fu     *followupView
	help   *helpView
	editor *inlineEditor

	conn connState // the status line's data (view.go)
	undo undoState // the send last started (actions.go)
	exit quitState // a quit waiting for sends (quit.go)

	// pendingG: the last key was a lone "g"; a second one jumps to the
	// top (keys.go).
	pendingG bool

	// tabs is the tab bar renderTabs last drew and what it drew it from
	// (view.go): every frame has one, and it changes with a count.
	tabs struct {
		from tabsFrom
		bar  string
	}
}

// connState is what the status line says about the watcher.
type connState struct {
	stat Status
	// sawWatcher: a watcher was connected at some point, so its absence
	// is news ("no watcher"), not the way review was started.
	sawWatcher bool
	// streamLost: the event stream closed or failed; a resubscription is
	// pending, and everything is reloaded when it succeeds.
	streamLost bool
}

// New returns a model over b. It does no I/O; Init loads the items.
func New(b Backend, opts Options) *Model {
	c := newCommon(b, opts)
	m := &Model{
		c:      c,
		detail: newDetailView(c),
		fu:     newFollowupView(c),
		editor: newInlineEditor(c),
	}
	for _, t := range listTabs {
		m.lists[t] = newListView(c, t)
	}
	m.help = newHelpView(c, m.viewKeys)
	m.setStyles(c.st)
	m.resize()
	return m
}

// Init loads the items and status, subscribes to live events and starts
// the clock.
func (m *Model) Init() tea.Cmd {
	c := m.c
	cmds := []tea.Cmd{loadCmd(c.ctx, c.backend), subscribeCmd(c.ctx, c.backend)}
	if c.ticks {
		// The terminal answers with a tea.BackgroundColorMsg; the palette
		// then follows a light or dark background.
		cmds = append(cmds, tickCmd(), statusTickCmd(m.statusEvery()), tea.RequestBackgroundColor)
	}
	return tea.Batch(cmds...)
}

// Update handles one message. A quit that waits for sends (quit.go)
// happens once they are done.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	cmd := m.update(msg)
	if q := m.quitWhenDone(); q != nil {
		return m, q
	}
	return m, cmd
}

func (m *Model) update(msg tea.Msg) tea.Cmd {
	c := m.c
	if cmd, ok := m.fu.update(msg); ok {
		return cmd
	}
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		c.width, c.height = msg.Width, msg.Height
		m.resize()
		return nil
	case tea.BackgroundColorMsg:
		if c.st.Dark != msg.IsDark() {
			m.setStyles(styles.ForBackground(c.opts.NoColor, c.opts.ASCII, msg.IsDark()))
		}
		return nil
	case tickMsg:
		if m.tab == tabDetail {
			m.detail.refresh() // the "sending in" countdown
		}
		send := m.sendDue()
		if c.ticks {
			return tea.Batch(send, tickCmd())
		}
		return send
	case loadedMsg:
		m.applyLoad(msg)
		return nil
	case statusTickMsg:
		if !c.ticks {
			return nil
		}
		return tea.Batch(statusCmd(c.ctx, c.backend), statusTickCmd(m.statusEvery()))
	case statusMsg:
		if msg.err != nil {
			c.log.Warn("read status", "err", msg.err)
			return nil
		}
		m.setStatus(msg.status)
		return nil
	case eventsReadyMsg:
		if msg.err != nil {
			c.log.Warn("subscribe to events", "err", msg.err)
			if !m.conn.streamLost {
				c.setErr(fmt.Errorf("live updates unavailable (retrying): %w", msg.err))
			}
			m.conn.streamLost = true
			return m.retrySubscribe()
		}
		if msg.ch == nil {
			return nil
		}
		if m.conn.streamLost {
			// Back: whatever happened meanwhile is not in the stream.
			m.conn.streamLost = false
			c.log.Info("event stream back; reloading")
			return tea.Batch(waitEventCmd(c.ctx, msg.ch), loadCmd(c.ctx, c.backend))
		}
		return waitEventCmd(c.ctx, msg.ch)
	case eventMsg:
		var cmd tea.Cmd
		if msg.ev.Kind == EventReload {
			cmd = loadCmd(c.ctx, c.backend)
		} else {
			m.applyEvent(msg.ev)
		}
		if msg.ch == nil {
			return cmd
		}
		return tea.Batch(cmd, waitEventCmd(c.ctx, msg.ch))
	case eventsClosedMsg:
		if c.ctx.Err() != nil {
			return nil
		}
		c.log.Info("event stream closed; subscribing again")
		m.conn.streamLost = true
		// The watcher's account states are stale now; the next status
		// read says what holds.
		m.conn.stat.WatcherConnected, m.conn.stat.Accounts = false, nil
		return m.retrySubscribe()
	case resubscribeMsg:
		return subscribeCmd(c.ctx, c.backend)
	case actionMsg:
		return m.applyAction(msg)
	case forgotMsg:
		m.applyForgot(msg)
		return nil
	case rsvpDoneMsg:
		return m.applyRSVP(msg) // invite.go
	case unsubscribePlanMsg:
		m.applyUnsubscribePlan(msg)
		return nil
	case editorReadyMsg:
		return m.runEditor(msg)
	case editorExitedMsg:
		return finishEditCmd(c.ctx, c.backend, msg)
	case tea.KeyPressMsg:
		return m.handleKey(msg)
	}
	// Everything else (paste, blink) goes to the focused input.
	return m.forwardToInput(msg)
}

// View renders the current frame.
func (m *Model) View() tea.View {
	v := tea.NewView(m.render())
	v.AltScreen = true
	v.WindowTitle = "mailagent review"
	return v
}

// mode says which component receives the keys: the prompt box, the
// inline editor, or (normal) the root's routing.
func (m *Model) mode() mode {
	switch {
	case m.c.prompt.active():
		return modePrompt
	case m.editor.open:
		return modeInlineEdit
	}
	return modeNormal
}

// active is the component whose body the frame shows.
func (m *Model) active() component {
	switch {
	case m.help.show:
		return m.help
	case m.fu.open:
		return m.fu
	case m.editor.open:
		return m.editor
	case m.tab == tabDetail:
		return m.detail
	}
	return m.lists[m.tab]
}

// setStyles switches the palette of the model and its components.
func (m *Model) setStyles(st styles.Styles) {
	m.c.st = st
	m.c.prompt.input.SetStyles(st.TextInput)
	m.editor.editor.SetStyles(st.TextArea)
	m.help.setStyles()
	m.tabs.bar = ""
	if m.tab == tabDetail {
		m.detail.refresh()
	}
}

// close ends the context shared by all Backend calls.
func (m *Model) close() { m.c.close() }

// --- data -----------------------------------------------------------------

func (m *Model) applyLoad(msg loadedMsg) {
	c := m.c
	if msg.err != nil {
		c.log.Error("list items", "err", msg.err)
		c.setErr(fmt.Errorf("load items: %w", msg.err))
		return
	}
	if msg.statusErr != nil {
		c.log.Warn("read status", "err", msg.statusErr)
	} else {
		m.setStatus(msg.status)
	}
	// The list replaces the items, except where the copy shown is newer
	// than the list's (read before an action the TUI has applied since).
	old := c.items
	c.items = make(map[string]*entry, len(msg.items))
	for _, it := range msg.items {
		if it.ID == "" {
			continue
		}
		if e, ok := old[it.ID]; ok && e.stale(&it) {
			c.log.Debug("stale copy dropped", "id", it.ID, "updated", it.Updated, "shown", e.item.Updated, "ahead", e.ahead)
			c.items[it.ID] = e
			continue
		}
		c.items[it.ID] = newEntry(it)
	}
	m.rebuild()
}

func (m *Model) applyEvent(ev Event) {
	c := m.c
	switch ev.Kind {
	case EventItemAdded, EventItemUpdated:
		if ev.Item == nil || ev.Item.ID == "" {
			c.log.Warn("event without item", "kind", ev.Kind)
			return
		}
		if !c.put(*ev.Item) {
			return
		}
		if ev.Kind == EventItemAdded && ev.Item.Kind == KindDraft {
			c.setNote("new draft from " + ev.Item.From.String())
		}
	case EventItemRemoved:
		delete(c.items, ev.ID)
	case "detail_error":
		c.setErr(fmt.Errorf("could not load the thread of %s", ev.ID))
		return
	case EventStatus:
		if ev.Status != nil {
			m.setStatus(*ev.Status)
		}
		return
	default:
		c.log.Warn("unknown event", "kind", ev.Kind)
		return
	}
	m.rebuild()
}

// setStatus replaces the status line's data.
func (m *Model) setStatus(s Status) {
	m.conn.stat = s
	if s.WatcherConnected {
		m.conn.sawWatcher = true
	}
}

func (m *Model) statusEvery() time.Duration {
	if m.c.opts.StatusEvery > 0 {
		return m.c.opts.StatusEvery
	}
	return DefaultStatusEvery
}

// retrySubscribe schedules the next subscription attempt (none in tests
// that drive Update directly, where a timer would block).
func (m *Model) retrySubscribe() tea.Cmd {
	if !m.c.ticks {
		return nil
	}
	d := m.c.opts.Resubscribe
	if d <= 0 {
		d = DefaultResubscribe
	}
	return resubscribeCmd(d)
}

// rebuild recomputes every list from the items, keeping each list's
// selection on the same item where it still exists.
func (m *Model) rebuild() {
	for _, t := range listTabs {
		m.lists[t].rebuild()
	}
	if m.tab == tabDetail {
		m.detail.refresh()
	}
}

// selected returns the item under the cursor of a list view, or the item
// the detail view shows.
func (m *Model) selected() (*Item, bool) {
	if m.tab == tabDetail {
		return m.detail.selected()
	}
	return m.lists[m.tab].selected()
}

// resize gives every component the window's new size.
func (m *Model) resize() {
	m.help.setSize()
	m.c.prompt.setSize()
	m.editor.setSize()
	m.detail.setSize()
	for _, t := range listTabs {
		m.lists[t].setSize()
	}
	if m.tab == tabDetail {
		m.detail.refresh()
	}
}
