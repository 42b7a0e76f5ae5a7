// Package unsubscribe executes an unsubscribe the owner asked for (the
// `mailagent unsubscribe` command and the review TUI's U share it): it
// reads the message's List-Unsubscribe header again from the server,
// chooses the method, and then posts the RFC 8058 one-click request or
// sends the unsubscribe mail through the outbox, and records what it did.
//
// It is the application tier over internal/unsubscribe, the leaf library
// that parses the header and makes the one-click POST (that package may
// import no application-tier package; this one needs the state database's
// service, the agent's own-mail door and the mail server).
package unsubscribe

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/internal/app/actions"
	"github.com/mailagent/mailagent/internal/app/api"
	"github.com/mailagent/mailagent/internal/app/apperr"
	"github.com/mailagent/mailagent/internal/app/daemon"
	"github.com/mailagent/mailagent/internal/config"
	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/internal/netpolicy"
	"github.com/mailagent/mailagent/internal/termsafe"
	listunsub "github.com/mailagent/mailagent/internal/unsubscribe"
	"github.com/mailagent/mailagent/store"
)

// Env is what an unsubscribe needs from the process.
type Env struct {
	// Config is the loaded configuration (accounts, policy.allow_domains).
	Config *config.Config
	// Mailer builds the mail-server connections (nothing dialled until
	// first use); the plan closes it.
	Mailer func(*config.Config) *daemon.Mailer
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// Poster makes the one-click request; nil is the default client
	// (https only, public addresses only).
	Poster func() *listunsub.Poster
}

func (e *Env) now() time.Time {
	if e.Now == nil {
		return time.Now()
	}
	return e.Now()
}

// Plan is what an unsubscribe would send, read from the message on the
// server, before anything is sent. Close releases its mail-server
// connections.
type Plan struct {
	// Record is what will be kept (store.Unsubscribe); Execute fills in
	// Result and At.
	Record store.Unsubscribe
	// What says in words what would be sent, for the confirmation.
	What string
	// Notice, when set, is told of the undo window this process waits
	// out ("… in 5s; press Ctrl-C to cancel"); nil in the review TUI,
	// which owns the terminal.
	Notice io.Writer

	env    *Env
	o      listunsub.Options
	from   string
	mailer *daemon.Mailer
}

// Close releases the plan's mail-server connections.
func (p *Plan) Close() { p.mailer.Close() }

// NewPlan finds the message of ref (a Message-ID or trace id) through
// svc, reads its List-Unsubscribe header again from the server and
// chooses the method. It sends nothing. An unknown message is an
// *apperr.Error with CodeUsage; a message with no usable header (none,
// or every method refused) one with CodeFailure wrapping
// internal/unsubscribe.ErrNone.
func NewPlan(ctx context.Context, env *Env, svc api.Service, ref string) (*Plan, error) {
	cfg := env.Config
	ref = strings.Trim(strings.TrimSpace(ref), "<>")
	ex, err := svc.Explain(ctx, ref)
	if errors.Is(err, store.ErrNotFound) || (err == nil && ex.Message == nil) {
		return nil, &apperr.Error{Code: apperr.CodeUsage, Err: fmt.Errorf("no message %q in the state database", termsafe.Line(ref)),
			Hint: "use a Message-ID or trace id from `mailagent triage` or `mailagent queue list`"}
	}
	if err != nil {
		return nil, err
	}
	rec := ex.Message
	mailer := env.Mailer(cfg)
	raw, err := mailer.FetchUID(ctx, rec.Account, rec.Mailbox, rec.UIDValidity, rec.UID, 256<<10)
	if err != nil {
		mailer.Close()
		return nil, fmt.Errorf("read the message again from the server: %w", err)
	}
	m := mail.Parse(raw.Raw)
	if mail.IDKey(m.MessageID) != mail.IDKey(rec.MessageID) {
		mailer.Close()
		return nil, fmt.Errorf("the message at uid %d is no longer %s", rec.UID, termsafe.Line(rec.MessageID))
	}
	from := accountEmail(cfg, rec.Account)
	allow := append([]string{netpolicy.MailDomain(from)}, cfg.Policy.AllowDomains...)
	p := &Plan{env: env, mailer: mailer, from: from,
		o: listunsub.Parse(m.HeaderValue("List-Unsubscribe"), m.HeaderValue("List-Unsubscribe-Post"), allow...)}
	list := m.HeaderValue("List-Id")
	if list == "" {
		list = m.From.Email
	}
	p.Record = store.Unsubscribe{Account: rec.Account, Message: rec.MessageKey, MessageID: rec.MessageID, List: list}
	switch {
	case p.o.OneClick != "":
		p.Record.Method, p.Record.Target = listunsub.MethodOneClick, p.o.OneClick
		p.What = "a one-click request (RFC 8058) to " + termsafe.Line(p.o.OneClick)
	case p.o.Mailto != "":
		p.Record.Method, p.Record.Target = listunsub.MethodMailto, p.o.Mailto
		p.What = fmt.Sprintf("a mail to %s (subject %q) from %s", termsafe.Line(p.o.Mailto), termsafe.Line(p.o.Subject), p.from)
	default:
		mailer.Close()
		why := "the message has no List-Unsubscribe header"
		if len(p.o.Refused) > 0 {
			why = "refused: " + strings.Join(p.o.Refused, "; ")
		}
		return nil, &apperr.Error{Code: apperr.CodeFailure, Err: fmt.Errorf("%w (%s)", listunsub.ErrNone, termsafe.Line(why))}
	}
	return p, nil
}

// Execute sends what the plan says and records it through svc (also a
// failure: the record's Result is then the error's text). The mail goes
// through the outbox (api.OwnMailer: the watcher's, or this process's
// pipeline): with no watcher this process waits out the undo window and
// sends it (an ended ctx cancels it); with one, the watcher's due timer
// sends it and the record says it is scheduled.
func (p *Plan) Execute(ctx context.Context, svc api.Service) error {
	var err error
	switch p.Record.Method {
	case listunsub.MethodOneClick:
		poster := &listunsub.Poster{}
		if p.env.Poster != nil {
			poster = p.env.Poster()
		}
		err = poster.Post(ctx, p.o.OneClick)
		p.Record.Result = "ok"
	default:
		p.Record.Result, err = p.mail(ctx, svc)
	}
	p.Record.At = p.env.now()
	if err != nil {
		p.Record.Result = err.Error()
	}
	if rerr := svc.RecordUnsubscribe(context.WithoutCancel(ctx), p.Record); rerr != nil {
		return errors.Join(err, fmt.Errorf("record the unsubscribe: %w", rerr))
	}
	return err
}

// mail sends the unsubscribe mail through the outbox and says what
// became of it: "ok" (sent) or "scheduled: …" (a watcher sends it).
func (p *Plan) mail(ctx context.Context, svc api.Service) (string, error) {
	ms, ok := svc.(api.OwnMailer)
	if !ok {
		return "", fmt.Errorf("unsubscribe by mail: %w", api.ErrNoActions)
	}
	body := p.o.Body
	if strings.TrimSpace(body) == "" {
		body = "unsubscribe"
	}
	k := p.Record.Message
	ob, err := ms.SendOwnMail(ctx, agent.OwnMail{Kind: store.OutboxKindUnsubscribe, Account: p.Record.Account,
		Ref: fmt.Sprintf("%s\x00%s\x00%d\x00%d", k.Account, k.Mailbox, k.UIDValidity, k.UID),
		To:  p.o.Mailto, Subject: p.o.Subject, Body: body})
	if err != nil {
		return "", err
	}
	if ob.Status == store.OutboxScheduled {
		s, ok := dueSender(svc)
		if !ok {
			return fmt.Sprintf("scheduled: the watcher sends it at %s (cancel with: mailagent queue cancel %s)",
				ob.SendAt.Local().Format(time.TimeOnly), ob.ID), nil
		}
		what := "sending the unsubscribe mail to " + termsafe.Line(p.o.Mailto)
		ob, err = s.SendWhenDue(ctx, ob.ID, func(ctx context.Context, at time.Time) error {
			return actions.WaitUndo(ctx, p.Notice, ob.ID, what, at, p.env.Now)
		})
		if errors.Is(err, agent.ErrApprovalCancelled) {
			return "", fmt.Errorf("cancelled in its undo window: nothing was sent (%s)", ob.ID)
		}
		if err != nil {
			return "", err
		}
	}
	switch ob.Status {
	case store.OutboxSent, store.OutboxAppended:
		return "ok", nil
	case store.OutboxCancelled:
		return "", fmt.Errorf("cancelled: nothing was sent (%s)", ob.ID)
	}
	return "", fmt.Errorf("not sent: %s %s %s", ob.ID, ob.Status, termsafe.Line(ob.Error))
}

// dueSender is this process's pipeline when it has one and no watcher
// runs: then nothing else sends a scheduled mail when it is due.
func dueSender(svc api.Service) (interface {
	SendWhenDue(ctx context.Context, id string, wait func(context.Context, time.Time) error) (*store.OutboxRecord, error)
}, bool) {
	l, ok := svc.(*api.Local)
	if !ok || l.Actions == nil {
		return nil, false
	}
	s, ok := l.Actions.(interface {
		SendWhenDue(ctx context.Context, id string, wait func(context.Context, time.Time) error) (*store.OutboxRecord, error)
	})
	return s, ok
}

func accountEmail(cfg *config.Config, name string) string {
	if a, ok := cfg.Account(name); ok {
		return a.Email
	}
	return ""
}

// Poster is the one-click client (internal/unsubscribe's), named here so
// a command can set Env.Poster without importing the library.
type Poster = listunsub.Poster
