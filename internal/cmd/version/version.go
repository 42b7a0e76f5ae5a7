// Package version is `mailagent version`. Its tests are in
// internal/cmd/root (version_test.go), whose test binary holds every
// command's tests.
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
			return Run(opts)
		},
	}
}

// Run prints "mailagent <opts.Version>" on opts.IO.Out.
func Run(opts *VersionOptions) error {
	_, err := fmt.Fprintln(opts.IO.Out, "mailagent", opts.Version)
	return err
}
