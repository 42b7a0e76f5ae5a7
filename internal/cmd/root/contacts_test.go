package root

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mailagent/mailagent/internal/cmd/contacts"
	"github.com/mailagent/mailagent/internal/cmdutil"
	"github.com/mailagent/mailagent/internal/iostreams"
	"github.com/mailagent/mailagent/store"
)

func TestContactsTableAlignsWideNames(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var cs []store.Contact
	for i, s := range wideSubjects {
		cs = append(cs, store.Contact{Email: strings.Repeat("b", i+1) + "@example.org", Name: s, Inbound: 10 + i, LastSeen: now})
	}
	var b bytes.Buffer
	contacts.PrintContacts(&b, cs, now)
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	want := displayColAt(lines[0], "KNOWN")
	for i, l := range lines[1:] {
		if got := displayColAt(l, "false"); got != want {
			t.Errorf("row %d (%q): KNOWN at display column %d, header at %d\n%s", i, wideSubjects[i], got, want, b.String())
		}
	}
}

// TestNewCmdContactsFlags: each verb fills its options (action, email,
// note, --account, --json, --yes) and carries the factory's streams and
// prompter.
func TestNewCmdContactsFlags(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args []string
		want contacts.ContactsOptions
	}{
		{[]string{"list", "--json", "--account", "work"}, contacts.ContactsOptions{Action: "list", JSON: true, Account: "work"}},
		{[]string{"show", "bob@example.org"}, contacts.ContactsOptions{Action: "show", Email: "bob@example.org"}},
		{[]string{"forget", "-y", "bob@example.org"}, contacts.ContactsOptions{Action: "forget", Email: "bob@example.org", Yes: true}},
		{[]string{"note", "bob@example.org", "prefers mornings"}, contacts.ContactsOptions{Action: "note", Email: "bob@example.org", Note: "prefers mornings"}},
	}
	for _, tt := range tests {
		ios, _, _, _ := iostreams.Test()
		f := cmdutil.New(ios)
		var got *contacts.ContactsOptions
		cmd := contacts.NewCmdContacts(f, func(_ context.Context, o *contacts.ContactsOptions) error { got = o; return nil })
		cmd.SetArgs(tt.args)
		if err := cmd.Execute(); err != nil {
			t.Fatalf("%v: %v", tt.args, err)
		}
		if got == nil || got.IO != ios || got.Prompter == nil {
			t.Fatalf("%v: runF got %+v, want the factory's streams and prompter", tt.args, got)
		}
		if got.Action != tt.want.Action || got.Email != tt.want.Email || got.Note != tt.want.Note ||
			got.Account != tt.want.Account || got.JSON != tt.want.JSON || got.Yes != tt.want.Yes {
			t.Errorf("%v: got %+v, want %+v", tt.args, *got, tt.want)
		}
	}
}
