package main

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/mailagent/mailagent/internal/cmd/status"
)

func TestStatusWithoutMessagesSaysSo(t *testing.T) {
	t.Parallel()
	h := newHarness(t, classifyReply, "")
	out, stderr, code := h.run("status")
	if code != 0 {
		t.Fatalf("status: exit %d: %s", code, stderr)
	}
	if strings.Contains(out, "[]") || !strings.Contains(out, "messages: none yet") {
		t.Errorf("status without messages:\n%s", out)
	}
	h.deliver(rawMail("Bob <bob@example.org>", "Quick question", "What time is the meeting?"))
	h.watchOnce(t)
	if out, _, _ = h.run("status"); !strings.Contains(out, "messages: ") || strings.Contains(out, "[") {
		t.Errorf("status with messages:\n%s", out)
	}
}

// TestStatusNamesConfiguredAccountsAndCounts: without a watcher, status
// lists each configured account as not watched (text and --json, never
// "accounts": []); the token line counts messages, the latency line
// model calls, and a mean under a millisecond does not read "0s".
func TestStatusNamesConfiguredAccountsAndCounts(t *testing.T) {
	t.Parallel()
	h := newHarness(t, classifyReply, "")
	h.deliver(rawMail("Bob <bob@example.org>", "Quick question", "What time is the meeting?"))
	h.watchOnce(t)
	out, stderr, code := h.run("status")
	if code != 0 {
		t.Fatalf("status: exit %d: %s", code, stderr)
	}
	_, cfg := h.factory(t)
	var names []string
	for _, a := range cfg.Accounts {
		names = append(names, a.Name)
	}
	if len(names) == 0 {
		t.Fatal("the harness has no account")
	}
	for _, n := range names {
		if !strings.Contains(out, n+": "+status.NotWatched) {
			t.Errorf("status does not say account %s is not watched:\n%s", n, out)
		}
	}
	if !regexp.MustCompile(`tokens today: \d+ in, \d+ out \(\d+ messages?\)`).MatchString(out) {
		t.Errorf("the token line does not count messages:\n%s", out)
	}
	if strings.Contains(out, "mean 0s") {
		t.Errorf("a mean latency reads 0s:\n%s", out)
	}
	js, _, _ := h.run("status", "--json")
	var st StatusJSON
	if err := json.Unmarshal([]byte(js), &st); err != nil {
		t.Fatalf("status --json: %v\n%s", err, js)
	}
	if len(st.Accounts) != len(names) || st.Accounts[0].State != status.NotWatched {
		t.Errorf("status --json accounts %+v, want %v not watched", st.Accounts, names)
	}
}
