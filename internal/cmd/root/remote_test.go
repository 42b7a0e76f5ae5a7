package root

import (
	"context"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/mailagent/mailagent/internal/app/api"
	"github.com/mailagent/mailagent/internal/cmdutil"
	"github.com/mailagent/mailagent/internal/iostreams"
)

// TestRemoteFlag: --remote reaches the Factory's Service (a bad URL is a
// usage error before ssh or the local service run), and the local-only
// commands (the wired triage, serve) refuse it; without --remote the local
// service serves.
func TestRemoteFlag(t *testing.T) {
	t.Setenv(cmdutil.EnvRemote, "")
	tests := []struct {
		name      string
		args      []string
		code      int
		err       string
		wantLocal int
	}{
		{"status, bad remote", []string{"--remote", "ssh://-oProxyCommand=id", "status"}, cmdutil.ExitUsage, "bad remote", 0},
		{"status, local", []string{"status"}, cmdutil.ExitFailure, "local service", 1},
		{"triage refuses --remote", []string{"--remote", "ssh://box", "triage"}, cmdutil.ExitUsage, "does not take --remote", 0},
		{"serve refuses --remote", []string{"--remote", "ssh://box", "serve", "--stdio"}, cmdutil.ExitUsage, "does not take --remote", 0},
		{"--remote-command alone", []string{"--remote-command", "/opt/mailagent", "status"}, cmdutil.ExitUsage, "needs --remote", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ios, _, _, errOut := iostreams.Test()
			local, triaged := 0, false
			code := Main(tt.args, ios, func(f *cmdutil.Factory) []*cobra.Command {
				f.Service = func(context.Context, bool) (api.Service, func() error, error) {
					local++
					return nil, nil, errLocal
				}
				return []*cobra.Command{{Use: "triage", RunE: func(*cobra.Command, []string) error { triaged = true; return nil }}}
			})
			if code != tt.code || !strings.Contains(errOut.String(), tt.err) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, errOut.String(), tt.code, tt.err)
			}
			if local != tt.wantLocal || triaged {
				t.Errorf("the local service ran %d times (want %d), triage ran: %v", local, tt.wantLocal, triaged)
			}
		})
	}
}

var errLocal = &cmdutil.UserError{Code: cmdutil.ExitFailure, Err: errString("the local service")}

type errString string

func (e errString) Error() string { return string(e) }
