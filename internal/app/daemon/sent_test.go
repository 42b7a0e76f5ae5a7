package daemon

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/store"
)

func sentMsg(raw string) *mail.Message {
	return mail.Parse([]byte(strings.ReplaceAll(raw, "\n", "\r\n")))
}

// handleSent makes known only the recipients of mail the owner wrote:
// never those of an automatic reply, however it is recognised, nor those
// of mail mailagent sent (an approved reply made its recipients known
// when it was sent, agent's rememberSent; its Sent copy teaches nothing).
func TestHandleSentKnownOnlyFromOwnerMail(t *testing.T) {
	t.Parallel()
	st, err := store.Open(filepath.Join(t.TempDir(), "db"), store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = st.Close() }()
	owner := agent.Owner{Addresses: []string{"ada@example.com"}}
	p := &agent.Pipeline{Store: st, Accounts: map[string]agent.Account{"a": {Name: "a", Owner: owner}}, Actor: &agent.Actor{Store: st}}
	d := &Daemon{Store: st, Pipeline: p}
	// An auto-reply whose Sent copy lost its headers is still known by its
	// Message-ID.
	if err := st.PutOutbox(&store.OutboxRecord{ID: "ob_auto", Account: "a", MessageID: "auto-1@example.com", Auto: true, Status: store.OutboxAppended}); err != nil {
		t.Fatal(err)
	}
	if err := st.PutOutbox(&store.OutboxRecord{ID: "ob_q1", Account: "a", MessageID: "approved-1@example.com", QueueID: "q1", Status: store.OutboxAppended}); err != nil {
		t.Fatal(err)
	}
	msgs := []*mail.Message{
		sentMsg("From: ada@example.com\nTo: auto-by-id@example.net\nMessage-ID: <AUTO-1@example.com>\n\nx\n"),
		sentMsg("From: ada@example.com\nTo: auto-by-header@example.net\nMessage-ID: <a2@example.com>\nAuto-Submitted: auto-replied\nX-Mailagent-Trace: tr_1\n\nx\n"),
		sentMsg("From: ada@example.com\nTo: vacation@example.net\nMessage-ID: <a3@example.com>\nAuto-Submitted: auto-generated\n\nx\n"),
		sentMsg("From: ada@example.com\nTo: approved@example.net\nMessage-ID: <approved-1@example.com>\nX-Mailagent-Trace: q1\n\nx\n"),
		sentMsg("From: ada@example.com\nTo: written@example.net\nCc: ada@example.com\nBcc: hidden@example.net\nMessage-ID: <w1@example.com>\nAuto-Submitted: no\n\nx\n"),
	}
	if err := d.handleSent(context.Background(), "a", owner, msgs); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		email        string
		known        bool
		ownerReplies int
	}{
		{"auto-by-id@example.net", false, 0},
		{"auto-by-header@example.net", false, 0},
		{"vacation@example.net", false, 0},
		{"approved@example.net", false, 0}, // counted when it was sent, not here
		{"written@example.net", true, 1},
		{"hidden@example.net", true, 1},
		{"ada@example.com", false, 0},
	}
	for _, tt := range tests {
		c, err := st.GetContact("a", tt.email)
		if err != nil {
			c = &store.Contact{}
		}
		if c.Known != tt.known || c.OwnerReplies != tt.ownerReplies {
			t.Errorf("%s: known %v, owner replies %d; want %v, %d", tt.email, c.Known, c.OwnerReplies, tt.known, tt.ownerReplies)
		}
	}
}
