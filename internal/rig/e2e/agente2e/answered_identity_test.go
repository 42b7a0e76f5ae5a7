package agente2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/emersion/go-imap/v2"

	"github.com/mailagent/mailagent/internal/rig/e2e"
	"github.com/mailagent/mailagent/store"
)

// TestStrangersAnswerIsNotTheContacts: on the real stack (Postfix with
// OpenDKIM and OpenDMARC authenticating each sender, Dovecot's Sent
// folder), an authenticated stranger (Carol, from the owner's point of
// view only another correspondent) is answered first for mail that names
// Bob's next Message-ID: once as her own Message-ID (predicted), once in
// References. mailagent's automatic replies to her are in Dovecot's Sent,
// naming Bob's ids. Bob's genuine mail then arrives with those ids: each
// must be answered, to Bob, and his message flagged \Answered; nothing
// counts the stranger's answer as his.
//
// The switch control of this class (the same attacks landing with the
// identity checks off) runs in process: agent.TestAnsweredAttacksLandWithoutIdentity
// and cmd/mailagent.TestAnsweredAttacksThroughTriageLandWithoutIdentity.
// Here, on the built binary, the control is data (a subtest on the same
// watcher): each attack's reply, as mailagent filed it in Sent, made
// legitimately Bob's (addressed to Bob, its ids those of a fresh mail of
// Bob's) is filed in Sent before that mail of Bob's arrives; the test's
// own check (answeredOnce) must see it land: Bob's mail counts as already
// answered and gets no reply of its own.
func TestStrangersAnswerIsNotTheContacts(t *testing.T) {
	parallel(t)
	_, a := e2e.RequireSenderAuth(t)
	e := newEnv(t, options{Mode: "auto", Model: autoModel})
	e.setAuthservID(a.AuthservID)
	for _, rcpt := range []string{bobAddr, carolAddr} {
		e.s.Append(t, e2e.Owner, e.box("Sent"), message{
			From: ownerName + " <" + e2e.Owner + ">", To: rcpt, Subject: "Catching up " + e.tag, ID: e.id("earlier-" + bareAddr(rcpt)),
			Body: "Hi, good to see you last week.",
		}.raw(), imap.FlagSeen)
	}
	w := e.startWatch()

	predicted, referenced := e.id("bob-next"), e.id("bob-later")
	attacks := []struct {
		name     string
		stranger message
		bobID    string
	}{
		{"the stranger uses Bob's next Message-ID", message{From: carolAddr, To: adaAddr, Subject: "Thursday meeting [auto] " + e.tag,
			ID: predicted, Body: "Hi Ada,\ncould we meet on Thursday at 3pm?\nCarol"}, predicted},
		{"the stranger's References name Bob's next Message-ID", message{From: carolAddr, To: adaAddr, Subject: "Re: Friday meeting [auto] " + e.tag,
			ID: e.id("carol-refs"), InReplyTo: "<" + referenced + ">", References: "<" + referenced + ">",
			Body: "Hi Ada,\ncould we meet on Thursday at 3pm?\nCarol"}, referenced},
	}
	tried, through := 0, 0
	replies := map[string]found{} // each attack's reply to the stranger, as filed in Sent
	for _, at := range attacks {
		tried++
		e.deliverSigned(at.stranger, e2e.LocalDomain)
		// The stranger is answered first, and the answer is in Sent.
		w.waitTerminal([]string{at.stranger.ID}, waitLong)
		if recs, err := w.records(); err != nil || len(recs[at.stranger.ID]) != 1 || recs[at.stranger.ID][0].Decision != "auto_send" {
			t.Fatalf("%s: set-up: the stranger's mail was not answered automatically: %v %v", at.name, describe(recs[at.stranger.ID]), err)
		}
		e.waitFind(e2e.Carol, "INBOX", "In-Reply-To", at.stranger.ID, 1, waitLong)
		e.waitFind(e2e.Owner, e.box("Sent"), "References", at.bobID, 1, waitShort)

		bob := message{From: bobAddr, To: adaAddr, Subject: fmt.Sprintf("Planning %d [auto] %s", tried, e.tag), ID: at.bobID,
			Body: "Hi Ada,\ncould we meet on Thursday at 3pm instead?\nBob"}
		e.deliverSigned(bob, e2e.LocalDomain)
		if ok, why := answeredOnce(t, e, w, bob.ID); !ok {
			through++
			t.Errorf("%s: %s", at.name, why)
		}
		replies[at.name] = e.waitFind(e2e.Owner, e.box("Sent"), "References", at.bobID, 1, waitShort)[0]
	}
	t.Logf("answered attacks on the real stack: %d tried, %d got through", tried, through)
	if through != 0 {
		t.Errorf("answered attacks on the real stack: %d of %d got through", through, tried)
	}

	t.Run("control: the stranger's reply made Bob's", func(t *testing.T) {
		parent := e.t
		e.t = t // the env's and watcher's helpers fail this subtest
		defer func() { e.t = parent }()
		landed := 0
		for i, at := range attacks {
			// The reply as filed for the stranger, but to Bob, and every id
			// it names (Bob's, the stranger's, its own) a fresh one: it is
			// then the owner's answer to a mail of Bob's not yet seen.
			r := replies[at.name]
			bobID := e.id(fmt.Sprintf("ctl-bob-%d", i))
			raw := strings.NewReplacer(at.bobID, bobID, at.stranger.ID, e.id(fmt.Sprintf("ctl-earlier-%d", i)),
				r.M.MessageID, e.id(fmt.Sprintf("ctl-reply-%d", i)), e2e.Carol, e2e.Bob).Replace(string(r.Raw))
			e.s.Append(t, e2e.Owner, e.box("Sent"), []byte(raw), imap.FlagSeen)
			bob := message{From: bobAddr, To: adaAddr, Subject: fmt.Sprintf("Planning control %d [auto] %s", i, e.tag), ID: bobID,
				Body: "Hi Ada,\ncould we meet on Thursday at 3pm instead?\nBob"}
			e.deliverSigned(bob, e2e.LocalDomain)
			// Landed for the attack's reason: the reply in Sent counts.
			if ok, why := answeredOnce(t, e, w, bob.ID); ok || !strings.Contains(why, "already answered") {
				t.Errorf("control: %s, the reply made Bob's: got %s; want no reply, his record already answered", at.name, why)
			} else {
				landed++
				t.Logf("control: %s: landed (%s)", at.name, why)
			}
		}
		t.Logf("control (the reply in Sent is to Bob): %d of %d landed", landed, tried)
		if landed != tried {
			t.Errorf("control: %d of %d landed, want %d", landed, tried, tried)
		}
	})
	w.stop()
}

// answeredOnce waits until Bob's mail id has a terminal record, and
// reports whether it was answered as his own: exactly one reply to it in
// Bob's INBOX, and his message flagged \Answered.
func answeredOnce(t *testing.T, e *env, w *watcher, id string) (bool, string) {
	t.Helper()
	// A stranger's record may carry the same Message-ID: wait for Bob's
	// own.
	eventually(t, waitLong, "Bob's message reaches a terminal state", func() (bool, string) {
		recs, err := w.records()
		if err != nil {
			return false, err.Error()
		}
		for _, r := range recs[id] {
			if r.From.Email == e2e.Bob && r.State.Terminal() {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d records with its Message-ID", len(recs[id]))
	})
	e.barrier(e2e.Bob)
	got := e.find(e2e.Bob, "INBOX", "In-Reply-To", id)
	flagged := false
	for _, f := range e.find(e2e.Owner, e.box("INBOX"), "Message-ID", id) {
		if f.M.From.Email == e2e.Bob && slices.Contains(f.Flags, imap.FlagAnswered) {
			flagged = true
		}
	}
	recs, _ := w.records()
	why := fmt.Sprintf("Bob got %d replies (want 1), his message flagged \\Answered: %v; records %s", len(got), flagged, describe(recs[id]))
	return len(got) == 1 && flagged, why
}

func describe(recs []store.MessageRecord) string {
	var out []string
	for _, r := range recs {
		out = append(out, fmt.Sprintf("%s: %s %s %v", r.From.Email, r.State, r.Decision, r.Reasons))
	}
	return strings.Join(out, " | ")
}
