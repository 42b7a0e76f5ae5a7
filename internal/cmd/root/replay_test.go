package root

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mailagent/mailagent/internal/cmd/replay"
	"github.com/mailagent/mailagent/internal/cmdutil"
	"github.com/mailagent/mailagent/internal/config"
	"github.com/mailagent/mailagent/internal/iostreams"
)

func TestReplayPolicyFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	base := config.Policy{Mode: "review", MinConfidence: 0.8, MaxAutoPerDay: 20}
	for _, tc := range []struct {
		name, body string
		ok         bool
		min        float64
	}{
		{"table", "[policy]\nmin_confidence = 0.7\n", true, 0.7},
		{"top level", "min_confidence = 0.65\n", true, 0.65},
		{"a whole config file", "state_dir = \"/x\"\n[llm]\nmodel = \"m\"\n[policy]\nmin_confidence = 0.9\n", true, 0.9},
		{"unknown policy key", "[policy]\nmin_confidense = 0.7\n", false, 0},
		{"unknown top-level key", "min_confidense = 0.7\n", false, 0},
		{"out of range", "min_confidence = 7\n", false, 0},
		{"not toml", "min_confidence = \n", false, 0},
	} {
		path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_")+".toml")
		if err := os.WriteFile(path, []byte(tc.body), 0o600); err != nil {
			t.Fatal(err)
		}
		p, err := replay.PolicyOf(base, path)
		if (err == nil) != tc.ok {
			t.Errorf("%s: err %v, want ok %v", tc.name, err, tc.ok)
			continue
		}
		if tc.ok && (p.MinConfidence != tc.min || p.Mode != "auto" || p.MaxAutoPerDay != 20) {
			t.Errorf("%s: got %+v, want min_confidence %.2f, mode auto, the rest kept", tc.name, p, tc.min)
		}
	}
}

// TestNewCmdReplayFlags: the flags land in the Options runF gets, --since
// defaulting to 90 days.
func TestNewCmdReplayFlags(t *testing.T) {
	t.Parallel()
	ios, _, _, _ := iostreams.Test()
	f := cmdutil.New(ios)
	var got *replay.ReplayOptions
	cmd := replay.NewCmdReplay(f, func(_ context.Context, o *replay.ReplayOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"--account", "work", "--limit", "500", "--drafts", "--policy", "p.toml", "--json", "--html", "r.html", "--fresh"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	want := replay.ReplayOptions{IO: ios, Factory: f, Account: "work", Since: "90d", Limit: 500, Drafts: true, Policy: "p.toml",
		JSON: true, HTML: "r.html", Fresh: true}
	if got == nil || *got != want {
		t.Fatalf("runF got %+v, want %+v", got, want)
	}
}
