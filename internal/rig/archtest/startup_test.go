package archtest

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/mailagent/mailagent/internal/rig/e2e"
)

// startupExcluded are packages the product binary must not link: each
// runs initialisers on every start of mailagent (every shell completion
// too) for work only a build step does. BENCHMARKS.md §9 measures them.
var startupExcluded = []string{
	"github.com/spf13/cobra/doc",         // man pages: cmd/gen-docs writes them
	"github.com/cpuguy83/go-md2man/v2",   // cobra/doc's Markdown to roff
	"github.com/russross/blackfriday/v2", // md2man's Markdown parser (0.5 ms of init)
	"go.opencensus.io",                   // the old auth's telemetry (1 ms of init)
}

// TestProductLinksNoDocGenerator: `go list -deps ./cmd/mailagent` names
// none of startupExcluded, while cmd/gen-docs, the control, links
// cobra/doc (so the check reads a real dependency list).
func TestProductLinksNoDocGenerator(t *testing.T) {
	t.Parallel()
	deps := func(pkg string) string {
		cmd := exec.Command("go", "list", "-deps", pkg)
		cmd.Dir = e2e.RepoRoot(t)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		return "\n" + string(out)
	}
	product := deps("./cmd/mailagent")
	for _, p := range startupExcluded {
		if strings.Contains(product, "\n"+p+"\n") || strings.Contains(product, "\n"+p+"/") {
			t.Errorf("cmd/mailagent links %s", p)
		}
	}
	if !strings.Contains(deps("./cmd/gen-docs"), "\ngithub.com/spf13/cobra/doc\n") {
		t.Error("control: cmd/gen-docs does not link cobra/doc; the dependency list is not what this test thinks")
	}
}
