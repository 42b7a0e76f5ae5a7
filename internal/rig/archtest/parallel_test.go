package archtest

import (
	"fmt"
	"go/ast"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/mailagent/mailagent/internal/rig/e2e"
)

// The parallel rule: every top-level test of the tree starts by calling
// t.Parallel() (or agente2e's parallel(t), which does), unless it
// changes what the whole process shares, and then it must not.
// go test runs a package's sequential tests to their end before any of
// its parallel tests goes on, so what a sequential test flips is never
// seen by another test; what a parallel test flips is seen by every
// parallel test running beside it (a positive control that switches a
// defence off would let a neighbour's attack through, or fail it).
//
// A plain package variable that a test writes is left to the race
// detector (CI's -race step), which reports a parallel test's write
// beside another's read; a switch is atomic, so only this rule sees it.
//
// What counts as process-wide, in a test's body or in any function of
// the package's test files it names, transitively:
//   - a package switch: a function or variable whose name ends in
//     ForTest, or a package-level atomic.Bool of the tree's non-test code
//     (scheduleGateOff, identityOff …);
//   - the environment, the working directory, the standard loggers, the
//     scheduler and the collector, the process's CPU time, the e2e
//     stack's Dovecot (processCalls);
//   - a comment in the body that starts "sequential:" and says why (a
//     test that bounds wall time, which parallel neighbours stretch).
//
// A helper whose body has a comment that starts "parallel-safe:" is not
// followed: it says why what it does is safe beside parallel tests (cmd's
// harnessEnv calls t.Setenv only when a sequential test changed a
// variable, and t.Setenv panics in a parallel test).

// processCalls are calls that change or read the whole process: the key
// is the selector's name, the value the package it must be called on (""
// for any receiver: t.Setenv and os.Setenv alike).
var processCalls = map[string]string{
	"Setenv":         "",
	"Unsetenv":       "",
	"Chdir":          "",
	"SetOutput":      "log",
	"SetFlags":       "log",
	"SetDefault":     "slog",
	"NumGoroutine":   "runtime",
	"GOMAXPROCS":     "runtime",
	"SetGCPercent":   "debug",
	"SetMemoryLimit": "debug",
	"AllocsPerRun":   "testing",
	"Getrusage":      "syscall",
	// Not the process, but what every test of an e2e package shares: the
	// stack's Dovecot, whose restart cuts every connection.
	"RestartDovecot": "",
}

// testFunc is one function of a package's test files.
type testFunc struct {
	decl *ast.FuncDecl
	pos  token.Position
	wide string   // why it is process-wide by itself ("" when not)
	safe bool     // it says it is parallel-safe: not followed
	uses []string // the names it mentions (callees, method names, values)
}

// switchNames returns the names of the tree's package switches declared
// in non-test code: package-level atomic.Bool variables and anything
// whose name ends in ForTest.
func switchNames(top string) (map[string]bool, error) {
	names := map[string]bool{}
	err := walkGoFiles(top, func(path string, test bool) error {
		if test {
			return nil
		}
		_, f, err := parseTreeFile(top, path)
		if err != nil {
			return err
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if strings.HasSuffix(d.Name.Name, "ForTest") {
					names[d.Name.Name] = true
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					vs, ok := s.(*ast.ValueSpec)
					if !ok {
						continue
					}
					atomicBool := false
					if sel, ok := vs.Type.(*ast.SelectorExpr); ok {
						x, _ := sel.X.(*ast.Ident)
						atomicBool = x != nil && x.Name == "atomic" && sel.Sel.Name == "Bool"
					}
					for _, n := range vs.Names {
						if atomicBool || strings.HasSuffix(n.Name, "ForTest") {
							names[n.Name] = true
						}
					}
				}
			}
		}
		return nil
	})
	return names, err
}

// walkGoFiles calls fn for every Go file under top (no testdata, no
// hidden or underscored names): the walk of treeImports and of the
// parallel rule.
func walkGoFiles(top string, fn func(path string, test bool) error) error {
	return filepath.WalkDir(top, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != top && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
			return nil
		}
		return fn(path, strings.HasSuffix(name, "_test.go"))
	})
}

// packageTestFuncs parses the test files of each package under top and
// returns, by directory, its functions keyed by name (methods by their
// method name, so h.run names them all) and its package-level variables
// of the test files (a table of attacks that names a switch is followed
// like a function).
func packageTestFuncs(top string, switches map[string]bool) (map[string]map[string][]*testFunc, error) {
	pkgs := map[string]map[string][]*testFunc{}
	err := walkGoFiles(top, func(path string, test bool) error {
		if !test {
			return nil
		}
		fset, f, err := parseTreeFile(top, path)
		if err != nil {
			return err
		}
		dir := filepath.Dir(path)
		if pkgs[dir] == nil {
			pkgs[dir] = map[string][]*testFunc{}
		}
		add := func(name string, node ast.Node) {
			tf := &testFunc{pos: fset.Position(node.Pos())}
			tf.wide, tf.safe, tf.uses = scanBody(node, f.Comments, switches)
			if fn, ok := node.(*ast.FuncDecl); ok {
				tf.decl = fn
			}
			pkgs[dir][name] = append(pkgs[dir][name], tf)
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Body != nil {
					add(d.Name.Name, d)
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					if vs, ok := s.(*ast.ValueSpec); ok && len(vs.Values) > 0 {
						for _, n := range vs.Names {
							add(n.Name, vs)
						}
					}
				}
			}
		}
		return nil
	})
	return pkgs, err
}

// scanBody says why body is process-wide by itself ("" when it is not)
// and whether it says it is parallel-safe, and lists the names it
// mentions.
func scanBody(body ast.Node, comments []*ast.CommentGroup, switches map[string]bool) (wide string, safe bool, uses []string) {
	for _, g := range comments {
		if g.Pos() < body.Pos() || g.End() > body.End() {
			continue
		}
		for _, c := range g.List {
			text := strings.TrimSpace(strings.TrimPrefix(c.Text, "//"))
			switch {
			case strings.HasPrefix(text, "sequential:"):
				wide = "says " + text
			case strings.HasPrefix(text, "parallel-safe:"):
				safe = true
			}
		}
	}
	ast.Inspect(body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SelectorExpr:
			if switches[n.Sel.Name] && wide == "" {
				wide = "names the switch " + n.Sel.Name
			}
			if pkg, ok := processCalls[n.Sel.Name]; ok && wide == "" {
				if x, isIdent := n.X.(*ast.Ident); pkg == "" || isIdent && x.Name == pkg {
					wide = "calls " + n.Sel.Name
				}
			}
			uses = append(uses, n.Sel.Name)
		case *ast.Ident:
			if switches[n.Name] && wide == "" {
				wide = "names the switch " + n.Name
			}
			uses = append(uses, n.Name)
		}
		return true
	})
	return wide, safe, uses
}

// processWide says why the function named name is process-wide, through
// whatever it names (memo holds the answers so far; "" is not).
func processWide(funcs map[string][]*testFunc, name string, memo map[string]*string) string {
	if r, ok := memo[name]; ok {
		if r == nil {
			return "" // on the stack: a cycle adds nothing
		}
		return *r
	}
	memo[name] = nil
	why := ""
	for _, tf := range funcs[name] {
		if tf.safe {
			continue
		}
		if tf.wide != "" {
			why = tf.wide
			break
		}
		for _, u := range tf.uses {
			if u == name || funcs[u] == nil {
				continue
			}
			if w := processWide(funcs, u, memo); w != "" {
				why = w + " (through " + u + ")"
				break
			}
		}
		if why != "" {
			break
		}
	}
	memo[name] = &why
	return why
}

// startsParallel says whether fn's first statement makes it parallel:
// t.Parallel(), or agente2e's parallel(t). agente2e's afterTheOthers(t)
// is parallel in go test's sense but runs alone, once every other test
// of the package has ended: it counts as sequential.
func startsParallel(fn *ast.FuncDecl) bool {
	if len(fn.Body.List) == 0 {
		return false
	}
	es, ok := fn.Body.List[0].(*ast.ExprStmt)
	if !ok {
		return false
	}
	call, ok := es.X.(*ast.CallExpr)
	if !ok {
		return false
	}
	switch f := call.Fun.(type) {
	case *ast.SelectorExpr:
		return f.Sel.Name == "Parallel"
	case *ast.Ident:
		return f.Name == "parallel"
	}
	return false
}

// stackPackages share the e2e stack's servers (one Dovecot, one Postfix,
// the Courier-style second Dovecot) and decide for themselves which of
// their tests may overlap: the rule does not apply to them. agente2e has
// its own rule (TestEveryTestIsParallel there), and meets this one too.
var stackPackages = []string{"internal/rig/e2e", "internal/rig/e2e/storm"}

// parallelProblems checks the parallel rule on the tree under top.
func parallelProblems(top string) (problems []string, parallel, sequential int, _ error) {
	switches, err := switchNames(top)
	if err != nil {
		return nil, 0, 0, err
	}
	pkgs, err := packageTestFuncs(top, switches)
	if err != nil {
		return nil, 0, 0, err
	}
	for dir, funcs := range pkgs {
		if rel, err := filepath.Rel(top, dir); err == nil && slices.Contains(stackPackages, filepath.ToSlash(rel)) {
			continue
		}
		memo := map[string]*string{}
		for name, fs := range funcs {
			for _, tf := range fs {
				fn := tf.decl
				if fn == nil || fn.Recv != nil || !strings.HasPrefix(name, "Test") || name == "TestMain" || !isTestSignature(fn) {
					continue
				}
				why := processWide(funcs, name, memo)
				starts := startsParallel(fn)
				switch {
				case why == "" && !starts:
					problems = append(problems, fmt.Sprintf("%s (%s): does not start with t.Parallel(), and nothing it does is process-wide; if it must run alone, say why in a comment that starts with \"sequential:\"", name, tf.pos))
				case why != "" && starts:
					problems = append(problems, fmt.Sprintf("%s (%s): parallel, but %s", name, tf.pos, why))
				case starts:
					parallel++
				default:
					sequential++
				}
			}
		}
	}
	sort.Strings(problems)
	return problems, parallel, sequential, nil
}

// isTestSignature says whether fn is func(t *testing.T).
func isTestSignature(fn *ast.FuncDecl) bool {
	ps := fn.Type.Params.List
	if len(ps) != 1 || len(ps[0].Names) > 1 {
		return false
	}
	star, ok := ps[0].Type.(*ast.StarExpr)
	if !ok {
		return false
	}
	sel, ok := star.X.(*ast.SelectorExpr)
	return ok && sel.Sel.Name == "T"
}

// TestEveryTestIsParallel holds the tree to the parallel rule.
func TestEveryTestIsParallel(t *testing.T) {
	t.Parallel()
	problems, parallel, sequential, err := parallelProblems(e2e.RepoRoot(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
	t.Logf("%d parallel tests, %d sequential", parallel, sequential)
	if parallel < 1000 {
		t.Errorf("%d parallel tests, want the tree's (1,000 or more)", parallel)
	}
}

// TestParallelRuleCatches: the rule flags a parallel test that flips a
// switch through a helper two calls down, one that names an attack table
// holding a switch, one that sets the environment, and a sequential test
// with no reason; it passes a sequential test that flips a switch, one
// that says why, a parallel one that does neither, and one whose helper
// says it is parallel-safe.
func TestParallelRuleCatches(t *testing.T) {
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
	write("sw/sw.go", `package sw

import "sync/atomic"

var gateOff atomic.Bool

func SwitchOffGateForTest() func() { gateOff.Store(true); return func() { gateOff.Store(false) } }
`)
	write("sw/sw_test.go", `package sw

import "testing"

func outer(t *testing.T) { inner(t) }
func inner(t *testing.T) { defer SwitchOffGateForTest()() }

func TestFlipsThroughHelpers(t *testing.T) {
	t.Parallel()
	outer(t)
}

func TestSetsEnv(t *testing.T) {
	t.Parallel()
	t.Setenv("X", "1")
}

func TestNoReason(t *testing.T) {
	_ = 1
}

func TestFlipsAlone(t *testing.T) {
	gateOff.Store(true)
	defer gateOff.Store(false)
}

func TestSaysWhy(t *testing.T) {
	// sequential: bounds wall time.
	_ = 1
}

func TestPlain(t *testing.T) {
	t.Parallel()
	_ = 1
}

var attacks = []struct{ off func() func() }{{SwitchOffGateForTest}}

func TestNamesATableWithASwitch(t *testing.T) {
	t.Parallel()
	_ = attacks
}

func vouched(t *testing.T) {
	// parallel-safe: sets nothing a parallel test reads.
	t.Setenv("Y", "")
}

func TestThroughAVouchedHelper(t *testing.T) {
	t.Parallel()
	vouched(t)
}
`)
	problems, parallel, sequential, err := parallelProblems(top)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"TestFlipsThroughHelpers", "TestNamesATableWithASwitch", "TestNoReason", "TestSetsEnv"}
	if len(problems) != len(want) {
		t.Fatalf("got %d problems, want %d (%v):\n%s", len(problems), len(want), want, strings.Join(problems, "\n"))
	}
	for i, w := range want {
		if !strings.HasPrefix(problems[i], w+" ") {
			t.Errorf("problem %d: got %q, want one for %s", i, problems[i], w)
		}
	}
	if !strings.Contains(problems[0], "names the switch SwitchOffGateForTest (through inner) (through outer)") {
		t.Errorf("the helper chain is not named: %q", problems[0])
	}
	if !strings.Contains(problems[1], "SwitchOffGateForTest (through attacks)") {
		t.Errorf("the attack table is not named: %q", problems[1])
	}
	if parallel != 2 || sequential != 2 {
		t.Errorf("got %d parallel, %d sequential; want 2 (TestPlain, TestThroughAVouchedHelper) and 2", parallel, sequential)
	}
}
