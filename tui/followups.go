package tui

import (
	"context"
	"fmt"
	"strings"
	"time"

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
		if fb != nil && m.fu.open {
			return loadFollowupsCmd(m.ctx, fb), true
		}
		return nil, true
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
	k := msg.String()
	if m.fu.confirm != "" { // the unsubscribe confirmation takes the next key
		id := m.fu.confirm
		m.fu.confirm, m.fu.confirmWhat = "", ""
		u, ok := m.backend.(Unsubscriber)
		if (k != "y" && k != "Y") || !ok {
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
		case k == "F" && fb != nil:
			m.fu.open = true
			return loadFollowupsCmd(m.ctx, fb), true
		case k == "U":
			u, ok := m.backend.(Unsubscriber)
			it, sel := m.selected()
			if !ok || !sel {
				return nil, false
			}
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
	switch k {
	case "q", "esc", "F":
		m.fu.open = false
	case "ctrl+c":
		return m.quit(), true
	case "j", "down":
		m.fu.cursor = min(m.fu.cursor+1, max(0, len(m.fu.rows)-1))
	case "k", "up":
		m.fu.cursor = max(m.fu.cursor-1, 0)
	case "r":
		return loadFollowupsCmd(ctx, fb), true
	case "d":
		if f, ok := cur(); ok {
			return func() tea.Msg {
				return followupDoneMsg{note: "marked done", err: fb.FollowupDone(ctx, f.ID)}
			}, true
		}
	case "s":
		if f, ok := cur(); ok {
			until := m.now().Add(followupSnooze)
			return func() tea.Msg {
				return followupDoneMsg{note: "snoozed for a day", err: fb.FollowupSnooze(ctx, f.ID, until)}
			}, true
		}
	case "n":
		if f, ok := cur(); ok {
			return func() tea.Msg {
				q, err := fb.FollowupNudge(ctx, f.ID)
				return followupDoneMsg{note: "follow-up draft queued (" + q + "): review it in the queue", err: err}
			}, true
		}
	}
	return nil, true
}

// renderFollowups draws the view, h lines high.
func (m *Model) renderFollowups(h int) []string {
	out := []string{m.st.Section.Render("Follow-ups") + "  " + m.st.Muted.Render("n nudge · s snooze 1d · d done · r reload · q back")}
	if len(m.fu.rows) == 0 {
		return append(out, "", "  nothing waiting for a reply")
	}
	now := m.now()
	for i, f := range m.fu.rows {
		if len(out) >= h {
			break
		}
		state := strings.ReplaceAll(f.State, "_", "-")
		dl := f.Deadline.Local().Format("Jan 02")
		if f.Deadline.Before(now) {
			dl += " overdue"
		}
		line := fmt.Sprintf("%-14s %-24s %-32s %-6s %-14s %s", state, trunc(clean(f.With), 24), trunc(clean(f.Subject), 32),
			ageShort(now.Sub(f.LastAt)), dl, clean(f.Tier))
		if i == m.fu.cursor {
			line = m.st.RowSelected.Render(line)
		} else {
			line = m.st.Row.Render(line)
		}
		out = append(out, line)
	}
	return out
}

func trunc(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
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
