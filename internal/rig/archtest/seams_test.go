package archtest

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mailagent/mailagent/internal/rig/e2e"
)

// commandTier is where commands live: they only wire, so they hold no
// test seam of their own (issue 27). A positive control switches a
// defence off through a Factory field (IncomingCheckOff, PrethreadOff,
// ExplainSanitiseOff), which a test sets on its own Factory and so runs
// in parallel with every other test.
var commandTier = []string{"cmd", "internal/cmd", "internal/cmdutil"}

// seamsIn returns the test seams a non-test file declares: a function
// named …ForTest (a switch a test flips for the process), or a
// package-level variable of a function type, a sync/atomic type or
// time.Now (a global a test replaces).
func seamsIn(f *ast.File) []string {
	var out []string
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil && strings.HasSuffix(d.Name.Name, "ForTest") {
				out = append(out, "func "+d.Name.Name)
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				vs, ok := s.(*ast.ValueSpec)
				if !ok || d.Tok != token.VAR {
					continue
				}
				if seamType(vs.Type) || (len(vs.Values) == 1 && seamValue(vs.Values[0])) {
					for _, n := range vs.Names {
						out = append(out, "var "+n.Name)
					}
				}
			}
		}
	}
	return out
}

func seamType(t ast.Expr) bool {
	switch t := t.(type) {
	case *ast.FuncType:
		return true
	case *ast.SelectorExpr:
		if x, ok := t.X.(*ast.Ident); ok && x.Name == "atomic" {
			return true
		}
	}
	return false
}

// seamValue: a function literal, or time.Now itself, assigned at package
// level (var now = time.Now).
func seamValue(v ast.Expr) bool {
	switch v := v.(type) {
	case *ast.FuncLit:
		return true
	case *ast.SelectorExpr:
		x, ok := v.X.(*ast.Ident)
		return ok && x.Name == "time" && v.Sel.Name == "Now"
	}
	return false
}

// TestCommandsHaveNoTestSeams: the command tier declares no package-level
// test seam (commands only wire; see commandTier).
func TestCommandsHaveNoTestSeams(t *testing.T) {
	t.Parallel()
	top := e2e.RepoRoot(t)
	files := 0
	for _, dir := range commandTier {
		err := filepath.WalkDir(filepath.Join(top, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			fset, f, err := parseTreeFile(top, path)
			if err != nil {
				return err
			}
			files++
			for _, s := range seamsIn(f) {
				t.Errorf("%s: %s: a test seam in the command tier; put the switch on cmdutil.Factory (as IncomingCheckOff) or beside the defence below the commands", fset.Position(f.Package).Filename, s)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if files < 50 {
		t.Fatalf("read %d files of the command tier: the walk is broken", files)
	}
}

// TestCommandSeamRuleCatches is the positive control: the seams the rule
// names are found in a synthetic file, and what is not a seam is not.
func TestCommandSeamRuleCatches(t *testing.T) {
	t.Parallel()
	src := `package explain
import ("sync/atomic"; "time"; "errors")
var sanitiseOff atomic.Bool
var now = time.Now
var dial func() error
var hook = func() {}
var ErrX = errors.New("x")
var names = map[string]bool{}
func SwitchOffSanitiseForTest() (restore func()) { return nil }
func (o *Options) resetForTest() {}
func run() {}`
	f, err := parser.ParseFile(token.NewFileSet(), "explain.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(seamsIn(f))
	want := "[var sanitiseOff var now var dial var hook func SwitchOffSanitiseForTest]"
	if got != want {
		t.Errorf("seams found %s, want %s", got, want)
	}
}
