package main

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/spf13/cobra"

	"github.com/mailagent/mailagent/internal/cmdutil"
	"github.com/mailagent/mailagent/internal/llm/geminitest"
)

// isolate points every default path (config, state) into a temp dir, so
// that a bad command line can never reach the developer's own files.
func isolate(t *testing.T) {
	t.Helper()
	d := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(d, "config"))
	t.Setenv("XDG_STATE_HOME", filepath.Join(d, "state"))
	t.Setenv("MAILAGENT_CONFIG", "")
}

// allCommands is every command of the tree Main runs, with cobra's own
// help and completion commands, as their argument lists ("queue show").
func allCommands(t *testing.T) []*cobra.Command {
	t.Helper()
	root := newRootCmd(newFactory(strings.NewReader(""), io.Discard, io.Discard))
	var out []*cobra.Command
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		out = append(out, c)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	return out
}

// argRange probes a leaf's Args with 0..4 words: the fewest and most it
// accepts.
func argRange(c *cobra.Command) (lo, hi int) {
	lo, hi = -1, -1
	for n := 0; n <= 4; n++ {
		if c.Args(c, slices.Repeat([]string{"word"}, n)) == nil {
			if lo < 0 {
				lo = n
			}
			hi = n
		}
	}
	return lo, hi
}

// TestBadUsageExitsTwo runs every command with an unknown flag, with one
// argument too many and one too few, and every group with an unknown
// subcommand: each must exit 2 (README "Exit codes"), say what is wrong
// on stderr and print nothing on stdout. None of these reaches a RunE,
// so no configuration is needed; a config that does not exist makes sure
// of it.
func TestBadUsageExitsTwo(t *testing.T) {
	isolate(t)
	missing := filepath.Join(t.TempDir(), "none.toml")
	type tc struct {
		name string
		args []string
	}
	cases := []tc{
		{"unknown command", []string{"nope"}},
		{"misspelt command", []string{"queu"}},
		{"unknown help topic", []string{"help", "nope"}},
		{"unknown global flag", []string{"--nope"}},
	}
	for _, c := range allCommands(t) {
		path := strings.Fields(c.CommandPath())[1:]
		if len(path) == 0 {
			continue
		}
		cases = append(cases, tc{c.CommandPath() + " --no-such-flag", append(slices.Clone(path), "--no-such-flag")})
		if c.Name() == "help" {
			continue // takes any topic; an unknown one is covered above
		}
		if c.HasSubCommands() {
			cases = append(cases, tc{c.CommandPath() + " unknown subcommand", append(slices.Clone(path), "frobnicate")})
			continue
		}
		lo, hi := argRange(c)
		if lo < 0 {
			t.Errorf("%s accepts no argument count in 0..4", c.CommandPath())
			continue
		}
		if lo > 0 {
			cases = append(cases, tc{c.CommandPath() + " missing argument", append(slices.Clone(path), slices.Repeat([]string{"x"}, lo-1)...)})
		}
		cases = append(cases, tc{c.CommandPath() + " extra argument", append(slices.Clone(path), slices.Repeat([]string{"x"}, hi+1)...)})
	}
	if len(cases) < 40 {
		t.Fatalf("only %d cases: the command tree walk is broken", len(cases))
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			stdout, stderr, code := runMain(t, append([]string{"--config", missing}, c.args...)...)
			if code != ExitUsage {
				t.Errorf("%v: exit %d, want %d; stderr %q", c.args, code, ExitUsage, stderr)
			}
			if !strings.HasPrefix(stderr, "mailagent: ") || strings.Contains(stderr, "panic") {
				t.Errorf("%v: stderr %q, want one mailagent: line", c.args, stderr)
			}
			if stdout != "" {
				t.Errorf("%v: stdout %q, want nothing", c.args, stdout)
			}
		})
	}
	t.Logf("%d bad command lines, all exit %d", len(cases), ExitUsage)
}

// TestREADMEExitCodesAreProduced reads the README's exit-code table: it
// must list exactly the Exit constants, and each code must come out of
// Main on a real path.
func TestREADMEExitCodesAreProduced(t *testing.T) {
	isolate(t)
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var listed []int
	for _, m := range regexp.MustCompile(`(?m)^\| (\d+) \| `).FindAllStringSubmatch(string(readme), -1) {
		n, _ := strconv.Atoi(m[1])
		listed = append(listed, n)
	}
	consts := []int{ExitOK, ExitFailure, ExitUsage, ExitUnreachable, ExitLocked, ExitPartial, ExitCorrupt, ExitNotSent, ExitInterrupted}
	if !slices.Equal(listed, consts) {
		t.Fatalf("README lists exit codes %v, the code defines %v", listed, consts)
	}
	scenario := map[int]func(t *testing.T) (string, int){
		ExitOK: func(t *testing.T) (string, int) {
			_, stderr, code := runMain(t, "version")
			return stderr, code
		},
		ExitFailure: func(t *testing.T) (string, int) {
			// A confirmation declined at a terminal.
			h := newHarness(t, classifyReply, "")
			h.deliver(rawMail("Bob <bob@example.org>", "Hello", "Lunch?"))
			if _, stderr, code := h.run("watch", "--once"); code != 0 {
				t.Fatalf("watch --once: %d %s", code, stderr)
			}
			code, stderr := mainAtTerminal("n\n", "--config", h.cfgPath, "contacts", "forget", "bob@example.org")
			return stderr, code
		},
		ExitUsage: func(t *testing.T) (string, int) {
			_, stderr, code := runMain(t, "queue", "show")
			return stderr, code
		},
		ExitUnreachable: func(t *testing.T) (string, int) {
			// The IMAP port refuses: bound, never listening (a port
			// closed a moment ago can connect to itself or be taken).
			h := newHarness(t, classifyReply, "")
			cfg, err := os.ReadFile(h.cfgPath)
			if err != nil {
				t.Fatal(err)
			}
			imapPort := fmt.Sprintf("  port = %d\n", h.imap.Port)
			if !strings.Contains(string(cfg), imapPort) {
				t.Fatalf("no %q in the harness config", imapPort)
			}
			cfg = []byte(strings.Replace(string(cfg), imapPort, fmt.Sprintf("  port = %d\n", refusedPort(t)), 1))
			if err := os.WriteFile(h.cfgPath, cfg, 0o600); err != nil {
				t.Fatal(err)
			}
			_, stderr, code := h.run("triage")
			return stderr, code
		},
		ExitLocked: func(t *testing.T) (string, int) {
			// A second watcher: anything else that holds the database is
			// waited for (TestWatchWaitsForTriage).
			h := newHarness(t, classifyReply, "")
			h.startWatch(t)
			_, stderr, code := h.run("watch")
			return stderr, code
		},
		ExitPartial: func(t *testing.T) (string, int) {
			h := newHarness(t, classifyReply, "")
			h.deliver(rawMail("Mallory <mallory@example.org>", "GARBAGE please", "x"))
			_, stderr, code := h.run("triage")
			return stderr, code
		},
		ExitCorrupt: func(t *testing.T) (string, int) {
			h := newHarness(t, classifyReply, "")
			db := filepath.Join(h.dir, "state", "mailagent.db")
			seedState(t, db, 50)
			if err := os.Truncate(db, 0); err != nil {
				t.Fatal(err)
			}
			_, stderr, code := h.run("status")
			return stderr, code
		},
		ExitNotSent: func(t *testing.T) (string, int) {
			// Approving a draft whose original another client flagged
			// \Answered: resolved, nothing sent, and the exit code says so.
			h := newHarness(t, compromisedModel, "")
			h.deliver(rawMail("Carol <carol@example.org>", "Lunch", "Lunch next week?"))
			h.watchOnce(t)
			item := h.item(t, "Lunch")
			h.flagInbox(t, "lunch@test.example", imap.FlagAnswered)
			_, stderr, code := h.run("queue", "approve", "--yes", item.ID)
			if !strings.Contains(stderr, "nothing was sent") || !strings.Contains(stderr, "already answered") {
				t.Errorf("stderr %q does not say that nothing was sent and why", stderr)
			}
			return stderr, code
		},
		ExitInterrupted: func(t *testing.T) (string, int) {
			// SIGINT while the model call is in flight: Main's signal
			// context ends the triage, which stops before finishing.
			var once sync.Once
			h := newHarness(t, func(req *geminitest.Request) geminitest.Reply {
				rep := classifyReply(req)
				once.Do(func() {
					_ = syscall.Kill(os.Getpid(), syscall.SIGINT)
					// The answer waits until the cancelled request is
					// abandoned (at most 30 s: then triage finishes and
					// the exit code is wrong).
					rep.Delay = 30 * time.Second
				})
				return rep
			}, "")
			h.deliver(rawMail("Bob <bob@example.org>", "Hello", "Lunch?"))
			_, stderr, code := h.run("triage")
			return stderr, code
		},
	}
	for _, want := range listed {
		t.Run(strconv.Itoa(want), func(t *testing.T) {
			run, ok := scenario[want]
			if !ok {
				t.Fatalf("no scenario produces exit %d", want)
			}
			stderr, code := run(t)
			if code != want {
				t.Errorf("exit %d, want %d; stderr %q", code, want, stderr)
			}
			if strings.Contains(stderr, "panic") {
				t.Errorf("panic: %s", stderr)
			}
		})
	}
}

// TestVersionFlag: --version prints what `version` prints.
func TestVersionFlag(t *testing.T) {
	t.Parallel()
	a, _, ca := runMain(t, "version")
	b, _, cb := runMain(t, "--version")
	if ca != 0 || cb != 0 || a != b || !strings.HasPrefix(a, "mailagent ") {
		t.Fatalf("version %q (%d) vs --version %q (%d)", a, ca, b, cb)
	}
}

// TestMisspeltCommandSuggests: a transposed or one-letter-off command
// name suggests the command, as a newcomer who types "statsu" expects;
// a word far from every command suggests nothing.
func TestMisspeltCommandSuggests(t *testing.T) {
	isolate(t)
	missing := filepath.Join(t.TempDir(), "none.toml")
	for typed, want := range map[string]string{
		"statsu":           "did you mean: mailagent status?",
		"stauts":           "did you mean: mailagent status?",
		"reveiw":           "did you mean: mailagent review?",
		"queue aprove":     "did you mean: mailagent queue approve?",
		"xyzzy":            "see: mailagent --help",
		"queue frobnicate": "see: mailagent queue --help",
	} {
		_, stderr, code := runMain(t, append([]string{"--config", missing}, strings.Fields(typed)...)...)
		if code != ExitUsage || !strings.Contains(stderr, want) {
			t.Errorf("%q: exit %d, stderr %q; want exit %d and %q", typed, code, stderr, ExitUsage, want)
		}
	}
}

// TestPermissionDeniedNamesTheFix: a state file this user may not open
// (a watcher once started with sudo) exits 2 with a fix naming the path,
// not 1 with the bare error. Tests run as root, for whom modes do not
// bite, so the error is built as the store returns it.
func TestPermissionDeniedNamesTheFix(t *testing.T) {
	t.Parallel()
	err := fmt.Errorf("open state database /srv/ma/state/mailagent.db: %w",
		&fs.PathError{Op: "stat", Path: "/srv/ma/state/mailagent.db", Err: fs.ErrPermission})
	var b bytes.Buffer
	if code := cmdutil.Report(&b, err); code != ExitUsage {
		t.Errorf("exit %d, want %d", code, ExitUsage)
	}
	if !strings.Contains(b.String(), "fix: run mailagent as the user that owns /srv/ma/state/mailagent.db") {
		t.Errorf("no fix line naming the path:\n%s", b.String())
	}
}
