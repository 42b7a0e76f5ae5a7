package netpolicy

import (
	"errors"
	"slices"
	"testing"
)

func TestOAuth2Mechanism(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		offered []string
		want    string
		wantErr error
	}{
		{name: "both: the standard wins", offered: []string{"XOAUTH2", "OAUTHBEARER", "PLAIN"}, want: MechOAuthBearer},
		{name: "only xoauth2 (Outlook)", offered: []string{"PLAIN", "XOAUTH2"}, want: MechXOAuth2},
		{name: "only oauthbearer", offered: []string{"OAUTHBEARER"}, want: MechOAuthBearer},
		{name: "neither", offered: []string{"PLAIN", "LOGIN"}, wantErr: ErrNoOAuthMechanism},
		{name: "nothing", wantErr: ErrNoOAuthMechanism},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := OAuth2Mechanism(func(m string) bool { return slices.Contains(tt.offered, m) })
			if got != tt.want || !errors.Is(err, tt.wantErr) {
				t.Errorf("got %q, %v; want %q, %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestOAuth2Client(t *testing.T) {
	t.Parallel()
	mech, ir, err := OAuth2Client(MechXOAuth2, "ada@example.org", "tok", "imap.example.org", 993).Start()
	if err != nil || mech != "XOAUTH2" || string(ir) != "user=ada@example.org\x01auth=Bearer tok\x01\x01" {
		t.Errorf("XOAUTH2 Start: got %q %q %v", mech, ir, err)
	}
	c := OAuth2Client(MechXOAuth2, "ada@example.org", "tok", "", 0)
	if resp, err := c.Next([]byte(`{"status":"401"}`)); err != nil || len(resp) != 0 {
		t.Errorf("XOAUTH2 Next: got %q %v, want an empty response", resp, err)
	}
	mech, ir, err = OAuth2Client(MechOAuthBearer, "ada@example.org", "tok", "imap.example.org", 993).Start()
	if err != nil || mech != "OAUTHBEARER" || string(ir) != "n,a=ada@example.org,\x01host=imap.example.org\x01port=993\x01auth=Bearer tok\x01\x01" {
		t.Errorf("OAUTHBEARER Start: got %q %q %v", mech, ir, err)
	}
}

func TestXOAuth2RefusesFieldSeparator(t *testing.T) {
	t.Parallel()
	for _, c := range [][2]string{{"ada\x01auth=Bearer forged", "tok"}, {"ada", "tok\x01x"}} {
		if _, _, err := NewXOAuth2Client(c[0], c[1]).Start(); err == nil {
			t.Errorf("Start(%q, %q): got nil, want an error", c[0], c[1])
		}
	}
}
