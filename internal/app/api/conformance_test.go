package api_test

import (
	"testing"

	"github.com/mailagent/mailagent/internal/app/api/apitest"
)

// TestConformance runs the one suite against the real pipeline twice: over
// the store directly (api.Local) and over a real unix socket (api.Client
// of api.Serve). Every error (its sentinels, its message, whether it is
// temporary) and every state it leads to must be the same both ways.
func TestConformance(t *testing.T) {
	t.Parallel()
	var local, socket *apitest.Transcript
	t.Run("local", func(t *testing.T) { local = apitest.Suite(t, apitest.Local) })
	t.Run("socket", func(t *testing.T) { socket = apitest.Suite(t, apitest.Socket) })
	t.Run("same", func(t *testing.T) { apitest.Compare(t, "local", local, "socket", socket) })
}
