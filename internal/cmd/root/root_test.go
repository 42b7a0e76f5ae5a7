package root

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/mailagent/mailagent/internal/cmdutil"
	"github.com/mailagent/mailagent/internal/iostreams"
)

// TestMainExitCodesAndStreams: Main prints data on stdout, the final
// error once on stderr, and returns the README's exit codes; the groups
// Wire returns join the tree and get the same Factory.
func TestMainExitCodesAndStreams(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		args      []string
		code      int
		out, err  string
		wantWired bool
	}{
		{"version", []string{"version"}, cmdutil.ExitOK, "mailagent " + cmdutil.Version() + "\n", "", false},
		{"--version", []string{"--version"}, cmdutil.ExitOK, "mailagent " + cmdutil.Version() + "\n", "", false},
		{"misspelt", []string{"versoin"}, cmdutil.ExitUsage, "", "did you mean", false},
		{"extra argument", []string{"version", "x"}, cmdutil.ExitUsage, "", "see: mailagent version --help", false},
		{"bad flag", []string{"--nope"}, cmdutil.ExitUsage, "", "unknown flag: --nope", false},
		{"wired group", []string{"wired"}, cmdutil.ExitPartial, "", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ios, _, out, errOut := iostreams.Test()
			var wiredWith *cmdutil.Factory
			ran := false
			code := Main(tt.args, ios, func(f *cmdutil.Factory) []*cobra.Command {
				wiredWith = f
				return []*cobra.Command{{Use: "wired", Short: "a group from the wire", RunE: func(*cobra.Command, []string) error {
					ran = true
					return cmdutil.ErrPartial
				}}}
			})
			if code != tt.code {
				t.Fatalf("exit %d, want %d (stderr %q)", code, tt.code, errOut.String())
			}
			if tt.out != "" && out.String() != tt.out {
				t.Errorf("stdout %q, want %q", out.String(), tt.out)
			}
			if !strings.Contains(errOut.String(), tt.err) {
				t.Errorf("stderr %q, want it to contain %q", errOut.String(), tt.err)
			}
			if wiredWith == nil || wiredWith.IOStreams != ios {
				t.Errorf("wire got factory %v, want one over the given streams", wiredWith)
			}
			if ran != tt.wantWired {
				t.Errorf("wired command ran: %v, want %v", ran, tt.wantWired)
			}
		})
	}
}

// TestNewCmdRootRegistersGlobalFlagsIntoTheFactory: --config, --state-dir
// and -v land in the Factory every command reads.
func TestNewCmdRootRegistersGlobalFlagsIntoTheFactory(t *testing.T) {
	t.Parallel()
	ios, _, _, _ := iostreams.Test()
	f := cmdutil.New(ios)
	root := NewCmdRoot(f)
	root.SetArgs([]string{"--config", "/x/c.toml", "--state-dir", "/x/s", "-v", "version"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	if f.ConfigPath != "/x/c.toml" || f.StateDir != "/x/s" || !f.Verbose {
		t.Fatalf("factory got config %q state %q verbose %v", f.ConfigPath, f.StateDir, f.Verbose)
	}
}

// TestMainWiresTheServiceAndTheAppGroups: Main gives the Factory its
// application service before the groups are built (no package main
// needed for it), and the tree has triage, replay, watch and demo.
func TestMainWiresTheServiceAndTheAppGroups(t *testing.T) {
	t.Parallel()
	ios, _, _, errOut := iostreams.Test()
	var serviceSet bool
	var tree *cobra.Command
	code := Main([]string{"version"}, ios, func(f *cmdutil.Factory) []*cobra.Command {
		serviceSet = f.Service != nil
		tree = NewCmdRoot(f)
		return nil
	})
	if code != cmdutil.ExitOK {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	if !serviceSet {
		t.Error("the Factory had no Service when the groups were built")
	}
	for _, name := range []string{"triage", "replay", "watch", "demo"} {
		if c, _, err := tree.Find([]string{name}); err != nil || c.Name() != name {
			t.Errorf("%s: not in the tree (%v)", name, err)
		}
	}
}
