package root

import (
	"testing"

	"github.com/mailagent/mailagent/internal/cmd/version"
	"github.com/mailagent/mailagent/internal/cmdutil"
	"github.com/mailagent/mailagent/internal/iostreams"
)

func TestVersion(t *testing.T) {
	t.Parallel()
	ios, _, out, _ := iostreams.Test()
	f := cmdutil.New(ios)
	var got *version.VersionOptions
	cmd := version.NewCmdVersion(f, func(o *version.VersionOptions) error { got = o; return nil })
	cmd.SetArgs(nil)
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if got == nil || got.Version != cmdutil.Version() || got.IO != ios {
		t.Fatalf("runF got %+v, want the factory's streams and cmdutil.Version()", got)
	}
	cmd = version.NewCmdVersion(f, nil)
	cmd.SetArgs([]string{"extra"})
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	if err := cmd.Execute(); err == nil {
		t.Fatal("version took an argument")
	}
	if err := version.Run(&version.VersionOptions{IO: ios, Version: "1.2.3 (abc)"}); err != nil {
		t.Fatal(err)
	}
	if out.String() != "mailagent 1.2.3 (abc)\n" {
		t.Fatalf("got %q, want %q", out.String(), "mailagent 1.2.3 (abc)\n")
	}
}
