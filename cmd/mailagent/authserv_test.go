package main

import (
	"encoding/json"
	"github.com/mailagent/mailagent/internal/app/doctor"
	"os"
	"regexp"
	"strings"
	"testing"
)

func (h *harness) doctorCheck(t *testing.T, name string) doctor.Check {
	t.Helper()
	stdout, stderr, _ := h.run("doctor", "--no-model", "--json")
	var checks []CheckJSON
	if err := json.Unmarshal([]byte(stdout), &checks); err != nil {
		t.Fatalf("doctor --json: %v\n%s\n%s", err, stdout, stderr)
	}
	for _, c := range checks {
		if c.Check == name && sv(c.Account) == "personal" {
			return doctor.Check{Name: c.Check, Status: c.Status, Detail: sv(c.Detail), Fix: sv(c.Fix), Account: sv(c.Account)}
		}
	}
	t.Fatalf("doctor: no check %q in %+v", name, checks)
	return doctor.Check{}
}

func (h *harness) setAuthserv(t *testing.T, line string) {
	t.Helper()
	cfg, err := os.ReadFile(h.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	if line == "" {
		line = "# authserv-slot"
	}
	out := authservLine.ReplaceAllLiteralString(string(cfg), line)
	if err := os.WriteFile(h.cfgPath, []byte(out), 0o600); err != nil {
		t.Fatal(err)
	}
}

const authservCheck = "imap.authserv_id"

var authservLine = regexp.MustCompile(`(?m)^(authserv_id = .*|# authserv-slot)$`)

func TestDoctorAuthservID(t *testing.T) {
	t.Parallel()
	h := newHarness(t, compromisedModel, "")
	h.deliver(rawMail("Bob <bob@example.org>", "One", "1"))
	h.deliver(rawMail("Carol <carol@example.org>", "Two", "2"))
	h.deliver(unauthenticatedMail("Local <cron@localhost>", "Three", "no Authentication-Results at all"))

	if c := h.doctorCheck(t, authservCheck); c.Status != "pass" || !strings.Contains(c.Detail, "newest 2 messages") {
		t.Errorf("configured and matching: got %+v, want pass over 2 messages", c)
	}

	h.setAuthserv(t, "")
	c := h.doctorCheck(t, authservCheck)
	if c.Status != "warn" || c.Fix != `add authserv_id = "mx.example.com" to [[accounts]] "personal"` {
		t.Errorf("not configured: got %+v, want a warning with the line to add", c)
	}

	h.setAuthserv(t, `authserv_id = "mx.wrong.example"`)
	c = h.doctorCheck(t, authservCheck)
	if c.Status != "fail" || !strings.Contains(c.Detail, "mx.wrong.example does not match") || !strings.Contains(c.Fix, `"mx.example.com"`) {
		t.Errorf("mismatch: got %+v, want a failure proposing mx.example.com", c)
	}
}

func TestDoctorAuthservIDPerHost(t *testing.T) {
	t.Parallel()
	h := newHarness(t, compromisedModel, "")
	h.setAuthserv(t, "")
	h.deliver(unauthenticatedMail("Bob <bob@example.org>", "One", "1", "Authentication-Results: mx6.messagingengine.com; dmarc=pass header.from=example.org"))
	h.deliver(unauthenticatedMail("Bob <bob@example.org>", "Two", "2", "Authentication-Results: mx1.messagingengine.com; dmarc=pass header.from=example.org"))
	if c := h.doctorCheck(t, authservCheck); !strings.Contains(c.Fix, `authserv_id = "*.messagingengine.com"`) {
		t.Errorf("per-host ids: got %+v, want *.messagingengine.com proposed", c)
	}
}

func TestSuggestAuthserv(t *testing.T) {
	t.Parallel()
	tests := []struct {
		ids  []string
		want string
	}{
		{nil, ""},
		{[]string{"mx.google.com"}, "mx.google.com"},
		{[]string{"bimi.icloud.com", "dkim-verifier.icloud.com", "dmarc.icloud.com", "spf.icloud.com"}, "*.icloud.com"},
		{[]string{"mx1.messagingengine.com", "mx6.messagingengine.com"}, "*.messagingengine.com"},
		{[]string{"mx.google.com", "mx.evil.example"}, ""},
		{[]string{"protection.outlook.com"}, "protection.outlook.com"},
	}
	for _, tt := range tests {
		if got := doctor.SuggestAuthserv(tt.ids); got != tt.want {
			t.Errorf("suggestAuthserv(%v): got %q, want %q", tt.ids, got, tt.want)
		}
	}
}
