package archtest

// TestArchitectureImportLists holds the package table of
// docs/ARCHITECTURE.md to the tree.
//
// The table is every Markdown table whose header row is exactly
// "| package | purpose | imports |". Each row:
//
//   - package: one backquoted path relative to the module (`agent`,
//     `internal/mail`), or a group `p/*`.
//   - purpose: free text. It and the package cell hold at most maxCell
//     characters, so the table stays readable; the imports cell is as
//     long as the package's imports (a composition root imports much).
//   - imports: the package's mailagent-internal imports, as a
//     comma-separated list of backquoted paths in any order, or "—" for
//     none. Nothing else may stand in the cell: it is read by this test.
//
// A package is a directory holding .go files (skipping testdata and
// names beginning with "." or "_"), as `go list ./...` sees them. Its
// imports are the module's packages imported by its non-test files, all
// build constraints included (a file for another OS counts) except
// `//go:build ignore`; a package importing none (a test-only package
// too) has "—".
//
// A group `p/*` covers every package strictly below p (at any depth) that
// has no row of its own and no longer group covering it; its imports cell
// is the union of the imports of every package it covers (imports of one
// covered package by another included). A group that covers nothing is
// an error, like a row naming a package that does not exist.

import (
	"fmt"
	"go/ast"
	"go/build/constraint"
	"go/parser"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/mailagent/mailagent/internal/rig/e2e"
)

// maxCell is the longest cell the table may hold, in characters.
const maxCell = 200

// archRow is one row of the package table.
type archRow struct {
	line    int      // 1-based line in the Markdown file
	pkg     string   // "agent", or "internal/cmd/*" for a group
	purpose string   // the purpose cell, as written
	imports []string // sorted
}

// group reports whether the row covers a set of packages, and its prefix.
func (r archRow) group() (prefix string, ok bool) {
	return strings.CutSuffix(r.pkg, "/*")
}

var backquoted = regexp.MustCompile("^`([^`]+)`$")

// splitCells splits a Markdown table line into its trimmed cells.
func splitCells(line string) []string {
	line = strings.TrimSpace(line)
	line = strings.TrimPrefix(line, "|")
	line = strings.TrimSuffix(line, "|")
	cells := strings.Split(line, "|")
	for i := range cells {
		cells[i] = strings.TrimSpace(cells[i])
	}
	return cells
}

// parseArchTable reads the package tables of an ARCHITECTURE.md. A
// malformed row is a problem, never skipped.
func parseArchTable(md string) (rows []archRow, problems []string) {
	lines := strings.Split(md, "\n")
	tables := 0
	for i := 0; i < len(lines); i++ {
		h := splitCells(lines[i])
		if !strings.HasPrefix(strings.TrimSpace(lines[i]), "|") || !slices.Equal(h, []string{"package", "purpose", "imports"}) {
			continue
		}
		tables++
		i += 2 // the header and its |---| line
		for ; i < len(lines) && strings.HasPrefix(strings.TrimSpace(lines[i]), "|"); i++ {
			row, err := parseArchRow(lines[i])
			if err != nil {
				problems = append(problems, fmt.Sprintf("ARCHITECTURE.md:%d: %v", i+1, err))
				continue
			}
			row.line = i + 1
			rows = append(rows, row)
		}
	}
	if tables == 0 {
		problems = append(problems, `no package table: want a Markdown table with the header "| package | purpose | imports |"`)
	}
	return rows, problems
}

func parseArchRow(line string) (archRow, error) {
	cells := splitCells(line)
	if len(cells) != 3 {
		return archRow{}, fmt.Errorf("row has %d cells, want 3 (package, purpose, imports): %q", len(cells), line)
	}
	for _, c := range cells[:2] { // the imports cell is data: as long as the imports are
		if n := len([]rune(c)); n > maxCell {
			return archRow{}, fmt.Errorf("a cell of %d characters (at most %d): %.60q…", n, maxCell, c)
		}
	}
	m := backquoted.FindStringSubmatch(cells[0])
	if m == nil {
		return archRow{}, fmt.Errorf("package cell %q: want one backquoted path, e.g. `internal/mail` or `internal/cmd/*`", cells[0])
	}
	row := archRow{pkg: m[1], purpose: cells[1]}
	if cells[2] == "—" {
		return row, nil
	}
	for _, part := range strings.Split(cells[2], ",") {
		m := backquoted.FindStringSubmatch(strings.TrimSpace(part))
		if m == nil {
			return archRow{}, fmt.Errorf("imports cell of %s: %q is not a backquoted path (the cell is a comma-separated list of `path`, or — for none)", row.pkg, strings.TrimSpace(part))
		}
		row.imports = append(row.imports, m[1])
	}
	sort.Strings(row.imports)
	if c := slices.Compact(slices.Clone(row.imports)); len(c) != len(row.imports) {
		return archRow{}, fmt.Errorf("imports cell of %s names a package twice", row.pkg)
	}
	return row, nil
}

// treeImports returns every package of the tree under top, each with its
// sorted mailagent-internal imports from non-test files.
func treeImports(top string) (map[string][]string, error) {
	pkgs := map[string]map[string]bool{}
	err := walkGoFiles(top, func(path string, test bool) error {
		rel, err := filepath.Rel(top, filepath.Dir(path))
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if pkgs[rel] == nil {
			pkgs[rel] = map[string]bool{}
		}
		if test {
			return nil
		}
		_, f, err := parseTreeFile(top, path)
		if err != nil {
			// Only the imports and the build constraints matter here: a
			// file whose body does not parse is read as far as them.
			if f, err = parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly|parser.ParseComments); err != nil {
				return err
			}
		}
		if ignoredFile(f.Comments, f.Package) {
			return nil
		}
		for _, imp := range f.Imports {
			p, err := strconv.Unquote(imp.Path.Value)
			if err != nil {
				return fmt.Errorf("%s: import %s: %w", path, imp.Path.Value, err)
			}
			if target, ok := strings.CutPrefix(p, module); ok && target != rel {
				pkgs[rel][target] = true
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	for p, set := range pkgs {
		imports := []string{}
		for imp := range set {
			imports = append(imports, imp)
		}
		sort.Strings(imports)
		out[p] = imports
	}
	return out, nil
}

// ignoredFile reports whether a file's build constraint is `ignore` (a
// generator or an example kept out of every build).
func ignoredFile(comments []*ast.CommentGroup, pkgPos token.Pos) bool {
	for _, g := range comments {
		if g.Pos() >= pkgPos {
			break
		}
		for _, c := range g.List {
			if !constraint.IsGoBuild(c.Text) {
				continue
			}
			expr, err := constraint.Parse(c.Text)
			if err != nil {
				continue
			}
			if tag, ok := expr.(*constraint.TagExpr); ok && tag.Tag == "ignore" {
				return true
			}
		}
	}
	return false
}

// formatImports renders an imports cell as the table wants it, sorted.
func formatImports(imports []string) string {
	if len(imports) == 0 {
		return "—"
	}
	parts := make([]string, len(imports))
	for i, p := range slices.Sorted(slices.Values(imports)) {
		parts[i] = "`" + p + "`"
	}
	return strings.Join(parts, ", ")
}

// diffImports returns what want has that got lacks (missing from the
// row) and what got has that want lacks (extra in the row).
func diffImports(got, want []string) (missing, extra []string) {
	for _, w := range want {
		if !slices.Contains(got, w) {
			missing = append(missing, w)
		}
	}
	for _, g := range got {
		if !slices.Contains(want, g) {
			extra = append(extra, g)
		}
	}
	return missing, extra
}

// coveringRow returns the row that describes pkg: its own row, else the
// group with the longest prefix that holds it; -1 when none does.
func coveringRow(rows []archRow, pkg string) int {
	best, bestLen := -1, -1
	for i, r := range rows {
		if r.pkg == pkg {
			return i
		}
		if prefix, ok := r.group(); ok && strings.HasPrefix(pkg, prefix+"/") && len(prefix) > bestLen {
			best, bestLen = i, len(prefix)
		}
	}
	return best
}

// unionImports returns the sorted union of the imports of pkgs.
func unionImports(tree map[string][]string, pkgs []string) []string {
	set := map[string]bool{}
	for _, p := range pkgs {
		for _, imp := range tree[p] {
			set[imp] = true
		}
	}
	out := make([]string, 0, len(set))
	for imp := range set {
		out = append(out, imp)
	}
	sort.Strings(out)
	return out
}

// checkArchTable compares the table's rows with the tree's packages. Each
// problem names the package and says exactly what the row should read.
func checkArchTable(rows []archRow, tree map[string][]string) []string {
	var problems []string
	seen := map[string]int{}
	for _, r := range rows {
		if prev, dup := seen[r.pkg]; dup {
			problems = append(problems, fmt.Sprintf("ARCHITECTURE.md:%d: `%s` has a second row (first at line %d)", r.line, r.pkg, prev))
		}
		seen[r.pkg] = r.line
	}

	// Which packages each row covers, and the packages no row covers.
	covered := make([][]string, len(rows))
	rowless := map[string][]string{} // parent directory → its packages with no row
	pkgs := make([]string, 0, len(tree))
	for p := range tree {
		pkgs = append(pkgs, p)
	}
	sort.Strings(pkgs)
	for _, p := range pkgs {
		i := coveringRow(rows, p)
		if i < 0 {
			problems = append(problems, fmt.Sprintf("package %s has no row in docs/ARCHITECTURE.md's package table; add:\n\t| `%s` | (one line: what it owns) | %s |", p, p, formatImports(tree[p])))
			if dir := path.Dir(p); strings.Contains(dir, "/") {
				rowless[dir] = append(rowless[dir], p)
			}
			continue
		}
		covered[i] = append(covered[i], p)
	}
	// Several new packages side by side may share one group row instead.
	dirs := make([]string, 0, len(rowless))
	for dir := range rowless {
		dirs = append(dirs, dir)
	}
	sort.Strings(dirs)
	for _, dir := range dirs {
		if len(rowless[dir]) < 2 {
			continue
		}
		problems = append(problems, fmt.Sprintf("or, for %s together, one group row:\n\t| `%s/*` | (one line: what they own) | %s |",
			strings.Join(rowless[dir], ", "), dir, formatImports(unionImports(tree, rowless[dir]))))
	}

	for i, r := range rows {
		if len(covered[i]) == 0 {
			what := "a package that does not exist"
			if _, ok := r.group(); ok {
				what = "a group that covers no package without a row of its own"
			}
			problems = append(problems, fmt.Sprintf("ARCHITECTURE.md:%d: `%s` is %s: remove the row or fix its path", r.line, r.pkg, what))
			continue
		}
		want := unionImports(tree, covered[i])
		missing, extra := diffImports(r.imports, want)
		if len(missing) == 0 && len(extra) == 0 {
			continue
		}
		var why []string
		if len(missing) > 0 {
			why = append(why, "missing "+formatImports(missing))
		}
		if len(extra) > 0 {
			why = append(why, "extra "+formatImports(extra)+" (not imported by its non-test files)")
		}
		scope := ""
		if _, ok := r.group(); ok {
			scope = fmt.Sprintf(" (the union over %s; a package may have a row of its own instead)", strings.Join(covered[i], ", "))
		}
		problems = append(problems, fmt.Sprintf("ARCHITECTURE.md:%d: `%s` imports: %s; the row should read:\n\t| `%s` | %s | %s |%s",
			r.line, r.pkg, strings.Join(why, "; "), r.pkg, r.purpose, formatImports(want), scope))
	}
	return problems
}

func readArchitecture(t *testing.T, top string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(top, "docs", "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestArchitectureImportLists: every package of the tree has a row in
// docs/ARCHITECTURE.md's package table whose imports are exactly its real
// mailagent-internal imports, and every row names a real package.
func TestArchitectureImportLists(t *testing.T) {
	t.Parallel()
	top := e2e.RepoRoot(t)
	tree, err := treeImports(top)
	if err != nil {
		t.Fatal(err)
	}
	if len(tree) < 30 || tree["agent"] == nil || tree["store"] == nil {
		t.Fatalf("found %d packages (agent: %v, store: %v): the walk is broken", len(tree), tree["agent"] != nil, tree["store"] != nil)
	}
	rows, problems := parseArchTable(readArchitecture(t, top))
	problems = append(problems, checkArchTable(rows, tree)...)
	for _, p := range problems {
		t.Error(p)
	}
	if len(rows) < 20 {
		t.Errorf("parsed %d rows: the table is missing or unreadable", len(rows))
	}
}

// TestArchitectureTableCatches is the positive control: the same checker,
// fed a table with one wrong import (and the other mistakes a stale table
// makes), must fail, naming the package and the row to write.
func TestArchitectureTableCatches(t *testing.T) {
	t.Parallel()
	tree := map[string][]string{
		"agent":                    {"internal/mail", "store"},
		"store":                    {"internal/mail"},
		"internal/mail":            {},
		"internal/cmd/queue":       {"agent", "internal/cmd/shared"},
		"internal/cmd/shared":      {"store"},
		"internal/cmd/shared/deep": {"internal/mail"},
	}
	good := strings.Join([]string{
		"# x", "",
		"| package | purpose | imports |",
		"|---|---|---|",
		"| `agent` | decisions | `store`, `internal/mail` |",
		"| `store` | the file | `internal/mail` |",
		"| `internal/mail` | parsing | — |",
		"| `internal/cmd/*` | commands | `agent`, `internal/cmd/shared`, `internal/mail`, `store` |",
	}, "\n")
	tests := []struct {
		name   string
		md     string
		tree   map[string][]string
		wantIn []string // each must appear in one problem; none means no problem
	}{
		{name: "a true table", md: good, tree: tree},
		{
			name:   "one wrong import",
			md:     strings.Replace(good, "| decisions | `store`, `internal/mail` |", "| decisions | `store`, `internal/llm` |", 1),
			tree:   tree,
			wantIn: []string{"`agent` imports: missing `internal/mail`; extra `internal/llm`", "| `agent` | decisions | `internal/mail`, `store` |"},
		},
		{
			name:   "an import left out",
			md:     strings.Replace(good, "| the file | `internal/mail` |", "| the file | — |", 1),
			tree:   tree,
			wantIn: []string{"`store` imports: missing `internal/mail`"},
		},
		{
			name:   "a package with no row",
			md:     strings.Replace(good, "| `store` | the file | `internal/mail` |\n", "", 1),
			tree:   tree,
			wantIn: []string{"package store has no row", "| `store` | (one line: what it owns) | `internal/mail` |"},
		},
		{
			name:   "a row for no package",
			md:     good + "\n| `internal/gone` | removed | — |",
			tree:   tree,
			wantIn: []string{"`internal/gone` is a package that does not exist"},
		},
		{
			name:   "a group missing a member's import",
			md:     strings.Replace(good, "`agent`, `internal/cmd/shared`, `internal/mail`, `store` |", "`agent`, `internal/cmd/shared`, `store` |", 1),
			tree:   tree,
			wantIn: []string{"`internal/cmd/*` imports: missing `internal/mail`", "(the union over internal/cmd/queue, internal/cmd/shared, internal/cmd/shared/deep;"},
		},
		{
			name: "a package's own row takes it out of its group",
			md: good + "\n| `internal/cmd/shared/deep` | deep | `internal/mail` |" +
				"\n| `internal/cmd/shared` | shared | `store` |",
			tree:   tree,
			wantIn: []string{"`internal/cmd/*` imports: extra `internal/mail`, `store`"},
		},
		{
			name:   "a longer group wins",
			md:     good + "\n| `internal/cmd/shared/*` | deep ones | `internal/mail` |",
			tree:   tree,
			wantIn: []string{"`internal/cmd/*` imports: extra `internal/mail` (not"},
		},
		{
			name:   "a group that covers nothing",
			md:     good + "\n| `internal/iostreams/*` | none yet | — |",
			tree:   tree,
			wantIn: []string{"`internal/iostreams/*` is a group that covers no package"},
		},
		{
			name:   "a new package in a group",
			md:     good,
			tree:   withPkg(tree, "internal/cmd/auth", []string{"internal/llm"}),
			wantIn: []string{"`internal/cmd/*` imports: missing `internal/llm`"},
		},
		{
			name: "new packages side by side",
			md:   good,
			tree: withPkg(withPkg(tree, "internal/app/actions", []string{"agent"}), "internal/app/review", []string{"store", "agent"}),
			wantIn: []string{
				"| `internal/app/actions` | (one line: what it owns) | `agent` |",
				"| `internal/app/review` | (one line: what it owns) | `agent`, `store` |",
				"for internal/app/actions, internal/app/review together, one group row:\n\t| `internal/app/*` | (one line: what they own) | `agent`, `store` |",
			},
		},
		{
			name:   "a duplicate row",
			md:     good + "\n| `store` | again | `internal/mail` |",
			tree:   tree,
			wantIn: []string{"`store` has a second row"},
		},
		{
			name:   "prose in the imports cell",
			md:     strings.Replace(good, "| the file | `internal/mail` |", "| the file | `internal/mail` (types) |", 1),
			tree:   tree,
			wantIn: []string{"is not a backquoted path"},
		},
		{
			name:   "a cell too long",
			md:     strings.Replace(good, "| the file |", "| "+strings.Repeat("x", maxCell+1)+" |", 1),
			tree:   tree,
			wantIn: []string{"a cell of 201 characters"},
		},
		{
			name:   "no table",
			md:     "# nothing here\n| pkg | what |\n|---|---|\n| `agent` | x |",
			tree:   tree,
			wantIn: []string{"no package table"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rows, problems := parseArchTable(tt.md)
			problems = append(problems, checkArchTable(rows, tt.tree)...)
			if len(tt.wantIn) == 0 && len(problems) > 0 {
				t.Fatalf("got problems %q, want none", problems)
			}
			if len(tt.wantIn) > 0 && len(problems) == 0 {
				t.Fatalf("got no problem, want one containing %q", tt.wantIn)
			}
			all := strings.Join(problems, "\n")
			for _, w := range tt.wantIn {
				if !strings.Contains(all, w) {
					t.Errorf("problems %q: want one containing %q", all, w)
				}
			}
		})
	}
}

func withPkg(tree map[string][]string, pkg string, imports []string) map[string][]string {
	out := map[string][]string{pkg: imports}
	for k, v := range tree {
		out[k] = v
	}
	return out
}

// TestArchitectureRealTableCatches runs the checker on the real table with
// one import taken out of the agent row: the real document must be read
// (not skipped) for the check to mean anything.
func TestArchitectureRealTableCatches(t *testing.T) {
	t.Parallel()
	top := e2e.RepoRoot(t)
	tree, err := treeImports(top)
	if err != nil {
		t.Fatal(err)
	}
	rows, problems := parseArchTable(readArchitecture(t, top))
	if len(problems) > 0 {
		t.Fatalf("the real table does not parse: %q", problems)
	}
	i := slices.IndexFunc(rows, func(r archRow) bool { return r.pkg == "agent" })
	if i < 0 || !slices.Contains(rows[i].imports, "store") {
		t.Fatalf("the real table has no agent row importing store (rows: %d)", len(rows))
	}
	rows[i].imports = slices.DeleteFunc(slices.Clone(rows[i].imports), func(p string) bool { return p == "store" })
	got := strings.Join(checkArchTable(rows, tree), "\n")
	if want := "`agent` imports: missing `store`"; !strings.Contains(got, want) {
		t.Fatalf("with store taken out of agent's row: got problems %q, want one containing %q", got, want)
	}
}
