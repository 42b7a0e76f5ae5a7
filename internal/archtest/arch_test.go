// Package archtest enforces the layering in docs/ARCHITECTURE.md: a test,
// so that `go test ./...` fails when an import crosses a layer. (A linter
// such as depguard would do the same; this needs no extra tool in CI.)
package archtest

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/mailagent/mailagent/internal/e2e"
)

const module = "github.com/mailagent/mailagent/"

// rules: package (relative path prefix) → project packages it must not import.
var rules = []struct {
	pkg       string
	forbidden []string
	only      []string // when set, the only project imports allowed
}{
	{pkg: "agent", forbidden: []string{"cmd", "tui", "imapsync", "internal/daemon", "internal/api", "internal/smtpsend", "internal/config"}},
	{pkg: "imapsync", only: []string{}},
	{pkg: "store", only: []string{"internal/mail"}},
	{pkg: "tui", only: []string{"tui", "internal/termsafe"}},
	{pkg: "prompts", only: []string{}},
	{pkg: "internal/mail", only: []string{}},
	{pkg: "internal/llm", only: []string{"internal/llm"}},
	{pkg: "internal/config", only: []string{}},
	{pkg: "internal/compose", only: []string{"internal/mail"}},
	{pkg: "internal/smtpsend", only: []string{"internal/smtpsend"}},
	{pkg: "internal/api", forbidden: []string{"cmd", "tui", "imapsync", "internal/daemon"}},
	{pkg: "internal/daemon", forbidden: []string{"cmd", "tui", "internal/api"}},
}

func TestLayering(t *testing.T) {
	top := e2e.RepoRoot(t)
	checked := 0
	err := filepath.WalkDir(top, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		rel, _ := filepath.Rel(top, filepath.Dir(path))
		rel = filepath.ToSlash(rel)
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if !strings.HasPrefix(p, module) {
				continue
			}
			target := strings.TrimPrefix(p, module)
			if strings.HasPrefix(target, "cmd") {
				t.Errorf("%s imports %s: nothing imports cmd", rel, target)
			}
			for _, r := range rules {
				if rel != r.pkg && !strings.HasPrefix(rel, r.pkg+"/") {
					continue
				}
				checked++
				for _, f := range r.forbidden {
					if target == f || strings.HasPrefix(target, f+"/") {
						t.Errorf("%s imports %s, which its layer forbids", rel, target)
					}
				}
				if r.only != nil {
					ok := false
					for _, o := range r.only {
						if target == o || strings.HasPrefix(target, o+"/") {
							ok = true
						}
					}
					if !ok {
						t.Errorf("%s imports %s; it may only import %v from the project", rel, target, r.only)
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked == 0 {
		t.Fatal("no project import was checked: the rules match nothing")
	}
}
