package e2e

import (
	"bytes"
	"crypto"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/emersion/go-msgauth/dkim"
)

// Sender domains whose DKIM keys and DMARC records (p=reject) the stack's
// private DNS server publishes. Mail "from the outside" signed with SignDKIM
// for one of them passes OpenDKIM, and OpenDMARC when From is in the same
// domain.
//
// Mail From DKIMOnlyDomain is checked by OpenDKIM only (OpenDMARC ignores
// it), as on a server that runs no DMARC check: its Authentication-Results
// carry a DKIM result and no DMARC result.
//
// LocalDomain, the test users' own domain, publishes a key and a DMARC
// record too: mail from bob@example.test signed with SignDKIM is
// authenticated as if bob's own server had signed it.
const (
	PartnerDomain  = "partner.test"
	OtherDomain    = "other.test"
	DKIMOnlyDomain = "dkimonly.test"
	LocalDomain    = "example.test"
)

// SenderAuth describes how the stack authenticates incoming mail: OpenDKIM
// and OpenDMARC milters on Postfix's SMTP listener, which add
// Authentication-Results header fields (RFC 8601) with AuthservID.
type SenderAuth struct {
	// AuthservID is the authserv-id of every Authentication-Results field
	// the stack's milters add (MAILAGENT_E2E_AUTHSERV_ID).
	AuthservID string
	// Selector is the DKIM selector of every signing domain.
	Selector string
	// Keys maps each signing domain to its private key file (PEM).
	Keys map[string]string
	// DMARC is true when OpenDMARC runs too (MAILAGENT_E2E_DMARC=1).
	DMARC bool
}

// errNoSenderAuth means the environment describes a stack without the
// sender authentication milters (started by an older script).
var errNoSenderAuth = errors.New("MAILAGENT_E2E_AUTHSERV_ID is empty: the stack runs no DKIM/DMARC milters (restart it with the current scripts/e2e-stack.sh)")

// RequireSenderAuth returns the stack and its sender authentication setup,
// skipping the test like Require when MAILAGENT_E2E is not 1. A stack
// without the milters fails the test: CI always starts them.
func RequireSenderAuth(t testing.TB) (*Stack, *SenderAuth) {
	t.Helper()
	s := Require(t)
	a, err := senderAuthFromEnv(os.Getenv)
	if err != nil {
		t.Fatalf("e2e sender authentication: %v", err)
	}
	return s, a
}

// senderAuthFromEnv reads the variables scripts/e2e-stack.sh writes for the
// milters.
func senderAuthFromEnv(getenv func(string) string) (*SenderAuth, error) {
	a := &SenderAuth{
		AuthservID: getenv("MAILAGENT_E2E_AUTHSERV_ID"),
		Selector:   getenv("MAILAGENT_E2E_DKIM_SELECTOR"),
		DMARC:      getenv("MAILAGENT_E2E_DMARC") == "1",
		Keys:       make(map[string]string),
	}
	if a.AuthservID == "" {
		return nil, errNoSenderAuth
	}
	if a.Selector == "" {
		return nil, errors.New("MAILAGENT_E2E_DKIM_SELECTOR is empty")
	}
	keys := getenv("MAILAGENT_E2E_DKIM_KEYS")
	if keys == "" {
		return nil, errors.New("MAILAGENT_E2E_DKIM_KEYS is empty")
	}
	for i, pair := range strings.Split(keys, ",") {
		domain, path, ok := strings.Cut(pair, ":")
		domain = strings.ToLower(strings.TrimSpace(domain))
		if !ok || domain == "" || path == "" {
			return nil, fmt.Errorf("MAILAGENT_E2E_DKIM_KEYS entry %d is not domain:path", i+1)
		}
		a.Keys[domain] = path
	}
	return a, nil
}

// SignDKIM returns raw with a DKIM-Signature of domain prepended, made with
// the private key the stack published for that domain (relaxed/relaxed,
// rsa-sha256, every header field of raw signed). It reads the key from the
// environment scripts/e2e-stack.sh writes. raw should use CRLF line endings,
// as it will on the wire.
func SignDKIM(raw []byte, domain string) ([]byte, error) {
	a, err := senderAuthFromEnv(os.Getenv)
	if err != nil {
		return nil, err
	}
	return a.Sign(raw, domain)
}

// Sign is SignDKIM with an explicit setup.
func (a *SenderAuth) Sign(raw []byte, domain string) ([]byte, error) {
	path, ok := a.Keys[strings.ToLower(domain)]
	if !ok {
		return nil, fmt.Errorf("dkim: the stack has no key for %q", domain)
	}
	signer, err := loadSigner(path)
	if err != nil {
		return nil, fmt.Errorf("dkim: key of %s: %w", domain, err)
	}
	var out bytes.Buffer
	opts := &dkim.SignOptions{
		Domain:                 domain,
		Selector:               a.Selector,
		Signer:                 signer,
		HeaderCanonicalization: dkim.CanonicalizationRelaxed,
		BodyCanonicalization:   dkim.CanonicalizationRelaxed,
	}
	if err := dkim.Sign(&out, bytes.NewReader(raw), opts); err != nil {
		return nil, fmt.Errorf("dkim: sign as %s: %w", domain, err)
	}
	return out.Bytes(), nil
}

// MustSign is Sign that fails the test on error.
func (a *SenderAuth) MustSign(t testing.TB, raw []byte, domain string) []byte {
	t.Helper()
	signed, err := a.Sign(raw, domain)
	if err != nil {
		t.Fatalf("e2e: %v", err)
	}
	return signed
}

// loadSigner reads a PEM private key: PKCS#1 (what opendkim-genkey writes)
// or PKCS#8 (RSA or Ed25519).
func loadSigner(path string) (crypto.Signer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, fmt.Errorf("%s holds no PEM block", path)
	}
	switch block.Type {
	case "RSA PRIVATE KEY":
		k, err := x509.ParsePKCS1PrivateKey(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return k, nil
	case "PRIVATE KEY":
		k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		s, ok := k.(crypto.Signer)
		if !ok {
			return nil, fmt.Errorf("%s: a %T cannot sign", path, k)
		}
		return s, nil
	default:
		return nil, fmt.Errorf("%s: unsupported PEM block %q", path, block.Type)
	}
}
