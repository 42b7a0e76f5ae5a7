package main

import (
	"github.com/mailagent/mailagent/internal/app/api"
	"github.com/mailagent/mailagent/internal/app/digest"
	"github.com/mailagent/mailagent/internal/app/digestmail"
	"github.com/mailagent/mailagent/internal/config"
	"github.com/mailagent/mailagent/store"
)

// newDigestScheduler is digestmail.NewScheduler for watch while watch is in
// package main; it goes when watch moves to internal/cmd/watch (which
// calls digestmail.NewScheduler itself).
func newDigestScheduler(f *Factory, cfg *config.Config, st *store.Store, m api.OwnMailer) (*digest.Scheduler, error) {
	return digestmail.NewScheduler(cfg, st, m, f.Now)
}
