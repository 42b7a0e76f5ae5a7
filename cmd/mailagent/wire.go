package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/imapsync"
	"github.com/mailagent/mailagent/internal/app/api"
	"github.com/mailagent/mailagent/internal/app/daemon"
	"github.com/mailagent/mailagent/internal/config"
	"github.com/mailagent/mailagent/internal/llm"
	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/internal/smtpsend"
	"github.com/mailagent/mailagent/internal/termsafe"
	"github.com/mailagent/mailagent/prompts"
	"github.com/mailagent/mailagent/store"
)

// SMTPOptions resolves an account's SMTP login.
func SMTPOptions(ctx context.Context, acct *config.Account) (smtpsend.Options, error) {
	e := acct.SMTP
	opts := smtpsend.Options{Host: e.Host, Port: e.Port, Security: e.Security, Username: e.Username, TLSCAFile: e.TLSCAFile}
	if e.UsesOAuth2() {
		tok, err := e.ResolveOAuth2Token(ctx)
		if err != nil {
			return opts, &UserError{Code: ExitUsage, Err: fmt.Errorf("account %s smtp token: %w", acct.Name, err)}
		}
		opts.OAuth2Token = tok.Reveal()
		return opts, nil
	}
	pw, err := e.ResolvePassword(ctx)
	if err != nil {
		return opts, &UserError{Code: ExitUsage, Err: fmt.Errorf("account %s smtp password: %w", acct.Name, err)}
	}
	opts.Password = pw.Reveal()
	return opts, nil
}

// newMailer wires IMAP action connections and SMTP senders for every
// account. Nothing is dialled until first use.
func newMailer(cfg *config.Config) *daemon.Mailer {
	m := &daemon.Mailer{Accounts: map[string]*daemon.AccountMailer{}}
	for i := range cfg.Accounts {
		acct := &cfg.Accounts[i]
		m.Accounts[acct.Name] = &daemon.AccountMailer{
			Name:   acct.Name,
			Sent:   acct.SentMailbox,
			Drafts: acct.DraftsMailbox,
			Dial:   func(ctx context.Context) (*imapsync.Client, error) { return DialIMAP(ctx, acct) },
			SMTP: func(ctx context.Context) (*smtpsend.Sender, error) {
				opts, err := SMTPOptions(ctx, acct)
				if err != nil {
					return nil, err
				}
				return smtpsend.New(opts)
			},
		}
	}
	return m
}

// agentParts is a pipeline able to act (send, queue, draft), and what it
// was built from.
type agentParts struct {
	Pipeline *agent.Pipeline
	Mailer   *daemon.Mailer
}

// buildAgent wires the full pipeline over an open store: model, prompts,
// threader, actor and mailer.
// With lazyModel, a missing model (no API key) is only an error when a
// model call is made.
func buildAgent(ctx context.Context, f *Factory, cfg *config.Config, st *store.Store, lazyModel bool) (*agentParts, error) {
	threader, err := loadThreader(st)
	if err != nil {
		return nil, err
	}
	model, draftModel, err := f.taskModels(ctx)
	if err != nil {
		if !lazyModel {
			return nil, err
		}
		// Approving, rejecting and editing need no model; only a call
		// that does (regenerate) reports why it is missing.
		modelErr := err
		model = llm.ModelFunc(func(context.Context, llm.Request) (*llm.Response, error) { return nil, modelErr })
		draftModel = model
	}
	ps, err := prompts.Load(cfg.PromptsDir)
	if err != nil {
		return nil, usageErr("prompts_dir: %v", err)
	}
	profile := ""
	if cfg.OwnerProfileFile != "" {
		b, err := os.ReadFile(cfg.OwnerProfileFile)
		if err != nil {
			return nil, usageErr("owner_profile_file: %v", err)
		}
		profile = string(b)
	}
	p := newPipeline(cfg, st, &agent.LLMClassifier{Model: model, Prompts: ps}, threader, f)
	for _, a := range cfg.Accounts {
		acct := p.Accounts[a.Name]
		acct.From = mail.Address{Name: a.DisplayName, Email: a.Email}
		acct.Footer = cfg.Policy.Footer(a.DisplayName)
		acct.DraftsToIMAP = cfg.Policy.DraftsToIMAP
		p.Accounts[a.Name] = acct
	}
	mailer := newMailer(cfg)
	p.Actor = &agent.Actor{
		Store:      st,
		Drafter:    &agent.LLMDrafter{Model: draftModel, Prompts: ps, MaxChars: cfg.Policy.MaxDraftChars},
		Mailer:     mailer,
		Profile:    profile,
		Summarizer: &agent.LLMSummarizer{Model: draftModel, Prompts: ps},
	}
	return &agentParts{Pipeline: p, Mailer: mailer}, nil
}

// newDaemon builds the watch daemon for the chosen accounts.
func newDaemon(f *Factory, cfg *config.Config, st *store.Store, parts *agentParts, accounts []*config.Account) *daemon.Daemon {
	d := &daemon.Daemon{
		Store: st, Pipeline: parts.Pipeline, Mailer: parts.Mailer,
		MaxMessageBytes: cfg.Sync.MaxMessageBytes,
		InitialLookback: cfg.Sync.InitialLookback.D(),
		RetryInterval:   cfg.Sync.RetryInterval.D(),
		PollInterval:    cfg.Sync.PollInterval.D(),
		Concurrency:     cfg.LLM.Concurrency,
		Logger:          f.Logger(),
		Now:             f.Now,
	}
	for _, acct := range accounts {
		d.Accounts = append(d.Accounts, daemon.Account{
			Name: acct.Name, Mailbox: acct.Mailbox,
			Dial: func(ctx context.Context) (*imapsync.Client, error) { return DialIMAP(ctx, acct) },
		})
	}
	// The agent's events wake the daemon's timer of due sends and snoozes,
	// which otherwise sleeps until the next due time (watch adds the API
	// broker in front).
	parts.Pipeline.Actor.Notify = d.Notify
	return d
}

// localActions performs queue actions in this process (no watcher runs):
// the same pipeline code watch uses, so sends still go through the outbox.
type localActions struct {
	*agent.Pipeline
	d *daemon.Daemon
	// local is set when no watcher runs (so no due timer will send the
	// reply): Approve then waits out policy.approval_delay here, saying
	// so on undo when that is set; an ended context (Ctrl-C) in the window
	// cancels the approval.
	local bool
	undo  io.Writer
}

// Approve approves, and with no watcher running waits out the undo window
// and sends (see agent.Pipeline.SendApproval).
func (a localActions) Approve(ctx context.Context, id, final string) (*store.QueueItem, error) {
	item, err := a.Pipeline.Approve(ctx, id, final)
	if err != nil || !a.local || item == nil || item.Status != store.QueueApproved {
		return item, err
	}
	return a.SendApproval(ctx, item.ID, func(ctx context.Context, at time.Time) error {
		wait := time.Until(at)
		if a.Pipeline.Now != nil {
			wait = at.Sub(a.Pipeline.Now())
		}
		if wait <= 0 {
			return nil
		}
		if a.undo != nil {
			fmt.Fprintf(a.undo, "%s: sending in %s; press Ctrl-C to cancel\n", termsafe.Line(item.ID), roundWait(wait))
		}
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			return nil
		}
	})
}

func (a localActions) Retry(ctx context.Context, k store.MessageKey) error { return a.d.Retry(ctx, k) }

// Service connects to the running watcher, or opens the store directly
// when none runs. withActions builds a local pipeline for the actions
// (approve, reject, …) in the second case.
func (f *Factory) Service(ctx context.Context, withActions bool) (api.Service, func() error, error) {
	cfg, err := f.Config()
	if err != nil {
		return nil, nil, err
	}
	var parts *agentParts
	var actions func(*store.Store) api.Actions
	if withActions {
		actions = func(st *store.Store) api.Actions {
			p, err := buildAgent(ctx, f, cfg, st, true)
			if err != nil {
				f.Logger().Warn("local actions unavailable", "err", err)
				return nil
			}
			parts = p
			return localActions{Pipeline: p.Pipeline, d: newDaemon(f, cfg, st, p, nil), local: true, undo: f.approveNotice}
		}
	}
	svc, closeFn, err := api.Open(ctx, cfg.StateDir, func() (*store.Store, error) { return f.OpenStore(false) }, actions)
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
