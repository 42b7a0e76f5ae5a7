package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/imapsync"
	"github.com/mailagent/mailagent/internal/app/actions"
	"github.com/mailagent/mailagent/internal/app/api"
	"github.com/mailagent/mailagent/internal/app/apperr"
	"github.com/mailagent/mailagent/internal/app/daemon"
	"github.com/mailagent/mailagent/internal/config"
	"github.com/mailagent/mailagent/internal/llm"
	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/internal/smtpsend"
	"github.com/mailagent/mailagent/prompts"
	"github.com/mailagent/mailagent/store"
)

// SMTPOptions resolves an account's SMTP login.
func SMTPOptions(ctx context.Context, acct *config.Account) (smtpsend.Options, error) {
	e := acct.SMTP
	opts := smtpsend.Options{Host: e.Host, Port: e.Port, Security: e.Security, Username: e.Username, TLSCAFile: e.TLSCAFile}
	var err error
	opts.Password, opts.OAuth2Token, err = resolveLogin(ctx, acct.Name, "smtp", e)
	return opts, err
}

// resolveLogin resolves an endpoint's secret (what: "imap" or "smtp"):
// an OAuth 2 access token when it uses one, else its password. A source
// that fails is a configuration error (exit 2) naming the account; the
// secret itself is never in the error.
func resolveLogin(ctx context.Context, account, what string, e config.Endpoint) (password, token string, _ error) {
	if e.UsesOAuth2() {
		tok, err := e.ResolveOAuth2Token(ctx)
		if err != nil {
			return "", "", &UserError{Code: ExitUsage, Err: fmt.Errorf("account %s %s token: %w", account, what, err)}
		}
		return "", tok.Reveal(), nil
	}
	pw, err := e.ResolvePassword(ctx)
	if err != nil {
		return "", "", &UserError{Code: ExitUsage, Err: fmt.Errorf("account %s %s password: %w", account, what, err)}
	}
	return pw.Reveal(), "", nil
}

// incomingCheckOff switches off the rule that the watched mailbox is
// never Drafts or Sent: only for the positive control of the test that
// attacks it (TestWatchedFolderNeverDraftsOrSent).
var incomingCheckOff bool

// newMailer wires IMAP action connections and SMTP senders for every
// account. Nothing is dialled until first use.
func newMailer(cfg *config.Config) *daemon.Mailer {
	m := &daemon.Mailer{Accounts: map[string]*daemon.AccountMailer{}}
	for i := range cfg.Accounts {
		acct := &cfg.Accounts[i]
		m.Accounts[acct.Name] = &daemon.AccountMailer{
			Name:   acct.Name,
			Owner:  ownerOf(acct),
			Sent:   acct.SentMailbox,
			Drafts: acct.DraftsMailbox,
			// The watched mailbox is never Drafts or Sent, even when the
			// server marks it so (config.Config.IncomingAccount).
			Incoming: func(name string) bool { return !incomingCheckOff && cfg.IncomingAccount(acct, name) != nil },
			Mailbox: daemon.MailboxPolicy{Archive: cfg.Mailbox.Archive, ArchiveFolder: cfg.Mailbox.ArchiveFolder,
				Keywords: cfg.Mailbox.Keywords},
			Dial: func(ctx context.Context) (*imapsync.Client, error) { return DialIMAP(ctx, acct) },
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

// ownerOf is the account's owner as routing knows them: the pipeline, the
// mailer (which decides who a message found on the server is from) and
// every command that asks whether an address is the owner's use it.
func ownerOf(a *config.Account) agent.Owner {
	return agent.Owner{Name: a.DisplayName, Addresses: a.OwnerAddresses(), AuthservID: a.AuthservID, Assistant: a.AssistantAddress}
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
	p, model, ps, err := classifyingPipeline(ctx, f, cfg, st, lazyModel)
	if err != nil {
		return nil, err
	}
	draftModel, err := f.draftModel(ctx, cfg, model)
	if err != nil {
		if !lazyModel {
			return nil, err
		}
		// Approving, rejecting and editing need no model; only a call
		// that does (regenerate) reports why it is missing.
		modelErr := err
		draftModel = llm.ModelFunc(func(context.Context, llm.Request) (*llm.Response, error) { return nil, modelErr })
	}
	profile := ""
	if cfg.OwnerProfileFile != "" {
		b, err := os.ReadFile(cfg.OwnerProfileFile)
		if err != nil {
			return nil, usageErr("owner_profile_file: %v", err)
		}
		profile = string(b)
	}
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
		Memory:     st,
		Learner:    &agent.Learner{Model: draftModel, Prompts: ps},
	}
	p.Calendar = newAgentCalendar(cfg)
	p.Tools = newToolStep(cfg.Tools)
	if cfg.Followup.Enabled {
		p.Followups = &agent.Followups{Store: st, Accounts: p.Accounts, Now: f.Now, Policy: agent.FollowupPolicy{
			Enabled: true, DefaultAfter: cfg.Followup.DefaultAfter.D(), BusinessDays: cfg.Followup.BusinessDays,
			MaxNudges: cfg.Followup.MaxNudges, NudgeText: cfg.Followup.NudgeText,
			AutoSendKnownContacts: cfg.Followup.AutoSendKnownContacts && cfg.Policy.Mode == config.ModeAuto}}
		p.Followups.Known = func(account, email string) bool {
			c, err := st.GetContact(account, email)
			return err == nil && c.Known
		}
		p.Followups.AutoSend = func(ctx context.Context, q *store.QueueItem) error {
			_, err := p.AutoNudge(ctx, q.ID) // automatic mail, never an approval: it teaches nothing
			return err
		}
	}
	return &agentParts{Pipeline: p, Mailer: mailer}, nil
}

// classifyingPipeline wires the pipeline triage and watch share over st:
// the threader rebuilt from its window, the model, the prompts and the
// classifier, the accounts and the policy. With lazyModel, a missing
// model (no API key) is only an error when a model call is made.
func classifyingPipeline(ctx context.Context, f *Factory, cfg *config.Config, st pipelineStore, lazyModel bool) (*agent.Pipeline, llm.Model, *prompts.Set, error) {
	threader, err := loadThreader(st)
	if err != nil {
		return nil, nil, nil, err
	}
	model, err := f.NewModel(ctx, taskConfig(cfg, config.TaskClassify))
	if err != nil {
		if !lazyModel {
			return nil, nil, nil, err
		}
		// Approving, rejecting and editing need no model; only a call
		// that does (regenerate) reports why it is missing.
		modelErr := err
		model = llm.ModelFunc(func(context.Context, llm.Request) (*llm.Response, error) { return nil, modelErr })
	}
	ps, err := prompts.Load(cfg.PromptsDir)
	if err != nil {
		return nil, nil, nil, usageErr("prompts_dir: %v", err)
	}
	return newPipeline(cfg, st, &agent.LLMClassifier{Model: model, Prompts: ps}, threader, f), model, ps, nil
}

// newPipeline wires an agent.Pipeline from the configuration.
func newPipeline(cfg *config.Config, st agent.Store, c agent.Classifier, th *mail.Threader, f *Factory) *agent.Pipeline {
	accts := map[string]agent.Account{}
	for i := range cfg.Accounts {
		a := &cfg.Accounts[i]
		accts[a.Name] = agent.Account{Name: a.Name, Owner: ownerOf(a)}
	}
	return &agent.Pipeline{
		Store: st, Classifier: c, Threader: th, Accounts: accts,
		Policy:            policyFromConfig(cfg.Policy),
		MaxBodyChars:      cfg.LLM.MaxBodyChars,
		ClassifyAutomated: cfg.LLM.ClassifyAutomated,
		Now:               f.Now,
		Logger:            f.Logger(),
		Snapshots:         cfg.Trace.Snapshots,
		Redactor:          config.NewRedactor(cfg.KnownSecrets()...),
	}
}

// newToolStep bounds the tool step before drafting and names the MCP
// servers whose allowed read-only tools it may call. A server starts the
// first time one of its tools runs; its process ends with mailagent's
// (the closed stdin ends a stdio server).
func newToolStep(t config.Tools) *agent.ToolStep {
	s := &agent.ToolStep{Timeout: t.CallTimeout(), MaxBytes: t.ResultCap()}
	for _, m := range t.MCP {
		srv := &agent.MCPServer{Name: m.Name, Command: m.Command, Args: m.Args, Env: m.Env, Allow: m.Allow, Timeout: m.Timeout.Duration}
		s.External = append(s.External, srv.Tools()...)
	}
	return s
}

func policyFromConfig(p config.Policy) agent.Policy {
	return agent.Policy{
		Mode: p.Mode, MinConfidence: p.MinConfidence, NeverAuto: p.NeverAuto,
		AutoSendNewContacts: p.AutoSendNewContacts, MaxPerContactPerDay: p.MaxAutoPerContactPerDay,
		MaxPerDay: p.MaxAutoPerDay, SendDelay: p.SendDelay.D(), ReplyAll: p.ReplyAll, MaxDraftChars: p.MaxDraftChars,
		ApprovalDelay: p.ApprovalDelay.D(), AutoSchedule: p.AutoSchedule, AllowDomains: p.AllowDomains,
	}
}

// threadWindow and threadLimit bound how much history the threader is
// rebuilt from at start (the newest threadLimit messages of the last
// threadWindow), which keeps a watcher with a big store small. Replies to
// older mail still join their thread through the References chain (the
// thread id derives from the root message id); only subject-merged threads
// older than this start afresh.
const (
	threadWindow = 180 * 24 * time.Hour
	threadLimit  = 25000
)

// loadThreader rebuilds the in-memory threader from stored messages: from
// the compact thread index of recent mail when the store has one (a local
// store), else from every record (through a watcher's socket).
func loadThreader(st pipelineStore) (*mail.Threader, error) {
	th := mail.NewThreader()
	add := func(in mail.ThreadInput) error {
		th.Add(in)
		return nil
	}
	var err error
	if ti, ok := st.(interface {
		ThreadInputs(since time.Time, limit int, fn func(mail.ThreadInput) error) error
	}); ok {
		err = ti.ThreadInputs(time.Now().Add(-threadWindow), threadLimit, add)
	} else {
		err = st.ListMessages(store.MessageFilter{}, func(r *store.MessageRecord) error {
			return add(mail.ThreadInput{MessageID: r.MessageID, InReplyTo: r.InReplyTo, References: r.References, Subject: r.Subject, Date: r.Date})
		})
	}
	if err != nil {
		return nil, fmt.Errorf("load threads: %w", err)
	}
	return th, nil
}

// newDaemon builds the watch daemon for the chosen accounts.
func newDaemon(f *Factory, cfg *config.Config, st *store.Store, parts *agentParts, accounts []*config.Account) *daemon.Daemon {
	d := &daemon.Daemon{
		Store: st, Pipeline: parts.Pipeline, Mailer: parts.Mailer,
		MaxMessageBytes: cfg.Sync.MaxMessageBytes,
		InitialLookback: cfg.Sync.InitialLookback.D(),
		RetryInterval:   cfg.Sync.RetryInterval.D(),
		PollInterval:    cfg.Sync.PollInterval.D(),
		ThreadWindow:    threadWindow,
		ThreadLimit:     threadLimit,
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
	if parts.Pipeline.Followups != nil {
		parts.Pipeline.Followups.Notify = d.Notify
	}
	return d
}

// Service connects to the running watcher, or opens the store directly
// when none runs. withActions builds a local pipeline for the actions
// (approve, reject, …) in the second case.
func (f *Factory) Service(ctx context.Context, withActions bool) (api.Service, func() error, error) {
	cfg, err := f.Config()
	if err != nil {
		return nil, nil, err
	}
	var parts *agentParts
	var withLocal func(*store.Store) api.Actions
	if withActions {
		withLocal = func(st *store.Store) api.Actions {
			p, err := buildAgent(ctx, f, cfg, st, true)
			if err != nil {
				f.Logger().Warn("local actions unavailable", "err", err)
				return nil
			}
			parts = p
			la := actions.Local{Pipeline: p.Pipeline, Daemon: newDaemon(f, cfg, st, p, nil), NoWatcher: true, Undo: f.approveNotice, DeferSend: f.deferApprovalSend}
			la.Hold = func(ctx context.Context, command string) func() {
				// What the socket serves meanwhile: the same actions, without
				// this hold or this process's notices (an approval through
				// the socket waits out its own window in its request).
				served := la
				served.Hold, served.Undo = nil, nil
				l := &api.Local{DB: st, Actions: served, AutoSendCap: cfg.Policy.MaxAutoPerDay, StatusFunc: actions.HeldStatus()}
				return api.ServeHeld(ctx, cfg.StateDir, l, command, f.Logger())
			}
			return la
		}
	}
	svc, closeFn, err := api.Open(ctx, cfg.StateDir, func() (*store.Store, error) { return f.OpenStore(false) }, withLocal)
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

// fromApp turns an application-tier error the owner can act on
// (*apperr.Error) into this command line's UserError: the same exit code
// and hint; any other error is returned as it is.
func fromApp(err error) error {
	var ae *apperr.Error
	if errors.As(err, &ae) {
		return &UserError{Code: ae.Code, Err: ae.Err, Hint: ae.Hint}
	}
	return err
}
