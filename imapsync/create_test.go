package imapsync

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/emersion/go-imap/v2"
)

// TestEnsureFolderCreates: a bare account (INBOX alone) gets its Sent
// and Drafts folders: under the personal namespace (Courier's "INBOX."),
// with the special-use attribute where CREATE-SPECIAL-USE is announced,
// plain otherwise or when the server refuses the attribute; a second
// call finds the folder and creates nothing.
func TestEnsureFolderCreates(t *testing.T) {
	t.Parallel()
	courierNS := &imap.NamespaceData{Personal: []imap.NamespaceDescriptor{{Prefix: "INBOX.", Delim: '.'}}}
	withUse := defaultCaps()
	withUse[imap.CapCreateSpecialUse] = struct{}{}
	tests := []struct {
		name     string
		cfg      serverConfig
		o        EnsureOptions
		want     string
		wantCmds []createCall
	}{
		{name: "courier sent, plain CREATE", cfg: serverConfig{delim: '.', namespace: courierNS}, o: EnsureOptions{Attr: `\Sent`},
			want: "INBOX.Sent", wantCmds: []createCall{{name: "INBOX.Sent"}}},
		{name: "courier drafts with CREATE-SPECIAL-USE", cfg: serverConfig{delim: '.', namespace: courierNS, caps: withUse}, o: EnsureOptions{Attr: `\Drafts`},
			want: "INBOX.Drafts", wantCmds: []createCall{{name: "INBOX.Drafts", use: []imap.MailboxAttr{`\Drafts`}}}},
		{name: "use refused, plain CREATE", cfg: serverConfig{caps: withUse, refuseUse: true}, o: EnsureOptions{Attr: `\Sent`},
			want: "Sent", wantCmds: []createCall{{name: "Sent", use: []imap.MailboxAttr{`\Sent`}}, {name: "Sent"}}},
		{name: "configured name", cfg: serverConfig{caps: withUse}, o: EnsureOptions{Attr: `\Sent`, Configured: "Outbox Copies"},
			want: "Outbox Copies", wantCmds: []createCall{{name: "Outbox Copies", use: []imap.MailboxAttr{`\Sent`}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := startServer(t, tt.cfg)
			c := ts.dial(t)
			ctx := context.Background()
			got, created, err := c.EnsureFolder(ctx, tt.o)
			if err != nil || got != tt.want || !created {
				t.Fatalf("EnsureFolder: got %q, created %v, %v; want %q created", got, created, err, tt.want)
			}
			ts.mu.Lock()
			cmds := slices.Clone(ts.created)
			ts.mu.Unlock()
			if !slices.EqualFunc(cmds, tt.wantCmds, func(a, b createCall) bool { return a.name == b.name && slices.Equal(a.use, b.use) }) {
				t.Errorf("CREATE commands: got %+v, want %+v", cmds, tt.wantCmds)
			}
			if _, err := c.Select(ctx, got, false); err != nil {
				t.Errorf("select the new folder: %v", err)
			}
			again, created, err := c.EnsureFolder(ctx, tt.o)
			if err != nil || again != got || created {
				t.Errorf("second EnsureFolder: got %q, created %v, %v; want %q found", again, created, err, got)
			}
		})
	}
}

// TestEnsureFolderRefusesIncoming: a folder mailagent reads as incoming
// is never taken as Drafts or Sent, even when the server marks it so or
// the configuration names it.
func TestEnsureFolderRefusesIncoming(t *testing.T) {
	t.Parallel()
	inbox := func(n string) bool { return strings.EqualFold(n, "INBOX") }
	ts := startServer(t, serverConfig{listing: []imap.ListData{{Mailbox: "INBOX", Attrs: []imap.MailboxAttr{`\Sent`}}}, caps: imap.CapSet{imap.CapIMAP4rev1: {}, imap.CapSpecialUse: {}}})
	c := ts.dial(t)
	for _, o := range []EnsureOptions{{Attr: `\Sent`, Incoming: inbox}, {Attr: `\Drafts`, Configured: "inbox", Incoming: inbox}} {
		got, created, err := c.EnsureFolder(context.Background(), o)
		if !errors.Is(err, ErrIncomingFolder) || got != "" || created {
			t.Errorf("EnsureFolder(%+v): got %q, created %v, %v; want ErrIncomingFolder", o, got, created, err)
		}
	}
	if len(ts.created) != 0 {
		t.Errorf("CREATE sent: %+v", ts.created)
	}
}

// TestNoMailboxErrorIsSetupNeeded: a missing folder is a setup problem
// whose fix names doctor --fix and the name to create.
func TestNoMailboxErrorIsSetupNeeded(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverConfig{delim: '.', namespace: &imap.NamespaceData{Personal: []imap.NamespaceDescriptor{{Prefix: "INBOX.", Delim: '.'}}}})
	c := ts.dial(t)
	_, err := c.FindSpecialUse(context.Background(), `\Sent`)
	wrapped := &wrapErr{err}
	if !errors.Is(wrapped, ErrSetupNeeded) || !errors.Is(wrapped, ErrNoMailbox) {
		t.Fatalf("got %v; want ErrSetupNeeded and ErrNoMailbox", err)
	}
	var fx interface{ SetupFix() string }
	if !errors.As(wrapped, &fx) {
		t.Fatalf("got %v; want a SetupFix()", err)
	}
	want := "run `mailagent doctor --fix` to create \"INBOX.Sent\", or set accounts.sent_mailbox"
	if !strings.HasPrefix(fx.SetupFix(), want) {
		t.Errorf("SetupFix: got %q, want prefix %q", fx.SetupFix(), want)
	}
}

// TestNoMailboxErrorSetupOnlyForWhatFixCreates: a missing Archive or
// Trash is no setup problem doctor --fix would solve.
func TestNoMailboxErrorSetupOnlyForWhatFixCreates(t *testing.T) {
	t.Parallel()
	for attr, want := range map[string]bool{`\Sent`: true, `\Drafts`: true, "": true, `\Archive`: false, `\Trash`: false} {
		err := &NoMailboxError{Attr: attr}
		if got := errors.Is(err, ErrSetupNeeded); got != want || !errors.Is(err, ErrNoMailbox) {
			t.Errorf("NoMailboxError{%q}: Is(ErrSetupNeeded) %v, want %v (and ErrNoMailbox)", attr, got, want)
		}
		if got := err.SetupFix() != ""; got != want {
			t.Errorf("NoMailboxError{%q}: a SetupFix %v, want %v", attr, got, want)
		}
	}
}

type wrapErr struct{ err error }

func (w *wrapErr) Error() string { return "find the Sent folder: " + w.err.Error() }
func (w *wrapErr) Unwrap() error { return w.err }

// TestNameFromCaps: Courier-IMAP, which answers no ID, is known by its
// own extension.
func TestNameFromCaps(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		caps map[string]bool
		want string
	}{
		{map[string]bool{"IMAP4REV1": true, "IDLE": true, "XCOURIEROUTBOX=INBOX.OUTBOX": true}, "Courier-IMAP"},
		{map[string]bool{"IMAP4REV1": true, "IDLE": true, "ID": true}, ""},
	} {
		if got := nameFromCaps(tt.caps); got != tt.want {
			t.Errorf("nameFromCaps(%v): got %q, want %q", tt.caps, got, tt.want)
		}
	}
}
