package main

import (
	"bufio"
	"context"
	"encoding/json"
	"github.com/mailagent/mailagent/store"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2"
)

func decodeLines(t *testing.T, out string) map[string]TriageJSON {
	t.Helper()
	got := map[string]TriageJSON{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var j TriageJSON
		if err := json.Unmarshal(sc.Bytes(), &j); err != nil {
			t.Fatalf("stdout line is not JSON: %q: %v", sc.Text(), err)
		}
		got[j.Subject] = j
	}
	return got
}

func TestTriageEndToEndInProcess(t *testing.T) {
	t.Parallel()
	h := newHarness(t, classifyReply, "")
	h.deliver(rawMail("Bob <bob@example.org>", "Quick question", "What time is the meeting?"))
	h.deliver(rawMail("Carol <carol@example.org>", "Overdue invoice", "Your invoice 4411 is overdue."))
	h.deliver(rawMail("News <news@lists.example.org>", "Weekly digest", "Top stories", "List-Id: <digest.lists.example.org>"))
	h.deliver(rawMail("Mallory <mallory@example.org>", "GARBAGE please", "x"))
	h.deliver(unauthenticatedMail("Ada Lovelace <ada@example.com>", "Note to self", "I wrote this")) // a spoofed owner

	stdout, stderr, code := h.run("triage", "--json")
	if code != ExitPartial {
		t.Fatalf("exit code: got %d, want %d (needs review)\nstderr: %s", code, ExitPartial, stderr)
	}
	got := decodeLines(t, stdout)
	if len(got) != 5 {
		t.Fatalf("got %d JSON lines, want 5:\n%s", len(got), stdout)
	}
	tests := []struct {
		subject, route, decision string
	}{
		{"Quick question", "external", "queue"}, // review mode, unknown contact
		{"Overdue invoice", "external", "queue"},
		{"Weekly digest", "automated", "archive"},
		{"GARBAGE please", "external", "needs_review"},
		{"Note to self", "external", "queue"}, // claims the owner, unauthenticated
	}
	for _, tt := range tests {
		j, ok := got[tt.subject]
		if !ok {
			t.Errorf("%s: missing from output", tt.subject)
			continue
		}
		if j.Route != tt.route || sv(j.Decision) != tt.decision {
			t.Errorf("%s: got route %s decision %s, want %s %s (reasons %v)", tt.subject, j.Route, sv(j.Decision), tt.route, tt.decision, j.Reasons)
		}
		if j.TraceID == "" || j.ThreadID == "" || j.MessageID == "" || j.UID == 0 || j.Account != "personal" || j.Mailbox != "INBOX" {
			t.Errorf("%s: identity fields missing: %+v", tt.subject, j)
		}
		if len(j.Reasons) == 0 {
			t.Errorf("%s: no reasons", tt.subject)
		}
	}
	if j := got["GARBAGE please"]; !strings.Contains(sv(j.Error), "intents") || j.State != "needs_review" {
		t.Errorf("garbage: got state %s error %q, want needs_review naming the bad field", j.State, sv(j.Error))
	}
	if j := got["Quick question"]; !slices.Contains(j.Intents, "information_request") || fv(j.Confidence) != 0.9 || sv(j.Risk) != "low" || sv(j.Action) != "reply" {
		t.Errorf("classification fields not carried: %+v", j)
	}
	if j := got["Note to self"]; !strings.Contains(strings.Join(j.Reasons, " "), "not authenticated") {
		t.Errorf("spoofed owner: reasons %v should say it is not authenticated", j.Reasons)
	}

	// Model calls: 4 external messages, the garbage one twice (one repair);
	// the list mail never reached the model.
	reqs := h.gemini.Requests()
	if len(reqs) != 5 {
		t.Errorf("model requests: got %d, want 5", len(reqs))
	}
	for _, r := range reqs {
		if r.Model != "gemini-test" {
			t.Errorf("model: got %q", r.Model)
		}
		if gc := r.GenerationConfig(); gc["responseMimeType"] != "application/json" {
			t.Errorf("responseMimeType: got %v", gc["responseMimeType"])
		}
		schema := r.ResponseSchema()
		props, _ := schema["properties"].(map[string]any)
		risk, _ := props["risk"].(map[string]any)
		if enum, _ := risk["enum"].([]any); len(enum) != 3 {
			t.Errorf("risk enum: got %v", risk["enum"])
		}
		if r.Header.Get("x-goog-api-key") != apiKey {
			t.Errorf("api key header not sent")
		}
		if strings.Contains(r.UserText(), "Top stories") {
			t.Error("automated mail reached the model")
		}
		if !strings.Contains(r.SystemText(), "MAILAGENT-DATA-") && !strings.Contains(r.UserText(), "MAILAGENT-DATA-") {
			t.Error("prompt has no data fence")
		}
	}
	if strings.Contains(stdout+stderr, apiKey) || strings.Contains(stdout+stderr, ownerPass) {
		t.Error("a secret reached the output")
	}
	if !strings.Contains(stderr, "decision") || !strings.Contains(stderr, "tokens") {
		t.Errorf("summary missing from stderr:\n%s", stderr)
	}

	// Nothing in the mailbox changed: BODY.PEEK never sets \Seen.
	msgs, err := h.imap.Messages(context.Background(), ownerAddr, "INBOX")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		if slices.Contains(m.Flags, imap.FlagSeen) {
			t.Errorf("uid %d gained \\Seen", m.UID)
		}
	}

	// A second run skips what is done and calls the model only for nothing.
	before := len(h.gemini.Requests())
	stdout, _, _ = h.run("triage", "--json")
	for _, j := range decodeLines(t, stdout) {
		if !j.Skipped {
			t.Errorf("%s: second run did not skip it", j.Subject)
		}
	}
	if n := len(h.gemini.Requests()) - before; n != 0 {
		t.Errorf("second run made %d model calls, want 0", n)
	}

	// explain finds the trace by message id and by trace id.
	q := got["Quick question"]
	for _, id := range []string{q.MessageID, q.TraceID, "<" + q.MessageID + ">"} {
		out, errOut, code := h.run("explain", id, "--json")
		if code != 0 {
			t.Fatalf("explain %s: exit %d: %s", id, code, errOut)
		}
		var e ExplainJSON
		if err := json.Unmarshal([]byte(out), &e); err != nil {
			t.Fatal(err)
		}
		if e.Trace.TraceID != q.TraceID || len(e.Trace.Gates) != 9 {
			t.Errorf("explain %s: got trace %s with %d gates", id, e.Trace.TraceID, len(e.Trace.Gates))
		}
		var names []string
		for _, s := range e.Trace.Steps {
			names = append(names, s.Name)
		}
		if !slices.Equal(names, []string{"parse", "thread", "authenticate", "route", "classify", "decide"}) {
			t.Errorf("steps: got %v", names)
		}
		if s := e.Trace.Steps[4]; s.TokensIn != 500 || s.TokensOut != 40 || sv(s.Model) == "" {
			t.Errorf("classify step usage: got %+v", s)
		}
	}
	out, _, code := h.run("explain", q.TraceID)
	if code != 0 || !strings.Contains(out, "known_contact") || !strings.Contains(out, "decision queue") {
		t.Errorf("explain text: code %d\n%s", code, out)
	}
	if _, errOut, code := h.run("explain", "nope@nowhere"); code != ExitUsage || !strings.Contains(errOut, "no trace") {
		t.Errorf("explain unknown: got %d %q", code, errOut)
	}
}

func TestTriageDryRunWritesNothing(t *testing.T) {
	t.Parallel()
	h := newHarness(t, classifyReply, "")
	h.deliver(rawMail("Bob <bob@example.org>", "Quick question", "What time is the meeting?"))
	stdout, stderr, code := h.run("triage", "--json", "--dry-run")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if got := decodeLines(t, stdout); sv(got["Quick question"].Decision) != "queue" {
		t.Errorf("got %+v", got)
	}
	if _, err := os.Stat(filepath.Join(h.dir, "state", "mailagent.db")); !os.IsNotExist(err) {
		t.Errorf("dry run created the database: %v", err)
	}
}

func TestTriageFlags(t *testing.T) {
	t.Parallel()
	h := newHarness(t, classifyReply, "")
	for i, subj := range []string{"one", "two", "three"} {
		_ = i
		h.deliver(rawMail("Bob <bob@example.org>", subj, "hello "+subj))
	}
	stdout, stderr, code := h.run("triage", "--json", "--limit", "2")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	got := decodeLines(t, stdout)
	if len(got) != 2 || got["one"].Subject != "" {
		t.Errorf("--limit 2: got %v, want the newest two", keys(got))
	}
	if _, errOut, code := h.run("triage", "--since", "soon"); code != ExitUsage || !strings.Contains(errOut, "--since") {
		t.Errorf("bad --since: got %d %q", code, errOut)
	}
	if _, errOut, code := h.run("triage", "--account", "work"); code != ExitUsage || !strings.Contains(errOut, "personal") {
		t.Errorf("unknown account: got %d %q", code, errOut)
	}
	if _, _, code := h.run("triage", "--bogus"); code != ExitUsage {
		t.Errorf("unknown flag: got %d", code)
	}
}

func TestParseSince(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Time
		err  bool
	}{
		{"", time.Time{}, false},
		{"7d", now.AddDate(0, 0, -7), false},
		{"2w", now.AddDate(0, 0, -14), false},
		{"36h", now.Add(-36 * time.Hour), false},
		{"2026-01-02", time.Date(2026, 1, 2, 0, 0, 0, 0, time.Local), false},
		{"-3d", time.Time{}, true},
		{"yesterday", time.Time{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := parseSince(tt.in, now)
			if (err != nil) != tt.err || !got.Equal(tt.want) {
				t.Errorf("got %v, %v; want %v, err=%v", got, err, tt.want, tt.err)
			}
		})
	}
}

func keys[M ~map[string]V, V any](m M) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func TestTriageDryRunDoesNotLockTheDatabase(t *testing.T) {
	t.Parallel()
	h := newHarness(t, classifyReply, "")
	h.deliver(rawMail("Bob <bob@example.org>", "Quick question", "What time is the meeting?"))
	if _, stderr, code := h.run("triage"); code != 0 {
		t.Fatalf("triage: %d %s", code, stderr)
	}
	// Hold the database read-only, as a dry run now does, and check that a
	// second reader is not refused: a dry run must not take the write lock.
	st, err := store.Open(h.dir+"/state/mailagent.db", store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = st.Close() }()
	if _, stderr, code := h.run("triage", "--dry-run", "--json"); code != 0 {
		t.Errorf("dry run beside a reader: exit %d: %s", code, stderr)
	}
}
