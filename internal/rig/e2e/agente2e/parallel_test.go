package agente2e

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// running counts the package's tests that have not ended, but for the
// one that restarts Dovecot: it waits for them (afterTheOthers).
var running sync.WaitGroup

// parallel is how every test of this package starts (TestEveryTestIsParallel
// checks it): it counts the test in running, then calls t.Parallel. go
// test runs every top-level test up to its t.Parallel before it lets any
// of them go on, so once they go on, running counts them all.
func parallel(t *testing.T) {
	t.Helper()
	running.Add(1)
	t.Cleanup(running.Done)
	t.Parallel()
}

// afterTheOthers makes t a parallel test that goes on once every other
// test of the package has ended: a Dovecot restart cuts every connection,
// and waiting for the other test binaries (e2e.Stack.RestartDovecot)
// then costs this package nothing but the wait itself.
func afterTheOthers(t *testing.T) {
	t.Helper()
	t.Parallel()
	running.Wait()
}

// restartTest is the one test that starts with afterTheOthers.
const restartTest = "TestWatchSurvivesDovecotRestart"

// sequentialTests are the tests that are not parallel at all, each
// because it flips a package switch the parallel tests read. go test
// runs every sequential top-level test to its end before any parallel
// one goes on, so the restart cannot cut them either.
var sequentialTests = map[string]bool{
	"TestRemoteHostileURLLandsWithoutValidation": true,
}

// TestEveryTestIsParallel: every top-level test of the package starts
// with parallel(t), but restartTest, which starts with afterTheOthers(t),
// and sequentialTests, which call neither; a test that called t.Parallel
// itself would not be waited for, and the restart could cut its
// connections.
func TestEveryTestIsParallel(t *testing.T) {
	parallel(t)
	files, err := filepath.Glob("*_test.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("no test files (%v)", err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || !strings.HasPrefix(fn.Name.Name, "Test") || fn.Name.Name == "TestMain" {
				continue
			}
			want := "parallel"
			switch {
			case fn.Name.Name == restartTest:
				want = "afterTheOthers"
			case sequentialTests[fn.Name.Name]:
				if got := firstCall(fn); got == "parallel" || got == "afterTheOthers" {
					t.Errorf("%s (%s): listed as sequential but starts with %s(t)", fn.Name.Name, fset.Position(fn.Pos()), got)
				}
				checked++
				continue
			}
			if got := firstCall(fn); got != want {
				t.Errorf("%s (%s): starts with %q, want %s(t)", fn.Name.Name, fset.Position(fn.Pos()), got, want)
			}
			checked++
		}
	}
	if checked < 30 {
		t.Errorf("checked %d tests, want the package's (30 or more)", checked)
	}
}

// firstCall names the function the first statement of fn calls ("" when
// it is not a plain call).
func firstCall(fn *ast.FuncDecl) string {
	if fn.Body == nil || len(fn.Body.List) == 0 {
		return ""
	}
	es, ok := fn.Body.List[0].(*ast.ExprStmt)
	if !ok {
		return ""
	}
	call, ok := es.X.(*ast.CallExpr)
	if !ok {
		return ""
	}
	switch f := call.Fun.(type) {
	case *ast.Ident:
		return f.Name
	case *ast.SelectorExpr:
		if x, ok := f.X.(*ast.Ident); ok {
			return x.Name + "." + f.Sel.Name
		}
	}
	return ""
}
