package tui

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
)

// Messages produced by the Cmds below. Each carries copies, never pointers
// into the model.
type (
	// loadedMsg is the answer to List and Status.
	loadedMsg struct {
		items     []Item
		status    Status
		err       error // List failed
		statusErr error // Status failed; the items are still shown
	}
	// eventsReadyMsg is the answer to Events.
	eventsReadyMsg struct {
		ch  <-chan Event
		err error
	}
	// eventMsg is one live event; ch is re-armed after it is applied.
	eventMsg struct {
		ev Event
		ch <-chan Event
	}
	// eventsClosedMsg reports the end of the event stream.
	eventsClosedMsg struct{}
	// resubscribeMsg says it is time to subscribe to events again.
	resubscribeMsg struct{}
	// statusTickMsg says it is time to refresh the status line.
	statusTickMsg struct{}
	// statusMsg is the answer to Status.
	statusMsg struct {
		status Status
		err    error
	}
	// tickMsg refreshes ages and countdowns.
	tickMsg time.Time
	// actionMsg is the result of one Backend action.
	actionMsg struct {
		action  string // approve | reject | edit | regenerate | snooze | retry | cancel
		id      string
		text    string    // edit: the stored text; reject: the reason
		until   time.Time // snooze
		item    *Item     // regenerate: the new item
		err     error
		noop    bool // edit: the text did not change
		subject string
	}
	// editorReadyMsg says the temp file for the external editor exists.
	editorReadyMsg struct {
		id, path, orig string
		err            error
	}
	// editorExitedMsg says the external editor has exited.
	editorExitedMsg struct {
		id, path, orig string
		err            error
	}
)

func loadCmd(ctx context.Context, b Backend) tea.Cmd {
	return func() tea.Msg { return load(ctx, b) }
}

func load(ctx context.Context, b Backend) loadedMsg {
	items, err := b.List(ctx)
	if err != nil {
		return loadedMsg{err: err}
	}
	st, serr := b.Status(ctx)
	return loadedMsg{items: items, status: st, statusErr: serr}
}

func subscribeCmd(ctx context.Context, b Backend) tea.Cmd {
	return func() tea.Msg {
		ch, err := b.Events(ctx)
		return eventsReadyMsg{ch: ch, err: err}
	}
}

// waitEventCmd waits for the next event. It returns nil when ctx ends so
// that a quitting program is not kept waiting by a quiet backend.
func waitEventCmd(ctx context.Context, ch <-chan Event) tea.Cmd {
	return func() tea.Msg {
		select {
		case ev, ok := <-ch:
			if !ok {
				return eventsClosedMsg{}
			}
			return eventMsg{ev: ev, ch: ch}
		case <-ctx.Done():
			return nil
		}
	}
}

func statusCmd(ctx context.Context, b Backend) tea.Cmd {
	return func() tea.Msg {
		st, err := b.Status(ctx)
		return statusMsg{status: st, err: err}
	}
}

func statusTickCmd(d time.Duration) tea.Cmd {
	return tea.Tick(d, func(time.Time) tea.Msg { return statusTickMsg{} })
}

func resubscribeCmd(d time.Duration) tea.Cmd {
	return tea.Tick(d, func(time.Time) tea.Msg { return resubscribeMsg{} })
}

func tickCmd() tea.Cmd {
	return tea.Tick(time.Second, func(t time.Time) tea.Msg { return tickMsg(t) })
}

func approveCmd(ctx context.Context, b Backend, id, final, subject string) tea.Cmd {
	return func() tea.Msg {
		err := b.Approve(ctx, id, final)
		return actionMsg{action: "approve", id: id, err: err, subject: subject}
	}
}

func rejectCmd(ctx context.Context, b Backend, id, reason, subject string) tea.Cmd {
	return func() tea.Msg {
		err := b.Reject(ctx, id, reason)
		return actionMsg{action: "reject", id: id, text: reason, err: err, subject: subject}
	}
}

func editCmd(ctx context.Context, b Backend, id, text, subject string) tea.Cmd {
	return func() tea.Msg {
		err := b.Edit(ctx, id, text)
		return actionMsg{action: "edit", id: id, text: text, err: err, subject: subject}
	}
}

func regenerateCmd(ctx context.Context, b Backend, id, instruction, subject string) tea.Cmd {
	return func() tea.Msg {
		it, err := b.Regenerate(ctx, id, instruction)
		if err != nil {
			return actionMsg{action: "regenerate", id: id, err: err, subject: subject}
		}
		return actionMsg{action: "regenerate", id: id, item: &it, subject: subject}
	}
}

func snoozeCmd(ctx context.Context, b Backend, id string, until time.Time, subject string) tea.Cmd {
	return func() tea.Msg {
		err := b.Snooze(ctx, id, until)
		return actionMsg{action: "snooze", id: id, until: until, err: err, subject: subject}
	}
}

// unsnoozeCmd wakes a snoozed item: Backend.Unsnooze when the backend
// implements Unsnoozer, else Snooze until now, so the item is due at once
// and the watcher's next pass returns it to the queue.
func unsnoozeCmd(ctx context.Context, b Backend, id string, now time.Time, subject string) tea.Cmd {
	return func() tea.Msg {
		var err error
		if u, ok := b.(Unsnoozer); ok {
			err = u.Unsnooze(ctx, id)
		} else {
			err = b.Snooze(ctx, id, now)
		}
		return actionMsg{action: "unsnooze", id: id, err: err, subject: subject}
	}
}

// sendApprovedCmd sends an approved reply whose undo window has ended
// (ApprovalSender).
func sendApprovedCmd(ctx context.Context, s ApprovalSender, id, subject string) tea.Cmd {
	return func() tea.Msg {
		err := s.SendApproved(ctx, id)
		return actionMsg{action: "send", id: id, err: err, subject: subject}
	}
}

func retryCmd(ctx context.Context, b Backend, id, subject string) tea.Cmd {
	return func() tea.Msg {
		err := b.Retry(ctx, id)
		return actionMsg{action: "retry", id: id, err: err, subject: subject}
	}
}

func cancelCmd(ctx context.Context, b Backend, id, subject string) tea.Cmd {
	return func() tea.Msg {
		err := b.Cancel(ctx, id)
		return actionMsg{action: "cancel", id: id, err: err, subject: subject}
	}
}

// prepareEditorCmd writes the text to a fresh temp file for the external
// editor. os.CreateTemp creates it with mode 0600; finishEditCmd removes it.
func prepareEditorCmd(id, text string) tea.Cmd {
	return func() tea.Msg {
		f, err := os.CreateTemp("", "mailagent-draft-*.txt")
		if err != nil {
			return editorReadyMsg{id: id, err: fmt.Errorf("create temp file: %w", err)}
		}
		path := f.Name()
		_, werr := f.WriteString(text)
		cerr := f.Close()
		if err := errors.Join(werr, cerr); err != nil {
			_ = os.Remove(path)
			return editorReadyMsg{id: id, err: fmt.Errorf("write temp file: %w", err)}
		}
		return editorReadyMsg{id: id, path: path, orig: text}
	}
}

// editorCommand builds the editor's command line. The editor setting is
// split on spaces and run without a shell ("code -w" works; shell quoting
// does not), so the draft's path is never interpreted by a shell.
func editorCommand(editor, path string) (*exec.Cmd, error) {
	parts := strings.Fields(editor)
	if len(parts) == 0 {
		return nil, errors.New("no editor configured")
	}
	args := append(parts[1:len(parts):len(parts)], path)
	return exec.Command(parts[0], args...), nil //nolint:gosec // the owner's own $EDITOR
}

// finishEditCmd reads the edited file, removes it and stores the text when
// it changed.
func finishEditCmd(ctx context.Context, b Backend, msg editorExitedMsg) tea.Cmd {
	return func() tea.Msg {
		data, rerr := os.ReadFile(msg.path)
		if err := os.Remove(msg.path); err != nil && !errors.Is(err, os.ErrNotExist) && rerr == nil {
			rerr = fmt.Errorf("remove temp file: %w", err)
		}
		if msg.err != nil {
			return actionMsg{action: "edit", id: msg.id, err: fmt.Errorf("editor: %w", msg.err)}
		}
		if rerr != nil {
			return actionMsg{action: "edit", id: msg.id, err: fmt.Errorf("read edited draft: %w", rerr)}
		}
		text := string(data)
		// Editors append a final newline; keep the draft's own ending.
		if !strings.HasSuffix(msg.orig, "\n") {
			text = strings.TrimSuffix(strings.TrimSuffix(text, "\n"), "\r")
		}
		if text == msg.orig {
			return actionMsg{action: "edit", id: msg.id, noop: true}
		}
		err := b.Edit(ctx, msg.id, text)
		return actionMsg{action: "edit", id: msg.id, text: text, err: err}
	}
}

// detailCmd loads an item's full detail (its thread) when the backend can:
// lists stay cheap with thousands of items, and the thread is fetched only
// for the item being read. The result arrives as an item update.
func detailCmd(ctx context.Context, b Backend, id string) tea.Cmd {
	d, ok := b.(Detailer)
	if !ok {
		return nil
	}
	return func() tea.Msg {
		it, err := d.Detail(ctx, id)
		if err != nil {
			return eventMsg{ev: Event{Kind: "detail_error", ID: id}}
		}
		return eventMsg{ev: Event{Kind: EventItemUpdated, Item: &it}}
	}
}
