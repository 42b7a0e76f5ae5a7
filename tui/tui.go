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
// The program logs to Options.Logger only, never to the terminal it draws
// on.
package tui

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"time"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textarea"
	"charm.land/bubbles/v2/textinput"
	"charm.land/bubbles/v2/viewport"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/mailagent/mailagent/tui/keymap"
	"github.com/mailagent/mailagent/tui/styles"
)

// tab identifies one of the four views.
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

// promptKind is the question a prompt asks.
type promptKind int

const (
	promptNone promptKind = iota
	promptFilter
	promptReject
	promptRegenerate
	promptSnooze
	promptConfirmNew // approve (or resend) to an address the owner never wrote to
)

// entry is an item plus the lower-cased text the filter searches.
type entry struct {
	item Item
	hay  string
}

// listState is one list view: its filtered, sorted rows and the window
// into them.
type listState struct {
	rows   []*entry
	cursor int
	offset int
}

// Model is the root bubbletea model. Create it with New; it is used through
// a pointer and is not safe for concurrent use (bubbletea calls it from one
// goroutine).
type Model struct {
	backend Backend
	opts    Options
	now     func() time.Time
	log     *slog.Logger
	keys    keymap.KeyMap
	st      styles.Styles

	// ctx bounds every Backend call and the event subscription; cancel
	// ends them when the program quits. Bubbletea models have no other
	// place to keep the program's lifetime.
	ctx    context.Context
	cancel context.CancelFunc

	width, height int
	tab           tab
	detailFrom    tab    // the list the detail view was opened from
	detailID      string // the item the detail view shows

	items map[string]*entry
	lists [numTabs]listState // tabDetail is unused
	stat  Status

	filter string

	// pendingG: the last key was a lone "g"; a second one jumps to the top.
	pendingG bool

	mode       mode
	prompt     promptKind
	promptID   string
	confirmFor string // promptConfirmNew: the action it confirms, approve or retry
	input      textinput.Model
	editor     textarea.Model
	editID     string
	viewport   viewport.Model
	help       help.Model
	showHelp   bool
	helpOffset int // the overlay's first line shown, when it is taller than the window
	helpByTab  [numTabs]viewKeys
	promptKeys viewKeys
	// confirmKeys are the keys of a y/N question (one key answers it).
	confirmKeys viewKeys
	detailBack  key.Binding // "q/esc back": what q and esc do in the detail view
	editKeys    viewKeys

	// sawWatcher: a watcher was connected at some point, so its absence
	// is news ("no watcher"), not the way review was started.
	sawWatcher bool
	// streamLost: the event stream closed or failed; a resubscription is
	// pending, and everything is reloaded when it succeeds.
	streamLost bool

	// undoID is the send the owner started last (an approval, an RSVP):
	// while its undo window runs the note line counts down and says how
	// to cancel. undoVerb says what it was ("approved" when empty).
	undoID, undoVerb string
	// undoLearned is what the approval of undoID taught (tui.Learner),
	// shown with its countdown; L forgets it (tui.Forgetter).
	undoLearned []Learned
	// followupKeys are the follow-ups view's keys (followups.go).
	followupKeys viewKeys
	// quitting: q was pressed while sends were waiting for this process
	// (quit.go); the TUI quits once they are out. quitCancel: q again,
	// the waiting sends are being cancelled before quitting.
	quitting, quitCancel bool

	note    string // the last action's result or error
	noteErr bool
	busy    map[string]string // id → action in flight

	// ticks is false in tests that drive Update directly, where a
	// tea.Tick would block the synchronous Cmd runner.
	ticks bool

	fu followupView // followups.go
}

// New returns a model over b. It does no I/O; Init loads the items.
func New(b Backend, opts Options) *Model {
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	st := styles.DefaultStyles(opts.NoColor, opts.ASCII)
	keys := keymap.DefaultKeyMap()
	if opts.ASCII {
		keys = keys.ASCII()
	}

	ctx, cancel := context.WithCancel(context.Background())
	m := &Model{
		backend: b,
		opts:    opts,
		now:     now,
		log:     logger,
		keys:    keys,
		st:      st,
		ctx:     ctx,
		cancel:  cancel,
		width:   80,
		height:  24,
		items:   make(map[string]*entry),
		busy:    make(map[string]string),
		ticks:   true,
	}

	m.input = textinput.New()
	m.editor = textarea.New()
	m.editor.ShowLineNumbers = false
	if opts.ASCII {
		m.editor.Prompt = "| "
	}
	m.viewport = viewport.New()
	m.viewport.SoftWrap = true
	m.viewport.KeyMap = viewport.KeyMap{} // scrolling goes through our keymap

	m.help = help.New()
	m.setStyles(st)
	m.help.ShortSeparator = st.Glyphs.HelpSep
	m.help.Ellipsis = st.Glyphs.Ellipsis
	m.detailBack = key.NewBinding(key.WithKeys("q", "esc"), key.WithHelp("q/esc", "back"))
	m.buildHelp()
	m.resize()
	return m
}

// Init loads the items and status, subscribes to live events and starts
// the clock.
func (m *Model) Init() tea.Cmd {
	cmds := []tea.Cmd{loadCmd(m.ctx, m.backend), subscribeCmd(m.ctx, m.backend)}
	if m.ticks {
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
	if cmd, ok := m.followupsUpdate(msg); ok {
		return cmd
	}
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		m.resize()
		return nil
	case tea.BackgroundColorMsg:
		if m.st.Dark != msg.IsDark() {
			m.setStyles(styles.ForBackground(m.opts.NoColor, m.opts.ASCII, msg.IsDark()))
		}
		return nil
	case tickMsg:
		if m.tab == tabDetail {
			m.refreshDetail() // the "sending in" countdown
		}
		send := m.sendDue()
		if m.ticks {
			return tea.Batch(send, tickCmd())
		}
		return send
	case loadedMsg:
		m.applyLoad(msg)
		return nil
	case statusTickMsg:
		if !m.ticks {
			return nil
		}
		return tea.Batch(statusCmd(m.ctx, m.backend), statusTickCmd(m.statusEvery()))
	case statusMsg:
		if msg.err != nil {
			m.log.Warn("read status", "err", msg.err)
			return nil
		}
		m.setStatus(msg.status)
		return nil
	case eventsReadyMsg:
		if msg.err != nil {
			m.log.Warn("subscribe to events", "err", msg.err)
			if !m.streamLost {
				m.setErr(fmt.Errorf("live updates unavailable (retrying): %w", msg.err))
			}
			m.streamLost = true
			return m.retrySubscribe()
		}
		if msg.ch == nil {
			return nil
		}
		if m.streamLost {
			// Back: whatever happened meanwhile is not in the stream.
			m.streamLost = false
			m.log.Info("event stream back; reloading")
			return tea.Batch(waitEventCmd(m.ctx, msg.ch), loadCmd(m.ctx, m.backend))
		}
		return waitEventCmd(m.ctx, msg.ch)
	case eventMsg:
		var cmd tea.Cmd
		if msg.ev.Kind == EventReload {
			cmd = loadCmd(m.ctx, m.backend)
		} else {
			m.applyEvent(msg.ev)
		}
		if msg.ch == nil {
			return cmd
		}
		return tea.Batch(cmd, waitEventCmd(m.ctx, msg.ch))
	case eventsClosedMsg:
		if m.ctx.Err() != nil {
			return nil
		}
		m.log.Info("event stream closed; subscribing again")
		m.streamLost = true
		// The watcher's account states are stale now; the next status
		// read says what holds.
		m.stat.WatcherConnected, m.stat.Accounts = false, nil
		return m.retrySubscribe()
	case resubscribeMsg:
		return subscribeCmd(m.ctx, m.backend)
	case actionMsg:
		return m.applyAction(msg)
	case forgotMsg:
		m.applyForgot(msg)
		return nil
	case rsvpDoneMsg:
		return m.applyRSVP(msg) // invite.go
	case editorReadyMsg:
		return m.runEditor(msg)
	case editorExitedMsg:
		return finishEditCmd(m.ctx, m.backend, msg)
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

// setStyles switches the palette of the model and its components.
func (m *Model) setStyles(st styles.Styles) {
	m.st = st
	m.input.SetStyles(st.TextInput)
	m.editor.SetStyles(st.TextArea)
	m.help.Styles = st.Help
	if m.tab == tabDetail {
		m.refreshDetail()
	}
}

// close ends the context shared by all Backend calls.
func (m *Model) close() { m.cancel() }

// --- data -----------------------------------------------------------------

func newEntry(it Item) *entry {
	parts := []string{it.From.String(), it.Subject, it.Summary, strings.Join(it.Intents, " ")}
	for _, a := range it.To {
		parts = append(parts, a.String())
	}
	hay := strings.ToLower(strings.Join(parts, "\x00"))
	return &entry{item: it, hay: hay}
}

func (m *Model) applyLoad(msg loadedMsg) {
	if msg.err != nil {
		m.log.Error("list items", "err", msg.err)
		m.setErr(fmt.Errorf("load items: %w", msg.err))
		return
	}
	if msg.statusErr != nil {
		m.log.Warn("read status", "err", msg.statusErr)
	} else {
		m.setStatus(msg.status)
	}
	m.items = make(map[string]*entry, len(msg.items))
	for _, it := range msg.items {
		if it.ID == "" {
			continue
		}
		m.items[it.ID] = newEntry(it)
	}
	m.rebuild()
}

func (m *Model) applyEvent(ev Event) {
	switch ev.Kind {
	case EventItemAdded, EventItemUpdated:
		if ev.Item == nil || ev.Item.ID == "" {
			m.log.Warn("event without item", "kind", ev.Kind)
			return
		}
		m.items[ev.Item.ID] = newEntry(*ev.Item)
		if ev.Kind == EventItemAdded && ev.Item.Kind == KindDraft {
			m.setNote("new draft from " + ev.Item.From.String())
		}
	case EventItemRemoved:
		delete(m.items, ev.ID)
	case "detail_error":
		m.setErr(fmt.Errorf("could not load the thread of %s", ev.ID))
		return
	case EventStatus:
		if ev.Status != nil {
			m.setStatus(*ev.Status)
		}
		return
	default:
		m.log.Warn("unknown event", "kind", ev.Kind)
		return
	}
	m.rebuild()
}

// setStatus replaces the status line's data.
func (m *Model) setStatus(s Status) {
	m.stat = s
	if s.WatcherConnected {
		m.sawWatcher = true
	}
}

func (m *Model) statusEvery() time.Duration {
	if m.opts.StatusEvery > 0 {
		return m.opts.StatusEvery
	}
	return DefaultStatusEvery
}

// retrySubscribe schedules the next subscription attempt (none in tests
// that drive Update directly, where a timer would block).
func (m *Model) retrySubscribe() tea.Cmd {
	if !m.ticks {
		return nil
	}
	d := m.opts.Resubscribe
	if d <= 0 {
		d = DefaultResubscribe
	}
	return resubscribeCmd(d)
}

// inTab reports whether an item belongs to a list view.
func inTab(t tab, it *Item) bool {
	switch t {
	case tabQueue:
		// Snoozed drafts stay in sight, below the pending ones.
		// Approved drafts stay during their undo window, with a
		// countdown, so c can reach them.
		return it.Kind == KindDraft && (it.Status == StatusPending || it.Status == StatusSnoozed || it.Status == StatusApproved)
	case tabAttention:
		if it.Status == StatusFailed {
			return true
		}
		if awaitingSend(it) && it.Kind != KindDraft {
			// Any other send the owner started (an answered invitation
			// that came as a notification) stays where it was answered,
			// counting down its undo window.
			return true
		}
		if it.Kind != KindNotify && it.Kind != KindNeedsReview {
			return false
		}
		switch it.Status {
		case StatusRejected, StatusApproved, StatusSent, StatusSnoozed, StatusSending:
			return false
		}
		return true
	case tabSent:
		return it.Kind == KindSent
	case tabDecided:
		return it.Kind == KindDecided
	}
	return false
}

func riskRank(r string) int {
	switch strings.ToLower(r) {
	case "high":
		return 3
	case "medium":
		return 2
	case "low":
		return 1
	}
	return 0
}

// snoozedRank sorts snoozed items after the others.
func snoozedRank(it *Item) int {
	if it.Status == StatusSnoozed {
		return 1
	}
	return 0
}

func sentTime(it *Item) time.Time {
	if !it.SendAt.IsZero() {
		return it.SendAt
	}
	return it.Received
}

// rebuild recomputes every list from the items, keeping each list's
// selection on the same item where it still exists.
func (m *Model) rebuild() {
	for _, t := range listTabs {
		ls := &m.lists[t]
		var selected string
		oldCursor := ls.cursor
		if ls.cursor >= 0 && ls.cursor < len(ls.rows) {
			selected = ls.rows[ls.cursor].item.ID
		}
		rows := ls.rows[:0:0]
		for _, e := range m.items {
			if inTab(t, &e.item) && m.matches(e) {
				rows = append(rows, e)
			}
		}
		switch t {
		case tabQueue:
			slices.SortFunc(rows, func(a, b *entry) int {
				if c := cmp.Compare(snoozedRank(&a.item), snoozedRank(&b.item)); c != 0 {
					return c
				}
				if c := cmp.Compare(riskRank(b.item.Risk), riskRank(a.item.Risk)); c != 0 {
					return c
				}
				if c := b.item.Received.Compare(a.item.Received); c != 0 {
					return c
				}
				return cmp.Compare(a.item.ID, b.item.ID)
			})
		case tabAttention, tabDecided:
			slices.SortFunc(rows, func(a, b *entry) int {
				if c := b.item.Received.Compare(a.item.Received); c != 0 {
					return c
				}
				return cmp.Compare(a.item.ID, b.item.ID)
			})
		case tabSent:
			slices.SortFunc(rows, func(a, b *entry) int {
				if c := sentTime(&b.item).Compare(sentTime(&a.item)); c != 0 {
					return c
				}
				return cmp.Compare(a.item.ID, b.item.ID)
			})
		}
		ls.rows = rows
		ls.cursor = 0
		if selected != "" {
			if i := slices.IndexFunc(rows, func(e *entry) bool { return e.item.ID == selected }); i >= 0 {
				ls.cursor = i
			} else {
				ls.cursor = min(oldCursor, len(rows)-1)
			}
		}
		ls.cursor = max(0, min(ls.cursor, len(rows)-1))
		m.clampOffset(t)
	}
	if m.tab == tabDetail {
		m.refreshDetail()
	}
}

func (m *Model) matches(e *entry) bool {
	return m.filter == "" || strings.Contains(e.hay, strings.ToLower(m.filter))
}

// selected returns the item under the cursor of a list view, or the item
// the detail view shows.
func (m *Model) selected() (*Item, bool) {
	if m.tab == tabDetail {
		e, ok := m.items[m.detailID]
		if !ok {
			return nil, false
		}
		return &e.item, true
	}
	ls := &m.lists[m.tab]
	if ls.cursor < 0 || ls.cursor >= len(ls.rows) {
		return nil, false
	}
	return &ls.rows[ls.cursor].item, true
}

// --- layout ---------------------------------------------------------------

// bodyHeight is the number of lines between the tab bar and the footer.
func (m *Model) bodyHeight() int {
	// tab bar, column header, note/prompt line, status line, help line.
	return max(1, m.height-5)
}

func (m *Model) resize() {
	m.help.SetWidth(m.width)
	m.sizeInput()
	m.editor.SetWidth(max(10, m.width))
	m.editor.SetHeight(max(1, m.bodyHeight()))
	m.viewport.SetWidth(max(10, m.width))
	m.viewport.SetHeight(m.bodyHeight() + 1) // detail has no column header
	for _, t := range listTabs {
		m.clampOffset(t)
	}
	if m.tab == tabDetail {
		m.refreshDetail()
	}
}

// sizeInput gives the prompt line's input what its prompt leaves of the
// window, so a placeholder ("4h (or 1h, 30m, 2d, tomorrow)") is whole at
// 60 columns.
func (m *Model) sizeInput() {
	m.input.SetWidth(max(10, m.width-ansi.StringWidth(m.input.Prompt)-1))
}

// clampOffset keeps a list's cursor inside its visible window.
func (m *Model) clampOffset(t tab) {
	ls := &m.lists[t]
	h := m.bodyHeight()
	if ls.cursor < ls.offset {
		ls.offset = ls.cursor
	}
	if ls.cursor >= ls.offset+h {
		ls.offset = ls.cursor - h + 1
	}
	ls.offset = max(0, min(ls.offset, len(ls.rows)-h))
}

func (m *Model) moveCursor(delta int) {
	ls := &m.lists[m.tab]
	if len(ls.rows) == 0 {
		return
	}
	ls.cursor = max(0, min(ls.cursor+delta, len(ls.rows)-1))
	m.clampOffset(m.tab)
}

// --- notes ----------------------------------------------------------------

func (m *Model) setNote(s string) { m.note, m.noteErr = s, false }

func (m *Model) setErr(err error) {
	m.note, m.noteErr = err.Error(), true
}

// errNotApplicable explains why a key does nothing for the selected item.
var errNotApplicable = errors.New("not applicable")
