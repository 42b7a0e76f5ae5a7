package root

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/mailagent/mailagent/internal/cmd/digest"
	"github.com/mailagent/mailagent/internal/cmdutil"
	"github.com/mailagent/mailagent/internal/iostreams"
)

// TestNewCmdDigestFlags: the flags reach runF with the factory's
// streams and seams; a --since that does not parse, an empty one, and
// --json with --send are usage errors that run nothing.
func TestNewCmdDigestFlags(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		args  []string
		usage bool
		since string
		send  bool
	}{
		{nil, false, "24h", false},
		{[]string{"--since", "7d", "--send"}, false, "7d", true},
		{[]string{"--since", "2026-01-02", "--json"}, false, "2026-01-02", false},
		{[]string{"--since", "soon"}, true, "", false},
		{[]string{"--since", ""}, true, "", false},
		{[]string{"--json", "--send"}, true, "", false},
	} {
		ios, _, _, _ := iostreams.Test()
		f := cmdutil.New(ios)
		var got *digest.DigestOptions
		cmd := digest.NewCmdDigest(f, func(_ context.Context, o *digest.DigestOptions) error { got = o; return nil })
		cmd.SetArgs(tt.args)
		cmd.SetOut(&bytes.Buffer{})
		cmd.SetErr(&bytes.Buffer{})
		err := cmd.Execute()
		var ue *cmdutil.UserError
		if tt.usage {
			if !errors.As(err, &ue) || ue.Code != cmdutil.ExitUsage || got != nil {
				t.Errorf("%v: err %v, runF ran %v; want a usage error and no run", tt.args, err, got != nil)
			}
			continue
		}
		if err != nil || got == nil || got.IO != ios || got.Since != tt.since || got.Send != tt.send || got.Now == nil || got.Config == nil || got.OpenStore == nil {
			t.Errorf("%v: err %v, options %+v", tt.args, err, got)
		}
	}
}
