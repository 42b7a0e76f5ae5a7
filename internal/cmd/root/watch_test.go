package root

import (
	"context"
	"testing"

	"github.com/mailagent/mailagent/internal/cmd/watch"
	"github.com/mailagent/mailagent/internal/cmdutil"
	"github.com/mailagent/mailagent/internal/iostreams"
)

// TestNewCmdWatchFlags: the flags land in the Options runF gets; Demo
// has no flag.
func TestNewCmdWatchFlags(t *testing.T) {
	t.Parallel()
	ios, _, _, _ := iostreams.Test()
	f := cmdutil.New(ios)
	var got *watch.WatchOptions
	cmd := watch.NewCmdWatch(f, func(_ context.Context, o *watch.WatchOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"--account", "work", "--once"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	want := watch.WatchOptions{IO: ios, Factory: f, Account: "work", Once: true}
	if got == nil || *got != want {
		t.Fatalf("runF got %+v, want %+v", got, want)
	}
	if cmd.Flags().Lookup("demo") != nil {
		t.Error("watch has a --demo flag")
	}
}

// TestProgressWantedOnlyOnATerminal: watch talks on stderr only when it
// is a terminal and no service manager (systemd, launchd) runs it.
func TestProgressWantedOnlyOnATerminal(t *testing.T) {
	for _, tc := range []struct {
		name     string
		tty      bool
		env      string
		want     bool
		envValue string
	}{
		{"terminal", true, "", true, ""},
		{"pipe", false, "", false, ""},
		{"systemd", true, "INVOCATION_ID", false, "0123abcd"},
		{"launchd", true, "LAUNCHD", false, "1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("INVOCATION_ID", "")
			t.Setenv("LAUNCHD", "")
			t.Setenv("TERM", "xterm")
			if tc.env != "" {
				t.Setenv(tc.env, tc.envValue)
			}
			ios, _, _, _ := iostreams.Test()
			ios.SetStderrTTY(tc.tty)
			if got := watch.ProgressWanted(ios); got != tc.want {
				t.Errorf("ProgressWanted = %v, want %v", got, tc.want)
			}
		})
	}
}
