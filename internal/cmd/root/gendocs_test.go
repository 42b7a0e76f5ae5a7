package root

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/mailagent/mailagent/internal/cmd/man"
	"github.com/mailagent/mailagent/internal/cmdutil"
	"github.com/mailagent/mailagent/internal/iostreams"
)

// genDocsTree is cmd/gen-docs' tree: mailagent's, as --help shows it.
func genDocsTree() *cobra.Command { return NewCmdRoot(NewFactory(iostreams.System())) }

// TestManPagesOnePerCommand: gen-docs (man.GenDocs) writes one page per visible command
// of mailagent's tree, each with its name, synopsis and examples, plus
// mailagent.toml(5), and nothing else.
func TestManPagesOnePerCommand(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "man")
	var stderr strings.Builder
	if code := man.GenDocs(nil, &stderr, genDocsTree); code != cmdutil.ExitUsage || !strings.Contains(stderr.String(), "usage: gen-docs --man-page DIR") {
		t.Errorf("gen-docs without --man-page: exit %d, %q; want a usage error", code, stderr.String())
	}
	stderr.Reset()
	if code := man.GenDocs([]string{"--man-page", dir}, &stderr, genDocsTree); code != cmdutil.ExitOK {
		t.Fatalf("gen-docs --man-page: exit %d\n%s", code, stderr.String())
	}
	var want []string
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			walk(sub)
		}
		if !c.IsAvailableCommand() && c.HasParent() || c.IsAdditionalHelpTopicCommand() {
			return
		}
		want = append(want, strings.ReplaceAll(c.CommandPath(), " ", "-")+".1")
		page, err := os.ReadFile(filepath.Join(dir, want[len(want)-1]))
		if err != nil {
			t.Errorf("%s: %v", c.CommandPath(), err)
			return
		}
		s := string(page)
		if !strings.Contains(s, ".TH \"MAILAGENT\" \"1\"") || !strings.Contains(s, ".SH SYNOPSIS") {
			t.Errorf("%s: not a man page:\n%.300s", c.CommandPath(), s)
		}
		if c.Example != "" && !strings.Contains(s, ".SH EXAMPLE") {
			t.Errorf("%s: no EXAMPLE section", c.CommandPath())
		}
	}
	walk(genDocsTree())
	want = append(want, "mailagent.toml.5")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("pages %v, want %v", got, want)
	}
	for _, must := range []string{"mailagent.1", "mailagent-queue-approve.1", "mailagent-contacts-forget.1", "mailagent-demo.1", "mailagent.toml.5"} {
		if !slices.Contains(got, must) {
			t.Errorf("no %s", must)
		}
	}
	if len(got) < 20 {
		t.Errorf("%d pages, want one per command", len(got))
	}
}
