package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mailagent/mailagent/internal/cmd/root"
	"github.com/mailagent/mailagent/internal/iostreams"
	"github.com/mailagent/mailagent/store"
)

func TestContactsCommands(t *testing.T) {
	t.Parallel()
	h := newHarness(t, compromisedModel, "")
	h.deliver(rawMail("Bob <bob@example.org>", "Hello", "Lunch?"))
	if _, stderr, code := h.run("watch", "--once"); code != 0 {
		t.Fatalf("watch --once: %d %s", code, stderr)
	}
	stdout, _, code := h.run("contacts", "list", "--json")
	var cs []store.Contact
	if err := json.Unmarshal([]byte(stdout), &cs); err != nil || code != 0 {
		t.Fatalf("contacts list --json: %d %v\n%s", code, err, stdout)
	}
	if len(cs) != 1 || cs[0].Email != "bob@example.org" || cs[0].Inbound != 1 || len(cs[0].History) != 1 {
		t.Fatalf("contacts: got %+v", cs)
	}
	if _, stderr, code := h.run("contacts", "note", "bob@example.org", "prefers mornings"); code != 0 {
		t.Fatalf("note: %d %s", code, stderr)
	}
	// A note is a fact record about Bob: listed, and forgotten, on its own.
	stdout, _, _ = h.run("memory", "list", "--contact", "bob@example.org", "--json")
	var recs []struct{ ID, Kind, Contact, Text, Source string }
	if err := json.Unmarshal([]byte(stdout), &recs); err != nil || len(recs) != 1 || recs[0].Kind != store.MemoryFact ||
		recs[0].Contact != "bob@example.org" || recs[0].Text != "prefers mornings" || recs[0].Source != store.SourceManual {
		t.Fatalf("memory list after note: %v %s", err, stdout)
	}
	if _, stderr, code := h.run("memory", "forget", recs[0].ID); code != 0 {
		t.Fatalf("memory forget %s: %d %s", recs[0].ID, code, stderr)
	}
	if stdout, _, _ = h.run("memory", "list", "--contact", "bob@example.org", "--json"); strings.TrimSpace(stdout) != "[]" {
		t.Fatalf("the note outlived its forget: %s", stdout)
	}
	if _, stderr, code := h.run("contacts", "note", "bob@example.org", "prefers mornings"); code != 0 {
		t.Fatalf("note: %d %s", code, stderr)
	}
	// Without a terminal, forget needs --yes; nothing is deleted.
	if _, stderr, code := h.run("contacts", "forget", "bob@example.org"); code != ExitUsage || !strings.Contains(stderr, "--yes") {
		t.Fatalf("forget without --yes, no TTY: got %d %q, want %d naming --yes", code, stderr, ExitUsage)
	}
	if _, _, code := h.run("contacts", "show", "bob@example.org"); code != 0 {
		t.Fatalf("forget without --yes deleted the contact (show: %d)", code)
	}
	// At a terminal it asks; anything but y keeps the contact.
	if code, errb := mainAtTerminal("n\n", "--config", h.cfgPath, "contacts", "forget", "bob@example.org"); code != ExitFailure || !strings.Contains(errb, "y/N") {
		t.Fatalf("forget answered n: got %d %q", code, errb)
	}
	if _, _, code := h.run("contacts", "show", "bob@example.org"); code != 0 {
		t.Fatalf("forget answered n deleted the contact (show: %d)", code)
	}
	if code, errb := mainAtTerminal("y\n", "--config", h.cfgPath, "contacts", "forget", "bob@example.org"); code != 0 {
		t.Fatalf("forget answered y: %d %s", code, errb)
	}
	if _, stderr, code := h.run("contacts", "note", "bob@example.org", "again"); code != 0 {
		t.Fatalf("note: %d %s", code, stderr)
	}
	if _, stderr, code := h.run("contacts", "forget", "--yes", "bob@example.org"); code != 0 {
		t.Fatalf("forget --yes: %d %s", code, stderr)
	}
	if _, stderr, code := h.run("contacts", "show", "bob@example.org"); code != ExitUsage || !strings.Contains(stderr, "no contact") {
		t.Errorf("show after forget: got %d %q", code, stderr)
	}
	// Forgetting the contact took what was learned about it too.
	if stdout, _, _ = h.run("memory", "list", "--contact", "bob@example.org", "--json"); strings.TrimSpace(stdout) != "[]" {
		t.Errorf("memory about bob outlived contacts forget: %s", stdout)
	}
}

// mainAtTerminal runs the command line with stdin (holding input) counted
// as a terminal, and returns the exit code and stderr.
func mainAtTerminal(input string, args ...string) (int, string) {
	var out, errb bytes.Buffer
	ios := iostreams.New(strings.NewReader(input), &out, &errb)
	ios.SetStdinTTY(true)
	return root.Main(args, ios, wireLegacy), errb.String()
}
