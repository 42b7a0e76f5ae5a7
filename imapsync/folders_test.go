package imapsync

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/emersion/go-imap/v2"
)

// Courier-IMAP (and Cyrus, and Dovecot with an INBOX. prefix) keeps every
// folder under "INBOX." with "." as separator and marks none with
// SPECIAL-USE: discovery must find INBOX.Sent and INBOX.Drafts.
func TestFindSpecialUseCourierLayout(t *testing.T) {
	t.Parallel()
	courierNS := &imap.NamespaceData{Personal: []imap.NamespaceDescriptor{{Prefix: "INBOX.", Delim: '.'}}}
	courier := []imap.ListData{
		{Mailbox: "INBOX", Attrs: []imap.MailboxAttr{imap.MailboxAttrHasChildren}},
		{Mailbox: "INBOX.Sent Items"}, {Mailbox: "INBOX.Drafts"}, {Mailbox: "INBOX.Trash"}, {Mailbox: "INBOX.Archive"},
	}
	tests := []struct {
		name       string
		cfg        serverConfig
		attr       string
		fallbacks  []string
		want       string
		wantCreate string
	}{
		{name: "sent under the namespace", cfg: serverConfig{listing: courier, delim: '.', namespace: courierNS}, attr: `\Sent`, want: "INBOX.Sent Items"},
		{name: "drafts under the namespace", cfg: serverConfig{listing: courier, delim: '.', namespace: courierNS}, attr: `\Drafts`, want: "INBOX.Drafts"},
		{name: "configured bare name", cfg: serverConfig{listing: courier, delim: '.', namespace: courierNS}, fallbacks: []string{"archive"}, want: "INBOX.Archive"},
		{name: "configured full name", cfg: serverConfig{listing: courier, delim: '.', namespace: courierNS}, fallbacks: []string{"INBOX.Drafts"}, want: "INBOX.Drafts"},
		{name: "no NAMESPACE, INBOX children", cfg: serverConfig{listing: courier, delim: '.', caps: imap.CapSet{imap.CapIMAP4rev1: {}}}, attr: `\Drafts`, want: "INBOX.Drafts"},
		{name: "missing: create under the prefix", cfg: serverConfig{listing: courier[:1], delim: '.', namespace: courierNS}, attr: `\Sent`, wantCreate: "INBOX.Sent"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := startServer(t, tt.cfg)
			c := ts.dial(t)
			got, err := c.FindSpecialUse(context.Background(), tt.attr, tt.fallbacks...)
			if tt.wantCreate != "" {
				var nf *NoMailboxError
				if !errors.As(err, &nf) || !errors.Is(err, ErrNoMailbox) {
					t.Fatalf("got %q, %v; want a NoMailboxError", got, err)
				}
				if nf.Create != tt.wantCreate {
					t.Errorf("Create: got %q, want %q", nf.Create, tt.wantCreate)
				}
				if !strings.Contains(err.Error(), `"INBOX"`) {
					t.Errorf("error does not list the existing folders: %v", err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("FindSpecialUse(%q, %v): got %q, %v; want %q", tt.attr, tt.fallbacks, got, err, tt.want)
			}
		})
	}
}

func TestNamespace(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverConfig{delim: '.', namespace: &imap.NamespaceData{Personal: []imap.NamespaceDescriptor{{Prefix: "INBOX.", Delim: '.'}}}})
	c := ts.dial(t)
	prefix, delim, err := c.Namespace(context.Background())
	if err != nil || prefix != "INBOX." || delim != '.' {
		t.Errorf("Namespace: got %q %q %v, want INBOX. .", prefix, delim, err)
	}
}
