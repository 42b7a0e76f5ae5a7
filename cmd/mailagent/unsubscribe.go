package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/internal/app/api"
	"github.com/mailagent/mailagent/internal/compose"
	"github.com/mailagent/mailagent/internal/config"
	"github.com/mailagent/mailagent/internal/mail"
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
only, never to an internal address), else by mail to the list's address,
sent through your SMTP server. It asks first (--yes in a script), and
records what it did. ID is the Message-ID or a trace id.`,
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
	svc, closeSvc, err := f.Service(ctx, false)
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
	if err := p.execute(ctx, f, svc); err != nil {
		return err
	}
	if opts.JSON {
		u := p.u
		return writeJSON(f.Stdout, UnsubscribeJSON{Account: u.Account, MessageID: u.MessageID, List: u.List, Method: u.Method,
			Target: u.Target, Result: u.Result, At: u.At})
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
	mailer interface {
		Send(ctx context.Context, account, from string, to []string, raw []byte) error
		AppendSent(ctx context.Context, account string, raw []byte) error
		Close()
	}
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
	p := &unsubscribePlan{mailer: mailer, from: accountEmail(cfg, rec.Account),
		o: unsubscribe.Parse(m.HeaderValue("List-Unsubscribe"), m.HeaderValue("List-Unsubscribe-Post"))}
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

// execute sends what the plan says and records it (also a failure).
func (p *unsubscribePlan) execute(ctx context.Context, f *Factory, svc api.Service) error {
	var err error
	switch p.u.Method {
	case unsubscribe.MethodOneClick:
		err = newUnsubscribePoster().Post(ctx, p.o.OneClick)
	default:
		msg := unsubscribeMail(p.from, p.o)
		if err = p.mailer.Send(ctx, p.u.Account, p.from, []string{p.o.Mailto}, msg); err == nil {
			if aerr := p.mailer.AppendSent(ctx, p.u.Account, msg); aerr != nil {
				f.Logger().Warn("unsubscribe: copy to Sent", "err", aerr)
			}
		}
	}
	p.u.Result, p.u.At = "ok", f.Now()
	if err != nil {
		p.u.Result = err.Error()
	}
	if rerr := svc.RecordUnsubscribe(ctx, p.u); rerr != nil {
		return errors.Join(err, fmt.Errorf("record the unsubscribe: %w", rerr))
	}
	return err
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

// unsubscribeMail is the mail to a list's unsubscribe address: the owner
// writes it (no Auto-Submitted), with the loop-guard header, and nothing
// from the list but the address, the cleaned subject and body.
func unsubscribeMail(from string, o unsubscribe.Options) []byte {
	domain := from[strings.LastIndexByte(from, '@')+1:]
	var b strings.Builder
	fmt.Fprintf(&b, "From: <%s>\r\nTo: <%s>\r\nSubject: %s\r\nDate: %s\r\nMessage-ID: <%s>\r\n%s: unsubscribe\r\n",
		from, o.Mailto, mime.QEncoding.Encode("utf-8", o.Subject), time.Now().Format(time.RFC1123Z),
		compose.NewMessageID(domain), agent.TraceHeader)
	b.WriteString("MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: 8bit\r\n\r\n")
	body := o.Body
	if body == "" {
		body = "unsubscribe"
	}
	b.WriteString(strings.ReplaceAll(body, "\n", "\r\n"))
	b.WriteString("\r\n")
	return []byte(b.String())
}
