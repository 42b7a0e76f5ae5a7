package netpolicy

import (
	"errors"
	"strings"

	"github.com/emersion/go-sasl"
)

// Names of the OAuth 2 SASL mechanisms.
const (
	// MechOAuthBearer is RFC 7628's standard mechanism.
	MechOAuthBearer = sasl.OAuthBearer
	// MechXOAuth2 is Google's and Microsoft's older mechanism, which
	// Outlook still offers alone.
	MechXOAuth2 = "XOAUTH2"
)

// ErrNoOAuthMechanism means the server offers neither OAUTHBEARER nor
// XOAUTH2, so a token cannot be used with it.
var ErrNoOAuthMechanism = errors.New("the server offers neither OAUTHBEARER nor XOAUTH2 for the oauth2 token")

// OAuth2Mechanism chooses the SASL mechanism IMAP and SMTP use for an
// OAuth 2 bearer token: MechOAuthBearer when offers says the server has it
// (the standard), else MechXOAuth2, else ErrNoOAuthMechanism. offers is
// asked with the mechanism names above.
func OAuth2Mechanism(offers func(mech string) bool) (string, error) {
	switch {
	case offers(MechOAuthBearer):
		return MechOAuthBearer, nil
	case offers(MechXOAuth2):
		return MechXOAuth2, nil
	}
	return "", ErrNoOAuthMechanism
}

// OAuth2Client returns the SASL client for mech (from OAuth2Mechanism);
// host and port go into the OAUTHBEARER message. Any other mech gives
// XOAUTH2. The token is sent as is; callers keep it out of errors and logs.
func OAuth2Client(mech, username, token, host string, port int) sasl.Client {
	if mech == MechOAuthBearer {
		return sasl.NewOAuthBearerClient(&sasl.OAuthBearerOptions{Username: username, Token: token, Host: host, Port: port})
	}
	return NewXOAuth2Client(username, token)
}

// NewXOAuth2Client returns a SASL client for the XOAUTH2 mechanism, which
// go-sasl does not provide (it has only the standard OAUTHBEARER). The
// mechanism is two lines, so it is written here once, for IMAP and SMTP.
func NewXOAuth2Client(username, token string) sasl.Client {
	return &xoauth2Client{username: username, token: token}
}

type xoauth2Client struct {
	username, token string
}

// Start sends "user=<name>^Aauth=Bearer <token>^A^A" as the initial
// response.
func (x *xoauth2Client) Start() (string, []byte, error) {
	if strings.ContainsRune(x.username, '\x01') || strings.ContainsRune(x.token, '\x01') {
		// ^A separates the fields: one inside a value would forge another.
		return "", nil, errors.New("xoauth2: the username or token contains a ^A byte")
	}
	return MechXOAuth2, []byte("user=" + x.username + "\x01auth=Bearer " + x.token + "\x01\x01"), nil
}

// Next answers the server's error challenge (a JSON blob) with an empty
// response, after which the server sends its failure reply.
func (x *xoauth2Client) Next([]byte) ([]byte, error) { return []byte{}, nil }
