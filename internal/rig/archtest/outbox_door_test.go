package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mailagent/mailagent/internal/rig/e2e"
)

// Every outgoing mail has one door, the outbox (STYLE: "every side
// effect has one door"):
//   - an SMTP transaction (a call of a method named Send with the
//     outbox Mailer's or smtpsend.Sender's arguments) happens only in the
//     outbox's Deliver and in the Mailer it calls;
//   - every function that builds a store.OutboxRecord passes it through
//     the outbox's Schedule (directly, or the agent's schedule door)
//     before it can be written.

// sendAllowed are the files that may run an SMTP transaction: the
// outbox's Deliver, the daemon's Mailer it uses, and the digest
// Scheduler's Send hook (which calls the outbox).
var sendAllowed = []string{"agent/outbox/deliver.go", "internal/app/daemon/mailer.go", "internal/app/digest/schedule.go"}

// doorExempt are trees whose code is not mailagent's sending: the SMTP
// client itself, test and benchmark rigs, the demo's outside world.
var doorExempt = []string{"internal/smtpsend/", "internal/rig/", "internal/demo/", "store/"}

// outboxDoorViolations returns "file: what" for every bypass in the Go
// file src (named rel, a path relative to the module root).
func outboxDoorViolations(rel string, src []byte) ([]string, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, rel, src, 0)
	if err != nil {
		return nil, err
	}
	return outboxDoorFileViolations(rel, fset, f), nil
}

// outboxDoorFileViolations is outboxDoorViolations on a file already
// parsed.
func outboxDoorFileViolations(rel string, fset *token.FileSet, f *ast.File) []string {
	var bad []string
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Body == nil {
			continue
		}
		builds, schedules := false, false
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.CompositeLit:
				if isOutboxRecordType(x.Type) {
					builds = true
				}
			case *ast.CallExpr:
				name := calleeName(x.Fun)
				if name == "Schedule" || name == "schedule" {
					schedules = true
				}
				if name == "Send" && (len(x.Args) == 4 || len(x.Args) == 5) && !allowedSender(rel) {
					bad = append(bad, fset.Position(x.Pos()).String()+": an SMTP send outside the outbox")
				}
			}
			return true
		})
		if builds && !schedules {
			bad = append(bad, fset.Position(fn.Pos()).String()+": "+fn.Name.Name+" builds a store.OutboxRecord without outbox.Schedule")
		}
	}
	return bad
}

func isOutboxRecordType(e ast.Expr) bool {
	if u, ok := e.(*ast.UnaryExpr); ok {
		e = u.X
	}
	sel, ok := e.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	pkg, ok := sel.X.(*ast.Ident)
	return ok && pkg.Name == "store" && sel.Sel.Name == "OutboxRecord"
}

func calleeName(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.SelectorExpr:
		return x.Sel.Name
	case *ast.Ident:
		return x.Name
	}
	return ""
}

func allowedSender(rel string) bool {
	for _, a := range sendAllowed {
		if rel == a {
			return true
		}
	}
	return false
}

func TestEveryMailThroughTheOutbox(t *testing.T) {
	t.Parallel()
	root := e2e.RepoRoot(t)
	checked := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		for _, ex := range doorExempt {
			if strings.HasPrefix(rel, ex) {
				return nil
			}
		}
		fset, f, err := parseTreeFile(root, path)
		if err != nil {
			return err
		}
		bad := outboxDoorFileViolations(rel, fset, f)
		checked++
		for _, b := range bad {
			t.Error(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 100 {
		t.Fatalf("checked %d files; the walk missed the tree", checked)
	}
}

// TestOutboxDoorCheckSeesABypass is the positive control: the bypasses
// the red team found (unsubscribe mail sent straight through SMTP, a
// record written without Schedule) are reported.
func TestOutboxDoorCheckSeesABypass(t *testing.T) {
	t.Parallel()
	src := []byte(`package main
func unsubscribe(ctx context.Context, m mailer) error {
	return m.Send(ctx, "acct", "me@example.com", []string{"u@[127.0.0.1]"}, raw)
}
func record(st *store.Store) error {
	return st.PutOutbox(&store.OutboxRecord{ID: "ob_x", To: []string{"root@localhost"}})
}
func fine(st *store.Store) error {
	ob := &store.OutboxRecord{ID: "ob_y"}
	if err := outbox.Schedule(ob, now, 0); err != nil {
		return err
	}
	return st.PutOutbox(ob)
}
`)
	bad, err := outboxDoorViolations("cmd/mailagent/x.go", src)
	if err != nil {
		t.Fatal(err)
	}
	if len(bad) != 2 || !strings.Contains(bad[0], "SMTP send outside") || !strings.Contains(bad[1], "without outbox.Schedule") {
		t.Fatalf("violations: %q, want the send and the unscheduled record", bad)
	}
}
