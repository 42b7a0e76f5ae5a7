package main

import (
	"bytes"
	"encoding/json"
	"log"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/mailagent/mailagent/internal/cmd/root"
	"github.com/mailagent/mailagent/internal/demo"
	"github.com/mailagent/mailagent/store"
)

// TestEveryCommandHasExamples: `--help` of every visible command shows an
// Examples section, and the examples table names no command that does
// not exist.
func TestEveryCommandHasExamples(t *testing.T) {
	t.Parallel()
	keys := map[string]bool{}
	for _, c := range allCommands(t) {
		keys[root.CommandKey(c)] = true
		if c.Hidden {
			continue
		}
		if strings.TrimSpace(c.Example) == "" {
			t.Errorf("%s: no Example", c.CommandPath())
			continue
		}
		args := append(strings.Fields(c.CommandPath())[1:], "--help")
		stdout, _, code := runMain(t, args...)
		if code != 0 || !strings.Contains(stdout, "Examples:\n"+c.Example) {
			t.Errorf("%s --help: exit %d, no Examples section:\n%s", c.CommandPath(), code, stdout)
		}
	}
	for _, k := range root.ExampleKeys() {
		if !keys[k] {
			t.Errorf("commandExamples[%q]: no such command", k)
		}
	}
}

// TestFlagUsageRendersPlainly: a back-quoted word in a flag's usage
// becomes its value name in pflag ("--no-doctor mailagent doctor"); no
// boolean flag may have one.
func TestFlagUsageRendersPlainly(t *testing.T) {
	t.Parallel()
	stdout, _, _ := runMain(t, "init", "--help")
	if !regexp.MustCompile(`--no-doctor +do not run`).MatchString(stdout) {
		t.Errorf("init --help renders --no-doctor oddly:\n%s", stdout)
	}
	for _, c := range allCommands(t) {
		c.Flags().VisitAll(func(fl *pflag.Flag) {
			if fl.Value.Type() == "bool" && strings.Contains(fl.Usage, "`") {
				t.Errorf("%s --%s: back-quoted usage %q renders as a value name", c.CommandPath(), fl.Name, fl.Usage)
			}
		})
	}
}

// TestReviewWithoutTerminal: review with stdin/stdout not a terminal
// exits 2 and points at the queue commands, without starting bubbletea.
func TestReviewWithoutTerminal(t *testing.T) {
	t.Parallel()
	h := newHarness(t, classifyReply, "")
	_, stderr, code := h.run("review")
	if code != ExitUsage || !strings.Contains(stderr, "terminal") || !strings.Contains(stderr, "mailagent queue list") {
		t.Fatalf("review without a TTY: exit %d, stderr %q", code, stderr)
	}
	if strings.Contains(strings.ToLower(stderr), "tty") && strings.Contains(stderr, "/dev/tty") {
		t.Errorf("bubbletea error leaked: %q", stderr)
	}
}

// TestDemoWithoutTerminal: demo without a TTY prints its table as with
// --no-tui and says why, and nothing of the in-process servers reaches
// the terminal through the standard log package (demo --json too).
func TestDemoWithoutTerminal(t *testing.T) {
	isolate(t)
	t.Setenv("GEMINI_API_KEY", "")
	var lib bytes.Buffer
	log.SetOutput(&lib)
	t.Cleanup(func() { log.SetOutput(os.Stderr) })

	stdout, stderr, code := runMain(t, "demo")
	if code != 0 {
		t.Fatalf("demo: exit %d; stderr %s", code, stderr)
	}
	if !strings.Contains(stderr, "no terminal") || !strings.Contains(stderr, "--no-tui") {
		t.Errorf("demo did not say it fell back: %q", stderr)
	}
	if !strings.Contains(stdout, "FROM") || !strings.Contains(stdout, "the outside world received") || !strings.Contains(stdout, demo.Label) {
		t.Errorf("demo without a TTY did not print its table:\n%s", stdout)
	}

	stdout, stderr, code = runMain(t, "demo", "--json")
	if code != 0 || !strings.HasPrefix(strings.TrimSpace(stdout), "{") {
		t.Fatalf("demo --json: exit %d; stdout %.200s; stderr %s", code, stdout, stderr)
	}
	for _, line := range strings.Split(strings.TrimSpace(stderr), "\n") {
		if line != "" && !strings.HasPrefix(line, "mailagent demo:") && !strings.HasPrefix(line, "IMAP and SMTP servers run") {
			t.Errorf("demo --json: unexpected stderr line %q", line)
		}
	}
	if lib.Len() != 0 {
		t.Errorf("a library wrote to the standard log: %q", lib.String())
	}
}

// TestCompletionDynamic asks cobra's hidden __complete command, in
// process, for each dynamic completion, with the IMAP server stopped: the
// candidates come from the state database alone.
func TestCompletionDynamic(t *testing.T) {
	t.Parallel()
	h := newHarness(t, compromisedModel, autoPolicy+"send_delay = \"1h\"\n")
	h.appendTo("Sent", "From: Ada <ada@example.com>\nTo: bob@example.org\nSubject: hi\nDate: Mon, 02 Nov 2026 09:00:00 +0000\nMessage-ID: <s1@example.com>\n\nhi\n")
	h.deliver(rawMail("Bob <bob@example.org>", "Call on Thursday", "Can we move our call to Thursday 3pm?"))
	h.deliver(rawMail("Carol <carol@example.org>", "Partnership\tproposal", "Shall we work together?"))
	if _, stderr, code := h.run("watch", "--once"); code != 0 {
		t.Fatalf("watch --once: %d %s", code, stderr)
	}
	st := h.openStore(t)
	var queued, scheduled []string
	_ = st.ListQueue("", func(q *store.QueueItem) error {
		if q.Status == store.QueuePending {
			queued = append(queued, q.ID)
		}
		return nil
	})
	_ = st.ListOutbox(store.OutboxScheduled, func(r *store.OutboxRecord) error { scheduled = append(scheduled, r.ID); return nil })
	_ = st.Close()
	if len(queued) == 0 || len(scheduled) == 0 {
		t.Fatalf("setup: %d queued, %d scheduled; want both", len(queued), len(scheduled))
	}
	_ = h.imap.Close()

	complete := func(args ...string) []string {
		t.Helper()
		stdout, stderr, code := h.run(append([]string{"__complete"}, args...)...)
		if code != 0 {
			t.Fatalf("__complete %v: %d %s", args, code, stderr)
		}
		var vals []string
		for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
			if strings.HasPrefix(line, ":") {
				if line != ":4" { // ShellCompDirectiveNoFileComp
					t.Errorf("__complete %v: directive %s, want :4", args, line)
				}
				break
			}
			v, _, _ := strings.Cut(line, "\t")
			vals = append(vals, v)
		}
		return vals
	}
	for _, sub := range []string{"show", "approve", "reject", "edit", "snooze", "regenerate"} {
		got := complete("queue", sub, "")
		for _, id := range queued {
			if !slices.Contains(got, id) {
				t.Errorf("queue %s: %v lacks queued id %s", sub, got, id)
			}
		}
	}
	if got := complete("queue", "cancel", ""); !slices.Equal(got, scheduled) {
		t.Errorf("queue cancel: got %v, want the scheduled outbox ids %v", got, scheduled)
	}
	if got := complete("queue", "show", queued[0], ""); len(got) != 0 {
		t.Errorf("queue show takes one id; second word offered %v", got)
	}
	for _, sub := range []string{"show", "note", "forget"} {
		if got := complete("contacts", sub, ""); !slices.Contains(got, "bob@example.org") || !slices.Contains(got, "carol@example.org") {
			t.Errorf("contacts %s: got %v", sub, got)
		}
	}
	// What is typed narrows the contacts at the store (their number is
	// unbounded), case folded.
	if got := complete("contacts", "show", "Car"); !slices.Equal(got, []string{"carol@example.org"}) {
		t.Errorf("contacts show Car: got %v, want only carol@example.org", got)
	}
	// Every id `memory list` shows: the record added here, and the
	// examples the world's mail left (each shown and forgotten the same way).
	memID, _, _ := h.run("memory", "add", "--kind", "style", "signs off with 'Best, Ada'")
	listOut, _, _ := h.run("memory", "list", "--json")
	var listed []MemoryJSON
	if err := json.Unmarshal([]byte(listOut), &listed); err != nil {
		t.Fatal(err)
	}
	var wantIDs []string
	for _, r := range listed {
		wantIDs = append(wantIDs, r.ID)
	}
	if !slices.Contains(wantIDs, strings.TrimSpace(memID)) {
		t.Fatalf("memory list lacks the added record %s: %v", memID, wantIDs)
	}
	slices.Sort(wantIDs)
	for _, sub := range []string{"show", "forget", "edit"} {
		got := complete("memory", sub, "")
		slices.Sort(got)
		if !slices.Equal(got, wantIDs) {
			t.Errorf("memory %s: got %v, want %v", sub, got, wantIDs)
		}
	}
	// Carol's proposal waits for a reply: a thread the followups
	// subcommands complete.
	fuOut, _, _ := h.run("followups", "--json")
	var fus []FollowupJSON
	if err := json.Unmarshal([]byte(fuOut), &fus); err != nil || len(fus) == 0 {
		t.Fatalf("followups --json: %v (%d) %s", err, len(fus), fuOut)
	}
	for _, sub := range []string{"done", "snooze", "nudge"} {
		got := complete("followups", sub, "")
		for _, fu := range fus {
			if !slices.Contains(got, fu.ID) {
				t.Errorf("followups %s: %v lacks open thread %s", sub, got, fu.ID)
			}
		}
	}
	for _, cmd := range [][]string{{"triage"}, {"watch"}, {"doctor"}, {"contacts", "list"}} {
		if got := complete(append(cmd, "--account", "")...); !slices.Equal(got, []string{"personal"}) {
			t.Errorf("%v --account: got %v", cmd, got)
		}
	}
	// explain and unsubscribe complete the stored messages' trace ids
	// (explain also the queue's ids); each trace id resolves.
	var traces []string
	st = h.openStore(t)
	_ = st.ListMessages(store.MessageFilter{}, func(r *store.MessageRecord) error { traces = append(traces, r.TraceID); return nil })
	_ = st.Close()
	if len(traces) < 2 {
		t.Fatalf("setup: %d stored messages", len(traces))
	}
	for _, cmd := range []string{"explain", "unsubscribe"} {
		got := complete(cmd, "")
		for _, tr := range traces {
			if !slices.Contains(got, tr) {
				t.Errorf("%s: %v lacks trace id %s", cmd, got, tr)
			}
		}
		if cmd == "explain" && !slices.Contains(got, queued[0]) {
			t.Errorf("explain: %v lacks queue id %s", got, queued[0])
		}
	}
	if out, stderr, code := h.run("explain", traces[0]); code != 0 || out == "" {
		t.Errorf("explain of a completed trace id: exit %d %s", code, stderr)
	}
	got := complete("init", "--provider", "")
	if !slices.Contains(got, "auto") || !slices.Contains(got, "fastmail") {
		t.Errorf("init --provider: got %v", got)
	}
	// A description is one line of sanitised mail text: no tab inside.
	stdout, _, _ := h.run("__complete", "queue", "show", "")
	for _, line := range strings.Split(stdout, "\n") {
		if strings.Count(line, "\t") > 1 {
			t.Errorf("completion line with a tab in its description: %q", line)
		}
	}
}

// TestCompletionRetry: `queue retry` completes the trace ids of the
// messages that need review, which is what it resolves.
func TestCompletionRetry(t *testing.T) {
	t.Parallel()
	h := newHarness(t, classifyReply, "")
	h.deliver(rawMail("Mallory <mallory@example.org>", "GARBAGE please", "x"))
	if _, stderr, code := h.run("triage"); code != ExitPartial {
		t.Fatalf("triage: %d %s", code, stderr)
	}
	st := h.openStore(t)
	var want []string
	_ = st.ListMessages(store.MessageFilter{}, func(r *store.MessageRecord) error {
		if r.State == store.StateNeedsReview {
			want = append(want, r.TraceID)
		}
		return nil
	})
	_ = st.Close()
	if len(want) != 1 || want[0] == "" {
		t.Fatalf("setup: needs-review traces %v", want)
	}
	stdout, stderr, code := h.run("__complete", "queue", "retry", "")
	if code != 0 || !strings.HasPrefix(stdout, want[0]+"\t") {
		t.Fatalf("__complete queue retry: %d %q %s, want %s first", code, stdout, stderr, want[0])
	}
}

// TestDemoKeepPrintsStateDir: --keep names the state directory that holds
// the database and the log, and the config next to it; both exist.
func TestDemoKeepPrintsStateDir(t *testing.T) {
	isolate(t)
	t.Setenv("GEMINI_API_KEY", "")
	_, stderr, code := runMain(t, "demo", "--no-tui", "--keep")
	if code != 0 {
		t.Fatalf("demo --keep: %d %s", code, stderr)
	}
	m := regexp.MustCompile(`demo state: (\S+) \(config: (\S+)\)`).FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("demo --keep did not name its state: %q", stderr)
	}
	t.Cleanup(func() { _ = os.RemoveAll(filepath.Dir(m[1])) })
	if _, err := os.Stat(filepath.Join(m[1], "mailagent.db")); err != nil {
		t.Errorf("printed state dir %s has no database: %v", m[1], err)
	}
	if _, err := os.Stat(m[2]); err != nil {
		t.Errorf("printed config %s: %v", m[2], err)
	}
}

// TestReleaseArchivesShipManPages: CI builds no release, so this checks
// the three pieces that put the man pages into the archives fit together:
// .goreleaser.yaml's before hook runs packaging/prepare.sh, which runs
// cmd/gen-docs into ./man, and its archives take man/*.1 (gen-docs'
// TestManPagesOnePerCommand in internal/cmd/root: one *.1 page per command).
func TestReleaseArchivesShipManPages(t *testing.T) {
	t.Parallel()
	cfg, err := os.ReadFile("../../.goreleaser.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s := string(cfg)
	// The hook runs packaging/prepare.sh, the one recipe (the .deb/.rpm
	// test runs it too), which builds gen-docs and runs it into ./man.
	hook := regexp.MustCompile(`(?m)^\s*- sh packaging/prepare\.sh \{\{ \.Version \}\} \{\{ \.CommitTimestamp \}\}\s*$`)
	if !hook.MatchString(s) || strings.Index(s, "before:") > strings.Index(s, "builds:") {
		t.Errorf(".goreleaser.yaml: no before hook that runs packaging/prepare.sh")
	}
	prep, err := os.ReadFile("../../packaging/prepare.sh")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^rm -rf man\b`).Match(prep) || !regexp.MustCompile(`(?m)^SOURCE_DATE_EPOCH=\$epoch "\$tool/gen-docs" --man-page man$`).Match(prep) {
		t.Errorf("packaging/prepare.sh does not write the man pages into ./man afresh")
	}
	archives := s[strings.Index(s, "archives:"):]
	if !regexp.MustCompile(`(?m)^\s*- man/\*\.1\s*$`).MatchString(archives[:strings.Index(archives, "checksum:")]) {
		t.Errorf(".goreleaser.yaml: the archives do not take man/*.1")
	}
}
