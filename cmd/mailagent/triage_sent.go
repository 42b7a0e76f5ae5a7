package main

import (
	"context"
	"time"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/internal/app/sentlearn"
	"github.com/mailagent/mailagent/internal/app/wire"
	"github.com/mailagent/mailagent/internal/config"
)

// learnSentContacts has triage learn the known contacts of acct from its
// Sent folder (sentlearn.Learn, over its own read-only IMAP connection),
// so that triage's known-contact gate sees the people the owner writes
// to. It is a no-op for a store that cannot record them (a dry run, or a
// watcher's socket: the watcher scans Sent itself).
func learnSentContacts(ctx context.Context, acct *config.Account, st any, now time.Time) error {
	km, ok := st.(sentlearn.Store)
	if !ok {
		return nil
	}
	c, err := DialIMAP(ctx, acct)
	if err != nil {
		return err
	}
	defer func() { _ = c.Close() }()
	_, err = sentlearn.Learn(ctx, c, sentlearn.Account{Name: acct.Name, SentMailbox: acct.SentMailbox, Owner: wire.Owner(acct)}, km, now.Add(-agent.SentLookback))
	return err
}
