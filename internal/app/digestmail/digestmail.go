// Package digestmail is the digest's sending half: the account and
// recipient it goes from and to, the mail through the owner's outbox
// (api.OwnMailer), watch's digest.schedule, and the report's sources
// before any state exists and through a running watcher. Errors the owner
// can act on are *apperr.Error. internal/app/digest builds and formats
// the report and knows nothing of the service.
package digestmail

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/internal/app/api"
	"github.com/mailagent/mailagent/internal/app/apperr"
	"github.com/mailagent/mailagent/internal/app/digest"
	"github.com/mailagent/mailagent/internal/config"
	"github.com/mailagent/mailagent/store"
)

// Account is the account that sends the digest (digest.account, default
// the first), and its recipient (digest.to, default the account's
// address). No account, or an unknown digest.account, is an apperr usage
// error.
func Account(cfg *config.Config) (*config.Account, string, error) {
	if len(cfg.Accounts) == 0 {
		return nil, "", apperr.Usage("no account is configured to send the digest")
	}
	acct := &cfg.Accounts[0]
	if cfg.Digest.Account != "" {
		a, ok := cfg.Account(cfg.Digest.Account)
		if !ok {
			return nil, "", apperr.Usage("digest.account: no account %q", cfg.Digest.Account)
		}
		acct = a
	}
	to := cfg.Digest.To
	if to == "" {
		to = acct.Email
	}
	return acct, to, nil
}

// Send mails rep to the owner through the outbox (a mail of its own,
// store.OutboxKindDigest: one record per period, so a retried period
// sends once; each "manual" digest is its own) and returns the
// Message-ID and the recipient. A digest.to the outbox refuses is an
// apperr usage error; a send that fails or is left unsent is
// CodeUnreachable with a hint.
func Send(ctx context.Context, cfg *config.Config, m api.OwnMailer, rep *digest.Report, period string, now time.Time) (string, string, error) {
	acct, to, err := Account(cfg)
	if err != nil {
		return "", "", err
	}
	raw, _, err := digest.Message(rep, acct.Email, to, period, now)
	if err != nil {
		return "", "", err
	}
	ref := period
	if period == "manual" {
		ref += "-" + now.UTC().Format(time.RFC3339Nano)
	}
	ob, err := m.SendOwnMail(ctx, agent.OwnMail{Kind: store.OutboxKindDigest, Account: acct.Name, Ref: ref,
		To: to, Subject: digest.Subject(rep), Raw: raw})
	if errors.Is(err, api.ErrBadRequest) {
		return "", "", apperr.Usage("digest.to: %v", err)
	}
	if err == nil && ob.Status != store.OutboxSent && ob.Status != store.OutboxAppended {
		err = fmt.Errorf("the outbox left it %s: %s", ob.Status, ob.Error)
	}
	if err != nil {
		return "", "", &apperr.Error{Code: apperr.CodeUnreachable, Err: fmt.Errorf("send the digest: %w", err),
			Hint: "check the account's SMTP settings with: mailagent doctor"}
	}
	return ob.MessageID, to, nil
}

// NewScheduler is watch's digest.schedule over st, sending through m,
// or nil when none is set. A bad schedule or account is an apperr usage
// error.
func NewScheduler(cfg *config.Config, st *store.Store, m api.OwnMailer, now func() time.Time) (*digest.Scheduler, error) {
	if cfg.Digest.Schedule == "" {
		return nil, nil
	}
	sched, err := digest.ParseSchedule(cfg.Digest.Schedule)
	if err != nil {
		return nil, apperr.Usage("digest.schedule: %v", err)
	}
	if _, _, err := Account(cfg); err != nil {
		return nil, err
	}
	return &digest.Scheduler{
		Schedule: sched, State: st, Now: now,
		Send: func(ctx context.Context, since, until time.Time, period string) error {
			rep, err := digest.Build(st, since, until, cfg.LLM.Model)
			if err != nil {
				return err
			}
			_, _, err = Send(ctx, cfg, m, rep, period, now())
			return err
		},
	}, nil
}

// NoState is the digest's source before any state exists: nothing done.
type NoState struct{}

func (NoState) ListMessages(store.MessageFilter, func(*store.MessageRecord) error) error { return nil }
func (NoState) ListQueue(string, func(*store.QueueItem) error) error                     { return nil }
func (NoState) ListOutbox(string, func(*store.OutboxRecord) error) error                 { return nil }
func (NoState) UsageRange(string, string) ([]store.UsageDay, error)                      { return nil, nil }

// ServiceSource reads a digest through an api.Service, a running
// watcher's socket included (the token ledger of every day the period
// touches: api.UsageRange).
type ServiceSource struct {
	Ctx context.Context
	Svc api.Service
}

func (s ServiceSource) ListMessages(f store.MessageFilter, fn func(*store.MessageRecord) error) error {
	return s.Svc.Store().ListMessages(f, fn)
}

func (s ServiceSource) ListQueue(status string, fn func(*store.QueueItem) error) error {
	items, err := s.Svc.Queue(s.Ctx, api.QueueFilter{Status: status})
	if err != nil {
		return err
	}
	for i := range items {
		if err := fn(&items[i]); err != nil {
			return err
		}
	}
	return nil
}

func (s ServiceSource) ListOutbox(status string, fn func(*store.OutboxRecord) error) error {
	recs, err := s.Svc.Outbox(s.Ctx, status)
	if err != nil {
		return err
	}
	for i := range recs {
		if err := fn(&recs[i]); err != nil {
			return err
		}
	}
	return nil
}

// ListFollowups makes a ServiceSource a FollowupSource.
func (s ServiceSource) ListFollowups(ff store.FollowupFilter, fn func(*store.Followup) error) error {
	fus, err := s.Svc.Followups(s.Ctx, api.FollowupFilter{Account: ff.Account, States: ff.States})
	if err != nil {
		return err
	}
	for i := range fus {
		if err := fn(&fus[i]); err != nil {
			return err
		}
	}
	return nil
}

func (s ServiceSource) UsageRange(from, to string) ([]store.UsageDay, error) {
	return api.UsageRange(s.Ctx, s.Svc, from, to)
}
