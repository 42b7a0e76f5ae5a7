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
// The positive control of this class (the same attacks landing with the
// identity checks off) runs in process: agent.TestAnsweredAttacksLandWithoutIdentity
// and cmd/mailagent.TestAnsweredAttacksThroughTriageLandWithoutIdentity.
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
		// The stranger's record carries the same Message-ID: wait for
		// Bob's own.
		eventually(t, waitLong, "Bob's message reaches a terminal state", func() (bool, string) {
			recs, err := w.records()
			if err != nil {
				return false, err.Error()
			}
			for _, r := range recs[bob.ID] {
				if r.From.Email == e2e.Bob && r.State.Terminal() {
					return true, ""
				}
			}
			return false, fmt.Sprintf("%d records with its Message-ID", len(recs[bob.ID]))
		})
		e.barrier(e2e.Bob)
		got := e.find(e2e.Bob, "INBOX", "In-Reply-To", bob.ID)
		flagged := false
		for _, f := range e.find(e2e.Owner, e.box("INBOX"), "Message-ID", bob.ID) {
			if f.M.From.Email == e2e.Bob && slices.Contains(f.Flags, imap.FlagAnswered) {
				flagged = true
			}
		}
		if len(got) != 1 || !flagged {
			through++
			recs, _ := w.records()
			t.Errorf("%s: Bob got %d replies (want 1), his message flagged \\Answered: %v; records %s", at.name, len(got), flagged, describe(recs[bob.ID]))
		}
	}
	w.stop()
	t.Logf("answered attacks on the real stack: %d tried, %d got through", tried, through)
	if through != 0 {
		t.Errorf("answered attacks on the real stack: %d of %d got through", through, tried)
	}
}

func describe(recs []store.MessageRecord) string {
	var out []string
	for _, r := range recs {
		out = append(out, fmt.Sprintf("%s: %s %s %v", r.From.Email, r.State, r.Decision, r.Reasons))
	}
	return strings.Join(out, " | ")
}
