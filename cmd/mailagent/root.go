package main

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/mailagent/mailagent/internal/cmd/root"
	"github.com/mailagent/mailagent/internal/cmdutil"
	"github.com/mailagent/mailagent/internal/iostreams"
)

// Main runs the command line over the three streams and returns the
// process exit code, as main.go runs it (the in-process tests).
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return root.Main(args, iostreams.New(stdin, stdout, stderr), wireLegacy)
}

// wireLegacy returns the command groups still in package main (issue
// 27's move: init and doctor).
func wireLegacy(cf *cmdutil.Factory) []*cobra.Command { return wrapFactory(cf).commands() }

// newRootCmd is the whole command tree over f.
func newRootCmd(f *Factory) *cobra.Command { return root.NewCmdRoot(f.Factory, f.commands()...) }

// commands are the command groups still in package main.
func (f *Factory) commands() []*cobra.Command {
	return []*cobra.Command{
		newDoctorCmd(f, nil),
		newInitCmd(f, nil),
	}
}
