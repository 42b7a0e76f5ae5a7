package root

import (
	"context"
	"testing"

	"github.com/mailagent/mailagent/internal/cmd/explain"
	"github.com/mailagent/mailagent/internal/cmdutil"
	"github.com/mailagent/mailagent/internal/iostreams"
)

func TestNewCmdExplainFlags(t *testing.T) {
	t.Parallel()
	ios, _, _, _ := iostreams.Test()
	var got *explain.ExplainOptions
	cmd := explain.NewCmdExplain(cmdutil.New(ios), func(_ context.Context, o *explain.ExplainOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"<a@b>", "--json", "--steps"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if got == nil || got.ID != "<a@b>" || !got.JSON || !got.Steps || got.IO != ios {
		t.Fatalf("runF got %+v, want ID <a@b>, --json, --steps over the factory's streams", got)
	}
	cmd = explain.NewCmdExplain(cmdutil.New(ios), func(context.Context, *explain.ExplainOptions) error { return nil })
	cmd.SetArgs(nil)
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	if err := cmd.Execute(); err == nil {
		t.Fatal("explain without an id was accepted")
	}
}
