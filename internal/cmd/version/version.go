// Package version is `mailagent version`.
package version

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/mailagent/mailagent/internal/cmdutil"
	"github.com/mailagent/mailagent/internal/iostreams"
)

// VersionOptions is what `mailagent version` needs.
type VersionOptions struct {
	IO      *iostreams.IOStreams
	Version string
}

// NewCmdVersion is `mailagent version`; runF, when not nil, runs instead
// of the command (tests of the flag parsing).
func NewCmdVersion(f *cmdutil.Factory, runF func(*VersionOptions) error) *cobra.Command {
	opts := &VersionOptions{IO: f.IOStreams}
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.Version = cmdutil.Version()
			if runF != nil {
				return runF(opts)
			}
			return versionRun(opts)
		},
	}
}

func versionRun(opts *VersionOptions) error {
	_, err := fmt.Fprintln(opts.IO.Out, "mailagent", opts.Version)
	return err
}
