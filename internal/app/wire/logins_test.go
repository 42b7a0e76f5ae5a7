package wire

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/mailagent/mailagent/imapsync"
	"github.com/mailagent/mailagent/internal/app/apperr"
	"github.com/mailagent/mailagent/internal/config"
)

// TestLoginsBrokenSecretIsUsage: a password source that fails is a usage
// error naming the account and the endpoint, never the secret; DialIMAP
// makes it permanent (no retry) without dialling.
func TestLoginsBrokenSecretIsUsage(t *testing.T) {
	t.Setenv("MA_TEST_LOGINS_PASS", "")
	acct := &config.Account{Name: "work"}
	acct.IMAP = config.Endpoint{Host: "127.0.0.1", Port: 1, Username: "u", PasswordEnv: "MA_TEST_LOGINS_UNSET_VAR"}
	acct.SMTP = acct.IMAP
	ctx := context.Background()

	_, err := SMTPOptions(ctx, acct)
	var ae *apperr.Error
	if !errors.As(err, &ae) || ae.Code != apperr.CodeUsage || !strings.Contains(err.Error(), "account work smtp password") {
		t.Fatalf("SMTPOptions: %v, want a usage error naming account work smtp", err)
	}
	_, err = DialIMAP(ctx, acct)
	if !errors.As(err, &ae) || ae.Code != apperr.CodeUsage || !strings.Contains(err.Error(), "account work imap password") {
		t.Fatalf("DialIMAP: %v, want a usage error naming account work imap", err)
	}
	if !imapsync.IsPermanent(err) {
		t.Errorf("DialIMAP: %v is not permanent: a retry cannot fix a password source", err)
	}
}
