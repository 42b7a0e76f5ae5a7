package main

import (
	"context"

	"github.com/mailagent/mailagent/internal/app/actions"
	"github.com/mailagent/mailagent/internal/app/agentcal"
	"github.com/mailagent/mailagent/internal/app/api"
	"github.com/mailagent/mailagent/internal/app/daemon"
	"github.com/mailagent/mailagent/internal/app/wire"
	"github.com/mailagent/mailagent/internal/config"
	"github.com/mailagent/mailagent/internal/llm"
	"github.com/mailagent/mailagent/internal/smtpsend"
	"github.com/mailagent/mailagent/store"
)

// SMTPOptions is internal/app/wire's, under the name the files still in
// package main use.
func SMTPOptions(ctx context.Context, acct *config.Account) (smtpsend.Options, error) {
	return wire.SMTPOptions(ctx, acct)
}

// incomingCheckOff switches off the rule that the watched mailbox is
// never Drafts or Sent: only for the positive control of the test that
// attacks it (TestWatchedFolderNeverDraftsOrSent; wire.Env's
// IncomingCheckOff, a Factory field once the Factory leaves package main).
var incomingCheckOff bool

// wireEnv is what the application tier's wiring (internal/app/wire)
// needs from this process: the Factory's clock, log and models, and the
// logins.
func wireEnv(f *Factory, cfg *config.Config) *wire.Env {
	return &wire.Env{
		Now:    f.Now,
		Logger: f.Logger(),
		ClassifyModel: func(ctx context.Context) (llm.Model, error) {
			return f.NewModel(ctx, taskConfig(cfg, config.TaskClassify))
		},
		DraftModel: func(ctx context.Context, classify llm.Model) (llm.Model, error) {
			return f.draftModel(ctx, cfg, classify)
		},
		DialIMAP:         DialIMAP,
		SMTP:             SMTPOptions,
		Calendar:         agentcal.New(cfg),
		IncomingCheckOff: incomingCheckOff,
	}
}

// buildAgent is wire.BuildAgent with this process's Factory.
func buildAgent(ctx context.Context, f *Factory, cfg *config.Config, st *store.Store, lazyModel bool) (*wire.Agent, error) {
	return wire.BuildAgent(ctx, wireEnv(f, cfg), cfg, st, lazyModel)
}

// newDaemon is wire.NewDaemon with this process's Factory.
func newDaemon(f *Factory, cfg *config.Config, st *store.Store, parts *wire.Agent, accounts []*config.Account) *daemon.Daemon {
	return wire.NewDaemon(wireEnv(f, cfg), cfg, st, parts, accounts)
}

// Service connects to the running watcher, or opens the store directly
// when none runs. withActions builds a local pipeline for the actions
// (approve, reject, …) in the second case.
func (f *Factory) Service(ctx context.Context, withActions bool) (api.Service, func() error, error) {
	cfg, err := f.Config()
	if err != nil {
		return nil, nil, err
	}
	var parts *wire.Agent
	var withLocal func(*store.Store) api.Actions
	if withActions {
		withLocal = func(st *store.Store) api.Actions {
			p, err := buildAgent(ctx, f, cfg, st, true)
			if err != nil {
				f.Logger().Warn("local actions unavailable", "err", err)
				return nil
			}
			parts = p
			la := actions.Local{Pipeline: p.Pipeline, Daemon: newDaemon(f, cfg, st, p, nil), NoWatcher: true, Undo: f.approveNotice, DeferSend: f.deferApprovalSend} // both unset now: queue and review adapt the service (actions.Announce, actions.Defer)
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
