package root

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/mailagent/mailagent/internal/cmd/man"
	"github.com/mailagent/mailagent/internal/config"
)

// TestManPagesHaveTheMissingSections: mailagent(1) has EXIT STATUS with
// every exit code the README's table lists, ENVIRONMENT and FILES; the
// config file's page holds an example that parses as a configuration;
// man(1) renders both when it is installed.
func TestManPagesHaveTheMissingSections(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "man")
	root := &cobra.Command{Use: "mailagent", Short: "root"}
	root.AddCommand(&cobra.Command{Use: "queue", Short: "the queue", Run: func(*cobra.Command, []string) {}})
	if err := man.Write(root, dir); err != nil {
		t.Fatalf("man: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "mailagent-queue.1")); err != nil {
		t.Errorf("no page for a subcommand: %v", err)
	}
	top, err := os.ReadFile(filepath.Join(dir, "mailagent.1"))
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("../../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	listed := regexp.MustCompile(`(?m)^\| (\d+) \| `).FindAllStringSubmatch(string(readme), -1)
	exitStatus := string(top)
	if i := strings.Index(exitStatus, ".SH EXIT STATUS\n"); i >= 0 {
		exitStatus = exitStatus[i:]
		if j := strings.Index(exitStatus[1:], "\n.SH "); j >= 0 {
			exitStatus = exitStatus[:j+2]
		}
	} else {
		exitStatus = ""
	}
	paged := regexp.MustCompile(`(?m)^\.TP\n\.B \d+\n`).FindAllString(exitStatus, -1)
	if len(listed) != len(paged) {
		t.Errorf("README lists %d exit codes, the man page %d", len(listed), len(paged))
	}
	for _, m := range listed {
		if !strings.Contains(string(top), ".TP\n.B "+m[1]+"\n") {
			t.Errorf("mailagent.1: EXIT STATUS lacks %s", m[1])
		}
	}
	for _, sec := range []string{".SH EXIT STATUS", ".SH ENVIRONMENT", ".SH FILES", "MAILAGENT_CONFIG", "mailagent.db"} {
		if !strings.Contains(string(top), sec) {
			t.Errorf("mailagent.1 lacks %q", sec)
		}
	}
	conf, err := os.ReadFile(filepath.Join(dir, "mailagent.toml.5"))
	if err != nil {
		t.Fatal(err)
	}
	ex := string(conf)
	start, end := strings.Index(ex, ".nf\n"), strings.Index(ex, ".fi\n")
	if start < 0 || end < start {
		t.Fatalf("mailagent.toml.5 has no example:\n%s", ex)
	}
	toml := strings.NewReplacer(`\-`, "-", `\e`, `\`, `\&`, "").Replace(ex[start+4 : end])
	if _, err := config.Parse([]byte(toml), "/x/config.toml", 0o600); err != nil {
		t.Errorf("the page's example is not a valid configuration: %v\n%s", err, toml)
	}
	if _, err := exec.LookPath("man"); err == nil {
		for _, p := range []string{"mailagent.1", "mailagent.toml.5"} {
			out, err := exec.Command("man", "-l", "-Tutf8", filepath.Join(dir, p)).CombinedOutput()
			plain := regexp.MustCompile(".\x08").ReplaceAllString(string(out), "") // bold is overstruck
			if err != nil || !strings.Contains(plain, "SEE ALSO") {
				t.Errorf("man -l %s: %v\n%.500s", p, err, out)
			}
		}
	}
}
