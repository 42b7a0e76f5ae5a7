package agente2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/emersion/go-imap/v2"

	"github.com/mailagent/mailagent/internal/rig/e2e"
)

// TestReplayOnDovecot runs `mailagent replay` against the real Dovecot:
// an unread message stays unread and every flag stays as it was (EXAMINE,
// BODY.PEEK), no state database is created, and the owner's reply that
// another client filed in Sent (In-Reply-To, to the sender) is counted.
func TestReplayOnDovecot(t *testing.T) {
	e := newEnv(t, options{})
	e.seedSent(bobAddr)
	m1 := message{From: bobAddr, To: adaAddr, Subject: "Replay question " + e.tag, ID: e.id("replay-1"), Body: "Hi Ada,\nare you in on Friday?\nBob"}
	m2 := message{From: bobAddr, To: adaAddr, Subject: "Replay note " + e.tag, ID: e.id("replay-2"), Body: "Just so you know.\nBob"}
	e.deliver(m1)
	e.deliver(m2)
	e.s.Append(t, e2e.Owner, e.box("Sent"), message{From: adaAddr, To: bobAddr, Subject: "Re: " + m1.Subject, ID: e.id("replay-re"),
		InReplyTo: "<" + m1.ID + ">", Body: "Yes, Friday works."}.raw(), imap.FlagSeen)
	before := map[string][]imap.Flag{}
	for _, id := range []string{m1.ID, m2.ID} {
		got := e.find(e2e.Owner, "INBOX", "Message-ID", id)
		if len(got) != 1 {
			t.Fatalf("INBOX: %d messages with Message-ID %s, want 1", len(got), id)
		}
		before[id] = got[0].Flags
		if slices.Contains(got[0].Flags, imap.FlagSeen) {
			t.Fatalf("%s is \\Seen before the replay", id)
		}
	}

	out := e.mustRun("replay", "--json", "--since", "1d", "--limit", "2")
	var j struct {
		Messages int `json:"messages"`
		Owner    struct {
			Replied int `json:"replied"`
		} `json:"owner"`
	}
	if err := json.Unmarshal([]byte(out), &j); err != nil {
		t.Fatalf("replay --json: %v\n%s", err, out)
	}
	if j.Messages < 2 || j.Owner.Replied < 1 {
		t.Errorf("replay: %d messages, %d replied; want the two delivered, one answered in Sent\n%s", j.Messages, j.Owner.Replied, out)
	}
	for _, id := range []string{m1.ID, m2.ID} {
		got := e.find(e2e.Owner, "INBOX", "Message-ID", id)
		if len(got) != 1 || !slices.Equal(sortedFlags(got[0].Flags), sortedFlags(before[id])) {
			t.Errorf("%s: flags %v after the replay, %v before", id, got, before[id])
		}
	}
	if _, err := os.Stat(filepath.Join(e.stateDir, "mailagent.db")); err == nil {
		t.Error("replay created the agent's state database")
	}
}

func sortedFlags(fs []imap.Flag) []imap.Flag {
	out := slices.Clone(fs)
	slices.Sort(out)
	return out
}
