package archtest

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/mailagent/mailagent/internal/rig/e2e"
)

// testmainPath is the package whose Run every test binary's TestMain
// calls (its contract: goroutines left by the tests fail the binary, and
// a clean race binary skips the detector's exit sleep).
const testmainPath = "github.com/mailagent/mailagent/internal/rig/testmain"

// testMainProblems names each directory under top with test files whose
// TestMain does not call testmain.Run (or that has no TestMain).
func testMainProblems(top string) ([]string, int, error) {
	hasTests := map[string]bool{}
	calls := map[string]bool{}
	fset := token.NewFileSet()
	err := walkGoFiles(top, func(path string, test bool) error {
		if !test {
			return nil
		}
		dir := filepath.Dir(path)
		hasTests[dir] = true
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		local := ""
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); p == testmainPath {
				local = "testmain"
				if imp.Name != nil {
					local = imp.Name.Name
				}
			}
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || fn.Name.Name != "TestMain" || fn.Body == nil {
				continue
			}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				switch fun := call.Fun.(type) {
				case *ast.SelectorExpr: // testmain.Run(m)
					if id, ok := fun.X.(*ast.Ident); ok && local != "" && id.Name == local && fun.Sel.Name == "Run" {
						calls[dir] = true
					}
				case *ast.Ident: // Run(m), in testmain itself
					if fun.Name == "Run" && f.Name.Name == "testmain" {
						calls[dir] = true
					}
				}
				return true
			})
		}
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	var problems []string
	for dir := range hasTests {
		if !calls[dir] {
			rel, _ := filepath.Rel(top, dir)
			problems = append(problems, fmt.Sprintf("%s: its TestMain does not call testmain.Run (add `func TestMain(m *testing.M) { testmain.Run(m) }`, or call it last in the TestMain it has)", rel))
		}
	}
	sort.Strings(problems)
	return problems, len(hasTests), nil
}

// TestEveryPackageRunsTestmain: every package with tests ends its
// TestMain in testmain.Run.
func TestEveryPackageRunsTestmain(t *testing.T) {
	t.Parallel()
	problems, n, err := testMainProblems(e2e.RepoRoot(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
	if n < 50 {
		t.Errorf("%d packages with tests, want the tree's (50 or more)", n)
	}
}

// TestTestmainRuleCatches: the rule flags a package with no TestMain and
// one whose TestMain exits by itself, and passes one that calls
// testmain.Run (under another name too).
func TestTestmainRuleCatches(t *testing.T) {
	t.Parallel()
	top := t.TempDir()
	write := func(rel, src string) {
		t.Helper()
		p := filepath.Join(top, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("none/none_test.go", "package none\n\nimport \"testing\"\n\nfunc TestA(t *testing.T) {}\n")
	write("own/own_test.go", "package own\n\nimport (\n\t\"os\"\n\t\"testing\"\n)\n\nfunc TestMain(m *testing.M) { os.Exit(m.Run()) }\n")
	write("good/good_test.go", "package good\n\nimport (\n\t\"testing\"\n\n\t\""+testmainPath+"\"\n)\n\nfunc TestMain(m *testing.M) { testmain.Run(m) }\n")
	write("renamed/a_test.go", "package renamed\n\nimport (\n\t\"testing\"\n\n\ttm \""+testmainPath+"\"\n)\n\nfunc TestMain(m *testing.M) {\n\tsetUp()\n\ttm.Run(m)\n}\n")
	write("renamed/b_test.go", "package renamed\n\nfunc setUp() {}\n")
	write("untested/x.go", "package untested\n")
	problems, n, err := testMainProblems(top)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"none", "own"}
	if n != 4 || len(problems) != len(want) {
		t.Fatalf("%d packages with tests, problems %q; want 4 and problems for %v", n, problems, want)
	}
	for i, dir := range want {
		if !strings.HasPrefix(problems[i], dir+":") {
			t.Errorf("problem %d: %q, want one about %s", i, problems[i], dir)
		}
	}
}
