package wire

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/internal/config"
	"github.com/mailagent/mailagent/store"
)

// TestMailerIncomingIsOnlyTheWatchedMailbox: the mailer treats only the
// watched mailbox as incoming, never Sent or Drafts, whatever the server
// says of them; with the check off (the positive control's switch) not
// even the watched one is.
func TestMailerIncomingIsOnlyTheWatchedMailbox(t *testing.T) {
	t.Parallel()
	cfg := &config.Config{Accounts: []config.Account{{Name: "personal", Email: "ada@example.com", Mailbox: "INBOX",
		SentMailbox: "Sent", DraftsMailbox: "Drafts"}}}
	m := NewMailer(&Env{}, cfg)
	in := m.Accounts["personal"].Incoming
	for name, want := range map[string]bool{"INBOX": true, "Sent": false, "Drafts": false, "Archive": false} {
		if got := in(name); got != want {
			t.Errorf("Incoming(%q) = %v, want %v", name, got, want)
		}
	}
	off := NewMailer(&Env{IncomingCheckOff: true}, cfg).Accounts["personal"].Incoming
	if off("INBOX") {
		t.Error("with the check off the watched mailbox still counts as incoming: the switch does nothing")
	}
}

// TestFollowupsAutoSendOnlyInAutoMode: the follow-up tracker is wired
// only when followup.enabled is on, and its unattended auto-send only
// when policy.mode is auto as well as followup.auto_send_known_contacts.
func TestFollowupsAutoSendOnlyInAutoMode(t *testing.T) {
	t.Parallel()
	st, err := store.Open(filepath.Join(t.TempDir(), "mailagent.db"), store.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	p := &agent.Pipeline{Accounts: map[string]agent.Account{"personal": {Name: "personal"}}}
	env := &Env{Now: time.Now}
	for _, tc := range []struct {
		name            string
		enabled, auto   bool
		mode            string
		wantNil, wantAS bool
	}{
		{"off", false, true, config.ModeAuto, true, false},
		{"review mode", true, true, config.ModeReview, false, false},
		{"auto mode", true, true, config.ModeAuto, false, true},
		{"auto mode, not asked", true, false, config.ModeAuto, false, false},
	} {
		cfg := &config.Config{}
		cfg.Followup.Enabled, cfg.Followup.AutoSendKnownContacts, cfg.Policy.Mode = tc.enabled, tc.auto, tc.mode
		fu := Followups(env, cfg, st, p)
		if (fu == nil) != tc.wantNil {
			t.Errorf("%s: tracker %v, want nil %v", tc.name, fu, tc.wantNil)
			continue
		}
		if fu != nil && (fu.Policy.AutoSendKnownContacts != tc.wantAS || fu.AutoSend == nil || fu.Known == nil) {
			t.Errorf("%s: auto-send %v (AutoSend set %v, Known set %v), want %v", tc.name, fu.Policy.AutoSendKnownContacts,
				fu.AutoSend != nil, fu.Known != nil, tc.wantAS)
		}
	}
}
