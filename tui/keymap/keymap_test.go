package keymap

import (
	"testing"

	"charm.land/bubbles/v2/key"
)

// TestNoConflicts checks that no two bindings active in the normal view
// share a key, so every key press has one meaning.
func TestNoConflicts(t *testing.T) {
	t.Parallel()
	k := DefaultKeyMap()
	normal := map[string]key.Binding{
		"Approve": k.Approve, "Edit": k.Edit, "Reject": k.Reject, "Regenerate": k.Regenerate,
		"Snooze": k.Snooze, "Filter": k.Filter, "Up": k.Up, "Down": k.Down, "PageUp": k.PageUp,
		"PageDown": k.PageDown, "Top": k.Top, "Bottom": k.Bottom, "Open": k.Open, "Back": k.Back,
		"Quit": k.Quit, "Help": k.Help, "NextTab": k.NextTab, "PrevTab": k.PrevTab,
		"GotoTab": k.GotoTab, "Retry": k.Retry, "Cancel": k.Cancel,
		"HalfPageUp": k.HalfPageUp, "HalfPageDown": k.HalfPageDown, "Unsnooze": k.Unsnooze,
		"Followups": k.Followups, "Unsubscribe": k.Unsubscribe, "Forget": k.Forget,
		"Accept": k.Accept, "Decline": k.Decline, "Tentative": k.Tentative,
	}
	checkConflicts(t, normal)
	// The follow-ups view has its own keys (and the moves and help).
	checkConflicts(t, map[string]key.Binding{
		"FollowupNudge": k.FollowupNudge, "FollowupSnooze": k.FollowupSnooze, "FollowupDone": k.FollowupDone,
		"Reload": k.Reload, "FollowupBack": k.FollowupBack, "Up": k.Up, "Down": k.Down, "Help": k.Help,
	})
}

func checkConflicts(t *testing.T, normal map[string]key.Binding) {
	t.Helper()
	owner := map[string]string{}
	for name, b := range normal {
		if len(b.Keys()) == 0 {
			t.Errorf("%s has no keys", name)
		}
		if b.Help().Key == "" || b.Help().Desc == "" {
			t.Errorf("%s has no help text", name)
		}
		for _, key := range b.Keys() {
			if other, ok := owner[key]; ok {
				t.Errorf("key %q bound to both %s and %s", key, other, name)
			}
			owner[key] = name
		}
	}
}

func TestASCIIHelp(t *testing.T) {
	t.Parallel()
	k := DefaultKeyMap().ASCII()
	for _, b := range []key.Binding{k.Up, k.Down, k.PageUp, k.PageDown, k.Top, k.Bottom, k.Approve, k.Cancel, k.Retry} {
		for _, r := range b.Help().Key + b.Help().Desc {
			if r > 0x7e {
				t.Errorf("help %q/%q: got non-ASCII %q, want ASCII only", b.Help().Key, b.Help().Desc, r)
			}
		}
	}
}

// TestNoLoneG checks that no binding sits on a lone "g": a vim user's "gg"
// must move to the top, never open a prompt on its first g.
func TestNoLoneG(t *testing.T) {
	t.Parallel()
	k := DefaultKeyMap()
	for _, b := range []key.Binding{k.Approve, k.Edit, k.Reject, k.Regenerate, k.Snooze, k.Filter,
		k.Up, k.Down, k.PageUp, k.PageDown, k.HalfPageUp, k.HalfPageDown, k.Top, k.Bottom, k.Open,
		k.Back, k.Quit, k.Help, k.NextTab, k.PrevTab, k.GotoTab, k.Retry, k.Cancel, k.Unsnooze} {
		for _, key := range b.Keys() {
			if key == "g" {
				t.Errorf("binding %q uses a lone g", b.Help().Desc)
			}
		}
	}
	if got := k.Regenerate.Keys(); len(got) != 1 || got[0] != "R" {
		t.Errorf("regenerate keys: got %v, want [R]", got)
	}
}
