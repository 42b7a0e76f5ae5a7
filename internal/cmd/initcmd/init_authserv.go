package initcmd

import (
	"context"

	appdoctor "github.com/mailagent/mailagent/internal/app/doctor"
	"github.com/mailagent/mailagent/internal/config"
	"github.com/mailagent/mailagent/internal/initcfg"

	"github.com/mailagent/mailagent/internal/app/setup"
)

// initAuthserv fills s.AuthservID before the config is written: from the
// provider preset when there is one, otherwise (when login is set) from
// the newest mail, logging in with the settings the wizard gathered. A
// failure only leaves it unset (doctor then shows the fix). It returns the
// config, rendered again when the id was found.
func initAuthserv(ctx context.Context, s *initSetup, data []byte, path string, login bool) []byte {
	if s.AuthservID == "" {
		s.AuthservID = appdoctor.PresetAuthservID(s.Source)
	}
	if s.AuthservID == "" && login {
		cfg, err := config.Parse(data, path, 0o600)
		if err != nil || len(cfg.Accounts) == 0 {
			return data
		}
		s.AuthservID = setup.FindAuthserv(ctx, &cfg.Accounts[0])
	}
	if s.AuthservID == "" {
		return data
	}
	return initcfg.Render(s)
}
