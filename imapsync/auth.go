package imapsync

import (
	"errors"
	"fmt"
	"strings"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-sasl"

	"github.com/mailagent/mailagent/internal/netpolicy"
)

// Permanent marks err as one that retrying cannot fix (a password
// command that fails, a missing environment variable): Watcher.Run stops
// on it instead of reconnecting forever. errors.Is/As still see err.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err}
}

type permanentError struct{ err error }

func (p *permanentError) Error() string { return p.err.Error() }
func (p *permanentError) Unwrap() error { return p.err }

// IsPermanent reports whether err is one Watcher.Run gives up on:
// ErrAuth, ErrPlaintextNotLoopback, ErrInsecureTLS, or an error marked
// with Permanent. ErrLoginUnavailable and network errors are temporary.
func IsPermanent(err error) bool {
	var p *permanentError
	return errors.As(err, &p) || errors.Is(err, ErrAuth) || errors.Is(err, ErrPlaintextNotLoopback) || errors.Is(err, ErrInsecureTLS)
}

// login authenticates with the best method the server allows.
func (c *Client) login(opts Options) error {
	caps := c.ic.Caps()
	if opts.OAuth2Token != "" {
		offers := func(mech string) bool { return caps.Has(imap.Cap("AUTH=" + mech)) }
		mech, err := netpolicy.OAuth2Mechanism(offers)
		if err != nil {
			return Permanent(fmt.Errorf("imap authenticate: %w", err))
		}
		sc := netpolicy.OAuth2Client(mech, opts.Username, opts.OAuth2Token, opts.Host, opts.Port)
		if err := c.ic.Authenticate(sc); err != nil {
			return authErr("authenticate "+mech, err, opts.OAuth2Token)
		}
		return nil
	}

	plain := func() error {
		if err := c.ic.Authenticate(sasl.NewPlainClient("", opts.Username, opts.Password)); err != nil {
			return authErr("authenticate PLAIN", err, opts.Password)
		}
		return nil
	}
	if caps.Has(imap.CapLoginDisabled) {
		return plain()
	}
	err := c.ic.Login(opts.Username, opts.Password).Wait()
	var ie *imap.Error
	if errors.As(err, &ie) && ie.Type == imap.StatusResponseTypeBad && caps.Has(imap.Cap("AUTH=PLAIN")) {
		// BAD means the server does not accept LOGIN at all (as opposed
		// to NO, which rejects the credentials): try SASL PLAIN instead.
		return plain()
	}
	if err != nil {
		return authErr("login", err, opts.Password)
	}
	return nil
}

// authErr turns a server rejection into ErrAuth, scrubbing the secret from
// the server's text in case it echoed it.
func authErr(op string, err error, secret string) error {
	var obe *sasl.OAuthBearerError
	if errors.As(err, &obe) {
		return fmt.Errorf("imap %s: %w: %s", op, ErrAuth, obe.Status)
	}
	var ie *imap.Error
	if errors.As(err, &ie) {
		text := ie.Text
		if secret != "" {
			text = strings.ReplaceAll(text, secret, "***")
		}
		if ie.Code != "" {
			text = "[" + string(ie.Code) + "] " + text
		}
		if temporaryLoginCode(ie.Code) {
			return fmt.Errorf("imap %s: %w: %s", op, ErrLoginUnavailable, text)
		}
		return fmt.Errorf("imap %s: %w: %s", op, ErrAuth, text)
	}
	// A transport error: not a credentials problem, and it never holds
	// the secret (go-imap's errors describe the protocol, not the payload).
	return fmt.Errorf("imap %s: %w", op, err)
}

// temporaryLoginCode reports whether a NO to LOGIN/AUTHENTICATE with this
// RFC 5530 code says "try again later" rather than "wrong credentials".
// AUTHENTICATIONFAILED, AUTHORIZATIONFAILED, EXPIRED and a plain NO are
// answers about the credentials.
func temporaryLoginCode(code imap.ResponseCode) bool {
	switch code {
	case imap.ResponseCodeUnavailable, imap.ResponseCodeServerBug, imap.ResponseCodeInUse, imap.ResponseCodeLimit:
		return true
	}
	return false
}
