package archtest

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/mailagent/mailagent/internal/rig/e2e"
)

// The adversarial inventory (docs/testing/adversarial.md) names, per row,
// a test, its file and its control. A test that moves or is renamed
// leaves a row naming nothing; these tests keep the rows true: the test is
// declared in the file the row gives, and every test the control column
// names exists.

var (
	inventoryRowRe  = regexp.MustCompile("^\\| `(Test\\w+)` \\| `([^`]+)`")
	inventoryTestRe = regexp.MustCompile(`\bTest[A-Z]\w*`)
)

// checkInventory returns each row of md that names a file, a test or a
// control the tree does not hold; read reads a repository file.
func checkInventory(md string, tests map[string]bool, read func(path string) ([]byte, error)) (problems []string, rows int) {
	for i, line := range strings.Split(md, "\n") {
		m := inventoryRowRe.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		rows++
		name, file := m[1], m[2]
		src, err := read(file)
		switch {
		case err != nil:
			problems = append(problems, fmt.Sprintf("adversarial.md:%d: %s: file %s: %v", i+1, name, file, err))
		case !regexp.MustCompile(`(?m)^func ` + name + `\(`).Match(src):
			problems = append(problems, fmt.Sprintf("adversarial.md:%d: %s is not declared in %s", i+1, name, file))
		}
		cells := strings.Split(line, "|")
		if len(cells) < 6 {
			problems = append(problems, fmt.Sprintf("adversarial.md:%d: %s: %d columns, want 5", i+1, name, len(cells)-2))
			continue
		}
		for _, ctl := range inventoryTestRe.FindAllString(cells[5], -1) {
			if !tests[ctl] {
				problems = append(problems, fmt.Sprintf("adversarial.md:%d: %s: its control names %s, which no test file declares", i+1, name, ctl))
			}
		}
	}
	return problems, rows
}

func TestAdversarialInventoryNamesExist(t *testing.T) {
	t.Parallel()
	top := e2e.RepoRoot(t)
	p, err := projectNamesOnce()
	if err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(top, "docs", "testing", "adversarial.md"))
	if err != nil {
		t.Fatal(err)
	}
	problems, rows := checkInventory(string(md), p.tests, func(path string) ([]byte, error) {
		return os.ReadFile(filepath.Join(top, filepath.FromSlash(path)))
	})
	for _, msg := range problems {
		t.Error(msg)
	}
	t.Logf("checked %d rows", rows)
	if rows < 100 {
		t.Errorf("checked %d rows: the table is not being read", rows)
	}
}

// TestAdversarialInventoryCatches is the positive control: a row whose
// file is gone, one whose test moved to another file, and one whose
// control names a test that does not exist are each reported; a true row
// is not.
func TestAdversarialInventoryCatches(t *testing.T) {
	t.Parallel()
	files := map[string]string{
		"agent/a_test.go": "package agent\n\nfunc TestReal(t *testing.T) {}\n\nfunc TestRealControl(t *testing.T) {}\n",
	}
	read := func(path string) ([]byte, error) {
		if s, ok := files[path]; ok {
			return []byte(s), nil
		}
		return nil, os.ErrNotExist
	}
	tests := map[string]bool{"TestReal": true, "TestRealControl": true}
	md := strings.Join([]string{
		"| `TestReal` | `agent/a_test.go` | identity | computed | switch: TestRealControl |",
		"| `TestGone` | `agent/gone_test.go` | identity | computed | none |",
		"| `TestMoved` | `agent/a_test.go` | identity | computed | none |",
		"| `TestReal` | `agent/a_test.go` | identity | computed | switch: TestNoSuchControl |",
	}, "\n")
	problems, rows := checkInventory(md, tests, read)
	if rows != 4 || len(problems) != 3 {
		t.Fatalf("got %d rows and problems %q; want 4 rows and 3 problems", rows, problems)
	}
	for i, want := range []string{"gone_test.go", "TestMoved is not declared", "TestNoSuchControl"} {
		if !strings.Contains(problems[i], want) {
			t.Errorf("problem %d: got %q, want it to name %q", i, problems[i], want)
		}
	}
}
