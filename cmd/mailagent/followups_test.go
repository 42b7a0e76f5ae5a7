package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestFollowupsCommand: a question waits for the owner (needs-reply), the
// owner answers from another client (the Sent folder), and the thread is
// done; the filters, the human table and the usage errors.
func TestFollowupsCommand(t *testing.T) {
	t.Parallel()
	h := newHarness(t, compromisedModel, "")
	h.deliver(rawMail("Carol <carol@example.org>", "Lunch", "Lunch next week?", "Message-ID: <lunch-q@example.org>"))
	h.watchOnce(t)

	list := func(args ...string) []FollowupJSON {
		t.Helper()
		out, stderr, code := h.run(append([]string{"followups", "--json"}, args...)...)
		if code != 0 {
			t.Fatalf("followups %v: exit %d: %s", args, code, stderr)
		}
		var fs []FollowupJSON
		if err := json.Unmarshal([]byte(out), &fs); err != nil {
			t.Fatalf("followups --json: %v\n%s", err, out)
		}
		return fs
	}
	open := list("--state", "needs-reply")
	if len(open) != 1 || open[0].State != "needs_reply" || open[0].Correspondents[0] != "carol@example.org" ||
		!open[0].Overdue || open[0].Tier != 1 { // the mail is weeks old: overdue, and the reminder fired
		t.Fatalf("needs-reply: %+v", open)
	}
	if fs := list("--from", "nobody.example"); len(fs) != 0 {
		t.Fatalf("--from nobody: %+v", fs)
	}
	if fs := list("--since", "2000-01-01", "--until", "2000-01-02"); len(fs) != 0 {
		t.Fatalf("--until in the past: %+v", fs)
	}
	out, _, code := h.run("followups")
	if code != 0 || !strings.Contains(out, "needs-reply") || !strings.Contains(out, "Lunch") {
		t.Fatalf("table: exit %d\n%s", code, out)
	}

	// The owner answers from their own client.
	h.appendTo("Sent", "From: Ada <ada@example.com>\nTo: Carol <carol@example.org>\nSubject: Re: Lunch\nMessage-ID: <lunch-a@example.com>\n"+
		"In-Reply-To: <lunch-q@example.org>\nReferences: <lunch-q@example.org>\nDate: Mon, 02 Nov 2026 09:00:00 +0000\n\nTuesday works.\n")
	h.watchOnce(t)
	if fs := list(); len(fs) != 0 {
		t.Fatalf("open after the owner's reply: %+v", fs)
	}
	if fs := list("--recent", "1d"); len(fs) != 1 || fs[0].State != "done" || fs[0].ClosedAt == nil {
		t.Fatalf("recently replied: %+v", fs)
	}

	for _, args := range [][]string{{"followups", "--state", "bogus"}, {"followups", "--since", "yesterday"}, {"followups", "done"},
		{"followups", "done", "fu_nosuch"}, {"followups", "snooze", "x", "--for", "-1h"}} {
		if _, _, code := h.run(args...); code != ExitUsage {
			t.Errorf("%v: exit %d, want %d", args, code, ExitUsage)
		}
	}
}
