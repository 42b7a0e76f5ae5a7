package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/mailagent/mailagent/internal/cmdutil"
	"github.com/mailagent/mailagent/internal/config"
	"github.com/mailagent/mailagent/internal/llm"
	"github.com/mailagent/mailagent/internal/llm/geminitest"
	"github.com/mailagent/mailagent/store"
)

// stepsConfig: auto mode (the owner channel answers), archive moves.
const stepsConfig = autoPolicy + "[mailbox]\narchive = \"move\"\n[sync]\ninitial_lookback = \"168h\"\n"

// explainSteps runs `explain ID --steps --json` and returns each step's
// snapshot by name (the last step of that name).
func (h *harness) explainSteps(t *testing.T, id string) map[string]*SnapshotJSON {
	t.Helper()
	out, stderr, code := h.run("explain", id, "--steps", "--json")
	if code != 0 {
		t.Fatalf("explain %s --steps --json: exit %d: %s", id, code, stderr)
	}
	var e ExplainJSON
	if err := json.Unmarshal([]byte(out), &e); err != nil {
		t.Fatalf("explain %s: %v\n%s", id, err, out)
	}
	got := map[string]*SnapshotJSON{}
	for _, s := range e.Trace.Steps {
		got[s.Name] = s.Snapshot
	}
	return got
}

// wantStep checks that the step has a snapshot whose input and output
// hold the given texts, each side within the cap.
func wantStep(t *testing.T, what string, got map[string]*SnapshotJSON, step string, in, out []string) {
	t.Helper()
	s := got[step]
	if s == nil {
		t.Errorf("%s: no %s snapshot (steps: %v)", what, step, keys(got))
		return
	}
	if s.Input == "" || s.Output == "" {
		t.Errorf("%s: %s snapshot with an empty side: %+v", what, step, s)
	}
	if len(s.Input) > store.SnapshotCap || len(s.Output) > store.SnapshotCap {
		t.Errorf("%s: %s snapshot over the cap: %d/%d bytes", what, step, len(s.Input), len(s.Output))
	}
	for _, w := range in {
		if !strings.Contains(s.Input, w) {
			t.Errorf("%s: %s input lacks %q:\n%s", what, step, w, s.Input)
		}
	}
	for _, w := range out {
		if !strings.Contains(s.Output, w) {
			t.Errorf("%s: %s output lacks %q:\n%s", what, step, w, s.Output)
		}
	}
}

// TestExplainStepsNewSteps: over imapmemserver, `explain --steps --json`
// shows the input and output of the owner loop (an instruction mail),
// the thread step (a threaded reply), the answered step (a message the
// owner answered from another client) and the mailbox step (an archive
// move). The owner's mail carries the configured API key and IMAP
// password: no snapshot in the database holds them.
func TestExplainStepsNewSteps(t *testing.T) {
	t.Parallel()
	h := newHarness(t, ownerLoopModel, stepsConfig)
	// Answered elsewhere: the owner's reply from their phone is in Sent.
	h.appendTo("Sent", "From: Ada Lovelace <ada@example.com>\nTo: Dave <dave@example.org>\nSubject: Re: Invoice copy\n"+
		"Date: Mon, 02 Nov 2026 11:00:00 +0000\nMessage-ID: <phone-reply@example.com>\nIn-Reply-To: <invoice-copy@test.example>\n"+
		"References: <invoice-copy@test.example>\n\nSent it yesterday.\n")
	h.deliver(rawMail("Dave <dave@example.org>", "Invoice copy", "Could you send me a copy?"))
	h.deliver(ownerToAgent("ada+agent@example.com", "", "Carol rule", "From now on answer Carol (carol@example.org) in German.\n"+
		"my key is "+apiKey+" and the password "+ownerPass, true))
	h.deliver(rawMail("News <news@lists.example.org>", "Weekly digest", "Top stories", "List-Id: <digest.lists.example.org>"))
	h.deliver(rawMail("Carol <carol@example.org>", "Lunch", "Lunch next week?"))
	h.watchOnce(t)
	h.deliver(rawMail("Carol <carol@example.org>", "Re Lunch", "Tuesday then?", "In-Reply-To: <lunch@test.example>", "References: <lunch@test.example>"))
	h.watchOnce(t)

	owner := h.explainSteps(t, "<carol-rule@example.com>")
	wantStep(t, "owner instruction", owner, "owner", []string{`"mode": "instruction"`, "answer Carol (carol@example.org) in German", "[redacted]"},
		[]string{`"turn": 1`, "Answer Carol in German.", "update_context: recorded mem_", `"result": "done"`})
	wantStep(t, "owner instruction", owner, "thread", []string{"carol-rule@example.com"}, []string{"new thread"})

	reply := h.explainSteps(t, "<re-lunch@test.example>")
	wantStep(t, "threaded reply", reply, "thread", []string{"lunch@test.example"},
		[]string{"joined by references to messages already seen", `"linked_parents": [`, "lunch@test.example", `"messages_in_thread": 2`})

	answered := h.explainSteps(t, "<invoice-copy@test.example>")
	wantStep(t, "answered elsewhere", answered, "answered", []string{"invoice-copy@test.example", `"mailbox": "INBOX"`, "Sent folder"},
		[]string{`"answered": true`, "Sent folder", "phone-reply@example.com"})

	archived := h.explainSteps(t, "<weekly-digest@test.example>")
	wantStep(t, "archive move", archived, "mailbox", []string{`"decision": "archive"`, `"mailbox": "INBOX"`, `"uid": `},
		[]string{"moved to Archive (UID ", " of INBOX)"})
	if n := h.count(t, "Archive", "weekly-digest@test.example"); n != 1 {
		t.Errorf("Archive holds %d copies of the digest, want 1", n)
	}

	// No snapshot, stored or inflated, holds a configured secret.
	secrets := map[string]string{"API key": apiKey, "IMAP/SMTP password": ownerPass}
	tried, through := 0, 0
	for name, secret := range secrets {
		for where, data := range snapshotBytes(t, h.dbPath()) {
			tried++
			if bytes.Contains(data, []byte(secret)) {
				through++
				t.Errorf("the %s is in %s", name, where)
			}
		}
	}
	if tried == 0 {
		t.Fatal("no snapshot found in the database")
	}
	t.Logf("secrets in snapshots: %d checks (secret × snapshot record), %d found", tried, through)
}

// snapshotBytes returns, by where they are, the bytes of every trace and
// step snapshot in the database file: the traces as stored, the
// snapshots decoded.
func snapshotBytes(t *testing.T, path string) map[string][]byte {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	var ids []string
	err = db.View(func(tx *bolt.Tx) error {
		if b := tx.Bucket([]byte("traces")); b != nil {
			if err := b.ForEach(func(k, v []byte) error {
				out["trace "+string(k)] = bytes.Clone(v)
				return nil
			}); err != nil {
				return err
			}
		}
		b := tx.Bucket([]byte("trace_snapshots"))
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, _ []byte) error {
			ids = append(ids, string(k))
			return nil
		})
	})
	_ = db.Close()
	if err != nil {
		t.Fatal(err)
	}
	// The snapshots as the store decodes them (they are stored
	// compressed, so a grep of the raw file would not see them).
	st, err := store.Open(path, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = st.Close() }()
	for _, id := range ids {
		tr, err := st.GetTrace(id)
		if err != nil {
			t.Fatalf("trace %s: %v", id, err)
		}
		if err := st.LoadSnapshots(tr); err != nil {
			t.Fatalf("snapshots of %s: %v", id, err)
		}
		var data []byte
		for _, step := range tr.Steps {
			if step.Snapshot != nil {
				data = append(append(data, step.Snapshot.Input...), step.Snapshot.Output...)
			}
		}
		out["snapshots of "+id] = data
	}
	return out
}

// obeyingOwnerModel is obeyingModel for the owner loop too: its tool call
// repeats the hostile text (and the secrets, when the mail shows them)
// as a memory record, then says done.
func obeyingOwnerModel(req *geminitest.Request) geminitest.Reply {
	props, _ := req.ResponseSchema()["properties"].(map[string]any)
	usage := llm.Usage{PromptTokens: 100, OutputTokens: 10, TotalTokens: 110}
	switch {
	case props["rules"] != nil:
		return geminitest.JSONReply(map[string]any{"rules": []string{}}, usage)
	case props["tool"] == nil:
		return obeyingModel(req)
	}
	user := req.UserText()
	if strings.Contains(user, "What you did so far") {
		return geminitest.JSONReply(map[string]any{"tool": "done", "kind": "", "contact": "", "text": "ok", "expires": "", "instruction": ""}, usage)
	}
	echo := snapModelSays + " " + snapCSI + snapOSC8 + snapBidi
	if strings.Contains(user, apiKey) || strings.Contains(user, ownerPass) {
		echo += " " + apiKey + " " + ownerPass
	}
	return geminitest.JSONReply(map[string]any{"tool": "update_context", "kind": "fact", "contact": "", "text": echo, "expires": "", "instruction": echo}, usage)
}

// explainStepsHostileNewSteps is TestExplainStepsHostile for the owner,
// thread, answered and mailbox steps: hostile text in an owner
// instruction (with the configured secrets, and a model that repeats
// them), in a threaded reply's subject and References, in the Message-ID
// of the owner's reply found in Sent and of an archived digest. `explain
// --steps` shows each step cleaned and redacted.
func explainStepsHostileNewSteps(t *testing.T) {
	h, snaps := explainNewStepsProbe(t, false)
	tried, through := 0, 0
	for _, c := range newStepsCases {
		// The data keeps the hostile text (--json); only the view cleans it.
		if s := h.explainSteps(t, c.id)[c.step]; s == nil || !strings.Contains(s.Input+s.Output, snapBidi) {
			t.Errorf("%s: the snapshot does not hold the hostile text, so nothing was tried: %+v", c.step, s)
		}
		for _, name := range c.attacks {
			tried++
			if strings.Contains(snaps[c.id], newStepsAttacks[name]) {
				through++
				t.Errorf("%s: %s reached explain --steps", c.step, name)
			}
		}
	}
	owner, _, _ := h.run("explain", "<hostile-rule@example.com>", "--steps")
	for _, want := range []string{snapMarker, snapModelSays, "[redacted]", "update_context"} {
		if !strings.Contains(owner, want) {
			t.Errorf("the owner step lacks %q:\n%s", want, owner)
		}
	}
	t.Logf("explain --steps, new steps: %d attacks tried, %d got through", tried, through)
	if through != 0 {
		t.Errorf("%d of %d attacks reached explain --steps, want 0", through, tried)
	}
}

// newStepsAttacks are the hostile strings of the new-steps probe, by name.
var newStepsAttacks = map[string]string{
	"CSI escape": "\x1b[", "OSC 8 hyperlink": "\x1b]", "BEL": "\x07", "bidi override": "\u202e",
	"fake key": snapFakeKey, "configured API key": apiKey, "IMAP password": ownerPass,
}

// newStepsCases are the messages of the probe, the step whose snapshot
// each shows, and the attacks its snapshot carries (those
// TestExplainStepsNewStepsLandWithoutDefences sees land with the
// defences off: an attack not in a snapshot is not tried there; the
// escapes of the owner's rule reach its snapshot as JSON, \u001b, and
// the answered and mailbox steps carry only the bidi Message-IDs).
var newStepsCases = []struct {
	id, step string
	attacks  []string
}{
	{"<hostile-rule@example.com>", "owner", []string{"bidi override", "fake key", "configured API key", "IMAP password"}},
	{"<hostile-reply@test.example>", "thread", []string{"CSI escape", "OSC 8 hyperlink", "BEL", "bidi override", "configured API key", "IMAP password"}},
	{"<copy-please@test.example>", "answered", []string{"bidi override"}},
	{"<digest" + snapBidi + "@lists.example.org>", "mailbox", []string{"bidi override"}},
}

// explainNewStepsProbe delivers the probe (owner, thread, answered and
// mailbox steps, each with hostile text), runs watch over it and returns
// the snapshot section of `explain ID --steps` for each case's id.
func explainNewStepsProbe(t *testing.T, sanitiseOff bool) (*harness, map[string]string) {
	t.Helper()
	h := newHarness(t, obeyingOwnerModel, stepsConfig)
	h.tweak = func(f *cmdutil.Factory) { f.ExplainSanitiseOff = sanitiseOff }
	hostile := snapCSI + snapOSC8 + snapBidi
	h.appendTo("Sent", "From: Ada Lovelace <ada@example.com>\nTo: Dave <dave@example.org>\nSubject: Re: Copy please\n"+
		"Date: Mon, 02 Nov 2026 11:00:00 +0000\nMessage-ID: <phone"+snapBidi+"@example.com>\nIn-Reply-To: <copy-please@test.example>\n"+
		"References: <copy-please@test.example>\n\nSent it.\n")
	h.deliver(rawMail("Dave <dave@example.org>", "Copy please", "Could you send me a copy?"))
	h.deliver(ownerToAgent("ada+agent@example.com", "", "Hostile rule", snapMarker+" "+hostile+"\nmy key is "+apiKey+
		" and the password "+ownerPass+"\napi_key="+snapFakeKey, true))
	h.deliver(rawMail("News <news@lists.example.org>", "Hostile digest", "Top stories "+hostile, "List-Id: <digest.lists.example.org>",
		"Message-ID: <digest"+snapBidi+"@lists.example.org>"))
	h.deliver(rawMail("Carol <carol@example.org>", "Plan", "The plan."))
	h.watchOnce(t)
	h.deliver(rawMail("Carol <carol@example.org>", "Re: Plan "+hostile, "Agreed. "+hostile,
		"Message-ID: <hostile-reply@test.example>", "In-Reply-To: <plan@test.example>",
		"References: <"+snapBidi+"evil@attacker.example> <plan@test.example>"))
	h.watchOnce(t)
	snaps := map[string]string{}
	for _, c := range newStepsCases {
		out, stderr, code := h.run("explain", c.id, "--steps")
		if code != 0 {
			t.Errorf("explain %q --steps: %d %s", c.id, code, stderr)
			continue
		}
		_, snaps[c.id], _ = strings.Cut(out, "step snapshots:")
		if !strings.Contains(snaps[c.id], "] "+c.step+"\n") {
			t.Errorf("explain %q --steps shows no %s snapshot:\n%s", c.id, c.step, snaps[c.id])
		}
	}
	return h, snaps
}

// TestExplainStepsNewStepsLandWithoutDefences is the positive control of
// the new-steps subtest of TestExplainStepsHostile: with the snapshot
// redaction and explain's sanitising off, every attack each case lists
// reaches the screen. Not parallel: the switches are global.
func TestExplainStepsNewStepsLandWithoutDefences(t *testing.T) {
	defer config.SwitchOffRedactionForTest()()
	_, snaps := explainNewStepsProbe(t, true)
	tried, landed := 0, 0
	for _, c := range newStepsCases {
		var missed []string
		for _, name := range c.attacks {
			tried++
			if strings.Contains(snaps[c.id], newStepsAttacks[name]) {
				landed++
			} else {
				missed = append(missed, name)
			}
		}
		if len(missed) > 0 {
			t.Errorf("%s: %q did not reach explain --steps with the defences off: not tried there", c.step, missed)
		}
	}
	t.Logf("explain --steps, new steps, without defences: %d tried, %d landed", tried, landed)
	if tried == 0 || landed != tried {
		t.Errorf("positive control: %d of %d landed, want all", landed, tried)
	}
}
