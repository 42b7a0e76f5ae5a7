package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/internal/app/actions"
	"github.com/mailagent/mailagent/internal/app/api"
	"github.com/mailagent/mailagent/internal/config"
	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/internal/netpolicy"
	"github.com/mailagent/mailagent/internal/termsafe"
	"github.com/mailagent/mailagent/internal/unsubscribe"
	"github.com/mailagent/mailagent/store"
)

// UnsubscribeOptions are the flags of `mailagent unsubscribe`.
type UnsubscribeOptions struct {
	Ref  string // a Message-ID or trace id
	Yes  bool
	JSON bool
}

// newUnsubscribePoster makes the one-click client; tests replace it.
var newUnsubscribePoster = func() *unsubscribe.Poster { return &unsubscribe.Poster{} }

func newUnsubscribeCmd(f *Factory, runF func(context.Context, *UnsubscribeOptions) error) *cobra.Command {
	opts := &UnsubscribeOptions{}
	cmd := &cobra.Command{
		Use:   "unsubscribe ID",
		Short: "Leave the mailing list a message came from (after you confirm)",
		Long: `Reads the message's List-Unsubscribe header again from the server and
unsubscribes: by the RFC 8058 one-click POST when the list offers it (https
only, never to an internal address), else by mail to the list's address
(a public address only: never an address literal or a local name, unless
policy.allow_domains names its domain). The mail goes through the outbox
like a reply: Auto-Submitted: auto-generated, one record, and the undo
window of policy.approval_delay (Ctrl-C, or with a watcher running
` + "`mailagent queue cancel ob_…`" + `, cancels it). It asks first (--yes in a
script), and records what it did. ID is the Message-ID or a trace id.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Ref = args[0]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return unsubscribeRun(cmd.Context(), f, opts)
		},
	}
	cmd.Flags().BoolVarP(&opts.Yes, "yes", "y", false, "do it without asking (needed when stdin is not a terminal)")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the record as JSON")
	return cmd
}

func unsubscribeRun(ctx context.Context, f *Factory, opts *UnsubscribeOptions) error {
	svc, closeSvc, err := f.Service(ctx, true)
	if err != nil {
		return err
	}
	defer func() { _ = closeSvc() }()
	p, err := planUnsubscribe(ctx, f, svc, opts.Ref)
	if err != nil {
		return err
	}
	defer p.close()
	if err := confirmUnsubscribe(f, opts, termsafe.Line(p.u.List), p.what); err != nil {
		return err
	}
	p.notice = f.Stderr
	if err := p.execute(ctx, f, svc); err != nil {
		return err
	}
	if opts.JSON {
		u := p.u
		return writeJSON(f.Stdout, UnsubscribeJSON{Account: u.Account, MessageID: u.MessageID, List: u.List, Method: u.Method,
			Target: u.Target, Result: u.Result, At: u.At})
	}
	if p.u.Result != "ok" {
		fmt.Fprintf(f.Stderr, "unsubscribe from %s: %s\n", termsafe.Line(p.u.List), termsafe.Line(p.u.Result))
		return nil
	}
	fmt.Fprintf(f.Stderr, "unsubscribed from %s by %s\n", termsafe.Line(p.u.List), strings.ReplaceAll(p.u.Method, "_", "-"))
	return nil
}

// unsubscribePlan is what an unsubscribe would send, read from the
// message on the server, before anything is sent.
type unsubscribePlan struct {
	u      store.Unsubscribe
	o      unsubscribe.Options
	from   string
	what   string // in words, for the confirmation
	mailer interface{ Close() }
	// notice, when set, is told of the undo window this process waits
	// out ("… in 5s; press Ctrl-C to cancel"); nil in the review TUI,
	// which owns the terminal.
	notice io.Writer
}

func (p *unsubscribePlan) close() { p.mailer.Close() }

// planUnsubscribe finds the message of ref (a Message-ID or trace id),
// reads its List-Unsubscribe header again from the server and chooses the
// method. It sends nothing.
func planUnsubscribe(ctx context.Context, f *Factory, svc api.Service, ref string) (*unsubscribePlan, error) {
	cfg, err := f.Config()
	if err != nil {
		return nil, err
	}
	ref = strings.Trim(strings.TrimSpace(ref), "<>")
	ex, err := svc.Explain(ctx, ref)
	if errors.Is(err, store.ErrNotFound) || (err == nil && ex.Message == nil) {
		return nil, &UserError{Code: ExitUsage, Err: fmt.Errorf("no message %q in the state database", termsafe.Line(ref)),
			Hint: "use a Message-ID or trace id from `mailagent triage` or `mailagent queue list`"}
	}
	if err != nil {
		return nil, err
	}
	rec := ex.Message
	mailer := newMailer(cfg)
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
	p := &unsubscribePlan{mailer: mailer, from: from,
		o: unsubscribe.Parse(m.HeaderValue("List-Unsubscribe"), m.HeaderValue("List-Unsubscribe-Post"), allow...)}
	list := m.HeaderValue("List-Id")
	if list == "" {
		list = m.From.Email
	}
	p.u = store.Unsubscribe{Account: rec.Account, Message: rec.MessageKey, MessageID: rec.MessageID, List: list}
	switch {
	case p.o.OneClick != "":
		p.u.Method, p.u.Target = unsubscribe.MethodOneClick, p.o.OneClick
		p.what = "a one-click request (RFC 8058) to " + termsafe.Line(p.o.OneClick)
	case p.o.Mailto != "":
		p.u.Method, p.u.Target = unsubscribe.MethodMailto, p.o.Mailto
		p.what = fmt.Sprintf("a mail to %s (subject %q) from %s", termsafe.Line(p.o.Mailto), termsafe.Line(p.o.Subject), p.from)
	default:
		mailer.Close()
		why := "the message has no List-Unsubscribe header"
		if len(p.o.Refused) > 0 {
			why = "refused: " + strings.Join(p.o.Refused, "; ")
		}
		return nil, &UserError{Code: ExitFailure, Err: fmt.Errorf("%w (%s)", unsubscribe.ErrNone, termsafe.Line(why))}
	}
	return p, nil
}

// execute sends what the plan says and records it (also a failure). The
// mail goes through the outbox (api.OwnMailer: the watcher's, or this
// process's pipeline): with no watcher this process waits out the undo
// window and sends it (Ctrl-C cancels); with one, the watcher's due timer
// sends it and the record says it is scheduled.
func (p *unsubscribePlan) execute(ctx context.Context, f *Factory, svc api.Service) error {
	var err error
	switch p.u.Method {
	case unsubscribe.MethodOneClick:
		err = newUnsubscribePoster().Post(ctx, p.o.OneClick)
		p.u.Result = "ok"
	default:
		p.u.Result, err = p.mail(ctx, f, svc)
	}
	p.u.At = f.Now()
	if err != nil {
		p.u.Result = err.Error()
	}
	if rerr := svc.RecordUnsubscribe(context.WithoutCancel(ctx), p.u); rerr != nil {
		return errors.Join(err, fmt.Errorf("record the unsubscribe: %w", rerr))
	}
	return err
}

// mail sends the unsubscribe mail through the outbox and says what
// became of it: "ok" (sent) or "scheduled: …" (a watcher sends it).
func (p *unsubscribePlan) mail(ctx context.Context, f *Factory, svc api.Service) (string, error) {
	ms, ok := svc.(api.OwnMailer)
	if !ok {
		return "", fmt.Errorf("unsubscribe by mail: %w", api.ErrNoActions)
	}
	body := p.o.Body
	if strings.TrimSpace(body) == "" {
		body = "unsubscribe"
	}
	k := p.u.Message
	ob, err := ms.SendOwnMail(ctx, agent.OwnMail{Kind: store.OutboxKindUnsubscribe, Account: p.u.Account,
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
			return actions.WaitUndo(ctx, p.notice, ob.ID, what, at, f.Now)
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

// confirmUnsubscribe asks y/N at a terminal; a script must say --yes.
func confirmUnsubscribe(f *Factory, opts *UnsubscribeOptions, list, what string) error {
	if opts.Yes {
		return nil
	}
	if !stdinIsTTY(f.Stdin) {
		return &UserError{Code: ExitUsage, Err: fmt.Errorf("nothing sent: unsubscribing from %s sends %s", list, what),
			Hint: "run it at a terminal to confirm, or add --yes"}
	}
	fmt.Fprintf(f.Stderr, "unsubscribe from %s with %s? y/N: ", list, what)
	answer, err := bufio.NewReader(f.Stdin).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("read answer: %w", err)
	}
	if a := strings.ToLower(strings.TrimSpace(answer)); a != "y" && a != "yes" {
		return &UserError{Code: ExitFailure, Err: errors.New("nothing sent")}
	}
	return nil
}
