package smtpsend

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/emersion/go-smtp"
)

// A hostile or buggy server could echo the credentials back in a reply.
func TestClassifyRedactsSecrets(t *testing.T) {
	t.Parallel()
	s, err := New(Options{Host: "127.0.0.1", Security: "insecure", Username: "u", Password: "hunter2-pw", OAuth2Token: "tok-xyz"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		err      error
		wantCode int
		wantAuth bool
	}{
		{name: "smtp reply", err: &smtp.SMTPError{Code: 535, Message: "bad password hunter2-pw for u"}, wantCode: 535, wantAuth: true},
		{name: "token in reply", err: &smtp.SMTPError{Code: 454, Message: "token tok-xyz expired"}, wantCode: 454},
		{name: "plain error", err: errors.New("weird hunter2-pw"), wantCode: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := s.classify(context.Background(), "auth", tt.err)
			for _, secret := range []string{"hunter2-pw", "tok-xyz"} {
				if strings.Contains(got.Error(), secret) {
					t.Errorf("got %q, want the secret redacted", got)
				}
			}
			var se *SendError
			if !errors.As(got, &se) || se.Code != tt.wantCode {
				t.Fatalf("got %v, want a *SendError with code %d", got, tt.wantCode)
			}
			if errors.Is(got, ErrAuth) != tt.wantAuth {
				t.Errorf("got errors.Is(ErrAuth) = %v, want %v", !tt.wantAuth, tt.wantAuth)
			}
			var smtpErr *smtp.SMTPError
			if tt.wantCode != 0 && (!errors.As(got, &smtpErr) || smtpErr.Code != tt.wantCode) {
				t.Errorf("got %v, want the SMTP reply %d kept in the chain", got, tt.wantCode)
			}
		})
	}
}
