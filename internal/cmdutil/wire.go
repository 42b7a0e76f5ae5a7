package cmdutil

import (
	"context"
	"time"

	"github.com/mailagent/mailagent/internal/app/agentcal"
	"github.com/mailagent/mailagent/internal/app/wire"
	"github.com/mailagent/mailagent/internal/config"
	"github.com/mailagent/mailagent/internal/llm"
)

// WireEnv is what the application tier's wiring (internal/app/wire)
// needs from this process: the Factory's clock, log and models, the
// logins, the calendar of cfg, and the defence switches of the Factory
// (IncomingCheckOff). Triage, watch, replay and the application service
// all build their agent over it, so a model or a clock a test puts on the
// Factory reaches every one of them.
func (f *Factory) WireEnv(cfg *config.Config) *wire.Env {
	return &wire.Env{
		Now:    f.Now,
		Logger: f.Logger(),
		ClassifyModel: func(ctx context.Context) (llm.Model, error) {
			return f.NewModel(ctx, TaskConfig(cfg, config.TaskClassify))
		},
		DraftModel: func(ctx context.Context, classify llm.Model) (llm.Model, error) {
			return f.DraftModel(ctx, cfg, classify)
		},
		DialIMAP:         wire.DialIMAP,
		SMTP:             wire.SMTPOptions,
		Calendar:         agentcal.New(cfg),
		IncomingCheckOff: f.IncomingCheckOff,
	}
}

// CheckWindow checks the --limit and --since flags that triage and
// replay share: a usage error (exit 2) names the flag.
func CheckWindow(limit int, since string) error {
	if limit < 0 {
		return UsageErr("--limit must be 0 (no limit) or more, got %d", limit)
	}
	if _, err := ParseSince(since, time.Now()); err != nil {
		return UsageErr("--since: %v", err)
	}
	return nil
}
