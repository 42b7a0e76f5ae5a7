package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// newManCmd is the hidden `mailagent man DIR`: it writes one man page per
// command (mailagent.1, mailagent-queue-show.1…) from the same cobra tree
// the help comes from, so the pages cannot drift from the flags. The
// release build runs it (.goreleaser.yaml) and ships man/ in the archives.
func newManCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "man DIR",
		Short:  "Write the man pages into DIR (for packagers)",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		Example: `  mailagent man ./man
  man ./man/mailagent-queue.1`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return writeManPages(cmd.Root(), args[0])
		},
	}
}

func writeManPages(root *cobra.Command, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("man pages: %w", err)
	}
	root.DisableAutoGenTag = true // no date line that changes every build
	hdr := &doc.GenManHeader{Title: "MAILAGENT", Section: "1", Source: "mailagent " + versionString(), Manual: "mailagent manual"}
	if err := doc.GenManTree(root, hdr, dir); err != nil {
		return fmt.Errorf("man pages: %w", err)
	}
	return nil
}
