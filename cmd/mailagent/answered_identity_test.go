package main

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/emersion/go-imap/v2"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/internal/app/api"

	"github.com/mailagent/mailagent/internal/smtpsend/smtptest"
	"github.com/mailagent/mailagent/store"
)

// Adversarial class "answered", through triage's path: `mailagent triage`
// decides Carol's mail, then `watch --once` acts on that decision (the
// real commands over imapmemserver, the SMTP sink and the Gemini fake).
// Before Carol writes, an authenticated stranger has made mailagent or the
// owner answer mail that names Carol's Message-ID (predicted: the test
// mail's ids follow the subject). The answer to the stranger must never
// count as the answer to Carol: she gets her reply. With the identity
// checks off (the positive control) every attack lands: Carol's mail is
// ignored as "already answered".

const strangerAddr = "mallory@evil.example"

type triageAttack struct {
	name string
	// before is what happens before Carol's mail arrives; it returns
	// whether its own step (the answer to the stranger) happened.
	before func(t *testing.T, h *harness) bool
}

var triageAnsweredAttacks = []triageAttack{
	{"the stranger uses Carol's next Message-ID and is answered automatically", func(t *testing.T, h *harness) bool {
		h.deliver(rawMail("Mallory <"+strangerAddr+">", "Lunch", "Can we meet on Thursday?"))
		h.watchOnce(t)
		return sentToAddr(h, strangerAddr)
	}},
	{"the stranger's References name Carol's next Message-ID and is answered automatically", func(t *testing.T, h *harness) bool {
		h.deliver(rawMail("Mallory <"+strangerAddr+">", "Lunch plans", "Can we meet on Thursday?",
			"In-Reply-To: <lunch@test.example>", "References: <lunch@test.example>"))
		h.watchOnce(t)
		return sentToAddr(h, strangerAddr)
	}},
	{"the owner answers the stranger from their own client, naming Carol's next Message-ID", func(t *testing.T, h *harness) bool {
		h.appendTo("Sent", "From: Ada Lovelace <ada@example.com>\nTo: <"+strangerAddr+">\nSubject: Re: Lunch\nDate: Mon, 02 Nov 2026 11:00:00 +0000\n"+
			"Message-ID: <owner-to-mallory@example.com>\nIn-Reply-To: <lunch@test.example>\nReferences: <lunch@test.example>\n\nSure.\n")
		return true
	}},
}

func sentToAddr(h *harness, addr string) bool {
	return slices.ContainsFunc(h.smtp.Messages(), func(m smtptest.Received) bool { return slices.Contains(m.To, addr) })
}

// runTriageAttack plays a on a fresh harness and reports whether it
// landed: Carol got no reply.
func runTriageAttack(t *testing.T, a triageAttack) (bool, string) {
	h := newHarness(t, compromisedModel, answeredPolicy)
	// Both are known contacts: the owner wrote to each.
	for _, to := range []string{strangerAddr, "carol@example.org"} {
		h.appendTo("Sent", "From: Ada Lovelace <ada@example.com>\nTo: <"+to+">\nSubject: hello\nDate: Mon, 02 Nov 2026 09:00:00 +0000\nMessage-ID: <hello-"+strings.ReplaceAll(to, "@", ".")+"@example.com>\n\nHi\n")
	}
	if !a.before(t, h) {
		t.Fatal("attack set-up: the answer to the stranger did not happen")
	}
	h.deliver(rawMail("Carol <carol@example.org>", "Lunch", "Lunch next week?"))
	if _, stderr, code := h.run("triage"); code != 0 {
		t.Fatalf("triage: exit %d: %s", code, stderr)
	}
	h.watchOnce(t)
	if sentToAddr(h, "carol@example.org") {
		return false, ""
	}
	st := h.openStore(t)
	defer func() { _ = st.Close() }()
	why := "Carol got no reply"
	_ = st.ListMessages(store.MessageFilter{}, func(r *store.MessageRecord) error {
		if r.From.Email == "carol@example.org" {
			why += ": " + string(r.Decision) + " " + strings.Join(r.Reasons, "; ")
		}
		return nil
	})
	return true, why
}

func TestAnsweredAttacksThroughTriage(t *testing.T) {
	t.Parallel()
	tried, through := 0, 0
	for _, a := range triageAnsweredAttacks {
		t.Run(a.name, func(t *testing.T) {
			tried++
			if landed, why := runTriageAttack(t, a); landed {
				through++
				t.Errorf("got through: %s", why)
			}
		})
	}
	t.Logf("answered attacks through triage: %d tried, %d got through", tried, through)
	if tried != len(triageAnsweredAttacks) || through != 0 {
		t.Errorf("answered attacks through triage: %d tried, %d got through; want %d, 0", tried, through, len(triageAnsweredAttacks))
	}
}

// The positive control: with the identity checks off every attack lands.
func TestAnsweredAttacksThroughTriageLandWithoutIdentity(t *testing.T) {
	restore := store.SwitchOffIdentityForTest()
	defer restore()
	landed := 0
	for _, a := range triageAnsweredAttacks {
		t.Run(a.name, func(t *testing.T) {
			if ok, why := runTriageAttack(t, a); ok {
				landed++
				t.Logf("landed: %s", why)
			} else {
				t.Error("with the identity checks off the attack should land")
			}
		})
	}
	if landed != len(triageAnsweredAttacks) {
		t.Errorf("positive control: %d of %d landed", landed, len(triageAnsweredAttacks))
	}
}

// An approval whose send did not happen (the original was answered
// meanwhile: \Answered from another client) is never a silent success in
// the review app either: its backend returns agent.ErrNotSent with the
// reason, through a running watcher's socket and without one (where the
// TUI sends once the undo window ends, SendApproved).
func TestReviewApprovalThatSentNothingSaysSo(t *testing.T) {
	t.Parallel()
	for _, withWatcher := range []bool{true, false} {
		t.Run(map[bool]string{true: "through the watcher", false: "no watcher"}[withWatcher], func(t *testing.T) {
			h := newHarness(t, compromisedModel, "")
			h.deliver(rawMail("Carol <carol@example.org>", "Lunch", "Lunch next week?"))
			h.watchOnce(t)
			item := h.item(t, "Lunch")
			h.flagInbox(t, "lunch@test.example", imap.FlagAnswered)
			b := reviewBackend(t, h)
			if withWatcher {
				stop := h.runWatch(t)
				defer stop()
				_, cfg := h.factory(t)
				b.Sock = api.SocketPath(cfg.StateDir)
			}
			ctx := context.Background()
			err := b.Approve(ctx, item.ID, "")
			if err == nil {
				err = b.SendApproved(ctx, item.ID)
			}
			if !errors.Is(err, agent.ErrNotSent) || !strings.Contains(err.Error(), `\Answered`) {
				t.Errorf("approve in review: err %v, want ErrNotSent saying why", err)
			}
			if n := len(h.smtp.Messages()); n != 0 {
				t.Errorf("sink: %d messages, want 0", n)
			}
		})
	}
}
