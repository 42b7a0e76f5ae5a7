package wire

import (
	"context"
	"errors"
	"fmt"

	"github.com/mailagent/mailagent/imapsync"
	"github.com/mailagent/mailagent/internal/app/apperr"
	"github.com/mailagent/mailagent/internal/app/daemon"
	"github.com/mailagent/mailagent/internal/config"
	"github.com/mailagent/mailagent/internal/smtpsend"
)

// This file is the one home of the logins: how an account's IMAP and SMTP
// secrets are resolved and how its IMAP server is dialled, for every
// command and the watcher (Env.DialIMAP and Env.SMTP; Logins).

// Logins is an Env with only the logins set (DialIMAP, SMTP): what
// NewMailer reads.
func Logins() *Env { return &Env{DialIMAP: DialIMAP, SMTP: SMTPOptions} }

// SMTPOptions resolves an account's SMTP login.
func SMTPOptions(ctx context.Context, acct *config.Account) (smtpsend.Options, error) {
	e := acct.SMTP
	opts := smtpsend.Options{Host: e.Host, Port: e.Port, Security: e.Security, Username: e.Username, TLSCAFile: e.TLSCAFile}
	var err error
	opts.Password, opts.OAuth2Token, err = ResolveLogin(ctx, acct.Name, "smtp", e)
	return opts, err
}

// IMAPOptions resolves an account's IMAP login.
func IMAPOptions(ctx context.Context, acct *config.Account) (imapsync.Options, error) {
	e := acct.IMAP
	opts := imapsync.Options{
		Host: e.Host, Port: e.Port, Security: imapsync.Security(e.Security),
		Username: e.Username, TLSCAFile: e.TLSCAFile, Account: acct.Name,
	}
	var err error
	opts.Password, opts.OAuth2Token, err = ResolveLogin(ctx, acct.Name, "imap", e)
	return opts, err
}

// DialIMAP connects and logs in to an account's IMAP server. A broken
// secret source is permanent (retrying cannot help) and a usage error; a
// plaintext connection to a remote host is a usage error; any other
// failure to connect is CodeUnreachable.
func DialIMAP(ctx context.Context, acct *config.Account) (*imapsync.Client, error) {
	opts, err := IMAPOptions(ctx, acct)
	if err != nil {
		return nil, imapsync.Permanent(err) // retrying a broken password source cannot help
	}
	c, err := imapsync.Dial(ctx, opts)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if errors.Is(err, imapsync.ErrPlaintextNotLoopback) {
			return nil, &apperr.Error{Code: apperr.CodeUsage, Err: err, Hint: "use security = \"tls\" or \"starttls\""}
		}
		return nil, &apperr.Error{Code: apperr.CodeUnreachable, Err: fmt.Errorf("account %s: %w", acct.Name, err), Hint: "try: mailagent doctor"}
	}
	return c, nil
}

// ResolveLogin resolves an endpoint's secret (what: "imap" or "smtp"):
// an OAuth 2 access token when it uses one, else its password. A source
// that fails is a configuration error (*apperr.Error, CodeUsage) naming
// the account; the secret itself is never in the error.
func ResolveLogin(ctx context.Context, account, what string, e config.Endpoint) (password, token string, _ error) {
	if e.UsesOAuth2() {
		tok, err := e.ResolveOAuth2Token(ctx)
		if err != nil {
			return "", "", &apperr.Error{Code: apperr.CodeUsage, Err: fmt.Errorf("account %s %s token: %w", account, what, err)}
		}
		return "", tok.Reveal(), nil
	}
	pw, err := e.ResolvePassword(ctx)
	if err != nil {
		return "", "", &apperr.Error{Code: apperr.CodeUsage, Err: fmt.Errorf("account %s %s password: %w", account, what, err)}
	}
	return pw.Reveal(), "", nil
}

// NewMailerLogins is NewMailer with the logins of this file (Logins).
func NewMailerLogins(cfg *config.Config) *daemon.Mailer { return NewMailer(Logins(), cfg) }
