package main

import (
	"context"
	"time"

	"github.com/mailagent/mailagent/internal/app/daemon"
	apptriage "github.com/mailagent/mailagent/internal/app/triage"
	"github.com/mailagent/mailagent/internal/app/wire"
	cmddemo "github.com/mailagent/mailagent/internal/cmd/demo"
	cmdtriage "github.com/mailagent/mailagent/internal/cmd/triage"
	cmdwatch "github.com/mailagent/mailagent/internal/cmd/watch"
	"github.com/mailagent/mailagent/internal/cmdutil"
	"github.com/mailagent/mailagent/internal/config"
	"github.com/mailagent/mailagent/store"
)

// The entry points of the groups that left package main (triage, watch,
// demo: internal/cmd/…), under the names these tests use.

type (
	WatchOptions  = cmdwatch.WatchOptions
	TriageOptions = cmdtriage.TriageOptions
	DemoReport    = cmddemo.DemoReport
)

// watchRun runs `mailagent watch` with o over f.
func watchRun(ctx context.Context, f *Factory, o *WatchOptions) error {
	o.IO, o.Factory = f.IOStreams, f.Factory
	return cmdwatch.Run(ctx, o)
}

// triageRun runs `mailagent triage` with o over f.
func triageRun(ctx context.Context, f *Factory, o *TriageOptions) error {
	o.IO, o.Factory = f.IOStreams, f.Factory
	return cmdtriage.Run(ctx, o)
}

// openPipelineStore opens the state database as triage does.
func openPipelineStore(ctx context.Context, f *Factory, dryRun bool) (wire.PipelineStore, func() error, error) {
	cfg, err := f.Config()
	if err != nil {
		return nil, nil, err
	}
	return apptriage.OpenStore(ctx, cmdtriage.StoreEnv(f.Factory, cfg), dryRun)
}

// buildAgent and newDaemon wire the agent and the watch daemon as watch
// does (wire over the Factory's WireEnv).
func buildAgent(ctx context.Context, f *Factory, cfg *config.Config, st *store.Store, lazyModel bool) (*wire.Agent, error) {
	return wire.BuildAgent(ctx, f.WireEnv(cfg), cfg, st, lazyModel)
}

func newDaemon(f *Factory, cfg *config.Config, st *store.Store, parts *wire.Agent, accounts []*config.Account) *daemon.Daemon {
	return wire.NewDaemon(f.WireEnv(cfg), cfg, st, parts, accounts)
}

// configAccounts is f's configuration and the accounts --account name
// picks (cmdutil.PickAccounts).
func configAccounts(f *Factory, name string) (*config.Config, []*config.Account, error) {
	cfg, err := f.Config()
	if err != nil {
		return nil, nil, err
	}
	accounts, err := cmdutil.PickAccounts(cfg, name)
	return cfg, accounts, err
}

// parseSince is cmdutil.ParseSince (digest, triage and replay --since).
func parseSince(s string, now time.Time) (time.Time, error) { return cmdutil.ParseSince(s, now) }
