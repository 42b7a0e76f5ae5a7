package agente2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2"

	"github.com/mailagent/mailagent/internal/rig/e2e"
)

// TestReplayOnDovecot runs `mailagent replay` against the real Dovecot:
// an unread message stays unread and every flag stays as it was (EXAMINE,
// BODY.PEEK), no state database is created, and the owner's reply that
// another client filed in Sent (In-Reply-To, to the sender) is counted.
// Also on the Courier-style server (INBOX.Sent, no SPECIAL-USE).
func TestReplayOnDovecot(t *testing.T) {
	parallel(t)
	t.Run("dovecot", func(t *testing.T) { t.Parallel(); testReplayOn(t, options{}) })
	t.Run("courier", func(t *testing.T) { t.Parallel(); testReplayOn(t, options{Courier: true}) })
}

func testReplayOn(t *testing.T, o options) {
	e := newEnv(t, o)
	e.seedSent(bobAddr)
	m1 := message{From: bobAddr, To: adaAddr, Subject: "Replay question " + e.tag, ID: e.id("replay-1"), Body: "Hi Ada,\nare you in on Friday?\nBob"}
	m2 := message{From: bobAddr, To: adaAddr, Subject: "Replay note " + e.tag, ID: e.id("replay-2"), Body: "Just so you know.\nBob"}
	e.deliver(m1)
	e.deliver(m2)
	e.s.Append(t, e2e.Owner, e.box("Sent"), message{From: adaAddr, To: bobAddr, Subject: "Re: " + m1.Subject, ID: e.id("replay-re"),
		InReplyTo: "<" + m1.ID + ">", Body: "Yes, Friday works."}.raw(), imap.FlagSeen)
	before := map[string][]imap.Flag{}
	for _, id := range []string{m1.ID, m2.ID} {
		got := e.find(e2e.Owner, e.box("INBOX"), "Message-ID", id)
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
		got := e.find(e2e.Owner, e.box("INBOX"), "Message-ID", id)
		if len(got) != 1 || !slices.Equal(sortedFlags(got[0].Flags), sortedFlags(before[id])) {
			t.Errorf("%s: flags %v after the replay, %v before", id, got, before[id])
		}
	}
	if _, err := os.Stat(filepath.Join(e.stateDir, "mailagent.db")); err == nil {
		t.Error("replay created the agent's state database")
	}
}

// sortedFlags are fs's permanent flags, sorted. \Recent is left out: it
// is the state of one IMAP session (the first to see the message has it;
// RFC 3501 2.3.2), so another test session's SELECT takes it away
// whatever replay does.
func sortedFlags(fs []imap.Flag) []imap.Flag {
	out := slices.DeleteFunc(slices.Clone(fs), func(f imap.Flag) bool { return f == imap.Flag(`\Recent`) })
	slices.Sort(out)
	return out
}

// TestDigestThroughPostfix mails the digest through the real Postfix to
// the owner and lets the watcher see it arrive: it is routed as
// mailagent's own mail (self), decided ignore, and nothing is queued.
func TestDigestThroughPostfix(t *testing.T) {
	parallel(t)
	e := newEnv(t, options{})
	_, stderr, code := e.run("digest", "--send")
	_, after, ok := strings.Cut(stderr, "Message-ID <")
	id, _, _ := strings.Cut(after, ">")
	if code != 0 || !ok || id == "" {
		t.Fatalf("digest --send: exit %d: %s", code, stderr)
	}
	e.moveIn(id) // mailed to the owner: Postfix files it in INBOX
	got := e.find(e2e.Owner, e.box("INBOX"), "Message-ID", id)
	if len(got) != 1 {
		t.Fatalf("%s: %d digests with Message-ID %s, want 1", e.box("INBOX"), len(got), id)
	}
	if got[0].M.HeaderValue("X-Mailagent-Digest") != "manual" || got[0].M.HeaderValue("Auto-Submitted") != "auto-generated" {
		t.Errorf("digest as delivered lacks its marks: %s", got[0].Raw)
	}
	e.setLookback(time.Hour)
	e.mustRun("watch", "--once")
	out := e.mustRun("explain", id, "--json")
	var ex struct {
		Message struct {
			Route    string  `json:"route"`
			Decision *string `json:"decision"`
		} `json:"message"`
	}
	if err := json.Unmarshal([]byte(out), &ex); err != nil {
		t.Fatalf("explain --json: %v\n%s", err, out)
	}
	if ex.Message.Route != "self" || ex.Message.Decision == nil || *ex.Message.Decision != "ignore" {
		t.Errorf("the digest was routed %q, decided %v; want self, ignore\n%s", ex.Message.Route, ex.Message.Decision, out)
	}
	if q := e.mustRun("queue", "list", "--json"); strings.Contains(q, id) {
		t.Errorf("the digest was queued: %s", q)
	}
}
