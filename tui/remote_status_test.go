package tui

import (
	"strings"
	"testing"
)

// TestStatusLineRemote: over --remote the status line names the host, and
// a lost connection says so: never that actions run locally (nothing
// does: the watcher is on the other host).
func TestStatusLineRemote(t *testing.T) {
	t.Parallel()
	m := newModel(t, newFake(), Options{NoColor: true})
	const remote = "ssh://ada@mail.example.org"
	send(t, m, statusMsg{status: Status{WatcherConnected: true, Remote: remote}})
	if line := m.renderStatus(); !strings.Contains(line, "watcher connected on "+remote) {
		t.Errorf("connected: got %q, want watcher connected on %s", line, remote)
	}
	send(t, m, statusMsg{status: Status{Remote: remote}})
	line := m.renderStatus()
	if !strings.Contains(line, "connection to "+remote+" lost: reconnecting") || strings.Contains(line, "locally") {
		t.Errorf("lost: got %q, want the connection lost, nothing about local actions", line)
	}
	send(t, m, statusMsg{status: Status{Remote: "ssh://evil\x1b]0;pwned\x07"}})
	if line := m.renderStatus(); strings.ContainsAny(line, "\x07") || strings.Contains(line, "\x1b]0;") {
		t.Errorf("a hostile remote name reached the terminal raw: %q", line)
	}
}
