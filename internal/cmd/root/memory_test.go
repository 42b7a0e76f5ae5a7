package root

import (
	"context"
	"testing"

	"github.com/mailagent/mailagent/internal/cmd/memory"
	"github.com/mailagent/mailagent/internal/cmdutil"
	"github.com/mailagent/mailagent/internal/iostreams"
)

// TestNewCmdMemoryFlags: each verb fills its options from its arguments
// and flags, over the factory's streams.
func TestNewCmdMemoryFlags(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args []string
		want memory.MemoryOptions
	}{
		{[]string{"list", "--contact", "@example.org", "--kind", "fact", "--json"}, memory.MemoryOptions{Action: "list", Contact: "@example.org", Kind: "fact", JSON: true}},
		{[]string{"show", "mem_1", "--json"}, memory.MemoryOptions{Action: "show", ID: "mem_1", JSON: true}},
		{[]string{"forget", "mem_1", "--account", "work"}, memory.MemoryOptions{Action: "forget", ID: "mem_1", Account: "work"}},
		{[]string{"add", "likes tea", "--kind", "temporary", "--expires", "2026-12-01"}, memory.MemoryOptions{Action: "add", Text: "likes tea", Kind: "temporary", Expires: "2026-12-01"}},
		{[]string{"edit", "mem_1", "likes coffee"}, memory.MemoryOptions{Action: "edit", ID: "mem_1", Text: "likes coffee"}},
	}
	for _, tt := range tests {
		ios, _, _, _ := iostreams.Test()
		var got *memory.MemoryOptions
		cmd := memory.NewCmdMemory(cmdutil.New(ios), func(_ context.Context, o *memory.MemoryOptions) error { got = o; return nil })
		cmd.SetArgs(tt.args)
		if err := cmd.Execute(); err != nil {
			t.Fatalf("%v: %v", tt.args, err)
		}
		if got == nil || got.IO != ios {
			t.Fatalf("%v: runF got %+v, want the factory's streams", tt.args, got)
		}
		g, w := *got, tt.want
		if g.Action != w.Action || g.ID != w.ID || g.Account != w.Account || g.Contact != w.Contact ||
			g.Kind != w.Kind || g.Expires != w.Expires || g.Text != w.Text || g.JSON != w.JSON {
			t.Errorf("%v: got %+v, want %+v", tt.args, g, w)
		}
	}
}
