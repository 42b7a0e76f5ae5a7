package root

import (
	"context"

	"github.com/mailagent/mailagent/internal/app/actions"
	"github.com/mailagent/mailagent/internal/app/api"
	"github.com/mailagent/mailagent/internal/app/wire"
	"github.com/mailagent/mailagent/internal/cmdutil"
	"github.com/mailagent/mailagent/store"
)

// Service is the application service of f (what Main puts in
// f.Service): it connects to the running watcher, or opens the store
// directly when none runs. withActions builds a local pipeline for the
// actions (approve, reject, …) in the second case, wired over
// f.WireEnv; while such an action holds the database (an approval in its
// undo window) the socket serves the same actions to the other commands.
func Service(f *cmdutil.Factory) cmdutil.ServiceFunc {
	return func(ctx context.Context, withActions bool) (api.Service, func() error, error) {
		cfg, err := f.Config()
		if err != nil {
			return nil, nil, err
		}
		var parts *wire.Agent
		var withLocal func(*store.Store) api.Actions
		if withActions {
			withLocal = func(st *store.Store) api.Actions {
				env := f.WireEnv(cfg)
				p, err := wire.BuildAgent(ctx, env, cfg, st, true)
				if err != nil {
					f.Logger().Warn("local actions unavailable", "err", err)
					return nil
				}
				parts = p
				// Undo and DeferSend stay unset: queue and review adapt the
				// service (actions.Announce, actions.Defer).
				la := actions.Local{Pipeline: p.Pipeline, Daemon: wire.NewDaemon(env, cfg, st, p, nil), NoWatcher: true}
				la.Hold = func(ctx context.Context, command string) func() {
					// What the socket serves meanwhile: the same actions, without
					// this hold or this process's notices (an approval through
					// the socket waits out its own window in its request).
					served := la
					served.Hold, served.Undo = nil, nil
					l := &api.Local{DB: st, Actions: served, AutoSendCap: cfg.Policy.MaxAutoPerDay, StatusFunc: actions.HeldStatus()}
					return api.ServeHeld(ctx, cfg.StateDir, l, command, f.Logger())
				}
				return la
			}
		}
		svc, closeFn, err := api.Open(ctx, cfg.StateDir, func() (*store.Store, error) { return f.OpenStore(false) }, withLocal)
		if err != nil {
			return nil, nil, err
		}
		if l, ok := svc.(*api.Local); ok {
			l.AutoSendCap = cfg.Policy.MaxAutoPerDay
		}
		return svc, func() error {
			if parts != nil {
				parts.Mailer.Close()
			}
			return closeFn()
		}, nil
	}
}
