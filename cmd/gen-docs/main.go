// Command gen-docs writes mailagent's man pages: mailagent(1), one page per
// command, and mailagent.toml(5), from the same cobra tree as --help. The
// release build runs it (packaging/prepare.sh); after `go install`, run
//
//	go run github.com/mailagent/mailagent/cmd/gen-docs@latest --man-page DIR
//
// It is a program of its own, as in gh, so that cobra/doc and its Markdown
// renderer are not linked into mailagent, whose every start (each shell
// completion too) would run their initialisers.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/mailagent/mailagent/internal/cmd/man"
	"github.com/mailagent/mailagent/internal/cmd/root"
	"github.com/mailagent/mailagent/internal/cmdutil"
	"github.com/mailagent/mailagent/internal/iostreams"
)

func main() { os.Exit(run(os.Args[1:], os.Stderr)) }

// run is gen-docs over args; it returns the exit code (mailagent's codes).
func run(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("gen-docs", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("man-page", "", "write the man pages into `DIR` (created when missing)")
	if err := fs.Parse(args); err != nil || *dir == "" || fs.NArg() != 0 {
		fmt.Fprintln(stderr, "usage: gen-docs --man-page DIR")
		return cmdutil.ExitUsage
	}
	if err := man.Write(tree(), *dir); err != nil {
		fmt.Fprintln(stderr, "gen-docs:", err)
		return cmdutil.ExitFailure
	}
	return cmdutil.ExitOK
}

// tree is mailagent's command tree, as `mailagent --help` shows it.
func tree() *cobra.Command { return root.NewCmdRoot(root.NewFactory(iostreams.System())) }
