package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/mailagent/mailagent/internal/cmdutil"
	"github.com/mailagent/mailagent/internal/config"
	"github.com/mailagent/mailagent/internal/llm"
	"github.com/mailagent/mailagent/internal/llm/geminitest"
)

// Hostile parts of the mail that explain --steps must show cleaned.
const (
	snapCSI       = "\x1b[2J\x1b[31m"                                    // clear screen, red
	snapOSC8      = "\x1b]8;;https://evil.example/\x07click\x1b]8;;\x07" // hyperlink
	snapBidi      = "\u202eexe.txt"                                      // right-to-left override
	snapFakeKey   = "sk-fakeFAKEfake0123456789abcdef"
	snapBearer    = "Bearer eyJhbGciOiJIUzI1NiJ9fakefakefake"
	snapMarker    = "snapshot-marker-7f3a"
	snapModelSays = "model-raw-answer-9c1d"
)

// obeyingModel repeats the mail back in its answer (summary, comments and
// draft), as a model that obeys the mail would: whatever the mail holds
// reaches the raw answer the classify and draft snapshots keep.
func obeyingModel(req *geminitest.Request) geminitest.Reply {
	user := req.UserText()
	props, _ := req.ResponseSchema()["properties"].(map[string]any)
	echo := snapModelSays + " " + snapCSI + snapBidi
	if strings.Contains(user, apiKey) || strings.Contains(user, ownerPass) {
		echo += " " + apiKey + " " + ownerPass
	}
	usage := llm.Usage{PromptTokens: 100, OutputTokens: 20, TotalTokens: 120}
	if _, ok := props["intents"]; ok {
		return geminitest.JSONReply(map[string]any{
			"intents": []string{"information_request"}, "risk": "low", "action": "reply", "requires_approval": false,
			"confidence": 0.95, "summary": "asks", "comments": echo,
		}, usage)
	}
	return geminitest.JSONReply(map[string]any{"body": "Hello. " + echo, "tone": "brief", "needs_owner_input": false}, usage)
}

// TestExplainStepsHostile: a mail with escape sequences, a bidi override,
// a fake API key and an Authorization header, whose body carries the real
// configured API key and IMAP password (and a model that echoes them),
// shows up in `explain --steps` cleaned and redacted; --json keeps the
// text (redacted) as data. Counts attacks tried and got through. The
// subtest does the same for the owner, thread, answered and mailbox steps.
func TestExplainStepsHostile(t *testing.T) {
	t.Parallel()
	t.Run("owner, thread, answered, mailbox", explainStepsHostileNewSteps) // explain_steps_new_test.go
	h, out := explainProbe(t, false)
	for _, want := range []string{"step snapshots:", "] parse", "] authenticate", "] route", "] classify", "] decide", "] draft",
		snapMarker, snapModelSays, "[redacted]", "X-Api-Key: [redacted]", "Authorization: [redacted]"} {
		if !strings.Contains(out, want) {
			t.Errorf("explain --steps lacks %q:\n%s", want, out)
		}
	}
	through := explainStepsThrough(out)
	for _, name := range through {
		t.Errorf("%s reached explain --steps", name)
	}
	t.Logf("explain --steps: %d attacks tried, %d got through", len(explainAttacks), len(through))
	if len(through) != 0 {
		t.Errorf("%d of %d attacks reached explain --steps, want 0", len(through), len(explainAttacks))
	}

	jout, stderr, code := h.run("explain", "<snapshot-probe@test.example>", "--json")
	if code != 0 {
		t.Fatalf("explain --json: %d %s", code, stderr)
	}
	var e ExplainJSON
	if err := json.Unmarshal([]byte(jout), &e); err != nil {
		t.Fatal(err)
	}
	for _, st := range e.Trace.Steps {
		if st.Snapshot == nil {
			continue
		}
		for _, secret := range []string{apiKey, ownerPass, snapFakeKey, "eyJhbGciOiJIUzI1NiJ9"} {
			if strings.Contains(st.Snapshot.Input+st.Snapshot.Output, secret) {
				t.Errorf("--json: the %s snapshot holds a secret %q", st.Name, secret)
			}
		}
	}
	got := map[string]*SnapshotJSON{}
	for _, s := range e.Trace.Steps {
		got[s.Name] = s.Snapshot
	}
	if s := got["classify"]; s == nil || !strings.Contains(s.Input, snapMarker) || !strings.Contains(s.Output, snapModelSays) {
		t.Errorf("classify snapshot: %+v, want the prompt variables (mail text) in and the raw answer out", s)
	}
	if s := got["draft"]; s == nil || !strings.Contains(s.Output, "Hello.") {
		t.Errorf("draft snapshot: %+v, want the raw answer", s)
	}
	if s := got["decide"]; s == nil || !strings.Contains(s.Input, "Sender") || !strings.Contains(s.Output, "gates") {
		t.Errorf("decide snapshot: %+v, want the gate inputs and verdicts", s)
	}
	if s := got["parse"]; s == nil || !strings.Contains(s.Input, "X-Api-Key: [redacted]") {
		t.Errorf("parse snapshot: %+v, want the headers, redacted", s)
	}
}

// TestExplainStepsOff: with trace.snapshots = false no step keeps one,
// and explain --steps says so.
func TestExplainStepsOff(t *testing.T) {
	t.Parallel()
	h := newHarness(t, obeyingModel, "[trace]\nsnapshots = false\n")
	h.deliver(rawMail("Bob <bob@example.org>", "No snapshot", snapMarker))
	if _, stderr, code := h.run("triage"); code != 0 {
		t.Fatalf("triage: %d %s", code, stderr)
	}
	jout, _, code := h.run("explain", "<no-snapshot@test.example>", "--json")
	if code != 0 {
		t.Fatal(code)
	}
	var e ExplainJSON
	if err := json.Unmarshal([]byte(jout), &e); err != nil {
		t.Fatal(err)
	}
	if len(e.Trace.Steps) == 0 {
		t.Fatal("no steps")
	}
	for _, s := range e.Trace.Steps {
		if s.Snapshot != nil {
			t.Errorf("step %s kept a snapshot with trace.snapshots = false", s.Name)
		}
	}
	if !strings.Contains(jout, `"snapshot": null`) {
		t.Error("--json: snapshot is not null when there is none")
	}
	out, _, _ := h.run("explain", "<no-snapshot@test.example>", "--steps")
	if !strings.Contains(out, "(none: trace.snapshots was off") || strings.Contains(out, snapMarker+"\n    ") {
		t.Errorf("explain --steps with snapshots off:\n%s", out)
	}
}

// explainAttacks are what the probe mail carries that must not reach
// `explain --steps`, by name: terminal controls (termsafe stops them) and
// secrets (the snapshot Redactor does).
var explainAttacks = map[string]string{
	"CSI escape": "\x1b[", "OSC 8 hyperlink": "\x1b]", "BEL": "\x07", "bidi override": "\u202e",
	"fake key in header": snapFakeKey, "Authorization header": "eyJhbGciOiJIUzI1NiJ9",
	"configured API key": apiKey, "IMAP password": ownerPass,
}

// explainProbe delivers the hostile probe mail, runs watch --once over it
// (its step snapshots are stored) and returns the harness and what
// `explain --steps` printed.
func explainProbe(t *testing.T, sanitiseOff bool) (*harness, string) {
	t.Helper()
	h := newHarness(t, obeyingModel, "")
	h.tweak = func(f *cmdutil.Factory) { f.ExplainSanitiseOff = sanitiseOff }
	body := snapMarker + " " + snapCSI + snapOSC8 + " " + snapBidi + "\nmy key is " + apiKey + " and the password " + ownerPass +
		"\napi_key=" + snapFakeKey + "\n"
	// The escapes go in a header too: the parse step keeps the header
	// bytes as they came (the body reaches the snapshots as clean text or
	// JSON, where an escape is already gone or written \u001b), so only
	// explain's sanitising stands between them and the terminal.
	h.deliver(rawMail("Bob <bob@example.org>", "Snapshot probe", body,
		"X-Api-Key: "+snapFakeKey, "Authorization: "+snapBearer, "X-Probe: "+snapCSI+snapOSC8))
	if _, stderr, code := h.run("watch", "--once"); code != 0 {
		t.Fatalf("watch --once: %d %s", code, stderr)
	}
	out, stderr, code := h.run("explain", "<snapshot-probe@test.example>", "--steps")
	if code != 0 {
		t.Fatalf("explain --steps: %d %s", code, stderr)
	}
	return h, out
}

// explainStepsThrough returns the names of explainAttacks found in the
// snapshot section of out, sorted. The classification above it is the
// model's own words, which this model made repeat the mail.
func explainStepsThrough(out string) []string {
	_, snaps, _ := strings.Cut(out, "step snapshots:")
	var through []string
	for name, s := range explainAttacks {
		if strings.Contains(snaps, s) {
			through = append(through, name)
		}
	}
	slices.Sort(through)
	return through
}

// TestExplainStepsHostileLandsWithoutDefences is the positive control of
// TestExplainStepsHostile: the same probe, with the snapshot redaction
// (config.SwitchOffRedactionForTest) and explain's sanitising
// (cmdutil.Factory's ExplainSanitiseOff) switched off, puts every attack on
// the screen. Not parallel: the switches are global.
func TestExplainStepsHostileLandsWithoutDefences(t *testing.T) {
	defer config.SwitchOffRedactionForTest()()
	_, out := explainProbe(t, true)
	landed := explainStepsThrough(out)
	t.Logf("explain --steps without its defences: %d attacks tried, %d landed", len(explainAttacks), len(landed))
	for name := range explainAttacks {
		if !slices.Contains(landed, name) {
			t.Errorf("%s did not reach explain --steps with the defences off: the attack does not test them", name)
		}
	}
}
