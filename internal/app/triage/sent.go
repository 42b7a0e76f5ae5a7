package triage

import (
	"context"
	"time"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/imapsync"
	"github.com/mailagent/mailagent/internal/app/sentlearn"
	"github.com/mailagent/mailagent/internal/app/wire"
	"github.com/mailagent/mailagent/internal/config"
)

// learnSentContacts has triage learn the known contacts of acct from its
// Sent folder (sentlearn.LearnInto, over its own read-only IMAP
// connection), so that triage's known-contact gate sees the people the
// owner writes to.
func learnSentContacts(ctx context.Context, env *wire.Env, acct *config.Account, st any, now time.Time) error {
	dial := func(ctx context.Context) (*imapsync.Client, error) { return env.DialIMAP(ctx, acct) }
	return sentlearn.LearnInto(ctx, dial, sentlearn.Account{Name: acct.Name, SentMailbox: acct.SentMailbox, Owner: wire.Owner(acct)}, st, now.Add(-agent.SentLookback))
}
