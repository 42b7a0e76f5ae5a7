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
// A package variable of the tests themselves (declared in a test file)
// that a test writes counts too: the race detector reports such a write
// only when another test's read happens to overlap it.
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
// returns, by directory, its functions keyed by name (methods by "." and
// their method name, so h.run names every method run, and never the
// function run) and its package-level variables of the test files (a
// table of attacks that names a switch is followed like a function).
func packageTestFuncs(top string, switches map[string]bool) (map[string]map[string][]*testFunc, error) {
	vars, err := testFileVars(top)
	if err != nil {
		return nil, err
	}
	pkgs := map[string]map[string][]*testFunc{}
	err = walkGoFiles(top, func(path string, test bool) error {
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
		// add scans node: a function's body (not its name, which would
		// name the function run from the method run), or a variable's spec.
		add := func(name string, node ast.Node) {
			tf := &testFunc{pos: fset.Position(node.Pos())}
			body := node
			if fn, ok := node.(*ast.FuncDecl); ok {
				tf.decl, body = fn, fn.Body
			}
			tf.wide, tf.safe, tf.uses = scanBody(body, f.Comments, switches, vars[dir])
			pkgs[dir][name] = append(pkgs[dir][name], tf)
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				switch {
				case d.Body == nil:
				case d.Recv != nil:
					add("."+d.Name.Name, d)
				default:
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

// testFileVars returns, by directory, the package-level variables
// declared in each package's test files: state of the tests themselves
// (a fake network, a rule table), which a test that writes it changes
// for every test beside it. The race detector sees such a write only
// when the two tests happen to overlap; this rule sees it always.
func testFileVars(top string) (map[string]map[string]bool, error) {
	vars := map[string]map[string]bool{}
	err := walkGoFiles(top, func(path string, test bool) error {
		if !test {
			return nil
		}
		_, f, err := parseTreeFile(top, path)
		if err != nil {
			return err
		}
		dir := filepath.Dir(path)
		for _, d := range f.Decls {
			if gd, ok := d.(*ast.GenDecl); ok && gd.Tok == token.VAR {
				for _, sp := range gd.Specs {
					for _, n := range sp.(*ast.ValueSpec).Names {
						if n.Name == "_" {
							continue
						}
						if vars[dir] == nil {
							vars[dir] = map[string]bool{}
						}
						vars[dir][n.Name] = true
					}
				}
			}
		}
		return nil
	})
	return vars, err
}

// rootIdent is the variable a write goes to: x in x, x.f, x[i], *x, (x).
func rootIdent(e ast.Expr) *ast.Ident {
	for {
		switch v := e.(type) {
		case *ast.Ident:
			return v
		case *ast.SelectorExpr:
			e = v.X
		case *ast.IndexExpr:
			e = v.X
		case *ast.StarExpr:
			e = v.X
		case *ast.ParenExpr:
			e = v.X
		default:
			return nil
		}
	}
}

// scanBody says why body is process-wide by itself ("" when it is not)
// and whether it says it is parallel-safe, and lists the names it
// mentions (methods as "." and their name). A write to one of vars
// (assigned, incremented, or its address taken) makes it process-wide,
// but inside a function literal given to a Do call (sync.Once), which
// writes once for every test.
func scanBody(body ast.Node, comments []*ast.CommentGroup, switches, vars map[string]bool) (wide string, safe bool, uses []string) {
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
	var once []ast.Node // the function literals given to Do calls
	sels := map[*ast.Ident]bool{}
	writes := func(e ast.Expr) {
		id := rootIdent(e)
		if id == nil || !vars[id.Name] || wide != "" {
			return
		}
		for _, o := range once {
			if id.Pos() >= o.Pos() && id.End() <= o.End() {
				return
			}
		}
		wide = "writes the package variable " + id.Name
	}
	ast.Inspect(body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallExpr:
			if sel, ok := n.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Do" {
				for _, a := range n.Args {
					if fl, ok := a.(*ast.FuncLit); ok {
						once = append(once, fl)
					}
				}
			}
		case *ast.AssignStmt:
			if n.Tok != token.DEFINE {
				for _, l := range n.Lhs {
					writes(l)
				}
			}
		case *ast.IncDecStmt:
			writes(n.X)
		case *ast.UnaryExpr:
			if n.Op == token.AND {
				writes(n.X)
			}
		case *ast.SelectorExpr:
			sels[n.Sel] = true
			if switches[n.Sel.Name] && wide == "" {
				wide = "names the switch " + n.Sel.Name
			}
			if pkg, ok := processCalls[n.Sel.Name]; ok && wide == "" {
				if x, isIdent := n.X.(*ast.Ident); pkg == "" || isIdent && x.Name == pkg {
					wide = "calls " + n.Sel.Name
				}
			}
			uses = append(uses, "."+n.Sel.Name)
		case *ast.Ident:
			if sels[n] {
				return true // a selector's name, listed as a method above
			}
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
	why, _ := processWideOf(funcs, name, memo)
	return why
}

// processWideOf is processWide; partial says the answer "" met a function
// still being answered (a cycle of helpers), so it is not final and is
// not kept: that function's answer, once known, may change it.
func processWideOf(funcs map[string][]*testFunc, name string, memo map[string]*string) (why string, partial bool) {
	if r, ok := memo[name]; ok {
		if r == nil {
			return "", true // on the stack
		}
		return *r, false
	}
	memo[name] = nil
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
			w, p := processWideOf(funcs, u, memo)
			partial = partial || p
			if w != "" {
				why = w + " (through " + u + ")"
				break
			}
		}
		if why != "" {
			break
		}
	}
	if why == "" && partial {
		delete(memo, name)
		return "", true
	}
	memo[name] = &why
	return why, false
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
// says it is parallel-safe. Helpers that call each other (ping, pong) are
// followed whichever the test names first. A test that writes a variable
// of the test files through a helper is flagged; one that writes it
// inside sync.Once's Do is not.
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

import (
	"sync"
	"testing"
)

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

func ping(t *testing.T, n int) {
	if n > 0 {
		pong(t, n-1)
	}
	defer SwitchOffGateForTest()()
}

func pong(t *testing.T, n int) { ping(t, n) }

var (
	fakeNet  string
	seedOnce sync.Once
	seed     string
)

func useNet(t *testing.T) { fakeNet = "down" }

func TestWritesATestVariable(t *testing.T) {
	t.Parallel()
	useNet(t)
}

func TestSeedsOnce(t *testing.T) {
	t.Parallel()
	seedOnce.Do(func() { seed = "built" })
}

func TestPingFirst(t *testing.T) {
	t.Parallel()
	ping(t, 2)
}

func TestThroughACycle(t *testing.T) {
	t.Parallel()
	pong(t, 2)
}
`)
	problems, parallel, sequential, err := parallelProblems(top)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"TestFlipsThroughHelpers", "TestNamesATableWithASwitch", "TestNoReason", "TestPingFirst", "TestSetsEnv", "TestThroughACycle", "TestWritesATestVariable"}
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
	// Asked of ping first, pong is met while ping is still being
	// answered: pong's "" then is not final, and asked next, pong is
	// process-wide through ping.
	pkgs, err := packageTestFuncs(top, map[string]bool{"SwitchOffGateForTest": true})
	if err != nil {
		t.Fatal(err)
	}
	funcs, memo := pkgs[filepath.Join(top, "sw")], map[string]*string{}
	for _, name := range []string{"ping", "pong"} {
		if why := processWide(funcs, name, memo); why == "" {
			t.Errorf("%s: not process-wide, want it through the cycle", name)
		}
	}
	if parallel != 3 || sequential != 2 {
		t.Errorf("got %d parallel, %d sequential; want 3 (TestPlain, TestThroughAVouchedHelper, TestSeedsOnce) and 2", parallel, sequential)
	}
}
