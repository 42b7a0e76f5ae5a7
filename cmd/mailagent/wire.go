package main

import (
	"context"
	"fmt"
	"os"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/imapsync"
	"github.com/mailagent/mailagent/internal/config"
	"github.com/mailagent/mailagent/internal/daemon"
	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/internal/smtpsend"
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
func buildAgent(ctx context.Context, f *Factory, cfg *config.Config, st *store.Store) (*agentParts, error) {
	threader, err := loadThreader(st)
	if err != nil {
		return nil, err
	}
	model, err := f.Model(ctx)
	if err != nil {
		return nil, err
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
		Store:   st,
		Drafter: &agent.LLMDrafter{Model: model, Prompts: ps, MaxChars: cfg.Policy.MaxDraftChars},
		Mailer:  mailer,
		Profile: profile,
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
	return d
}
