package main

import (
	"context"
	"time"

	"github.com/mailagent/mailagent/imapsync"
	"github.com/mailagent/mailagent/internal/app/doctor"
	"github.com/mailagent/mailagent/internal/config"
	"github.com/mailagent/mailagent/internal/initcfg"
)

// initAuthserv fills s.AuthservID before the config is written: from the
// provider preset when there is one, otherwise (when login is set) from
// the newest mail, logging in with the settings the wizard gathered. A
// failure only leaves it unset (doctor then shows the fix). It returns the
// config, rendered again when the id was found.
func initAuthserv(ctx context.Context, s *initSetup, data []byte, path string, login bool) []byte {
	if s.AuthservID == "" {
		s.AuthservID = doctor.PresetAuthservID(s.Source)
	}
	if s.AuthservID == "" && login {
		cfg, err := config.Parse(data, path, 0o600)
		if err != nil || len(cfg.Accounts) == 0 {
			return data
		}
		dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		opts, err := IMAPOptions(dctx, &cfg.Accounts[0])
		if err != nil {
			return data
		}
		opts.DialTimeout = 10 * time.Second
		c, err := imapsync.Dial(dctx, opts)
		if err != nil {
			return data
		}
		defer func() { _ = c.Close() }()
		if got, err := doctor.DiscoverAuthserv(dctx, c, cfg.Accounts[0].Mailbox, ""); err == nil {
			s.AuthservID = got.Suggest
		}
	}
	if s.AuthservID == "" {
		return data
	}
	return initcfg.Render(s)
}
