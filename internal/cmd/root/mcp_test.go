package root

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/mailagent/mailagent/internal/cmd/mcp"
	"github.com/mailagent/mailagent/internal/cmdutil"
	"github.com/mailagent/mailagent/internal/config"
	"github.com/mailagent/mailagent/internal/iostreams"
)

// TestMCPSwitchedOffIsAUsageErrorWithTheFix: [mcp] enabled = false stops
// the server before it reads anything, with one line naming the fix.
func TestMCPSwitchedOffIsAUsageErrorWithTheFix(t *testing.T) {
	t.Parallel()
	ios, in, out, _ := iostreams.Test()
	in.WriteString(`{"jsonrpc":"2.0","id":1,"method":"initialize"}` + "\n")
	opts := &mcp.MCPOptions{IO: ios, Config: func() (*config.Config, error) {
		return &config.Config{File: "/x/config.toml"}, nil
	}}
	err := mcp.Run(context.Background(), opts)
	var ue *cmdutil.UserError
	if !errors.As(err, &ue) || ue.Code != cmdutil.ExitUsage || !strings.Contains(err.Error(), "set [mcp] enabled = true") {
		t.Fatalf("got %v, want a usage error naming the fix", err)
	}
	if out.Len() != 0 {
		t.Fatalf("wrote %q on stdout", out.String())
	}
}

func TestNewCmdMCPTakesNoArguments(t *testing.T) {
	t.Parallel()
	ios, _, _, _ := iostreams.Test()
	ran := false
	cmd := mcp.NewCmdMCP(cmdutil.New(ios), func(_ context.Context, o *mcp.MCPOptions) error { ran = o.IO == ios; return nil })
	cmd.SetArgs([]string{"x"})
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	if err := cmd.Execute(); err == nil {
		t.Fatal("mcp took an argument")
	}
	cmd.SetArgs(nil)
	if err := cmd.Execute(); err != nil || !ran {
		t.Fatalf("got %v, ran %v", err, ran)
	}
}
