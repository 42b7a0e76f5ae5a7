package root

import (
	"context"
	"errors"
	"testing"

	"github.com/mailagent/mailagent/internal/app/api"
	"github.com/mailagent/mailagent/internal/cmd/mcp"
	"github.com/mailagent/mailagent/internal/config"
	"github.com/mailagent/mailagent/store"
)

// TestOpenMCPServiceRemote: with --remote every MCP request goes to the
// Factory's Service (the watcher over ssh) without reading this
// machine's state; without it, the local one is used.
func TestOpenMCPServiceRemote(t *testing.T) {
	t.Parallel()
	errRemote := errors.New("the remote service")
	local := 0
	opts := &mcp.MCPOptions{
		Remote: true,
		Service: func(_ context.Context, withActions bool) (api.Service, func() error, error) {
			if withActions {
				t.Error("mcp asked for actions")
			}
			return nil, nil, errRemote
		},
		Config:    func() (*config.Config, error) { local++; return nil, errors.New("no local config") },
		OpenStore: func(bool) (*store.Store, error) { local++; return nil, errors.New("no local store") },
	}
	if _, _, err := mcp.OpenService(context.Background(), opts); !errors.Is(err, errRemote) || local != 0 {
		t.Errorf("remote: got %v with %d local reads, want the remote service and none", err, local)
	}
	opts.Remote = false
	if _, _, err := mcp.OpenService(context.Background(), opts); errors.Is(err, errRemote) || local == 0 {
		t.Errorf("local: got %v with %d local reads, want the local path", err, local)
	}
}
