package archtest

// TestArchitectureNamesExist keeps the prose of docs/ARCHITECTURE.md true
// in the one way a test can: every Go name and repository path it quotes
// in backquotes must exist. Which spans are checked:
//
//   - `pkg.Name` (also `pkg.Name()`, `pkg.Name(args)`), where pkg is the
//     name of a mailagent package: an exported top-level declaration of
//     that package (a package name shared by several directories matches
//     any of them). Spans whose prefix is no mailagent package
//     (`signal.NotifyContext`, the configuration key `policy.send_delay`)
//     are not Go names of the project and are left alone.
//   - `Type.Member`: a method or struct/interface field Member of a type
//     Type declared in the project.
//   - `TestName`: a test function of the project.
//   - `Name` (exported, mixed case): declared somewhere in the project, at
//     top level, as a method or as a field.
//   - a path rooted at a top-level directory of the repository
//     (`store/jobs.go`, `internal/app/api`, `scripts/e2e-stack.sh`), or a
//     bare file name such as `policy.go` or `schedule*.go`: it (or, for a
//     pattern, something it matches) exists in the repository, a bare name
//     in any directory.
//
// Only non-test files declare names; test functions come from test files.

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"unicode"

	"github.com/mailagent/mailagent/internal/rig/e2e"
)

// projectNames is what the project declares and holds, for checkNames.
type projectNames struct {
	pkgs    map[string]map[string]bool // package name → its exported top-level names
	members map[string]bool            // "Type.Member" for methods and fields
	names   map[string]bool            // every exported name: top level, method, field
	tests   map[string]bool            // Test functions
	files   []string                   // every file and directory, slash-separated, relative to the root
}

func newProjectNames() *projectNames {
	return &projectNames{pkgs: map[string]map[string]bool{}, members: map[string]bool{}, names: map[string]bool{}, tests: map[string]bool{}}
}

// add records the declarations of one parsed file.
func (p *projectNames) add(f *ast.File, isTest bool) {
	if isTest {
		for _, d := range f.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil && strings.HasPrefix(fn.Name.Name, "Test") {
				p.tests[fn.Name.Name] = true
			}
		}
		return
	}
	pkg := f.Name.Name
	if p.pkgs[pkg] == nil {
		p.pkgs[pkg] = map[string]bool{}
	}
	top := func(name string) {
		if ast.IsExported(name) {
			p.pkgs[pkg][name] = true
			p.names[name] = true
		}
	}
	member := func(typ, name string) {
		if ast.IsExported(name) {
			p.members[typ+"."+name] = true
			p.names[name] = true
		}
	}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil {
				top(d.Name.Name)
				continue
			}
			if typ := receiverType(d.Recv.List[0].Type); typ != "" {
				member(typ, d.Name.Name)
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.ValueSpec:
					for _, n := range s.Names {
						top(n.Name)
					}
				case *ast.TypeSpec:
					top(s.Name.Name)
					var fields *ast.FieldList
					switch t := s.Type.(type) {
					case *ast.StructType:
						fields = t.Fields
					case *ast.InterfaceType:
						fields = t.Methods
					}
					if fields == nil {
						continue
					}
					for _, fld := range fields.List {
						for _, n := range fld.Names {
							member(s.Name.Name, n.Name)
						}
						if len(fld.Names) == 0 { // embedded: its name is its type's
							if typ := receiverType(fld.Type); typ != "" {
								member(s.Name.Name, typ)
							}
						}
					}
				}
			}
		}
	}
}

// receiverType returns the base type name of a receiver or embedded field
// expression (*T, T, T[P], pkg.T).
func receiverType(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.StarExpr:
		return receiverType(e.X)
	case *ast.IndexExpr:
		return receiverType(e.X)
	case *ast.IndexListExpr:
		return receiverType(e.X)
	case *ast.SelectorExpr:
		return e.Sel.Name
	case *ast.Ident:
		return e.Name
	}
	return ""
}

// projectNamesOnce parses the tree once for every test that needs it.
var projectNamesOnce = sync.OnceValues(func() (*projectNames, error) {
	top, err := e2e.FindRepoRoot()
	if err != nil {
		return nil, err
	}
	return loadProjectNames(top)
})

// loadProjectNames parses every Go file under top and lists its files.
func loadProjectNames(top string) (*projectNames, error) {
	p := newProjectNames()
	err := filepath.WalkDir(top, func(file string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(top, file)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() && file != top && strings.HasPrefix(d.Name(), ".") && d.Name() != ".ci" {
			return filepath.SkipDir
		}
		if file != top {
			p.files = append(p.files, rel)
		}
		if d.IsDir() || !strings.HasSuffix(d.Name(), ".go") || strings.Contains("/"+rel, "/testdata/") {
			return nil
		}
		_, f, err := parseTreeFile(top, file)
		if err != nil {
			return err
		}
		p.add(f, strings.HasSuffix(d.Name(), "_test.go"))
		return nil
	})
	return p, err
}

var (
	spanRe      = regexp.MustCompile("`([^`\n]+)`")
	qualifiedRe = regexp.MustCompile(`^([A-Za-z_]\w*)\.([A-Za-z_]\w*)(\(.*\))?$`)
	nameRe      = regexp.MustCompile(`^([A-Z]\w*)(\(.*\))?$`)
	bareFileRe  = regexp.MustCompile(`^[\w*.-]+\.(go|sh|md)$`) // no slash: a file name in any directory
	rootDirs    = regexp.MustCompile(`^(agent|store|cmd|tui|imapsync|prompts|internal|scripts|docs|contrib|\.ci)(/|$)`)
)

// exists reports whether the repository holds pattern (a path relative to
// the root, perhaps with * wildcards), or, when anywhere is set, a file
// whose base name matches it in any directory.
func (p *projectNames) exists(pattern string, anywhere bool) bool {
	pattern = strings.TrimSuffix(pattern, "/")
	for _, f := range p.files {
		target := f
		if anywhere {
			target = path.Base(f)
		}
		if ok, _ := path.Match(pattern, target); ok {
			return true
		}
	}
	return false
}

// checkNames returns each backquoted name or path of md that the project
// does not have, with its line.
func checkNames(md string, p *projectNames) (problems []string, checked int) {
	inFence := false
	for i, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inFence = !inFence
			continue
		}
		if inFence {
			continue
		}
		for _, m := range spanRe.FindAllStringSubmatch(line, -1) {
			span := m[1]
			ok, applies := p.spanExists(span)
			if !applies {
				continue
			}
			checked++
			if !ok {
				problems = append(problems, fmt.Sprintf("ARCHITECTURE.md:%d: `%s` names nothing in the tree", i+1, span))
			}
		}
	}
	return problems, checked
}

// spanExists checks one backquoted span; applies is false for spans that
// are no Go name or repository path of the project (a command line, a
// configuration key, a header name, a state).
func (p *projectNames) spanExists(span string) (ok, applies bool) {
	if head, _, ok := strings.Cut(span, "("); ok && strings.HasSuffix(span, ")") && !strings.ContainsAny(head, " ") {
		span = head // a call: `MayResolve(from, to)` names MayResolve
	}
	if strings.ContainsAny(span, " <>…") {
		return false, false
	}
	if rootDirs.MatchString(span) {
		return p.exists(span, false), true
	}
	if bareFileRe.MatchString(span) {
		return p.exists(span, true), true
	}
	if m := qualifiedRe.FindStringSubmatch(span); m != nil {
		left, right := m[1], m[2]
		if unicode.IsUpper(rune(left[0])) {
			return p.members[left+"."+right], true
		}
		if syms, isPkg := p.pkgs[left]; isPkg && left != "main" {
			return syms[right], true
		}
		return false, false
	}
	if strings.HasPrefix(span, "Test") && nameRe.MatchString(span) && !strings.Contains(span, "*") {
		return p.tests[span], true
	}
	if m := nameRe.FindStringSubmatch(span); m != nil && strings.ToUpper(m[1]) != m[1] {
		return p.names[m[1]], true
	}
	return false, false
}

func TestArchitectureNamesExist(t *testing.T) {
	t.Parallel()
	top := e2e.RepoRoot(t)
	p, err := projectNamesOnce()
	if err != nil {
		t.Fatal(err)
	}
	problems, checked := checkNames(readArchitecture(t, top), p)
	for _, msg := range problems {
		t.Error(msg)
	}
	t.Logf("checked %d backquoted names and paths", checked)
	if checked < 100 {
		t.Errorf("checked %d names: the spans are not being read", checked)
	}
}

// TestArchitectureNamesCatch is the positive control: a doc naming what
// the tree does not hold fails, once per wrong name, and the spans that
// are not Go names are left alone.
func TestArchitectureNamesCatch(t *testing.T) {
	t.Parallel()
	p := newProjectNames()
	src := `package store
type MessageRecord struct{ Route string }
func (r *MessageRecord) Correspondent() string { return "" }
func MayResolve(from, to *MessageRecord) bool { return false }
const SchemaVersion = 1`
	f, err := parser.ParseFile(token.NewFileSet(), "identity.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	p.add(f, false)
	tf, err := parser.ParseFile(token.NewFileSet(), "x_test.go", "package store\nfunc TestReal(t *T) {}", 0)
	if err != nil {
		t.Fatal(err)
	}
	p.add(tf, true)
	p.files = []string{"store", "store/identity.go", "agent", "agent/policy.go", "scripts", "scripts/e2e-stack.sh"}

	tests := []struct {
		span        string
		ok, applies bool
	}{
		{span: "store.MayResolve", ok: true, applies: true},
		{span: "store.MayResolve(from, to)", ok: true, applies: true},
		{span: "store.Gone(x, y)", applies: true},
		{span: "mailagent doctor --repair", applies: false},
		{span: "store.SchemaVersion", ok: true, applies: true},
		{span: "store.Gone", applies: true},
		{span: "MessageRecord.Correspondent()", ok: true, applies: true},
		{span: "MessageRecord.Route", ok: true, applies: true},
		{span: "MessageRecord.Sender", applies: true},
		{span: "MayResolve", ok: true, applies: true},
		{span: "MayResolveAll", applies: true},
		{span: "TestReal", ok: true, applies: true},
		{span: "TestRenamed", applies: true},
		{span: "store/identity.go", ok: true, applies: true},
		{span: "store/identity_old.go", applies: true},
		{span: "policy.go", ok: true, applies: true},
		{span: "schedule*.go", applies: true},
		{span: "agent/*", ok: true, applies: true},
		{span: "scripts/e2e-stack.sh", ok: true, applies: true},
		{span: "signal.NotifyContext", applies: false},
		{span: "policy.send_delay", applies: false},
		{span: "UNAVAILABLE", applies: false},
		{span: "X-Mailagent-Trace", applies: false},
		{span: "needs_review", applies: false},
	}
	for _, tt := range tests {
		ok, applies := p.spanExists(tt.span)
		if ok != tt.ok || applies != tt.applies {
			t.Errorf("`%s`: got exists=%v checked=%v, want exists=%v checked=%v", tt.span, ok, applies, tt.ok, tt.applies)
		}
	}

	md := "# x\n`store.MayResolve` and `store.Gone`\n```\n`store.InFence` is not read\n```\n`MessageRecord.Sender`, `TestRenamed`, `agent/gone.go`"
	problems, checked := checkNames(md, p)
	if checked != 5 {
		t.Errorf("checked %d spans, want 5 (the fenced block is skipped)", checked)
	}
	want := []string{"ARCHITECTURE.md:2: `store.Gone`", "ARCHITECTURE.md:6: `MessageRecord.Sender`", "ARCHITECTURE.md:6: `TestRenamed`", "ARCHITECTURE.md:6: `agent/gone.go`"}
	if len(problems) != len(want) {
		t.Fatalf("got problems %q, want %d", problems, len(want))
	}
	for i, w := range want {
		if !strings.HasPrefix(problems[i], w) {
			t.Errorf("problem %d: got %q, want it to start with %q", i, problems[i], w)
		}
	}
}

// TestArchitectureNamesRealDocCatches renames two names in the real
// document: the check must see both, so it is reading the real spans.
func TestArchitectureNamesRealDocCatches(t *testing.T) {
	t.Parallel()
	top := e2e.RepoRoot(t)
	p, err := projectNamesOnce()
	if err != nil {
		t.Fatal(err)
	}
	md := readArchitecture(t, top)
	for _, name := range []string{"`Outbox.Deliver`", "`store.AnswersTo`"} {
		if !strings.Contains(md, name) {
			t.Fatalf("the document no longer quotes %s: pick another name for this control", name)
		}
	}
	md = strings.Replace(md, "`Outbox.Deliver`", "`Outbox.Send`", 1)
	md = strings.Replace(md, "`store.AnswersTo`", "`store.Answered`", 1)
	problems, _ := checkNames(md, p)
	got := strings.Join(problems, "\n")
	for _, want := range []string{"`Outbox.Send` names nothing", "`store.Answered` names nothing"} {
		if !strings.Contains(got, want) {
			t.Errorf("got problems %q, want one containing %q", got, want)
		}
	}
	if len(problems) != 2 {
		t.Errorf("got %d problems, want exactly the 2 planted: %q", len(problems), problems)
	}
}
