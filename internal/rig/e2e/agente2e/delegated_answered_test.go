package agente2e

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/emersion/go-imap/v2"

	"github.com/mailagent/mailagent/agent/owner"
	"github.com/mailagent/mailagent/internal/app/api"
	"github.com/mailagent/mailagent/internal/rig/e2e"
	"github.com/mailagent/mailagent/store"
)

// TestDelegatedReplyFlagsOriginalE2E on the real stack: Sam's and Kim's
// questions reach Ada's INBOX through Postfix (signed by their domain,
// authenticated by the stack's milters). The owner forwards Sam's to the
// agent as an attachment, and also a forged copy from Mallory that names
// Kim's Message-ID. Both delegated replies are approved: once each is in
// Sent, another IMAP client sees Sam's message flagged \Answered and Kim's
// not (the copy's sender is not Kim's message's sender); Sam's own queued
// draft is closed, Kim's is not.
//
// Its control (data, a subtest on the same watcher): the same forward made
// legitimate, the owner attaching Kim's genuine message: its delegated
// reply, approved, flags Kim's message \Answered, which the test's own
// check (answeredFlag) sees: the flag is set by the reply's identity (the
// copy's sender), not kept off for another reason. 1 of 1 lands.
func TestDelegatedReplyFlagsOriginalE2E(t *testing.T) {
	parallel(t)
	_, a := e2e.RequireSenderAuth(t)
	e := newEnv(t, options{Mode: "review", Model: ownerE2EModel}) // nothing is sent unapproved
	e.setAuthservID(a.AuthservID)
	w := e.startWatch()
	ctx := context.Background()

	sam, kim := "sam@"+e2e.PartnerDomain, "kim@"+e2e.PartnerDomain
	samID, kimID := e.id("deleg-sam"), e.id("deleg-kim")
	samMsg := message{From: "Sam <" + sam + ">", To: adaAddr, Subject: "Coffee " + e.tag, ID: samID, Body: "Coffee on Thursday?"}
	e.deliver(samMsg)
	kimMsg := message{From: "Kim <" + kim + ">", To: adaAddr, Subject: "Invoice " + e.tag, ID: kimID, Body: "Could you pay the invoice?"}
	e.deliver(kimMsg)
	w.waitTerminal([]string{samID, kimID}, waitLong)

	fwdID, forgedID := e.id("deleg-fwd"), e.id("deleg-forged")
	e.deliverRaw(adaAddr, fwdID, e.signed(adaAddr, attachedForward(adaAddr, agentAddr, "Fwd: Coffee "+e.tag, fwdID, "Please say yes.", samMsg.raw())))
	forged := message{From: "Mallory <mallory@" + e2e.OtherDomain + ">", To: adaAddr, Subject: "Invoice " + e.tag, ID: kimID, Body: "Pay me instead."}.raw()
	e.deliverRaw(adaAddr, forgedID, e.signed(adaAddr, attachedForward(adaAddr, agentAddr, "Fwd: Invoice "+e.tag, forgedID, "Answer this.", forged)))
	w.waitTerminal([]string{fwdID, forgedID}, waitLong)

	var dels []store.QueueItem
	eventually(t, waitLong, "two delegated drafts", func() (bool, string) {
		items, err := w.client.Queue(ctx, api.QueueFilter{})
		if err != nil {
			return false, err.Error()
		}
		dels = slices.DeleteFunc(items, func(q store.QueueItem) bool { return q.Kind != store.KindDraft || !owner.IsDelegated(q.Message) })
		return len(dels) == 2, fmt.Sprintf("%d delegated drafts so far", len(dels))
	})
	for _, q := range dels {
		if out, stderr, code := e.run("queue", "approve", "--yes", q.ID); code != 0 {
			t.Fatalf("queue approve %s: exit %d\n%s\n%s", q.ID, code, out, stderr)
		}
	}
	// The flag is set before the reply is filed in Sent.
	e.waitFind(e2e.Owner, e.box("Sent"), "In-Reply-To", samID, 1, waitLong)
	e.waitFind(e2e.Owner, e.box("Sent"), "In-Reply-To", kimID, 1, waitLong)
	flags := func(id string) []imap.Flag {
		got := e.find(e2e.Owner, e.box("INBOX"), "Message-ID", id)
		if len(got) != 1 {
			e.t.Fatalf("INBOX: %d messages with Message-ID %s, want 1", len(got), id)
		}
		return got[0].Flags
	}
	// answeredFlag is the attack's check: Kim's message flagged \Answered.
	answeredFlag := func() bool { return slices.Contains(flags(kimID), imap.FlagAnswered) }
	if f := flags(samID); !slices.Contains(f, imap.FlagAnswered) {
		t.Errorf(`Sam's message: flags %v, want \Answered after the delegated reply`, f)
	}
	// The store says so too: Sam's own queued draft is closed.
	items, err := w.client.Queue(ctx, api.QueueFilter{})
	if err != nil {
		t.Fatal(err)
	}
	own := 0
	for _, q := range items {
		if !owner.IsDelegated(q.Message) && (q.MessageID == samID || q.MessageID == kimID) {
			own++
		}
		if !owner.IsDelegated(q.Message) && q.MessageID == samID && q.Status != store.QueueResolved {
			t.Errorf("Sam's own item %s: got %s, want resolved by the delegated reply", q.ID, q.Status)
		}
		if !owner.IsDelegated(q.Message) && q.MessageID == kimID && q.Status != store.QueuePending {
			t.Errorf("Kim's own item %s: got %s, want pending", q.ID, q.Status)
		}
	}
	if own != 2 {
		t.Errorf("got %d items for Sam's and Kim's own messages, want 2 (review mode queues both)", own)
	}
	tried, through := 0, 0
	tried++ // the forged copy
	if answeredFlag() {
		through++
		t.Errorf(`Kim's message: flags %v, flagged \Answered by a reply to Mallory`, flags(kimID))
	}
	t.Logf("forged copy naming another sender's Message-ID: %d attack tried, %d got through", tried, through)

	t.Run("control: the owner forwards Kim's own message", func(t *testing.T) {
		parent := e.t
		e.t = t // the env's and watcher's helpers fail this subtest
		defer func() { e.t = parent }()
		ctlID := e.id("deleg-kim-own")
		e.deliverRaw(adaAddr, ctlID, e.signed(adaAddr, attachedForward(adaAddr, agentAddr, "Fwd: Invoice "+e.tag, ctlID, "Answer this.", kimMsg.raw())))
		w.waitTerminal([]string{ctlID}, waitLong)
		var draft *store.QueueItem
		eventually(t, waitLong, "a delegated draft to Kim", func() (bool, string) {
			items, err := w.client.Queue(ctx, api.QueueFilter{})
			if err != nil {
				return false, err.Error()
			}
			for _, q := range items {
				if q.Kind == store.KindDraft && owner.IsDelegated(q.Message) && q.Status == store.QueuePending && len(q.To) == 1 && q.To[0].Email == kim {
					draft = &q
					return true, ""
				}
			}
			return false, fmt.Sprintf("%d items", len(items))
		})
		if out, stderr, code := e.run("queue", "approve", "--yes", draft.ID); code != 0 {
			t.Fatalf("queue approve %s: exit %d\n%s\n%s", draft.ID, code, out, stderr)
		}
		// Mallory's reply and this one.
		e.waitFind(e2e.Owner, e.box("Sent"), "In-Reply-To", kimID, 2, waitLong)
		landed := 0
		if answeredFlag() {
			landed++
		} else {
			t.Errorf(`control: Kim's message: flags %v after the delegated reply to Kim, want \Answered`, flags(kimID))
		}
		t.Logf("control (Kim's own message forwarded): %d of %d landed", landed, tried)
		if landed != tried {
			t.Errorf("control: %d of %d landed, want %d", landed, tried, tried)
		}
	})
	w.stop()
}
