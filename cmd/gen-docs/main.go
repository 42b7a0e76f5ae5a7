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
	"os"

	"github.com/spf13/cobra"

	"github.com/mailagent/mailagent/internal/cmd/man"
	"github.com/mailagent/mailagent/internal/cmd/root"
	"github.com/mailagent/mailagent/internal/iostreams"
)

// main is man.GenDocs over mailagent's command tree, as `mailagent --help`
// shows it (its test, TestManPagesOnePerCommand, is in internal/cmd/root).
func main() { os.Exit(man.GenDocs(os.Args[1:], os.Stderr, tree)) }

func tree() *cobra.Command { return root.NewCmdRoot(root.NewFactory(iostreams.System())) }
