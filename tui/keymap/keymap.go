// Package keymap holds the review TUI's key bindings.
//
// The bindings follow vim, less and neomutt habits: j/k move, gg/G jump
// to the top and bottom (the TUI handles the two-key gg itself, so no
// action sits on a lone g), ctrl-d/ctrl-u move half a page, and q or esc
// go back from the detail view before they quit. DefaultKeyMap builds them with help
// text so that every view can expose them through help.KeyMap; the tui
// package matches key presses with key.Matches and never compares raw
// strings. A KeyMap is a plain value: copy it and call SetKeys or
// SetEnabled on a field to customise it.
package keymap

import "charm.land/bubbles/v2/key"

// KeyMap is the set of bindings the review TUI understands.
type KeyMap struct {
	// Approve approves the selected draft and sends it through the outbox.
	Approve key.Binding
	// Edit opens the draft in $VISUAL/$EDITOR, or an inline editor.
	Edit key.Binding
	// Reject rejects the selected draft, with an optional reason.
	Reject key.Binding
	// Regenerate asks for a new draft with an instruction.
	Regenerate key.Binding
	// Snooze hides the item until a later time.
	Snooze key.Binding
	// Filter narrows the list by a substring.
	Filter key.Binding
	// Up moves the selection (or the detail view) up.
	Up key.Binding
	// Down moves the selection (or the detail view) down.
	Down key.Binding
	// PageUp moves one page up.
	PageUp key.Binding
	// PageDown moves one page down.
	PageDown key.Binding
	// HalfPageUp moves half a page up (ctrl-u).
	HalfPageUp key.Binding
	// HalfPageDown moves half a page down (ctrl-d).
	HalfPageDown key.Binding
	// Top jumps to the first row; "gg" does too.
	Top key.Binding
	// Bottom jumps to the last row.
	Bottom key.Binding
	// Open shows the selected item in the detail view.
	Open key.Binding
	// Back leaves the detail view, a prompt or the filter.
	Back key.Binding
	// Quit leaves the program; in the detail view "q" goes back first
	// (ctrl+c always quits).
	Quit key.Binding
	// Help toggles the full help overlay.
	Help key.Binding
	// NextTab switches to the next view.
	NextTab key.Binding
	// PrevTab switches to the previous view.
	PrevTab key.Binding
	// GotoTab switches to view 1-5 directly; the digit picks the view.
	GotoTab key.Binding
	// Retry re-runs a needs_review or failed item.
	Retry key.Binding
	// Unsnooze brings a snoozed item back into the queue now.
	Unsnooze key.Binding
	// Cancel cancels a delayed auto-send before it goes out.
	Cancel key.Binding
	// Save saves the inline editor.
	Save key.Binding
	// Submit confirms a prompt.
	Submit key.Binding
	// Followups opens (and closes) the follow-ups view.
	Followups key.Binding
	// Unsubscribe unsubscribes from the selected item's mailing list,
	// after showing what it would send and a y confirmation.
	Unsubscribe key.Binding
	// Forget forgets what the approval in its undo window taught (the
	// memory records named after "learned:").
	Forget key.Binding
	// Accept, Decline and Tentative answer the selected item's calendar
	// invitation (an iTIP REPLY to its organizer), after a y confirmation.
	Accept    key.Binding
	Decline   key.Binding
	Tentative key.Binding
	// FollowupNudge queues a follow-up draft for the selected thread
	// (follow-ups view).
	FollowupNudge key.Binding
	// FollowupSnooze hides the selected thread for a day (follow-ups view).
	FollowupSnooze key.Binding
	// FollowupDone marks the selected thread done (follow-ups view).
	FollowupDone key.Binding
	// Reload lists the threads again (follow-ups view).
	Reload key.Binding
	// FollowupBack leaves the follow-ups view (q, esc or F again).
	FollowupBack key.Binding
}

// DefaultKeyMap returns the default bindings.
func DefaultKeyMap() KeyMap {
	return KeyMap{
		// Not "y": y answers the y/N questions an approval may ask, with
		// one key, so a held or doubled key must not approve.
		Approve:      key.NewBinding(key.WithKeys("a"), key.WithHelp("a", "approve & send")),
		Edit:         key.NewBinding(key.WithKeys("e"), key.WithHelp("e", "edit")),
		Reject:       key.NewBinding(key.WithKeys("r", "n"), key.WithHelp("r/n", "reject")),
		Regenerate:   key.NewBinding(key.WithKeys("R"), key.WithHelp("R", "regenerate")),
		Snooze:       key.NewBinding(key.WithKeys("s"), key.WithHelp("s", "snooze")),
		Filter:       key.NewBinding(key.WithKeys("/"), key.WithHelp("/", "filter")),
		Up:           key.NewBinding(key.WithKeys("k", "up"), key.WithHelp("k/↑", "up")),
		Down:         key.NewBinding(key.WithKeys("j", "down"), key.WithHelp("j/↓", "down")),
		PageUp:       key.NewBinding(key.WithKeys("pgup", "ctrl+b"), key.WithHelp("pgup", "page up")),
		PageDown:     key.NewBinding(key.WithKeys("pgdown", "ctrl+f", "space"), key.WithHelp("pgdn", "page down")),
		HalfPageUp:   key.NewBinding(key.WithKeys("ctrl+u"), key.WithHelp("ctrl+u", "half page up")),
		HalfPageDown: key.NewBinding(key.WithKeys("ctrl+d"), key.WithHelp("ctrl+d", "half page down")),
		Top:          key.NewBinding(key.WithKeys("home", "<"), key.WithHelp("gg/home", "top")),
		Unsnooze:     key.NewBinding(key.WithKeys("u"), key.WithHelp("u", "unsnooze")),
		Bottom:       key.NewBinding(key.WithKeys("end", "G", ">"), key.WithHelp("G/end", "bottom")),
		Open:         key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "open")),
		Back:         key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "back")),
		Quit:         key.NewBinding(key.WithKeys("q", "ctrl+c"), key.WithHelp("q", "quit")),
		Help:         key.NewBinding(key.WithKeys("?"), key.WithHelp("?", "help")),
		NextTab:      key.NewBinding(key.WithKeys("tab"), key.WithHelp("tab", "next view")),
		PrevTab:      key.NewBinding(key.WithKeys("shift+tab"), key.WithHelp("shift+tab", "prev view")),
		GotoTab:      key.NewBinding(key.WithKeys("1", "2", "3", "4", "5"), key.WithHelp("1-5", "go to view")),
		Retry:        key.NewBinding(key.WithKeys("t"), key.WithHelp("t", "try again")),
		Cancel:       key.NewBinding(key.WithKeys("c"), key.WithHelp("c", "cancel send")),
		Save:         key.NewBinding(key.WithKeys("ctrl+s"), key.WithHelp("ctrl+s", "save")),
		Submit:       key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "confirm")),

		Followups:      key.NewBinding(key.WithKeys("F"), key.WithHelp("F", "follow-ups")),
		Unsubscribe:    key.NewBinding(key.WithKeys("U"), key.WithHelp("U", "unsubscribe")),
		Forget:         key.NewBinding(key.WithKeys("L"), key.WithHelp("L", "forget what this taught")),
		Accept:         key.NewBinding(key.WithKeys("A"), key.WithHelp("A", "accept invitation")),
		Decline:        key.NewBinding(key.WithKeys("D"), key.WithHelp("D", "decline invitation")),
		Tentative:      key.NewBinding(key.WithKeys("T"), key.WithHelp("T", "tentative")),
		FollowupNudge:  key.NewBinding(key.WithKeys("n"), key.WithHelp("n", "nudge")),
		FollowupSnooze: key.NewBinding(key.WithKeys("s"), key.WithHelp("s", "snooze 1d")),
		FollowupDone:   key.NewBinding(key.WithKeys("d"), key.WithHelp("d", "done")),
		Reload:         key.NewBinding(key.WithKeys("r"), key.WithHelp("r", "reload")),
		FollowupBack:   key.NewBinding(key.WithKeys("q", "esc", "F"), key.WithHelp("q/esc", "back")),
	}
}

// ASCII returns a copy of k whose help text uses 7-bit characters only, for
// terminals that cannot draw arrows.
func (k KeyMap) ASCII() KeyMap {
	k.Up.SetHelp("k/up", k.Up.Help().Desc)
	k.Down.SetHelp("j/down", k.Down.Help().Desc)
	return k
}
