package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mailagent/mailagent/store"
)

func TestContactsCommands(t *testing.T) {
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
	stdout, _, _ = h.run("contacts", "show", "bob@example.org", "--json")
	var c store.Contact
	if err := json.Unmarshal([]byte(stdout), &c); err != nil || len(c.Notes) != 1 || c.Notes[0] != "prefers mornings" {
		t.Errorf("show after note: %v %+v", err, c)
	}
	if _, stderr, code := h.run("contacts", "forget", "bob@example.org"); code != 0 {
		t.Fatalf("forget: %d %s", code, stderr)
	}
	if _, stderr, code := h.run("contacts", "show", "bob@example.org"); code != ExitUsage || !strings.Contains(stderr, "no contact") {
		t.Errorf("show after forget: got %d %q", code, stderr)
	}
}
