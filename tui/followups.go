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

// followupView is the follow-ups component. It is open while F shows
// it; it keeps its rows and cursor when closed.
type followupView struct {
	c      *Common
	open   bool
	rows   []Followup
	cursor int
	help   viewKeys
}

func newFollowupView(c *Common) *followupView {
	k := c.keys
	fu := []key.Binding{k.FollowupNudge, k.FollowupSnooze, k.FollowupDone, k.Reload}
	return &followupView{c: c, help: viewKeys{
		short: append(fu[:len(fu):len(fu)], k.FollowupBack),
		full: [][]key.Binding{{k.Up, k.Down}, fu, {k.FollowupBack, k.Help,
			key.NewBinding(key.WithKeys("ctrl+c"), key.WithHelp("ctrl+c", "quit"))}},
	}}
}

func (f *followupView) keys() viewKeys { return f.help }

func (f *followupView) setSize() {}

// position is the selected row over the total.
func (f *followupView) position() string {
	return fmt.Sprintf("%d/%d", min(f.cursor+1, len(f.rows)), len(f.rows))
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

// backend is the FollowupBackend, nil when the backend has none.
func (f *followupView) backend() FollowupBackend {
	fb, _ := f.c.backend.(FollowupBackend)
	return fb
}

// show opens the view and loads its rows; it does nothing (false)
// without a FollowupBackend.
func (f *followupView) show() (tea.Cmd, bool) {
	fb := f.backend()
	if fb == nil {
		return nil, false
	}
	f.open = true
	return loadFollowupsCmd(f.c.ctx, fb), true
}

// update handles the view's own messages (they may arrive when it is
// closed); handled is false for everything else.
func (f *followupView) update(msg tea.Msg) (cmd tea.Cmd, handled bool) {
	c := f.c
	switch msg := msg.(type) {
	case followupsLoadedMsg:
		if msg.err != nil {
			c.setErr(fmt.Errorf("followups: %w", msg.err))
			return nil, true
		}
		f.rows = msg.rows
		f.cursor = min(f.cursor, max(0, len(msg.rows)-1))
		return nil, true
	case followupDoneMsg:
		if msg.err != nil {
			c.setErr(msg.err)
		} else {
			c.setNote(msg.note)
		}
		// A nudge queued a draft: the items are read again so it is in
		// the queue, ready for the same approval and undo window.
		reload := loadCmd(c.ctx, c.backend)
		if msg.err != nil {
			reload = nil
		}
		if fb := f.backend(); fb != nil && f.open {
			return tea.Batch(loadFollowupsCmd(c.ctx, fb), reload), true
		}
		return reload, true
	}
	return nil, false
}

// key handles a key press while the view is open: it takes every key
// but the help key and ctrl+c, which the root handles.
func (f *followupView) key(msg tea.KeyPressMsg) tea.Cmd {
	k := f.c.keys
	fb := f.backend()
	cur := func() (Followup, bool) {
		if f.cursor < 0 || f.cursor >= len(f.rows) {
			return Followup{}, false
		}
		return f.rows[f.cursor], true
	}
	ctx := f.c.ctx
	switch {
	case key.Matches(msg, k.FollowupBack):
		f.open = false
	case key.Matches(msg, k.Down):
		f.cursor = min(f.cursor+1, max(0, len(f.rows)-1))
	case key.Matches(msg, k.Up):
		f.cursor = max(f.cursor-1, 0)
	case key.Matches(msg, k.Reload):
		return loadFollowupsCmd(ctx, fb)
	case key.Matches(msg, k.FollowupDone):
		if fl, ok := cur(); ok {
			return func() tea.Msg {
				return followupDoneMsg{note: "marked done", err: fb.FollowupDone(ctx, fl.ID)}
			}
		}
	case key.Matches(msg, k.FollowupSnooze):
		if fl, ok := cur(); ok {
			until := f.c.now().Add(followupSnooze)
			return func() tea.Msg {
				return followupDoneMsg{note: "snoozed for a day", err: fb.FollowupSnooze(ctx, fl.ID, until)}
			}
		}
	case key.Matches(msg, k.FollowupNudge):
		if fl, ok := cur(); ok {
			return func() tea.Msg {
				q, err := fb.FollowupNudge(ctx, fl.ID)
				return followupDoneMsg{note: "follow-up draft queued (" + q + "): review it in the queue", err: err}
			}
		}
	}
	return nil
}

// selectedRow reports whether the cursor is on a row (the nudge, snooze
// and done keys apply).
func (f *followupView) selectedRow() bool { return f.cursor >= 0 && f.cursor < len(f.rows) }

// body draws the view, h lines high: a title, the column header and
// the rows around the cursor. Every cell is cleaned (termsafe) and cut
// by display width, so hostile or wide text cannot move the columns.
func (f *followupView) body(h int) []string {
	c := f.c
	out := []string{c.st.Section.Render(fmt.Sprintf("Follow-ups (%d)", len(f.rows)))}
	out = append(out, c.st.Header.Render(c.st.Glyphs.NoCursor+c.joinCells(f.columns(nil), false)))
	if len(f.rows) == 0 {
		return append(out, "", "  "+c.st.Muted.Render("Nothing waiting for a reply."))
	}
	room := max(1, h-len(out))
	first := max(0, f.cursor-room+1)
	for i := first; i < len(f.rows) && len(out) < h; i++ {
		sel := i == f.cursor
		out = append(out, c.row(c.joinCells(f.columns(&f.rows[i]), !sel), sel))
	}
	return out
}

// columns lays out a row (or, with f == nil, the header). Below
// 80 columns LAST and TIER go and the deadline shrinks to "overdue" or a
// date, so WITH and SUBJECT keep room.
func (fv *followupView) columns(f *Followup) []column {
	w := fv.c.width - 2
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
	now := fv.c.now()
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
