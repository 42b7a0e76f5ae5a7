package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sync"
)

// treeFile is one Go file of the tree, parsed.
type treeFile struct {
	fset *token.FileSet
	f    *ast.File
	err  error
}

// treeFiles holds every file parseTreeFile parsed, by absolute path: five
// tests walk the tree (layering, the ARCHITECTURE.md imports and names,
// one home per rule, the outbox door), and each parsed every file again,
// most of the package's time under -race. The tests only read the trees.
var treeFiles sync.Map // path → func() treeFile

// parseTreeFile returns the Go file at path under top, parsed once for
// the package with its comments and without object resolution (no test
// here reads an identifier's Obj); its positions name the file by its
// slash path relative to top, as the checks report it.
func parseTreeFile(top, path string) (*token.FileSet, *ast.File, error) {
	load, _ := treeFiles.LoadOrStore(path, sync.OnceValue(func() treeFile {
		name := path
		if rel, err := filepath.Rel(top, path); err == nil {
			name = filepath.ToSlash(rel)
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return treeFile{err: err}
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, name, src, parser.ParseComments|parser.SkipObjectResolution)
		return treeFile{fset, f, err}
	}))
	tf := load.(func() treeFile)()
	return tf.fset, tf.f, tf.err
}
