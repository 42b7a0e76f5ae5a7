package tui

import (
	"context"
	"fmt"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
)

// The followups view (issue 11): threads waiting for the owner's reply or
// for theirs, with keys to queue a follow-up draft, snooze, or mark done,
// and a key on a queue item to unsubscribe from its list. It is shown only
// when the Backend also implements FollowupBackend (Unsubscriber for the
// unsubscribe key); F opens it, q or esc closes it.

// Followup is one tracked thread as the view shows it.
type Followup struct {
	ID       string
	State    string // needs_reply | awaiting_reply | done | gave_up
	With     string // the correspondents, comma-separated
	Subject  string
	LastAt   time.Time
	Deadline time.Time
	Tier     string // "", reminded, nudged, snoozed
}

// FollowupBackend is the optional part of a Backend behind the followups
// view.
type FollowupBackend interface {
	// Followups lists the open threads, earliest deadline first.
	Followups(ctx context.Context) ([]Followup, error)
	// FollowupDone marks a thread done.
	FollowupDone(ctx context.Context, id string) error
	// FollowupSnooze hides a thread until until.
	FollowupSnooze(ctx context.Context, id string, until time.Time) error
	// FollowupNudge queues a follow-up draft for approval and returns its
	// queue id.
	FollowupNudge(ctx context.Context, id string) (string, error)
}

// Unsubscriber is the optional part of a Backend behind the unsubscribe
// key. UnsubscribePlan says what Unsubscribe would send, without sending
// it; Unsubscribe sends it. Both take a queue item id.
type Unsubscriber interface {
	UnsubscribePlan(ctx context.Context, id string) (string, error)
	Unsubscribe(ctx context.Context, id string) error
}

// followupSnooze is how long the s key hides a thread.
const followupSnooze = 24 * time.Hour

// followupView is the state of the view.
type followupView struct {
	open   bool
	rows   []Followup
	cursor int
	// confirm is the unsubscribe waiting for y (the item id) and what
	// it would send.
	confirm, confirmWhat string
}

type (
	followupsLoadedMsg struct {
		rows []Followup
		err  error
	}
	followupDoneMsg struct {
		note string
		err  error
	}
	unsubscribePlanMsg struct {
		id, what string
		err      error
	}
)

func loadFollowupsCmd(ctx context.Context, fb FollowupBackend) tea.Cmd {
	return func() tea.Msg {
		rows, err := fb.Followups(ctx)
		return followupsLoadedMsg{rows: rows, err: err}
	}
}

// followupsUpdate handles what belongs to the view; handled is false for
// everything else.
func (m *Model) followupsUpdate(msg tea.Msg) (cmd tea.Cmd, handled bool) {
	fb, _ := m.backend.(FollowupBackend)
	switch msg := msg.(type) {
	case followupsLoadedMsg:
		if msg.err != nil {
			m.setErr(fmt.Errorf("followups: %w", msg.err))
			return nil, true
		}
		m.fu.rows = msg.rows
		m.fu.cursor = min(m.fu.cursor, max(0, len(msg.rows)-1))
		return nil, true
	case followupDoneMsg:
		if msg.err != nil {
			m.setErr(msg.err)
		} else {
			m.setNote(msg.note)
		}
		// A nudge queued a draft: the items are read again so it is in
		// the queue, ready for the same approval and undo window.
		reload := loadCmd(m.ctx, m.backend)
		if msg.err != nil {
			reload = nil
		}
		if fb != nil && m.fu.open {
			return tea.Batch(loadFollowupsCmd(m.ctx, fb), reload), true
		}
		return reload, true
	case unsubscribePlanMsg:
		if msg.err != nil {
			m.setErr(fmt.Errorf("unsubscribe: %w", msg.err))
			return nil, true
		}
		m.fu.confirm, m.fu.confirmWhat = msg.id, msg.what
		m.setNote("unsubscribe with " + clean(msg.what) + "? y/N")
		return nil, true
	case tea.KeyPressMsg:
		return m.followupsKey(msg, fb)
	}
	return nil, false
}

func (m *Model) followupsKey(msg tea.KeyPressMsg, fb FollowupBackend) (tea.Cmd, bool) {
	k := m.keys
	if m.fu.confirm != "" { // the unsubscribe confirmation takes the next key
		id := m.fu.confirm
		m.fu.confirm, m.fu.confirmWhat = "", ""
		u, ok := m.backend.(Unsubscriber)
		if s := msg.String(); (s != "y" && s != "Y") || !ok {
			m.setNote("nothing sent")
			return nil, true
		}
		ctx := m.ctx
		return func() tea.Msg {
			if err := u.Unsubscribe(ctx, id); err != nil {
				return followupDoneMsg{err: fmt.Errorf("unsubscribe: %w", err)}
			}
			return followupDoneMsg{note: "unsubscribed"}
		}, true
	}
	if m.mode != modeNormal || m.showHelp {
		return nil, false
	}
	if !m.fu.open {
		switch {
		case key.Matches(msg, k.Followups) && fb != nil:
			m.fu.open = true
			return loadFollowupsCmd(m.ctx, fb), true
		case key.Matches(msg, k.Unsubscribe):
			it, _ := m.selected()
			if !m.canUnsubscribe(it) {
				return nil, false
			}
			u := m.backend.(Unsubscriber)
			ctx, id := m.ctx, it.ID
			return func() tea.Msg {
				what, err := u.UnsubscribePlan(ctx, id)
				return unsubscribePlanMsg{id: id, what: what, err: err}
			}, true
		}
		return nil, false
	}
	cur := func() (Followup, bool) {
		if m.fu.cursor < 0 || m.fu.cursor >= len(m.fu.rows) {
			return Followup{}, false
		}
		return m.fu.rows[m.fu.cursor], true
	}
	ctx := m.ctx
	switch {
	case msg.String() == "ctrl+c":
		return m.quit(), true
	case key.Matches(msg, k.Help):
		return nil, false // the overlay shows this view's keys
	case key.Matches(msg, k.FollowupBack):
		m.fu.open = false
	case key.Matches(msg, k.Down):
		m.fu.cursor = min(m.fu.cursor+1, max(0, len(m.fu.rows)-1))
	case key.Matches(msg, k.Up):
		m.fu.cursor = max(m.fu.cursor-1, 0)
	case key.Matches(msg, k.Reload):
		return loadFollowupsCmd(ctx, fb), true
	case key.Matches(msg, k.FollowupDone):
		if f, ok := cur(); ok {
			return func() tea.Msg {
				return followupDoneMsg{note: "marked done", err: fb.FollowupDone(ctx, f.ID)}
			}, true
		}
	case key.Matches(msg, k.FollowupSnooze):
		if f, ok := cur(); ok {
			until := m.now().Add(followupSnooze)
			return func() tea.Msg {
				return followupDoneMsg{note: "snoozed for a day", err: fb.FollowupSnooze(ctx, f.ID, until)}
			}, true
		}
	case key.Matches(msg, k.FollowupNudge):
		if f, ok := cur(); ok {
			return func() tea.Msg {
				q, err := fb.FollowupNudge(ctx, f.ID)
				return followupDoneMsg{note: "follow-up draft queued (" + q + "): review it in the queue", err: err}
			}, true
		}
	}
	return nil, true
}

// canUnsubscribe reports whether U applies to it: the backend can
// unsubscribe and it is a queue item (a draft or a notification) about a
// received mail, since the backend takes queue ids. Whether the mail
// carries a List-Unsubscribe header is not part of the item: the backend
// reads the mail again from the server to know, so UnsubscribePlan
// answers that (with an error when there is none).
func (m *Model) canUnsubscribe(it *Item) bool {
	_, ok := m.backend.(Unsubscriber)
	return ok && it != nil && (it.Kind == KindDraft || it.Kind == KindNotify)
}

// renderFollowups draws the view, h lines high: a title, the column
// header and the rows around the cursor. Every cell is cleaned
// (termsafe) and cut by display width, so hostile or wide text cannot
// move the columns.
func (m *Model) renderFollowups(h int) []string {
	out := []string{m.st.Section.Render(fmt.Sprintf("Follow-ups (%d)", len(m.fu.rows)))}
	out = append(out, m.st.Header.Render(m.st.Glyphs.NoCursor+m.joinCells(m.followupColumns(nil), false)))
	if len(m.fu.rows) == 0 {
		return append(out, "", "  "+m.st.Muted.Render("Nothing waiting for a reply."))
	}
	room := max(1, h-len(out))
	first := max(0, m.fu.cursor-room+1)
	for i := first; i < len(m.fu.rows) && len(out) < h; i++ {
		line := m.joinCells(m.followupColumns(&m.fu.rows[i]), i != m.fu.cursor)
		if i == m.fu.cursor {
			line = m.st.RowSelected.Render(m.st.Glyphs.Cursor + m.padRight(line, m.width-len(m.st.Glyphs.Cursor)))
		} else {
			line = m.st.Row.Render(m.st.Glyphs.NoCursor + line)
		}
		out = append(out, line)
	}
	return out
}

// followupColumns lays out a row (or, with f == nil, the header). Below
// 80 columns LAST and TIER go and the deadline shrinks to "overdue" or a
// date, so WITH and SUBJECT keep room.
func (m *Model) followupColumns(f *Followup) []column {
	w := m.width - 2
	stateW, lastW, dueW, tierW := 14, 4, 14, 8
	if w < 100 {
		tierW = 0
	}
	if w < 78 {
		lastW, dueW = 0, 7
	}
	fixed := stateW + 1 + dueW + 1
	if lastW > 0 {
		fixed += lastW + 1
	}
	if tierW > 0 {
		fixed += tierW + 1
	}
	rest := max(8, w-fixed)
	withW := rest * 40 / 100
	subjW := max(0, rest-withW-1)
	cols := []column{
		{text: "STATE", width: stateW},
		{text: "WITH", width: withW},
		{text: "SUBJECT", width: subjW},
		{text: "LAST", width: lastW},
		{text: "DUE", width: dueW},
		{text: "TIER", width: tierW},
	}
	if f == nil {
		return cols
	}
	now := m.now()
	cols[0].text = strings.ReplaceAll(f.State, "_", "-")
	cols[1].text = f.With
	cols[2].text = f.Subject
	cols[3].text = ageShort(now.Sub(f.LastAt))
	due := f.Deadline.Local().Format("Jan 02")
	switch {
	case f.Deadline.Before(now) && dueW < 14:
		due, cols[4].err = "overdue", true
	case f.Deadline.Before(now):
		due, cols[4].err = due+" overdue", true
	}
	cols[4].text = due
	cols[5].text = f.Tier
	return cols
}

func ageShort(d time.Duration) string {
	switch {
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}
