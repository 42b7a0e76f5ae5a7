package archtest

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mailagent/mailagent/internal/rig/e2e"
)

// The command packages' tests live in internal/cmd/root's test binary.
// Each package with test files is a test binary of its own, and one that
// links the application tier (every command does) costs about 1.4 s of
// link on a 2-core machine: 21 of them were 30 s of every `go test ./...`
// for tests that run in milliseconds. Root imports every command, so its
// binary holds their tests for the price of one link. initcmd keeps its
// own: its 5,000 lines of tests drive the unexported steps of the setup
// wizard.

// cmdTestsHome is the package whose directory holds the commands' tests;
// cmdTestsOwn are the command packages that keep their tests beside them.
const cmdTestsHome = "root"

var cmdTestsOwn = []string{"initcmd"}

// commandTestProblems returns what breaks the rule in the tree at top
// (a directory holding internal/cmd): a command package with test files of
// its own, or one with no test file named after it in root's directory.
// checked is how many command packages it looked at.
func commandTestProblems(top string) (problems []string, checked int, _ error) {
	dir := filepath.Join(top, "internal", "cmd")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, 0, err
	}
	home, err := os.ReadDir(filepath.Join(dir, cmdTestsHome))
	if err != nil {
		return nil, 0, err
	}
	for _, e := range entries {
		name := e.Name()
		if !e.IsDir() || name == cmdTestsHome {
			continue
		}
		checked++
		files, err := os.ReadDir(filepath.Join(dir, name))
		if err != nil {
			return nil, 0, err
		}
		var own []string
		for _, f := range files {
			if strings.HasSuffix(f.Name(), "_test.go") {
				own = append(own, f.Name())
			}
		}
		if slices.Contains(cmdTestsOwn, name) {
			if len(own) == 0 {
				problems = append(problems, fmt.Sprintf("internal/cmd/%s keeps its tests beside it (cmdTestsOwn) but has none", name))
			}
			continue
		}
		if len(own) > 0 {
			problems = append(problems, fmt.Sprintf("internal/cmd/%s has test files %v: move them to internal/cmd/%s/%s_test.go (package %s), whose test binary holds every command's tests",
				name, own, cmdTestsHome, name, cmdTestsHome))
		}
		if !slices.ContainsFunc(home, func(f os.DirEntry) bool {
			n := f.Name()
			return n == name+"_test.go" || strings.HasPrefix(n, name+"_") && strings.HasSuffix(n, "_test.go")
		}) {
			problems = append(problems, fmt.Sprintf("internal/cmd/%s has no tests: want internal/cmd/%s/%s_test.go", name, cmdTestsHome, name))
		}
	}
	return problems, checked, nil
}

// TestCommandTestsLiveInRoot: no command package but those in
// cmdTestsOwn has test files, and each has its tests in root's directory.
func TestCommandTestsLiveInRoot(t *testing.T) {
	t.Parallel()
	problems, checked, err := commandTestProblems(e2e.RepoRoot(t))
	if err != nil {
		t.Fatal(err)
	}
	if checked < 20 {
		t.Fatalf("looked at %d command packages; the tree has more than 20", checked)
	}
	for _, p := range problems {
		t.Error(p)
	}
}

// TestCommandTestsRuleCatches: in a synthetic tree, a command with a test
// file of its own, one with no tests in root and an exempt one with none
// are each reported; a command whose tests are in root is not.
func TestCommandTestsRuleCatches(t *testing.T) {
	t.Parallel()
	top := t.TempDir()
	write := func(rel string) {
		p := filepath.Join(top, "internal", "cmd", rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("package x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("root/root.go")
	write("good/good.go")
	write("root/good_test.go")
	write("split/split.go")
	write("root/split_flags_test.go")
	write("own/own.go")
	write("own/own_test.go")
	write("root/own_test.go")
	write("none/none.go")
	write(cmdTestsOwn[0] + "/x.go")
	problems, checked, err := commandTestProblems(top)
	if err != nil {
		t.Fatal(err)
	}
	if checked != 5 {
		t.Errorf("checked %d command packages, want 5", checked)
	}
	for _, want := range []string{"internal/cmd/own has test files [own_test.go]", "internal/cmd/none has no tests", "internal/cmd/" + cmdTestsOwn[0] + " keeps its tests beside it"} {
		if !slices.ContainsFunc(problems, func(p string) bool { return strings.HasPrefix(p, want) }) {
			t.Errorf("no problem starting %q in %q", want, problems)
		}
	}
	if len(problems) != 3 {
		t.Errorf("%d problems, want 3: %q", len(problems), problems)
	}
}
