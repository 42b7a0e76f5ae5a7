package root

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mailagent/mailagent/internal/app/api"
	"github.com/mailagent/mailagent/internal/cmd/digest"
	"github.com/mailagent/mailagent/internal/config"
	"github.com/mailagent/mailagent/internal/iostreams"
	"github.com/mailagent/mailagent/store"
)

// TestDigestRemoteReadsTheRemoteWatcher: with --remote the report comes
// from the Factory's Service (without actions unless --send), never from
// this machine's database, which needs no configuration here.
func TestDigestRemoteReadsTheRemoteWatcher(t *testing.T) {
	t.Parallel()
	errRemote := errors.New("the remote service")
	for _, send := range []bool{false, true} {
		ios, _, _, _ := iostreams.Test()
		var asked []bool
		opts := &digest.DigestOptions{
			IO: ios, Since: "24h", Send: send, Remote: true, Now: time.Now,
			Config: func() (*config.Config, error) { return nil, errors.New("no configuration on this machine") },
			Service: func(_ context.Context, withActions bool) (api.Service, func() error, error) {
				asked = append(asked, withActions)
				return nil, nil, errRemote
			},
			OpenStore: func(bool) (*store.Store, error) {
				t.Error("the local store was opened")
				return nil, errors.New("no")
			},
		}
		err := digest.Run(context.Background(), opts)
		if !errors.Is(err, errRemote) || len(asked) != 1 || asked[0] != send {
			t.Errorf("send %v: got %v, service asked %v, want the remote service asked once with actions %v", send, err, asked, send)
		}
	}
}
