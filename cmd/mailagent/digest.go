package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/internal/app/api"
	"github.com/mailagent/mailagent/internal/app/digest"
	"github.com/mailagent/mailagent/internal/config"
	"github.com/mailagent/mailagent/store"
)

// DigestOptions are the flags of `mailagent digest`.
type DigestOptions struct {
	Since string
	JSON  bool
	Send  bool
}

func newDigestCmd(f *Factory, runF func(context.Context, *DigestOptions) error) *cobra.Command {
	opts := &DigestOptions{}
	cmd := &cobra.Command{
		Use:   "digest",
		Short: "What the agent did: sent, waiting, archived, needing review, and what it cost",
		Long: `digest reports what the agent did in a period: the replies it sent on its
own (recipients and subjects), what is queued and still waiting for you,
what it archived or ignored (by category), what needs review, and the
model's tokens with their estimated cost.

With --send the report is mailed to you (digest.to, default the account's
address) through the outbox (the watcher's when one runs) and the
account's SMTP server. The mail carries the
X-Mailagent-Digest header and mailagent's own loop-guard header, so
mailagent never processes its own digest. digest.schedule = "daily 08:00"
makes watch send one per day, once per period even across restarts.

Exit codes: 0 done; 2 bad flags or config; 3 the SMTP server could not be
reached (--send); 4 the state database is in use.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if _, err := parseSince(opts.Since, time.Now()); err != nil || strings.TrimSpace(opts.Since) == "" {
				return usageErr("--since: %q is neither a duration (24h, 7d) nor a date (2026-01-02)", opts.Since)
			}
			if opts.JSON && opts.Send {
				return usageErr("--json and --send do not go together: --send mails the plain-text report")
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return digestRun(cmd.Context(), f, opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Since, "since", "24h", "the period: since a duration ago (24h, 7d) or a date (2026-01-02)")
	fl.BoolVar(&opts.JSON, "json", false, "the report as one JSON object on stdout")
	fl.BoolVar(&opts.Send, "send", false, "mail the report to the owner instead of printing it")
	return cmd
}

func digestRun(ctx context.Context, f *Factory, opts *DigestOptions) error {
	cfg, err := f.Config()
	if err != nil {
		return err
	}
	now := f.Now()
	since, _ := parseSince(opts.Since, now)
	var src digest.Source = noState{}
	var svc api.Service
	switch {
	case opts.Send:
		// --send goes through the outbox: the watcher's, or this
		// process's pipeline over the store (created when missing).
		var closeSvc func() error
		svc, closeSvc, err = f.Service(ctx, true)
		if err != nil {
			return err
		}
		defer func() { _ = closeSvc() }()
	default:
		if _, err := os.Stat(DBPath(cfg)); err == nil || !errors.Is(err, fs.ErrNotExist) {
			var closeSvc func() error
			svc, closeSvc, err = api.Open(ctx, cfg.StateDir, func() (*store.Store, error) { return f.OpenStore(true) }, nil)
			if err != nil {
				return err
			}
			defer func() { _ = closeSvc() }()
		}
	}
	if svc != nil {
		src = serviceSource{ctx: ctx, svc: svc}
		if l, ok := svc.(*api.Local); ok {
			src = l.DB
		}
	}
	rep, err := digest.Build(src, since, now, cfg.LLM.Model)
	if err != nil {
		return err
	}
	switch {
	case opts.JSON:
		enc := json.NewEncoder(f.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(toDigestJSON(rep)); err != nil {
			return fmt.Errorf("write json: %w", err)
		}
		return nil
	case opts.Send:
		m, ok := svc.(api.OwnMailer)
		if !ok {
			return fmt.Errorf("digest --send: %w", api.ErrNoActions)
		}
		id, to, err := sendDigest(ctx, cfg, m, rep, "manual", now)
		if err != nil {
			return err
		}
		fmt.Fprintf(f.Stderr, "digest sent to %s (Message-ID <%s>)\n", to, id)
		return nil
	}
	return digest.Text(f.Stdout, rep)
}

// digestAccount is the account that sends the digest, and its recipient.
func digestAccount(cfg *config.Config) (*config.Account, string, error) {
	if len(cfg.Accounts) == 0 {
		return nil, "", usageErr("no account is configured to send the digest")
	}
	acct := &cfg.Accounts[0]
	if cfg.Digest.Account != "" {
		a, ok := cfg.Account(cfg.Digest.Account)
		if !ok {
			return nil, "", usageErr("digest.account: no account %q", cfg.Digest.Account)
		}
		acct = a
	}
	to := cfg.Digest.To
	if to == "" {
		to = acct.Email
	}
	return acct, to, nil
}

// sendDigest mails rep to the owner through the outbox (a mail of its
// own, store.OutboxKindDigest: one record per period, so a retried period
// sends once; each manual digest is its own) and returns the Message-ID
// and the recipient.
func sendDigest(ctx context.Context, cfg *config.Config, m api.OwnMailer, rep *digest.Report, period string, now time.Time) (string, string, error) {
	acct, to, err := digestAccount(cfg)
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
		return "", "", usageErr("digest.to: %v", err)
	}
	if err == nil && ob.Status != store.OutboxSent && ob.Status != store.OutboxAppended {
		err = fmt.Errorf("the outbox left it %s: %s", ob.Status, ob.Error)
	}
	if err != nil {
		return "", "", unreachable(fmt.Errorf("send the digest: %w", err), "check the account's SMTP settings with: mailagent doctor")
	}
	return ob.MessageID, to, nil
}

// newDigestScheduler is watch's digest.schedule, or nil when none is set.
func newDigestScheduler(f *Factory, cfg *config.Config, st *store.Store, m api.OwnMailer) (*digest.Scheduler, error) {
	if cfg.Digest.Schedule == "" {
		return nil, nil
	}
	sched, err := digest.ParseSchedule(cfg.Digest.Schedule)
	if err != nil {
		return nil, usageErr("digest.schedule: %v", err)
	}
	if _, _, err := digestAccount(cfg); err != nil {
		return nil, err
	}
	return &digest.Scheduler{
		Schedule: sched, State: st, Now: f.Now,
		Send: func(ctx context.Context, since, until time.Time, period string) error {
			rep, err := digest.Build(st, since, until, cfg.LLM.Model)
			if err != nil {
				return err
			}
			_, _, err = sendDigest(ctx, cfg, m, rep, period, f.Now())
			return err
		},
	}, nil
}

// noState is the digest's source before any state exists: nothing done.
type noState struct{ emptyStore }

func (noState) ListQueue(string, func(*store.QueueItem) error) error     { return nil }
func (noState) ListOutbox(string, func(*store.OutboxRecord) error) error { return nil }
func (noState) UsageRange(string, string) ([]store.UsageDay, error)      { return nil, nil }

// serviceSource reads a digest through a running watcher's socket (the
// token ledger of every day the period touches: api.UsageRange).
type serviceSource struct {
	ctx context.Context
	svc api.Service
}

func (s serviceSource) ListMessages(f store.MessageFilter, fn func(*store.MessageRecord) error) error {
	return s.svc.Store().ListMessages(f, fn)
}

func (s serviceSource) ListQueue(status string, fn func(*store.QueueItem) error) error {
	items, err := s.svc.Queue(s.ctx, api.QueueFilter{Status: status})
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

func (s serviceSource) ListOutbox(status string, fn func(*store.OutboxRecord) error) error {
	recs, err := s.svc.Outbox(s.ctx, status)
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

func (s serviceSource) ListFollowups(ff store.FollowupFilter, fn func(*store.Followup) error) error {
	fus, err := s.svc.Followups(s.ctx, api.FollowupFilter{Account: ff.Account, States: ff.States})
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

func (s serviceSource) UsageRange(from, to string) ([]store.UsageDay, error) {
	return api.UsageRange(s.ctx, s.svc, from, to)
}

func toDigestJSON(r *digest.Report) DigestJSON {
	j := DigestJSON{Since: r.Since, Until: r.Until, Processed: r.Processed,
		AutoSent: []DigestSendJSON{}, Scheduled: []DigestSendJSON{}, Waiting: []DigestWaitingJSON{}, NeedsReview: []DigestReviewJSON{},
		FollowupsDue: []DigestDueJSON{}, Archived: map[string]int{}, Ignored: map[string]int{}}
	for _, s := range r.AutoSent {
		j.AutoSent = append(j.AutoSent, DigestSendJSON{Account: s.Account, To: emailsJSON(s.To), Subject: s.Subject, At: s.SentAt})
	}
	for _, s := range r.Scheduled {
		j.Scheduled = append(j.Scheduled, DigestSendJSON{Account: s.Account, To: emailsJSON(s.To), Subject: s.Subject, At: s.SentAt})
	}
	for _, q := range r.Waiting {
		j.Waiting = append(j.Waiting, DigestWaitingJSON{ID: q.ID, Kind: q.Kind, Account: q.Account, From: toAddressJSON(q.From), Subject: q.Subject, Since: q.Since, New: q.New})
	}
	for _, m := range r.NeedsReview {
		j.NeedsReview = append(j.NeedsReview, DigestReviewJSON{Message: toKeyJSON(m.Key), From: toAddressJSON(m.From), Subject: m.Subject, Error: m.Error})
	}
	for _, d := range r.FollowupsDue {
		j.FollowupsDue = append(j.FollowupsDue, DigestDueJSON{ID: d.ID, Account: d.Account, State: d.State,
			Correspondents: strs(d.Correspondents), Subject: d.Subject, Deadline: d.Deadline, Nudges: d.Nudges})
	}
	for k, v := range r.Archived {
		j.Archived[k] = v
	}
	for k, v := range r.Ignored {
		j.Ignored[k] = v
	}
	j.Cost = toCostJSON(r.Usage.Calls, r.Usage.TokensIn, r.Usage.TokensOut, r.Model, r.USD, r.PriceKnown)
	return j
}
