package agente2e

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/agent/followup"
	"github.com/mailagent/mailagent/internal/rig/e2e"
	"github.com/mailagent/mailagent/store"
)

// TestAutoNudgeAgainstPostfix: against real Dovecot and Postfix (with its
// milters), with followup.auto_send_known_contacts and a fake clock, the
// owner asks Carol from another client; no answer comes; at the second
// tier the follow-up goes out on its own as automatic mail: Carol's
// mailbox receives exactly one, with "Auto-Submitted: auto-generated";
// it did not go through Approve, so nothing was learned from it, Carol's
// contact counts it as automatic, the cap counted it once, and the next
// Sent scan (which sees it in the owner's Sent folder) learns nothing
// from it either.
func TestAutoNudgeAgainstPostfix(t *testing.T) {
	parallel(t)
	e := newEnv(t, options{})
	clk := &clock{t: time.Now()}
	w := e.libWatcher(filepath.Join(e.dir, "nudge.db"), clk)
	defer func() { w.close() }()
	p, st := w.p, w.st
	p.Actor.Memory = st
	// The owner's Sent folder is shared with every other test (and every
	// earlier run on a kept stack): their questions to Carol come due as
	// well, so the caps must not be what stops this one.
	p.Policy.MaxPerContactPerDay, p.Policy.MaxPerDay = 1000, 1000
	f := p.Followups
	f.Policy.AutoSendKnownContacts = true
	f.Known = func(account, email string) bool {
		c, err := st.GetContact(account, email)
		return err == nil && c.Known
	}
	f.AutoSend = func(ctx context.Context, q *store.QueueItem) error { // as cmd/mailagent wires it
		_, err := p.AutoNudge(ctx, q.ID)
		return err
	}
	w.once(t) // first start: the checkpoints are set

	ask := message{From: ownerName + " <" + e2e.Owner + ">", To: "Carol <" + e2e.Carol + ">", Subject: "Figures " + e.tag, ID: e.id("nudge-ask"),
		Body: "Hi Carol,\ncould you send the figures?\nAda"}
	e.s.Append(t, e2e.Owner, e.box("Sent"), ask.raw(), imap.FlagSeen)
	clk.Add(time.Minute)
	w.once(t)
	fu := w.followupOf(t, ask.ID)
	if fu.State != store.FollowupAwaitingReply {
		t.Fatalf("after the owner's question: %s, want awaiting_reply", fu.State)
	}
	if c, err := st.GetContact(account, e2e.Carol); err != nil || !c.Known {
		t.Fatalf("Carol is not known after the owner wrote to her: %+v %v", c, err)
	}
	clk.t = fu.Deadline.Add(30 * time.Second)
	w.once(t) // the reminder
	// The owner's Sent folder is shared with other tests: their questions
	// may have followups (and follow-ups to Carol) in this store too, so
	// what this one did is counted from here.
	before, err := st.GetContact(account, e2e.Carol)
	if err != nil {
		t.Fatal(err)
	}
	clk.Add(72*time.Hour + time.Minute)
	w.once(t) // the follow-up, sent on its own
	qid := followup.NudgeID(fu.ID, 1)
	q, err := st.GetQueueItem(qid)
	if err != nil || q.Status != store.QueueSent {
		t.Fatalf("the follow-up %s: %+v (%v), want sent", qid, q, err)
	}
	got := e.waitFind(e2e.Carol, "INBOX", "Message-ID", q.DraftMessageID, 1, waitShort)
	if len(got) != 1 {
		t.Fatalf("Carol received %d copies of the follow-up, want 1", len(got))
	}
	if v := got[0].M.HeaderValue("Auto-Submitted"); v != "auto-generated" {
		t.Errorf("Auto-Submitted: %q, want auto-generated", v)
	}
	if !strings.Contains(got[0].M.CleanText, "following up") {
		t.Errorf("the follow-up is not the nudge text: %q", got[0].M.CleanText)
	}
	ob, err := st.GetOutbox(agent.ApprovalOutboxID(qid))
	if err != nil || !ob.Auto {
		t.Errorf("outbox record %+v (%v), want an automatic one", ob, err)
	}
	clk.Add(time.Minute)
	w.once(t) // the Sent scan sees the follow-up in the owner's Sent folder
	exs, err := st.ListExamples(account)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range exs {
		if x.Source == qid || strings.Contains(x.Text, "following up") {
			t.Errorf("the automatic follow-up was learned: %+v", x)
		}
	}
	auto, autoAll := 0, 0 // automatic sends in this store (to Carol, to anyone): this follow-up and other tests'
	if err := st.ListOutbox("", func(r *store.OutboxRecord) error {
		if !r.Auto || r.Status == store.OutboxCancelled {
			return nil
		}
		autoAll++
		if len(r.To) == 1 && strings.EqualFold(r.To[0], e2e.Carol) {
			auto++
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	c, err := st.GetContact(account, e2e.Carol)
	if err != nil || c.OwnerReplies != before.OwnerReplies || c.AutoReplies != before.AutoReplies+auto || auto < 1 {
		t.Errorf("Carol: owner's %d (was %d), automatic %d (was %d, %d automatic sends) (%v); want the follow-ups counted as automatic only",
			c.OwnerReplies, before.OwnerReplies, c.AutoReplies, before.AutoReplies, auto, err)
	}
	if per, all, err := st.AutoSendCounts(account, e2e.Carol, store.Day(clk.Now())); err != nil || per != auto || all != autoAll {
		t.Errorf("caps %d/%d (%v), want %d/%d: one per send that happened", per, all, err, auto, autoAll)
	}
}
