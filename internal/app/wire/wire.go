// Package wire builds the agent's object graph from the configuration:
// the pipeline triage, watch and replay share (NewPipeline,
// ClassifyingPipeline), the full agent able to act (BuildAgent: drafter,
// actor, mailer, tools, calendar and the follow-up tracker with its
// unattended auto-send), and the watch daemon over it (NewDaemon). The
// command line, the TUI's local actions and a triage serving the socket
// all build it here, so a rule wired once holds for each of them. Only
// what comes from the process (the clock, the log, the model clients,
// the logins) arrives through Env.
package wire

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/agent/followup"
	"github.com/mailagent/mailagent/imapsync"
	"github.com/mailagent/mailagent/internal/app/apperr"
	"github.com/mailagent/mailagent/internal/app/daemon"
	"github.com/mailagent/mailagent/internal/config"
	"github.com/mailagent/mailagent/internal/llm"
	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/internal/notify"
	"github.com/mailagent/mailagent/internal/smtpsend"
	"github.com/mailagent/mailagent/prompts"
	"github.com/mailagent/mailagent/store"
)

// Env is what the wiring needs from the process. Every func is required
// unless said otherwise; none is called before a build needs it.
type Env struct {
	// Now is the clock.
	Now func() time.Time
	// Logger receives the pipeline's and the daemon's log.
	Logger *slog.Logger
	// ClassifyModel builds the model of [llm.classify] over [llm].
	ClassifyModel func(ctx context.Context) (llm.Model, error)
	// DraftModel builds the model of [llm.draft] over [llm], or returns
	// classify when both tasks resolve to the same settings.
	DraftModel func(ctx context.Context, classify llm.Model) (llm.Model, error)
	// DialIMAP connects and logs in to an account's IMAP server.
	DialIMAP func(ctx context.Context, acct *config.Account) (*imapsync.Client, error)
	// SMTP resolves an account's SMTP login.
	SMTP func(ctx context.Context, acct *config.Account) (smtpsend.Options, error)
	// Calendar is the agent's calendar; nil when no account has one.
	Calendar agent.Calendar
	// IncomingCheckOff switches off the rule that the watched mailbox is
	// never Drafts or Sent: only for the positive control of the test
	// that attacks it (TestWatchedFolderNeverDraftsOrSent).
	IncomingCheckOff bool
}

// PipelineStore is the store a classifying pipeline runs over: the
// agent's store, and a listing of every record (to rebuild the threader
// through a watcher's socket).
type PipelineStore interface {
	agent.Store
	ListMessages(f store.MessageFilter, fn func(*store.MessageRecord) error) error
}

// NewMailer wires IMAP action connections and SMTP senders for every
// account. Nothing is dialled until first use.
func NewMailer(env *Env, cfg *config.Config) *daemon.Mailer {
	m := &daemon.Mailer{Accounts: map[string]*daemon.AccountMailer{}}
	for i := range cfg.Accounts {
		acct := &cfg.Accounts[i]
		m.Accounts[acct.Name] = &daemon.AccountMailer{
			Name:   acct.Name,
			Owner:  Owner(acct),
			Sent:   acct.SentMailbox,
			Drafts: acct.DraftsMailbox,
			// The watched mailbox is never Drafts or Sent, even when the
			// server marks it so (config.Config.IncomingAccount).
			Incoming: func(name string) bool { return !env.IncomingCheckOff && cfg.IncomingAccount(acct, name) != nil },
			Mailbox: daemon.MailboxPolicy{Archive: cfg.Mailbox.Archive, ArchiveFolder: cfg.Mailbox.ArchiveFolder,
				Keywords: cfg.Mailbox.Keywords},
			Dial: func(ctx context.Context) (*imapsync.Client, error) { return env.DialIMAP(ctx, acct) },
			SMTP: func(ctx context.Context) (*smtpsend.Sender, error) {
				opts, err := env.SMTP(ctx, acct)
				if err != nil {
					return nil, err
				}
				return smtpsend.New(opts)
			},
		}
	}
	return m
}

// Owner is the account's owner as routing knows them: the pipeline, the
// mailer (which decides who a message found on the server is from) and
// every command that asks whether an address is the owner's use it. It
// is the one reader of the owner's addresses in the configuration.
func Owner(a *config.Account) agent.Owner {
	return agent.Owner{Name: a.DisplayName, Addresses: a.OwnerAddresses(), AuthservID: a.AuthservID, Assistant: a.AssistantAddress}
}

// Agent is a pipeline able to act (send, queue, draft), and what it was
// built from. Mailer.Close releases its connections.
type Agent struct {
	Pipeline *agent.Pipeline
	Mailer   *daemon.Mailer
}

// BuildAgent wires the full pipeline over an open store: model, prompts,
// threader, actor and mailer, the calendar, the tool step and, when
// followup.enabled, the follow-up tracker (Followups).
// With lazyModel, a missing model (no API key) is only an error when a
// model call is made. A bad owner_profile_file or prompts_dir is an
// *apperr.Error with CodeUsage.
func BuildAgent(ctx context.Context, env *Env, cfg *config.Config, st *store.Store, lazyModel bool) (*Agent, error) {
	p, model, ps, err := ClassifyingPipeline(ctx, env, cfg, st, lazyModel)
	if err != nil {
		return nil, err
	}
	draftModel, err := env.DraftModel(ctx, model)
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
			return nil, apperr.Usage("owner_profile_file: %v", err)
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
	mailer := NewMailer(env, cfg)
	p.Actor = &agent.Actor{
		Store:      st,
		Drafter:    &agent.LLMDrafter{Model: draftModel, Prompts: ps, MaxChars: cfg.Policy.MaxDraftChars},
		Mailer:     mailer,
		Profile:    profile,
		Summarizer: &agent.LLMSummarizer{Model: draftModel, Prompts: ps},
		Memory:     st,
		Learner:    &agent.Learner{Model: draftModel, Prompts: ps},
	}
	p.Calendar = env.Calendar
	p.Tools = NewToolStep(cfg.Tools)
	p.Followups = Followups(env, cfg, st, p)
	return &Agent{Pipeline: p, Mailer: mailer}, nil
}

// Followups is the follow-up tracker of p over st, nil when
// followup.enabled is off. An unattended follow-up
// (followup.auto_send_known_contacts, policy.mode auto only) goes out
// through Pipeline.AutoNudge: automatic mail, never an approval, so it
// teaches nothing; a contact is known by the store's contact record.
func Followups(env *Env, cfg *config.Config, st *store.Store, p *agent.Pipeline) *followup.Tracker {
	if !cfg.Followup.Enabled {
		return nil
	}
	fu := &followup.Tracker{Store: st, Accounts: p.Accounts, Now: env.Now, Policy: followup.Policy{
		Enabled: true, DefaultAfter: cfg.Followup.DefaultAfter.D(), BusinessDays: cfg.Followup.BusinessDays,
		MaxNudges: cfg.Followup.MaxNudges, NudgeText: cfg.Followup.NudgeText,
		AutoSendKnownContacts: cfg.Followup.AutoSendKnownContacts && cfg.Policy.Mode == config.ModeAuto}}
	fu.Known = func(account, email string) bool {
		c, err := st.GetContact(account, email)
		return err == nil && c.Known
	}
	fu.AutoSend = func(ctx context.Context, q *store.QueueItem) error {
		_, err := p.AutoNudge(ctx, q.ID) // automatic mail, never an approval: it teaches nothing
		return err
	}
	return fu
}

// ClassifyingPipeline wires the pipeline triage and watch share over st:
// the threader rebuilt from its window, the model, the prompts and the
// classifier, the accounts and the policy. With lazyModel, a missing
// model (no API key) is only an error when a model call is made. A bad
// prompts_dir is an *apperr.Error with CodeUsage.
func ClassifyingPipeline(ctx context.Context, env *Env, cfg *config.Config, st PipelineStore, lazyModel bool) (*agent.Pipeline, llm.Model, *prompts.Set, error) {
	threader, err := LoadThreader(st)
	if err != nil {
		return nil, nil, nil, err
	}
	model, err := env.ClassifyModel(ctx)
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
		return nil, nil, nil, apperr.Usage("prompts_dir: %v", err)
	}
	return NewPipeline(env, cfg, st, &agent.LLMClassifier{Model: model, Prompts: ps}, threader), model, ps, nil
}

// NewPipeline wires an agent.Pipeline from the configuration: accounts
// and owners, policy, limits, clock, log and redactor, over st with
// classifier c and threader th.
func NewPipeline(env *Env, cfg *config.Config, st agent.Store, c agent.Classifier, th *mail.Threader) *agent.Pipeline {
	accts := map[string]agent.Account{}
	for i := range cfg.Accounts {
		a := &cfg.Accounts[i]
		accts[a.Name] = agent.Account{Name: a.Name, Owner: Owner(a)}
	}
	return &agent.Pipeline{
		Store: st, Classifier: c, Threader: th, Accounts: accts,
		Policy:            PolicyFromConfig(cfg.Policy),
		MaxBodyChars:      cfg.LLM.MaxBodyChars,
		ClassifyAutomated: cfg.LLM.ClassifyAutomated,
		Now:               env.Now,
		Logger:            env.Logger,
		Snapshots:         cfg.Trace.Snapshots,
		Redactor:          config.NewRedactor(cfg.KnownSecrets()...),
	}
}

// NewToolStep bounds the tool step before drafting and names the MCP
// servers whose allowed read-only tools it may call. A server starts the
// first time one of its tools runs; its process ends with mailagent's
// (the closed stdin ends a stdio server).
func NewToolStep(t config.Tools) *agent.ToolStep {
	s := &agent.ToolStep{Timeout: t.CallTimeout(), MaxBytes: t.ResultCap()}
	for _, m := range t.MCP {
		srv := &agent.MCPServer{Name: m.Name, Command: m.Command, Args: m.Args, Env: m.Env, Allow: m.Allow, Timeout: m.Timeout.Duration}
		s.External = append(s.External, srv.Tools()...)
	}
	return s
}

// PolicyFromConfig is the agent's policy of the [policy] section.
func PolicyFromConfig(p config.Policy) agent.Policy {
	return agent.Policy{
		Mode: p.Mode, MinConfidence: p.MinConfidence, NeverAuto: p.NeverAuto,
		AutoSendNewContacts: p.AutoSendNewContacts, MaxPerContactPerDay: p.MaxAutoPerContactPerDay,
		MaxPerDay: p.MaxAutoPerDay, SendDelay: p.SendDelay.D(), ReplyAll: p.ReplyAll, MaxDraftChars: p.MaxDraftChars,
		ApprovalDelay: p.ApprovalDelay.D(), AutoSchedule: p.AutoSchedule, AllowDomains: p.AllowDomains,
	}
}

// ThreadWindow and ThreadLimit bound how much history the threader is
// rebuilt from at start (the newest ThreadLimit messages of the last
// ThreadWindow), which keeps a watcher with a big store small. Replies to
// older mail still join their thread through the References chain (the
// thread id derives from the root message id); only subject-merged threads
// older than this start afresh.
const (
	ThreadWindow = 180 * 24 * time.Hour
	ThreadLimit  = 25000
)

// LoadThreader rebuilds the in-memory threader from stored messages: from
// the compact thread index of recent mail when the store has one (a local
// store), else from every record (through a watcher's socket).
func LoadThreader(st PipelineStore) (*mail.Threader, error) {
	th := mail.NewThreader()
	add := func(in mail.ThreadInput) error {
		th.Add(in)
		return nil
	}
	var err error
	if ti, ok := st.(interface {
		ThreadInputs(since time.Time, limit int, fn func(mail.ThreadInput) error) error
	}); ok {
		err = ti.ThreadInputs(time.Now().Add(-ThreadWindow), ThreadLimit, add)
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

// NewDaemon builds the watch daemon of parts for the chosen accounts
// (none: a daemon that only retries and sends, for local actions), and
// has the agent's events wake its timer of due sends and snoozes.
func NewDaemon(env *Env, cfg *config.Config, st *store.Store, parts *Agent, accounts []*config.Account) *daemon.Daemon {
	d := &daemon.Daemon{
		Store: st, Pipeline: parts.Pipeline, Mailer: parts.Mailer,
		MaxMessageBytes: cfg.Sync.MaxMessageBytes,
		InitialLookback: cfg.Sync.InitialLookback.D(),
		RetryInterval:   cfg.Sync.RetryInterval.D(),
		PollInterval:    cfg.Sync.PollInterval.D(),
		Claims:          daemon.ClaimOptions{Off: cfg.Sync.Claims == config.ClaimsOff, Auto: cfg.Sync.Claims != config.ClaimsOn, Lease: cfg.Sync.ClaimLease.D()},
		ThreadWindow:    ThreadWindow,
		ThreadLimit:     ThreadLimit,
		Concurrency:     cfg.LLM.Concurrency,
		Logger:          env.Logger,
		Now:             env.Now,
		Notifier:        notify.FromConfig(cfg.Notify, env.Logger), // nil unless [notify] desktop
	}
	for _, acct := range accounts {
		d.Accounts = append(d.Accounts, daemon.Account{
			Name: acct.Name, Mailbox: acct.Mailbox,
			Dial: func(ctx context.Context) (*imapsync.Client, error) { return env.DialIMAP(ctx, acct) },
		})
	}
	// The agent's events wake the daemon's timer of due sends and snoozes,
	// which otherwise sleeps until the next due time (watch adds the API
	// broker in front).
	parts.Pipeline.Actor.Notify = d.Notify
	if parts.Pipeline.Followups != nil {
		parts.Pipeline.Followups.Notify = agent.EventsTo(d.Notify)
	}
	return d
}
